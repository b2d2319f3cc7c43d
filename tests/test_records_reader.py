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
