"""centidb.collection: put, get, delete and reads of a collection's records, on every engine.

Keys (key functions and the counter), ``Record`` reuse, encoders and packers
per put, what a failing put leaves behind (nothing), and keys too long for
the engine. Query parameters are in ``test_query.py``, indexes in
``test_index.py``, batches in ``test_batch_view.py``.
"""

import gc
import json
import operator
import threading

import pytest

import centidb
from centidb import checksums, encodings, keylib
from centidb.encodings import Encoder, make_json_encoder
from centidb.engines import MemoryEngine, TraceEngine
from centidb.errors import CorruptRecordError, TransactionError, UnsupportedKeyTypeError

from stores import (
    PEOPLE, Boom, by_id, contents, engine_keys, fails_cleanly, list_store, open_store,
    people, tag_of,
)


# --- reads -------------------------------------------------------------------

def test_keys_and_reads(store):
    coll = people(store)
    assert coll.get(('ash', 'LONDON'))['tags'] == ['b']
    assert coll.get(('nobody', 'X')) is None
    assert coll.get(('nobody', 'X'), default=0) == 0
    assert list(coll.keys()) == sorted((p['name'], p['location']) for p in PEOPLE)
    assert len(coll) == 4 and coll.count() == 4
    assert coll.get_many([('ash', 'LONDON'), ('x', 'y')], default='-')[1] == '-'
    record = coll.get(('ash', 'LONDON'), rec=True)
    assert isinstance(record, centidb.Record) and record.key == ('ash', 'LONDON')
    raw = coll.get(('ash', 'LONDON'), raw=True)
    assert encodings.make_msgpack_encoder().unpack(raw)['name'] == 'ash'


# --- keys: key functions and the counter -------------------------------------

def test_auto_increment_keys(store):
    coll = store.collection('log')
    assert coll.put('first').key == (1,)
    assert coll.put('second').key == (2,)
    assert coll.put('explicit', key=10).key == (10,)
    # The counter stays above every (n,) key: it never hands out 10 again.
    assert coll.put('third').key == (11,)
    assert coll.put('low', key=5).key == (5,)
    assert coll.put('named', key=('x', 1)).key == ('x', 1)
    assert coll.put('fourth').key == (12,)
    assert list(coll.values()) == ['first', 'second', 'low', 'explicit', 'third', 'fourth',
                                   'named']


def test_txn_key_func(store):
    coll = store.collection('t', txn_key_func=lambda txn, rec: store.count('ids', txn=txn))
    with store.begin(write=True) as txn:
        assert coll.put('a', txn=txn).key == (1,)
        assert coll.put('b', txn=txn).key == (2,)
    assert store.count('ids', n=0) == 3


def test_key_func_returning_none_does_not_fall_back_to_counter():
    """Regression: key_func(rec) returning None silently got a counter key."""
    store = list_store()
    coll = store.collection('c', key_func=operator.itemgetter('id'))
    rec = coll.put({'id': None})
    assert rec.key != (1,)


def test_keyless_put_into_an_indexed_collection_points_entries_at_the_counter_key(store):
    log = store.collection('log')
    tags = log.add_index('tags', lambda r: r['tags'])
    assert log.put({'tags': ['a', 'b']}).key == (1,)
    assert log.put({'tags': ['b']}).key == (2,)
    assert list(tags.pairs()) == [(('a',), (1,)), (('b',), (1,)), (('b',), (2,))]
    assert engine_keys(store, tags.prefix) == [
        keylib.packs([(tag,), (key,)], tags.prefix)
        for tag, key in (('a', 1), ('b', 1), ('b', 2))]
    assert tags.get('b') == {'tags': ['a', 'b']}
    with store.begin(write=True) as txn:
        assert log.put({'tags': ['c']}, txn=txn).key == (3,)
        assert tags.get('c', txn=txn) == {'tags': ['c']}
    assert store.count('log:key', n=0) == 4
    # An explicit key over a counter key: stale entries go, the counter stays.
    log.put({'tags': ['z']}, key=1)
    log.delete(2)
    assert list(tags.pairs()) == [(('c',), (3,)), (('z',), (1,))]
    assert store.count('log:key', n=0) == 4


def test_keyless_put_with_an_inexact_encoder_indexes_the_decoded_record(store):
    # JSON gives a tuple back as a list, which the index function turns into
    # one entry per element: the same entries a keyed put makes.
    coll = store.collection('j', encoder=make_json_encoder())
    pair = coll.add_index('pair', lambda r: r['pair'])
    assert coll.put({'pair': (7, 'x')}).key == (1,)
    coll.put({'pair': (7, 'x')}, key=10)
    expected = [((7,), (1,)), ((7,), (10,)), (('x',), (1,)), (('x',), (10,))]
    assert list(pair.pairs()) == sorted(expected, key=lambda e: keylib.packs(list(e)))


