"""centidb.records.reader: the common-case reads, how many engine reads each takes.

What the reader returns is checked against the general read paths in
test_records_record.py (with the writer); here, the engine calls it makes.
"""

import pytest

import centidb
from centidb import impl, keylib
from centidb.records import reader
from centidb.records.reader import RecordReader
from engine_helpers import counting_engine


def test_the_module_is_compiled_exactly_when_the_codec_is():
    assert reader.__file__.endswith('.py') == (impl.COMPILED is None)


# --- RecordReader: how many engine reads a read takes -------------------------

@pytest.mark.parametrize('fast', [True, False], ids=['fast_get', 'get'])
def test_record_reader_reads_a_plain_record_once(fast):
    """A plain record is read with one engine read (the unchecked getter
    when the transaction has one and the key is no longer than the engine's
    limit), looking in batches only when it misses; an index get adds one
    seek to find the entry. An index scan without the unchecked getter reads
    each chunk's records with one get_many."""
    read = 'fast_get' if fast else 'get'
    engine = counting_engine(fast)
    engine.max_key_size = 40
    store = centidb.Store(engine)
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    assert type(coll.records.reader) is RecordReader
    longest = next(('k' * n,) for n in range(40)
                   if len(keylib.packs(('k' * n,), coll.prefix)) == 40)
    coll.put({'k': 1, 'tag': 'a'})
    coll.put({'k': longest, 'tag': None})
    for call, result, expected in (
            (lambda txn: coll.get(1, txn=txn), {'k': 1, 'tag': 'a'}, [read]),
            (lambda txn: coll.get(longest, txn=txn), {'k': longest, 'tag': None}, [read]),
            (lambda txn: coll.get(9, txn=txn), None, [read, 'first']),
            (lambda txn: coll.get(longest[0] + 'k', txn=txn), None, ['get', 'first']),
            (lambda txn: tags.get('a', txn=txn), {'k': 1, 'tag': 'a'}, ['first', read]),
            (lambda txn: list(tags.values(txn=txn)), [{'k': 1, 'tag': 'a'}],
             ['fast_get' if fast else 'get_many'])):
        with store.begin() as txn:
            engine.calls = []
            assert call(txn) == result
            assert engine.calls == expected
    store.close()


# --- RecordReader: scans over batches ------------------------------------------------

def test_scans_meeting_batches_yield_what_a_model_holds():
    """Records 1 to 9, those from 3 to 6 in batches of two (a batch is
    stored under its highest member): every range, forward and reverse, of
    values, items and keys, and of an index's entries, is the model's."""
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    model = {(k,): {'k': k, 'tag': k % 3} for k in range(1, 10)}
    coll.put_many(list(model.values()))
    coll.batch(3, 7, max_recs=2)
    assert coll.get(4) == model[(4,)]
    bounds = [None, 2, 3, 4, 5, 6, 7, 8]
    with store.begin() as txn:
        for lo in bounds:
            for hi in bounds:
                for reverse in (False, True):
                    expected = [(key, value) for key, value in sorted(model.items())
                                if (lo is None or key >= (lo,)) and (hi is None or key < (hi,))]
                    if reverse:
                        expected.reverse()
                    args = (lo, hi)
                    assert list(coll.items(*args, reverse=reverse, txn=txn)) == expected, args
                    assert list(coll.keys(*args, reverse=reverse, txn=txn)) == [
                        key for key, _ in expected]
                    assert list(coll.values(*args, reverse=reverse, txn=txn)) == [
                        value for _, value in expected]
        by_tag = sorted(((value['tag'],), key) for key, value in model.items())
        assert list(tags.items(txn=txn)) == [(tup, model[key]) for tup, key in by_tag]
        assert list(tags.values(reverse=True, txn=txn)) == [model[key] for _, key in
                                                            reversed(by_tag)]
    store.close()


# --- RecordReader: what scans and record reads return --------------------------------

def test_a_scan_longer_than_an_engine_chunk_yields_every_record():
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    coll.put_many({'k': k} for k in range(3000))
    assert list(coll.keys()) == [(k,) for k in range(3000)]
    assert list(coll.values(reverse=True)) == [{'k': k} for k in reversed(range(3000))]
    store.close()


@pytest.mark.parametrize('reverse', [False, True])
def test_a_scan_goes_on_past_a_write_its_transaction_makes(reverse):
    """The scan starts again after its last key and sees the write."""
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    coll.put_many({'k': k} for k in range(1, 20, 2))
    with store.begin(write=True) as txn:
        scan = coll.keys(reverse=reverse, txn=txn)
        first = next(scan)
        coll.put({'k': 10}, txn=txn)
        coll.put({'k': 0 if not reverse else 30}, txn=txn)     # behind the scan: not seen
        rest = list(scan)
    odd = [(k,) for k in range(1, 20, 2)]
    expected = sorted(odd + [(10,)], reverse=reverse)
    assert [first] + rest == expected
    store.close()


def test_get_rec_reads_in_a_read_transaction_and_returns_the_default():
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    coll.put({'k': 1, 'v': 'a'})
    with store.begin() as txn:
        record = coll.get(1, rec=True, txn=txn)
        assert (record.key, record.data) == ((1,), {'k': 1, 'v': 'a'})
        assert coll.get(2, 'none', rec=True, txn=txn) == 'none'
    assert coll.get(2, default=('d',), rec=True) == ('d',)
    store.close()