def test_keyless_put_moves_the_counter_only_when_it_succeeds(store):
    """A failed put takes no counter value, in a transaction of its own or
    inside the caller's (which it does not abort either)."""
    log = store.collection('log')
    log.add_index('n', lambda r: r['n'])
    assert log.put({'n': 0}).key == (1,)
    failing = [
        (KeyError, lambda: log.put({'no n': 1})),                       # index function
        (UnsupportedKeyTypeError, lambda: log.put({'n': {'a': 1}})),    # index tuple
        (TypeError, lambda: log.put({'n': 1, 'x': object()})),          # encoder
    ]
    for exc, call in failing:
        fails_cleanly(store, exc, call)
        assert store.count('log:key', n=0) == 2
    with store.begin(write=True) as txn:
        for exc, call in failing:
            with pytest.raises(exc):
                call()
            assert store.count('log:key', n=0, txn=txn) == 2
        assert log.put({'n': 1}).key == (2,)
    with store.begin(write=True) as txn:
        assert log.put({'n': 2}).key == (3,)
        txn.abort()
    assert store.count('log:key', n=0) == 3
    assert list(log.items()) == [((1,), {'n': 0}), ((2,), {'n': 1})]
    assert list(log.indices['n'].pairs()) == [((0,), (1,)), ((1,), (2,))]


# --- put and delete of Records -----------------------------------------------

def test_delete_of_unstored_record_deletes_nothing():
    """Regression: Record(coll, data) has key None; delete() once turned it
    into key (None,)."""
    store = list_store()
    coll = store.collection('c')
    coll.put('keep', key=(None,))
    with pytest.raises(ValueError, match='never stored'):
        coll.delete(centidb.Record(coll, 'other'))
    assert coll.get((None,)) == 'keep'


def test_record_read_before_an_index_was_added_updates_it(store):
    """Regression: put(record) reused the index entries the Record remembered
    from its read instead of decoding the stored version, although an index
    was added since: the new index's entry for the old value stayed."""
    coll = store.collection('c', key_func=lambda r: r['k'])
    coll.put({'k': 1, 't': 'x'})
    record = coll.get(1, rec=True)
    index = coll.add_index('t', lambda r: r['t'])
    record.data['t'] = 'y'
    coll.put(record)
    assert list(index.pairs()) == [(('y',), (1,))]


def test_record_whose_stored_version_changed_since_its_read_decodes_the_new_one(store):
    """put(record) reuses the entries a Record remembers only while the store
    still holds the bytes it read: after another put, the entries of the
    version stored now are the stale ones, found by decoding it."""
    coll = store.collection('c', key_func=lambda r: r['k'])
    index = coll.add_index('t', lambda r: r['t'])
    coll.put({'k': 1, 't': 'x'})
    with store.begin(write=True) as txn:
        record = coll.get(1, rec=True, txn=txn)
        coll.put({'k': 1, 't': 'y'}, txn=txn)
        record.data['t'] = 'z'
        assert coll.put(record, txn=txn).key == (1,)
    assert list(index.pairs()) == [(('z',), (1,))]
    assert coll.get(1) == {'k': 1, 't': 'z'}


def test_put_of_a_record_read_in_its_transaction_reads_it_no_more():
    """A Record read (or returned by put) in a transaction that has written
    nothing since holds what the store holds: put() of it skips reading the
    stored version again. After any write in between, or in another
    transaction, it reads it; the index ends right either way."""
    engine = TraceEngine(MemoryEngine())
    store = centidb.Store(engine)
    coll = store.collection('c', key_func=lambda r: r['k'])
    index = coll.add_index('t', lambda r: r['t'])
    coll.put({'k': 1, 't': 'a'})
    coll.put({'k': 2, 't': 'b'})

    def put_reads(record, tag, txn):
        record.data['t'] = tag
        before = engine.counts['txn.get']
        record = coll.put(record, txn=txn)
        return record, engine.counts['txn.get'] - before

    with store.begin(write=True) as txn:
        record = coll.get(1, rec=True, txn=txn)
        record, reads = put_reads(record, 'c', txn)
        assert reads == 0
        record, reads = put_reads(record, 'd', txn)     # the Record put returned
        assert reads == 0
        coll.put({'k': 1, 't': 'e'}, txn=txn)           # written since
        record, reads = put_reads(record, 'f', txn)
        assert reads == 1
        coll.put({'k': 2, 't': 'g'}, txn=txn)           # another record written since
        record, reads = put_reads(record, 'h', txn)
        assert reads == 1
    with store.begin(write=True) as txn:
        record, reads = put_reads(record, 'i', txn)
        assert reads == 1
    assert list(index.pairs()) == [(('g',), (2,)), (('i',), (1,))]
    assert coll.get(1) == {'k': 1, 't': 'i'}


def test_put_of_a_record_under_another_key_reads_that_key(store):
    """A Record put under another key, given or set on the Record, even one
    equal to its own as a tuple (``True == 1``) but packed apart, reads the
    stored version of that key: neither record's entries go wrong."""
    coll = store.collection('c', key_func=lambda r: r['k'])
    index = coll.add_index('t', lambda r: r['t'])
    coll.put({'k': 1, 't': 'a'})
    coll.put({'k': 2, 't': 'x'})
    with store.begin(write=True) as txn:
        record = coll.get(1, rec=True, txn=txn)
        record.key = (2,)
        coll.put(record, txn=txn)
    with store.begin(write=True) as txn:
        record = coll.get(1, rec=True, txn=txn)
        coll.put(record, key=True, txn=txn)
    assert list(index.pairs()) == [(('a',), (1,)), (('a',), (True,)), (('a',), (2,))]


def test_a_record_holds_no_transaction_open():
    """A Record keeps a token of the transaction it was read in, not the
    transaction: a write transaction dropped unended, whose Record lives on,
    still lets another thread write."""
    store = list_store()
    coll = store.collection('c', key_func=lambda r: r['k'])
    coll.add_index('t', lambda r: r['t'])

    def session():
        txn = store.begin(write=True)
        coll.put({'k': 1, 't': 'a'}, txn=txn)
        return coll.get(1, rec=True, txn=txn)      # txn dropped, never ended

    record = session()
    gc.collect()
    written = []

    def writer():
        with store.begin(write=True) as txn:
            coll.put({'k': 2, 't': 'b'}, txn=txn)
        written.append(True)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert written == [True] and record.key == (1,)
    assert coll.get(1) is None and coll.get(2) == {'k': 2, 't': 'b'}


def test_record_from_another_collection_does_not_skip_the_old_read(store):
    """Regression: put() of a Record read from another collection, with the
    same key and stored bytes, reused that collection's (empty) index entries
    as the old version's: this collection's old entry stayed."""
    a = store.collection('a', key_func=lambda r: r['k'])
    b = store.collection('b', key_func=lambda r: r['k'])
    index = b.add_index('t', lambda r: r['t'])
    record = a.put({'k': 1, 't': 'x'})
    b.put({'k': 1, 't': 'x'})
    record.data = {'k': 1, 't': 'y'}
    b.put(record)
    assert list(index.pairs()) == [(('y',), (1,))]


def test_put_calls_each_user_function_once_and_a_read_record_skips_the_old_decode():
    """The key and index functions run once per put on every path; a put over
    an existing record also indexes the old version (decoded) to find its
    stale entries, except for a Record read or stored in this state, whose
    entries are remembered."""
    calls = []

    def key_of(rec):
        calls.append('key')
        return rec['id']

    def tag_of_logged(rec):
        calls.append('tag')
        return rec['tag']

    store = list_store()
    coll = store.collection('c', key_func=key_of)
    tags = coll.add_index('tag', tag_of_logged)
    steps = [
        (lambda: coll.put({'id': 1, 'tag': 'a'}), ['key', 'tag']),          # new
        (lambda: coll.put({'id': 1, 'tag': 'b'}), ['key', 'tag', 'tag']),   # over the old
        (lambda: coll.put({'id': 1, 'tag': 'c'}, packer=encodings.ZLIB_PACKER),
         ['key', 'tag', 'tag']),
        (lambda: coll.put({'id': 2, 'tag': 'x'}, blind=True), ['key', 'tag']),
    ]
    for put, expected in steps:
        calls.clear()
        put()
        assert calls == expected
    record = coll.get(1, rec=True)
    for change in ('d', 'e'):
        calls.clear()
        record.data['tag'] = change
        record = coll.put(record)                   # a Record put returns the new state
        assert calls == ['tag'] and record.key == (1,)
    assert list(tags.pairs()) == [(('e',), (1,)), (('x',), (2,))]
    assert coll.get(1) == {'id': 1, 'tag': 'e'}


def test_blind_put_over_an_existing_key_leaves_the_old_entries_on_every_path(store):
    """The documented cost of a broken ``blind=True`` promise, on the
    common-case writer, with packer= and with a Record: the old record is
    not read, so its entries that differ stay, pointing at the new one."""
    coll = store.collection('c', key_func=by_id)
    tags = coll.add_index('tag', tag_of)
    puts = [lambda rec: coll.put(rec, blind=True),
            lambda rec: coll.put(rec, blind=True, packer=encodings.ZLIB_PACKER),
            lambda rec: coll.put(centidb.Record(coll, rec), blind=True)]
    for i, put in enumerate(puts):
        coll.put({'id': i, 'tag': 'old'})
        assert put({'id': i, 'tag': 'new'}).key == (i,)
        assert coll.get(i) == {'id': i, 'tag': 'new'}
        assert [tup for tup, key in tags.pairs() if key == (i,)] == [('new',), ('old',)]


# --- encoders and packers ----------------------------------------------------

def test_packers_and_custom_encoders(store):
    reverse = encodings.Encoder('reverse', lambda b: b[::-1], lambda b: b[::-1])
    store.add_encoder(reverse)
    coll = store.collection('packed', key_func=lambda r: r['k'], packer=encodings.ZLIB_PACKER)
    coll.put({'k': 1, 'text': 'x' * 1000})
    coll.put({'k': 2, 'text': 'y'}, packer=reverse)
    if encodings.LZ4_PACKER is not None:
        coll.put({'k': 3, 'text': 'z' * 50}, packer=encodings.LZ4_PACKER)
    assert coll.get(1)['text'] == 'x' * 1000
    assert coll.get(2)['text'] == 'y'
    json_coll = store.collection('json', encoder=encodings.make_json_encoder())
    json_coll.put({'tuple': (1, 2)})
    assert json_coll.get(1) == {'tuple': [1, 2]}
    pickled = store.collection('pickled', encoder=encodings.PICKLE_ENCODER)
    pickled.put({'tuple': (1, 2)})
    assert pickled.get(1) == {'tuple': (1, 2)}


# --- a failing put writes nothing --------------------------------------------

@pytest.mark.parametrize('bad_key, type_name', [
    (object(), 'object'), ((1, [2]), 'list'), ({'a': 1}, 'dict'),
    ((1, {2}), 'set'), (1j, 'complex'),
])
def test_key_func_returning_unsupported_type(store, bad_key, type_name):
    coll = store.collection('docs', key_func=lambda rec: bad_key)
    err = fails_cleanly(store, TypeError, lambda: coll.put({'x': 1}),
                        match=repr(type_name))
    assert isinstance(err, UnsupportedKeyTypeError)
    assert list(coll.items()) == []


def test_key_func_exception_propagates(store):
    error = Boom('no key for you')

    def key_func(rec):
        raise error

    coll = store.collection('docs', key_func=key_func)
    coll.add_index('tag', tag_of)
    assert fails_cleanly(store, Boom, lambda: coll.put({'tag': 'a'})) is error


def test_txn_key_func_exception_propagates(store):
    def txn_key_func(txn, rec):
        raise Boom('txn key')

    coll = store.collection('docs', txn_key_func=txn_key_func)
    fails_cleanly(store, Boom, lambda: coll.put({'id': 1}), match='txn key')


def test_index_function_raising(docs):
    store = docs.store
    failing = set()

    def exploding(rec):
        if rec['id'] in failing:
            raise Boom('index')
        return rec['id']

    docs.add_index('exploding', exploding)
    failing.add(2)
    fails_cleanly(store, Boom, lambda: docs.put({'id': 2, 'tag': 'b'}))
    # Over an existing record (whose old entries the function computes
    # too), and on delete: the old version and its entries stay.
    docs.put({'id': 3, 'tag': 'c'})
    failing.add(3)
    fails_cleanly(store, Boom, lambda: docs.put({'id': 3, 'tag': 'd'}))
    fails_cleanly(store, Boom, lambda: docs.delete(3))
    assert docs.get(3) == {'id': 3, 'tag': 'c'}
    assert list(docs.indices['exploding'].keys()) == [(1,), (3,)]


def test_index_function_raising_on_counter_key(store):
    # Without key_func the key comes from a counter: a failed put must not
    # consume a counter value either.
    coll = store.collection('auto')
    coll.add_index('boom', lambda rec: rec['missing'])
    fails_cleanly(store, KeyError, lambda: coll.put({'a': 1}))
    assert store.count('auto:key', n=0) == 1


@pytest.mark.parametrize('bad', [
    lambda rec: object(), lambda rec: [1, object()], lambda rec: (1, [2]),
    lambda rec: [{'a': 1}],
])
def test_index_function_returning_unsupported_type(docs, bad):
    # Only the new record gets a bad result: add_index fills in record 1.
    docs.add_index('bad', lambda rec: bad(rec) if rec['id'] == 2 else None)
    err = fails_cleanly(docs.store, UnsupportedKeyTypeError,
                        lambda: docs.put({'id': 2, 'tag': 'b'}),
                        match='cannot encode key element of type')
    assert isinstance(err, TypeError)


def test_msgpack_encoder_raising(docs):
    err = fails_cleanly(docs.store, TypeError,
                        lambda: docs.put({'id': 2, 'tag': 'b', 'x': object()}))
    assert 'object' in str(err)
    # An update that cannot be encoded keeps the old version and its entries.
    fails_cleanly(docs.store, TypeError,
                  lambda: docs.put({'id': 1, 'tag': 'z', 'x': object()}))
    assert docs.get(1) == {'id': 1, 'tag': 'a'}
    assert list(docs.indices['tag'].pairs()) == [(('a',), (1,))]


def test_json_encoder_rejects_bytes(store):
    coll = store.collection('j', key_func=by_id, encoder=make_json_encoder())
    coll.put({'id': 1, 's': 'text'})
    fails_cleanly(store, TypeError, lambda: coll.put({'id': 2, 'b': b'raw'}),
                  match='bytes')
    assert coll.get(1) == {'id': 1, 's': 'text'}


def test_custom_encoder_raising(store):
    def pack(value):
        raise Boom('cannot pack')

    enc = store.add_encoder(Encoder('picky', pack, json.loads))
    coll = store.collection('p', key_func=by_id, encoder=enc)
    fails_cleanly(store, Boom, lambda: coll.put({'id': 1}))


def test_custom_packer_raising(docs):
    def pack(data):
        raise Boom('cannot compress')

    packer = docs.store.add_encoder(Encoder('failing', pack, bytes))
    fails_cleanly(docs.store, Boom, lambda: docs.put({'id': 2}, packer=packer))


# --- the transaction a write runs in -----------------------------------------

def test_writes_refuse_a_txn_they_cannot_write_in():
    """On the common-case writer (key_func, no packer, blind or not) and the
    general paths (packer=, counter keys, delete): a txn that is not a
    transaction of this store raises TypeError, an ended or read-only one
    TransactionError, before any user function runs or anything is written,
    in this store or the other."""
    calls = []

    def key_of(rec):
        calls.append('key')
        return rec['id']

    store, other = list_store(), list_store()
    coll = store.collection('c', key_func=key_of)
    coll.add_index('tag', lambda rec: calls.append('tag') or rec['tag'])
    log = store.collection('log')
    coll.put({'id': 1, 'tag': 'a'})
    with store.begin(write=True) as ended:
        pass
    other.collection('c', key_func=by_id)
    other_txn = other.begin(write=True)
    other_before = contents(other, other_txn)
    read_txn = store.begin()
    writes = [lambda txn: coll.put({'id': 1, 'tag': 'b'}, txn=txn),
              lambda txn: coll.put({'id': 2, 'tag': 'b'}, txn=txn, blind=True),
              lambda txn: coll.put({'id': 1, 'tag': 'b'}, txn=txn, packer=encodings.ZLIB_PACKER),
              lambda txn: log.put('x', txn=txn),
              lambda txn: coll.delete(1, txn=txn)]
    calls.clear()
    for txn, exc, match in (('txn', TypeError, "^txn must be a transaction from this store"),
                            (other_txn, TypeError, "^txn must be a transaction from this store"),
                            (read_txn, TransactionError, '^cannot write in a read-only'),
                            (ended, TransactionError, '^this transaction has already ended')):
        for write in writes:
            fails_cleanly(store, exc, lambda: write(txn), match=match)
    assert calls == []
    assert contents(other, other_txn) == other_before
    other_txn.abort()
    read_txn.abort()
    assert list(coll.items()) == [((1,), {'id': 1, 'tag': 'a'})]


def test_put_counts_its_writes_in_the_engine_transaction(store):
    """``EngineTransaction.fast.writes`` counts every put and delete (iterators
    compare it to notice the transaction's own writes), on the engines' fast
    path for several keys too."""
    coll = store.collection('c', key_func=by_id)
    coll.add_index('tags', lambda r: r['tags'])
    with store.begin(write=True) as txn:
        etxn = txn.engine_txn
        before = etxn.fast.writes
        coll.put({'id': 1, 'tags': ['a', 'b']}, txn=txn)        # the record and 2 entries
        assert etxn.fast.writes - before == 3
        # 1 stale entry deleted; the record put; the entry for 'b', already
        # stored, is not written again.
        coll.put({'id': 1, 'tags': ['b']}, txn=txn)
        assert etxn.fast.writes - before == 5
        coll.put({'id': 1, 'tags': ['b', 'c']}, txn=txn)        # the record and 1 new entry
        assert etxn.fast.writes - before == 7
    assert list(coll.indices['tags'].pairs()) == [(('b',), (1,)), (('c',), (1,))]


# --- deletes from a batched collection ---------------------------------------

def test_delete_from_a_batch_writes_the_other_members_back_as_one_batch():
    store = list_store()
    coll = store.collection('c', key_func=by_id)
    tags = coll.add_index('tag', tag_of)
    for i in range(1, 6):
        coll.put({'id': i, 'tag': i % 2})
    coll.batch()
    assert len(engine_keys(store, coll.prefix)) == 1
    assert coll.delete(3) == centidb.Record(coll, {'id': 3, 'tag': 1}, (3,))
    assert len(engine_keys(store, coll.prefix)) == 1
    assert list(coll.keys()) == [(1,), (2,), (4,), (5,)]
    assert list(tags.pairs()) == [((0,), (2,)), ((0,), (4,)), ((1,), (1,)), ((1,), (5,))]
    assert coll.delete(3) is None


# --- bad arguments -----------------------------------------------------------

def test_collection_bad_arguments(store):
    for kwargs, exc in (({'key_func': by_id, 'txn_key_func': lambda t, r: 1}, ValueError),
                        ({'key_func': 'id'}, TypeError),
                        ({'txn_key_func': 3}, TypeError)):
        fails_cleanly(store, exc, lambda: store.collection('docs', **kwargs))
    for name in ('', None, b'docs', 1):
        fails_cleanly(store, TypeError, lambda: store.collection(name))
    docs = store.collection('docs', key_func=by_id)
    fails_cleanly(store, ValueError, lambda: store.collection('docs', key_func=tag_of),
                  match='another key function')
    for name, func in (('', tag_of), (None, tag_of), ('x', 'not callable')):
        fails_cleanly(store, TypeError, lambda: docs.add_index(name, func))
    docs.add_index('tag', tag_of)
    fails_cleanly(store, ValueError, lambda: docs.add_index('tag', tag_of),
                  match='already added')
    fails_cleanly(store, KeyError, lambda: docs.drop_index('missing'))


# --- keys too long for the engine (LMDB: 511 bytes) --------------------------

LMDB_LIMIT = 511


@pytest.fixture
def lmdb_store(tmp_path):
    store = open_store('LmdbEngine', tmp_path)
    assert store.engine.max_key_size == LMDB_LIMIT
    yield store
    store.close()


def _key_of_size(size, pack):
    """A key tuple whose ``pack(key)`` is exactly `size` bytes long."""
    for n in range(size):
        for extra in ((), (None,), (300,)):
            key = ('k' * n,) + extra
            if len(pack(key)) == size:
                return key
    raise AssertionError(f'no key packs to {size} bytes')


def test_put_in_joined_txn_is_all_or_nothing_when_engine_rejects_entry(tmp_path):
    """Regression: the engine rejects an over-long index entry (LMDB: 511
    bytes) after put() had already deleted the old entries and written the
    record: inside a user transaction the record was replaced and its index
    entry gone."""
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'))
    coll = store.collection('c')
    idx = coll.add_index('t', lambda r: r['t'])
    coll.put({'t': 'old'}, key='k')
    with store.begin(write=True):
        with pytest.raises(ValueError, match="index 't' entry"):
            coll.put({'t': 'x' * 600}, key='k')
        assert coll.get('k') == {'t': 'old'}
        assert list(idx.pairs()) == [(('old',), ('k',))]
    store.close()


@pytest.mark.parametrize('batched', [False, True], ids=['plain', 'batched'])
@pytest.mark.parametrize('packer', [None, encodings.ZLIB_PACKER], ids=['default', 'zlib'])
def test_lmdb_key_too_long_is_refused_before_writing(lmdb_store, packer, batched):
    """A key one byte over the engine's max_key_size raises ValueError naming
    it, before anything is written, on every put path (the common-case
    writer, packer=, a Record, blind, a batched collection); the limit
    itself fits."""
    store = lmdb_store
    coll = store.collection('c', key_func=lambda r: r['k'])
    coll.add_index('tag', tag_of)       # no entry without a tag
    coll.put({'k': 'a', 'tag': 'a'})
    if batched:
        coll.batch()
    longest = _key_of_size(LMDB_LIMIT, lambda key: keylib.packs(key, coll.prefix))
    too_long = _key_of_size(LMDB_LIMIT + 1, lambda key: keylib.packs(key, coll.prefix))
    message = (r"^key \('k+',.*\) of collection 'c' packs to 512 bytes; "
               r'the engine stores at most 511$')
    for call in (lambda: coll.put({'k': too_long}, packer=packer),
                 lambda: coll.put({'k': 'a'}, key=too_long, packer=packer),
                 lambda: coll.put({'k': too_long}, blind=True, packer=packer),
                 lambda: coll.put(centidb.Record(coll, {'k': 'b'}, too_long), packer=packer)):
        fails_cleanly(store, ValueError, call, match=message)
    with store.begin(write=True) as txn:
        with pytest.raises(ValueError, match=message):
            coll.put({'k': too_long}, packer=packer)
        with pytest.raises(ValueError, match=message):
            coll.put({'k': too_long}, txn=txn, packer=packer)
        assert list(coll.keys(txn=txn)) == [('a',)]
    assert coll.put({'k': longest}, packer=packer).key == longest     # the limit fits
    assert coll.get(longest) == {'k': longest}
    assert list(coll.keys()) == [('a',), longest]


@pytest.mark.parametrize('packer', [None, encodings.ZLIB_PACKER], ids=['default', 'zlib'])
def test_lmdb_index_entry_too_long_is_refused_before_writing(lmdb_store, packer):
    """The same for an index entry: the ValueError names the index and the
    record key, and the old version and its entries stay."""
    store = lmdb_store
    coll = store.collection('c', key_func=lambda r: r['k'])
    tags = coll.add_index('tag', tag_of)
    coll.put({'k': 'z', 'tag': 'old'})
    longest = _key_of_size(LMDB_LIMIT, lambda tup: keylib.packs([tup, ('z',)], tags.prefix))
    too_long = _key_of_size(LMDB_LIMIT + 1, lambda tup: keylib.packs([tup, ('z',)], tags.prefix))
    message = (r"^index 'tag' entry for key \('z',\) packs to 512 bytes; "
               r'the engine stores at most 511$')
    before = contents(store)
    for call in (lambda: coll.put({'k': 'z', 'tag': too_long}, packer=packer),
                 lambda: coll.put({'k': 'z', 'tag': too_long}, blind=True, packer=packer),
                 lambda: coll.put(centidb.Record(coll, {'k': 'z', 'tag': too_long}, ('z',)),
                                  packer=packer)):
        fails_cleanly(store, ValueError, call, match=message)
    with store.begin(write=True):
        with pytest.raises(ValueError, match=message):
            coll.put({'k': 'z', 'tag': too_long}, packer=packer)
    assert contents(store) == before
    assert coll.get('z') == {'k': 'z', 'tag': 'old'}
    assert list(tags.pairs()) == [(('old',), ('z',))]
    coll.put({'k': 'z', 'tag': longest}, packer=packer)               # the limit fits
    assert list(tags.pairs()) == [(longest, ('z',))]


def test_lmdb_index_entry_too_long_with_a_counter_key_keeps_the_counter(lmdb_store):
    store = lmdb_store
    log = store.collection('log')
    log.add_index('tag', tag_of)
    log.put({'tag': 'a'})
    fails_cleanly(store, ValueError, lambda: log.put({'tag': 'x' * 600}),
                  match=r"^index 'tag' entry for key \(2,\) packs to \d+ bytes")
    assert store.count('log:key', n=0) == 2
    assert log.put({'tag': 'b'}).key == (2,)


def test_lmdb_index_entry_too_long_with_a_counter_key_in_a_write_txn(lmdb_store):
    """Regression: the counter moved before the key sizes were checked, so a
    refused put inside a caller's write transaction used up a key."""
    store = lmdb_store
    log = store.collection('log')
    log.add_index('tag', tag_of)
    with store.begin(write=True) as txn:
        with pytest.raises(ValueError, match="index 'tag' entry"):
            log.put({'tag': 'x' * 600})
        assert store.count('log:key', n=0, txn=txn) == 1


def test_lmdb_get_of_a_key_too_long_returns_the_default(lmdb_store):
    # No record can have such a key, so reads find nothing rather than fail.
    store = lmdb_store
    coll = store.collection('c', key_func=lambda r: r['k'])
    tags = coll.add_index('tag', tag_of)
    coll.put({'k': 'a', 'tag': 'a'})
    too_long = ('k' * 600,)
    assert len(keylib.packs(too_long, coll.prefix)) > LMDB_LIMIT
    assert coll.get(too_long) is None
    assert coll.get(too_long, default='-') == '-'
    assert coll.get(too_long, rec=True) is None and coll.get(too_long, raw=True) is None
    assert coll.get_many([too_long, 'a'], default='-') == ['-', {'k': 'a', 'tag': 'a'}]
    with store.begin() as txn:
        assert coll.get(too_long, default='-', txn=txn) == '-'
    with store.begin(write=True) as txn:
        assert coll.get(too_long, default='-', txn=txn) == '-'
        assert coll.delete(too_long, txn=txn) is None
    assert tags.get(too_long, default='-') == '-' and not tags.has(too_long)
    assert list(coll.items()) == [(('a',), {'k': 'a', 'tag': 'a'})]


# --- malformed stored values ---------------------------------------------------

@pytest.mark.parametrize('stored, why', [
    (b'', 'empty'),
    (b'\x04\xc1', 'cannot be decoded'),             # 0xc1: never used by msgpack
    (b'\x04\x92\x01', 'cannot be decoded'),         # an array cut short
    (b'\x04\x01\x02', 'cannot be decoded'),         # extra data after a value
    (b'\x7f\x01', 'packer id 127'),                 # a packer the store never numbered
])
@pytest.mark.parametrize('checksum', [False, True], ids=['plain', 'checksum'])
def test_malformed_stored_values_raise_centidb_errors(store, stored, why, checksum):
    """With checksums, the bad bytes carry a valid trailer: the decoder meets them."""
    coll = store.collection('c', key_func=lambda rec: rec['k'], checksum=checksum)
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    coll.put({'k': 1, 'tag': 'a'})
    store.engine.put(keylib.packs((1,), coll.prefix),
                     checksums.seal(stored) if checksum else stored)
    readers = [lambda: coll.get(1), lambda: list(coll.values()), lambda: list(coll.items()),
               lambda: tags.get('a'), lambda: list(tags.values()),
               lambda: coll.get_many([1]), lambda: coll.delete(1),
               lambda: coll.put({'k': 1, 'tag': 'b'})]
    for read in readers:
        with pytest.raises(centidb.errors.CentiError, match=why) as info:
            read()
        assert "'c'" in str(info.value)
    with store.begin() as txn:
        with pytest.raises(centidb.errors.CentiError, match=why):
            coll.get(1, txn=txn)
    assert coll.put({'k': 1, 'tag': 'b'}, blind=True).key == (1,)   # a blind put repairs it
    assert coll.get(1) == {'k': 1, 'tag': 'b'}


def test_put_whose_old_version_cannot_be_indexed_or_decoded_writes_nothing(store):
    """Finding the stale entries indexes the stored version (LMDB reads it by
    replacing it with the new one, so it puts it back): when that raises, the
    put writes nothing, alone or inside a transaction that goes on."""
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    failing = []

    def tag(rec):
        if failing and rec['tag'] == 'old':
            raise Boom('the old version')
        return rec['tag']

    index = coll.add_index('tag', tag)
    coll.put({'k': 1, 'tag': 'old'})
    failing.append(True)
    fails_cleanly(store, Boom, lambda: coll.put({'k': 1, 'tag': 'new'}))
    with store.begin(write=True) as txn:
        with pytest.raises(Boom):
            coll.put({'k': 1, 'tag': 'new'}, txn=txn)
        assert coll.get(1, txn=txn) == {'k': 1, 'tag': 'old'}
        coll.put({'k': 2, 'tag': 'two'}, txn=txn)
    assert coll.get(1) == {'k': 1, 'tag': 'old'}
    assert list(index.pairs()) == [(('old',), (1,)), (('two',), (2,))]
    store.engine.put(keylib.packs((2,), coll.prefix), b'\x04\xc1')
    fails_cleanly(store, CorruptRecordError, lambda: coll.put({'k': 2, 'tag': 'b'}))
    with store.begin(write=True) as txn:
        with pytest.raises(CorruptRecordError):
            coll.put({'k': 2, 'tag': 'b'}, txn=txn)
        coll.put({'k': 3, 'tag': 'three'}, txn=txn)
    assert store.engine.get(keylib.packs((2,), coll.prefix)) == b'\x04\xc1'
    assert list(index.pairs()) == [(('old',), (1,)), (('three',), (3,)), (('two',), (2,))]


def test_put_over_an_undecodable_record_names_its_key():
    """Finding a stored record's stale entries decodes it: on the common-case
    writer and with packer=, the error names the collection and the key."""
    store = list_store()
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    coll.add_index('tag', lambda rec: rec['tag'])
    coll.put({'k': 1, 'tag': 'a'})
    store.engine.put(keylib.packs((1,), coll.prefix), b'\x04\xc1')
    message = r"^collection 'c': the record under key \(1,\) cannot be decoded"
    fails_cleanly(store, CorruptRecordError, lambda: coll.put({'k': 1, 'tag': 'b'}),
                  match=message)
    fails_cleanly(store, CorruptRecordError,
                  lambda: coll.put({'k': 1, 'tag': 'b'}, packer=encodings.ZLIB_PACKER),
                  match=message)
