"""Error tests for the store, collections, indexes, counters and encoders.

Every bad input must raise the documented exception and leave the store as
it was: each test compares the engine's full contents before and after.
"""

import json

import pytest

import centidb
from centidb import encodings, keylib
from centidb.encodings import Encoder, make_json_encoder, make_msgpack_encoder
from centidb.engines import ListEngine
from centidb.errors import (
    EncoderMismatchError,
    EngineClosedError,
    IndexNotAddedError,
    StoreFormatError,
    TransactionError,
    UnknownEncoderError,
    UnsupportedKeyTypeError,
)

ENGINE_NAMES = ['ListEngine', 'PlyvelEngine', 'LmdbEngine']
DISK_ENGINE_NAMES = ['PlyvelEngine', 'LmdbEngine']


class Boom(Exception):
    """Raised on purpose by user functions in these tests."""


def engine_options(name, directory):
    if name == 'PlyvelEngine':
        return {'name': str(directory / 'leveldb'), 'create_if_missing': True}
    if name == 'LmdbEngine':
        return {'path': str(directory / 'lmdb'), 'sync': False}
    return {}


def contents(store):
    """Everything in the store's engine, as a list of (key, value) bytes."""
    return list(store.engine.items())


def by_id(rec):
    return rec['id']


def tag_of(rec):
    return rec.get('tag')


@pytest.fixture(params=ENGINE_NAMES)
def store(request, tmp_path):
    with centidb.open(request.param, **engine_options(request.param, tmp_path)) as st:
        yield st


@pytest.fixture
def docs(store):
    """A collection keyed by ``id`` with an index on ``tag``, holding one record."""
    coll = store.collection('docs', key_func=by_id)
    coll.add_index('tag', tag_of)
    coll.put({'id': 1, 'tag': 'a'})
    return coll


@pytest.fixture(params=DISK_ENGINE_NAMES)
def reopen(request, tmp_path):
    """A function opening the same on-disk store again (close the last first)."""
    def open_store():
        return centidb.open(request.param, **engine_options(request.param, tmp_path))
    return open_store


def fails_cleanly(store, exc_type, call, match=None):
    """Assert `call()` raises `exc_type` and leaves the engine unchanged."""
    before = contents(store)
    with pytest.raises(exc_type, match=match) as info:
        call()
    assert contents(store) == before
    return info.value


# --- put: user functions and encoders --------------------------------------------

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


def test_add_index_whose_function_raises_on_existing_records(docs):
    fails_cleanly(docs.store, KeyError, lambda: docs.add_index('bad', lambda rec: rec['nope']))
    assert 'bad' not in docs.indices
    docs.put({'id': 2, 'tag': 'b'})  # the failed index does not block writes
    index = docs.add_index('bad', lambda rec: rec.get('nope', 0))
    assert index.count() == 2


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


# --- transactions -----------------------------------------------------------------

def test_writes_in_read_only_txn(docs):
    store = docs.store
    with store.begin() as txn:
        for call in (lambda: docs.put({'id': 2}, txn=txn),
                     lambda: docs.delete(1, txn=txn),
                     lambda: store.count('c', txn=txn)):
            fails_cleanly(store, TransactionError, call, match='read-only')
        assert docs.get(1, txn=txn) == {'id': 1, 'tag': 'a'}
        assert store.count('c', n=0, txn=txn) == 1


def test_txn_from_another_store(docs):
    other = centidb.Store(ListEngine())
    with other.begin(write=True) as txn:
        for call in (lambda: docs.put({'id': 2}, txn=txn),
                     lambda: docs.delete(1, txn=txn),
                     lambda: docs.get(1, txn=txn),
                     lambda: docs.items(txn=txn),
                     lambda: docs.indices['tag'].pairs(txn=txn),
                     lambda: docs.store.count('c', txn=txn)):
            fails_cleanly(docs.store, TypeError, call, match='this store')
    for bad in ('txn', object()):
        fails_cleanly(docs.store, TypeError, lambda: docs.put({'id': 2}, txn=bad))
    other.close()


@pytest.mark.parametrize('end', ['commit', 'abort'])
def test_ended_txn(docs, end):
    store = docs.store
    txn = store.begin(write=True)
    docs.put({'id': 2}, txn=txn)
    getattr(txn, end)()
    for call in (lambda: docs.put({'id': 3}, txn=txn),
                 lambda: docs.delete(1, txn=txn),
                 lambda: docs.get(1, txn=txn),
                 lambda: docs.items(txn=txn),
                 lambda: store.count('c', txn=txn),
                 txn.commit):
        fails_cleanly(store, TransactionError, call, match='already ended')
    txn.abort()  # aborting an ended transaction is a no-op
    assert docs.get(2) == ({'id': 2} if end == 'commit' else None)


def test_nested_write_txn_refused_but_calls_join(docs):
    store = docs.store
    with store.begin(write=True) as txn:
        fails_cleanly(store, TransactionError, lambda: store.begin(write=True),
                      match='already has a write transaction')
        docs.put({'id': 2, 'tag': 'b'})  # no txn=: joins the open one
        assert docs.get(2, txn=txn) == {'id': 2, 'tag': 'b'}
        assert docs.get(2) == {'id': 2, 'tag': 'b'}
        assert [k for k, _ in docs.items()] == [(1,), (2,)]
        assert docs.indices['tag'].get('b') == {'id': 2, 'tag': 'b'}
        assert store.count('c') == 1
        assert store.count('c', n=0, txn=txn) == 2
    assert docs.get(2) == {'id': 2, 'tag': 'b'}
    assert store.count('c', n=0) == 2


def test_joined_calls_roll_back_with_the_block(docs):
    store = docs.store
    before = contents(store)
    with pytest.raises(Boom):
        with store.begin(write=True):
            docs.put({'id': 2, 'tag': 'b'})
            docs.delete(1)
            store.count('c')
            assert docs.get(1) is None and docs.get(2) == {'id': 2, 'tag': 'b'}
            raise Boom('roll back')
    assert contents(store) == before
    # The thread has no write transaction left: a new one can start.
    with store.begin(write=True) as txn:
        docs.put({'id': 3}, txn=txn)
    assert docs.get(3) == {'id': 3}


def test_failed_put_keeps_txn_usable(docs):
    store = docs.store
    before = contents(store)
    with store.begin(write=True) as txn:
        docs.put({'id': 2, 'tag': 'b'}, txn=txn)
        docs.delete(1, txn=txn)
        with pytest.raises(TypeError):
            docs.put({'id': 3, 'x': object()}, txn=txn)
        with pytest.raises(UnsupportedKeyTypeError):
            docs.put({'id': [3]}, txn=txn)
        with pytest.raises(KeyError):
            docs.put({'no id': 3}, txn=txn)
        with pytest.raises(UnsupportedKeyTypeError):
            docs.put({'id': 4, 'tag': {'a': 1}}, txn=txn)  # index tuple
        with pytest.raises(UnsupportedKeyTypeError):
            docs.put({'id': 2, 'tag': [['x']]})  # joined, over an existing key
        assert docs.get(2, txn=txn) == {'id': 2, 'tag': 'b'}
        assert docs.get(1, txn=txn) is None
        docs.put({'id': 5, 'tag': 'b'}, txn=txn)
    assert contents(store) != before
    assert list(docs.items()) == [((2,), {'id': 2, 'tag': 'b'}),
                                  ((5,), {'id': 5, 'tag': 'b'})]
    assert list(docs.indices['tag'].pairs()) == [(('b',), (2,)), (('b',), (5,))]


def test_add_index_and_drop_index_inside_write_txn(docs):
    store = docs.store
    before = contents(store)
    txn = store.begin(write=True)
    docs.put({'id': 2, 'tag': 'b'}, txn=txn)
    fails_cleanly(store, TransactionError, lambda: docs.add_index('new', tag_of),
                  match='add_index')
    fails_cleanly(store, TransactionError, lambda: docs.drop_index('tag'),
                  match='drop_index')
    assert docs.get(2, txn=txn) == {'id': 2, 'tag': 'b'}
    txn.abort()
    assert contents(store) == before
    assert set(docs.indices) == {'tag'}


# --- closed store -------------------------------------------------------------------

def test_closed_store(reopen):
    store = reopen()
    docs = store.collection('docs', key_func=by_id)
    tags = docs.add_index('tag', tag_of)
    docs.put({'id': 1, 'tag': 'a'})
    before = contents(store)
    txn = store.begin()
    store.close()
    for call in (lambda: docs.put({'id': 2}),
                 lambda: docs.delete(1),
                 lambda: docs.get(1),
                 lambda: list(docs.items()),
                 lambda: len(docs),
                 lambda: list(tags.pairs()),
                 lambda: tags.get('a'),
                 lambda: docs.add_index('new', tag_of),
                 lambda: docs.drop_index('tag'),
                 lambda: store.collection('other'),
                 lambda: store.count('c'),
                 lambda: store.begin(),
                 lambda: store.begin(write=True),
                 lambda: store.add_encoder(Encoder('e', bytes, bytes))):
        with pytest.raises(EngineClosedError):
            call()
    with pytest.raises(EngineClosedError):
        docs.get(1, txn=txn)
    store.close()  # closing twice is fine
    with reopen() as store:
        assert contents(store) == before


# --- reopening --------------------------------------------------------------------

def test_reopen_with_another_encoder(reopen):
    with reopen() as store:
        store.collection('docs', key_func=by_id).put({'id': 1})
        before = contents(store)
    with reopen() as store:
        for encoder in (make_json_encoder(), centidb.encodings.PICKLE_ENCODER):
            fails_cleanly(store, EncoderMismatchError,
                          lambda: store.collection('docs', key_func=by_id, encoder=encoder),
                          match="'msgpack'")
        assert contents(store) == before
        docs = store.collection('docs', key_func=by_id, encoder=make_msgpack_encoder())
        assert docs.get(1) == {'id': 1}
        fails_cleanly(store, EncoderMismatchError,
                      lambda: store.collection('docs', encoder=make_json_encoder()))


def reversing_packer():
    return Encoder('reverse', lambda data: data[::-1], lambda data: data[::-1])


def test_packer_not_registered_after_reopen(reopen):
    with reopen() as store:
        packer = store.add_encoder(reversing_packer())
        docs = store.collection('docs', key_func=by_id)
        docs.put({'id': 1, 'v': 'packed'}, packer=packer)
        docs.put({'id': 2, 'v': 'plain'})
        # raw=True undoes the packer but not the encoder.
        packed = make_msgpack_encoder().pack({'id': 1, 'v': 'packed'})
        assert docs.get(1, raw=True) == packed
        assert store.engine.get(keylib.packs(1, docs.prefix))[1:] == packed[::-1]
        before = contents(store)
    with reopen() as store:
        docs = store.collection('docs', key_func=by_id)
        assert docs.get(2) == {'id': 2, 'v': 'plain'}
        for call in (lambda: docs.get(1), lambda: list(docs.items()),
                     lambda: docs.delete(1)):
            fails_cleanly(store, UnknownEncoderError, call,
                          match="'reverse'.*add_encoder")
        assert docs.count() == 2 and list(docs.keys()) == [(1,), (2,)]
        assert contents(store) == before
        store.add_encoder(reversing_packer())
        assert docs.get(1) == {'id': 1, 'v': 'packed'}
        assert list(docs.values()) == [{'id': 1, 'v': 'packed'}, {'id': 2, 'v': 'plain'}]


def test_put_over_a_record_with_an_unregistered_packer(reopen):
    with reopen() as store:
        store.add_encoder(reversing_packer())
        docs = store.collection('docs', key_func=by_id)
        docs.put({'id': 1, 'v': 'packed'}, packer=reversing_packer())
    with reopen() as store:
        docs = store.collection('docs', key_func=by_id)
        # Without indexes the old version is never read, so it need not decode.
        docs.put({'id': 1, 'v': 'new'}, packer=encodings.PLAIN_PACKER)
        assert docs.get(1) == {'id': 1, 'v': 'new'}
    with reopen() as store:
        store.add_encoder(reversing_packer())
        indexed = store.collection('indexed', key_func=by_id)
        indexed.add_index('v', lambda r: r['v'])
        indexed.put({'id': 1, 'v': 'packed'}, packer=reversing_packer())
    with reopen() as store:
        indexed = store.collection('indexed', key_func=by_id)
        indexed.add_index('v', lambda r: r['v'])
        # With indexes the old version must be decoded to find its entries.
        fails_cleanly(store, UnknownEncoderError,
                      lambda: indexed.put({'id': 1, 'v': 'new'}, packer=encodings.PLAIN_PACKER),
                      match="'reverse'")


def test_index_not_added_after_reopen(reopen):
    with reopen() as store:
        docs = store.collection('docs', key_func=by_id)
        docs.add_index('tag', tag_of)
        docs.add_index('id', by_id)
        docs.put({'id': 1, 'tag': 'a'})
        before = contents(store)
    with reopen() as store:
        docs = store.collection('docs', key_func=by_id)
        docs.add_index('id', by_id)
        for call in (lambda: docs.put({'id': 2, 'tag': 'b'}),
                     lambda: docs.put({'id': 1, 'tag': 'b'}, blind=True),
                     lambda: docs.delete(1)):
            fails_cleanly(store, IndexNotAddedError, call, match='tag')
        assert docs.get(1) == {'id': 1, 'tag': 'a'}
        assert list(docs.items()) == [((1,), {'id': 1, 'tag': 'a'})]
        assert list(docs.indices['id'].keys()) == [(1,)]
        assert contents(store) == before
        docs.drop_index('tag')
        docs.put({'id': 2, 'tag': 'b'})
        assert docs.count() == 2
    with reopen() as store:  # the dropped index stays dropped
        docs = store.collection('docs', key_func=by_id)
        docs.add_index('id', by_id)
        docs.delete(2)
        assert list(docs.keys()) == [(1,)]


def test_index_re_added_after_reopen_allows_writes(reopen):
    with reopen() as store:
        docs = store.collection('docs', key_func=by_id)
        docs.add_index('tag', tag_of)
        docs.put({'id': 1, 'tag': 'a'})
    with reopen() as store:
        docs = store.collection('docs', key_func=by_id)
        with pytest.raises(IndexNotAddedError):
            docs.put({'id': 1, 'tag': 'b'})
        tags = docs.add_index('tag', tag_of)
        docs.put({'id': 1, 'tag': 'b'})
        assert list(tags.pairs()) == [(('b',), (1,))]


# --- store format -------------------------------------------------------------------

def test_engine_with_foreign_data():
    engine = centidb.engines.ListEngine()
    engine.put(b'hello', b'world')
    with pytest.raises(StoreFormatError, match='not a centidb store'):
        centidb.Store(engine)
    assert list(engine.items()) == [(b'hello', b'world')]


@pytest.mark.parametrize('record, match', [
    ({'format': 'centidb', 'version': 2}, 'version 2'),
    ({'format': 'centidb', 'version': 0}, 'version 0'),
    ({'format': 'otherdb', 'version': 1}, 'otherdb'),
    ({'version': 1}, 'unreadable'),
    (b'\xff not json', 'unreadable'),
])
def test_format_record_mismatch(record, match):
    engine = ListEngine()
    centidb.Store(engine)  # writes the format record
    value = record if isinstance(record, bytes) else json.dumps(record).encode()
    engine.put(keylib.packs((0, 'format')), value)
    before = list(engine.items())
    with pytest.raises(StoreFormatError, match=match):
        centidb.Store(engine)
    assert list(engine.items()) == before


def test_open_closes_engine_on_format_error(tmp_path):
    path = str(tmp_path / 'lmdb')
    engine = centidb.engines.LmdbEngine(path)
    engine.put(b'foreign', b'data')
    engine.close()
    with pytest.raises(StoreFormatError):
        centidb.open('LmdbEngine', path=path)
    # The failed open closed its engine, so the database can be opened again.
    engine = centidb.engines.LmdbEngine(path)
    assert list(engine.items()) == [(b'foreign', b'data')]
    engine.close()


# --- bad arguments ------------------------------------------------------------------

@pytest.mark.parametrize('max,error', [(-1, ValueError), ('x', TypeError),
                                       (1.5, TypeError), (True, TypeError)])
def test_bad_max(docs, max, error):
    tags = docs.indices['tag']
    for method in (docs.items, docs.keys, docs.values, docs.count,
                   tags.pairs, tags.keys, tags.values, tags.count):
        fails_cleanly(docs.store, error, lambda: method(max=max), match='max')
    assert docs.count(max=0) == 0 and list(docs.items(max=1)) == [((1,), {'id': 1, 'tag': 'a'})]


def test_bad_query_bounds(docs):
    for kwargs in ({'lo': object()}, {'hi': [1]}, {'prefix': {'a'}}):
        fails_cleanly(docs.store, UnsupportedKeyTypeError, lambda: docs.items(**kwargs))
        fails_cleanly(docs.store, UnsupportedKeyTypeError,
                      lambda: docs.indices['tag'].pairs(**kwargs))


@pytest.mark.parametrize('kwargs, exc', [
    ({'name': 1}, TypeError), ({'name': ('a',)}, TypeError),
    ({'name': 'c', 'n': '1'}, TypeError), ({'name': 'c', 'n': 1.0}, TypeError),
    ({'name': 'c', 'n': True}, TypeError), ({'name': 'c', 'init': None}, TypeError),
    ({'name': 'c', 'init': 2.5}, TypeError),
])
def test_counter_bad_arguments(store, kwargs, exc):
    store.count('c')
    fails_cleanly(store, exc, lambda: store.count(**kwargs))
    assert store.count('c', n=0) == 2


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


def test_encoder_bad_arguments(store):
    for args in (('e', 'pack', bytes), ('e', bytes, None), ('', bytes, bytes),
                 (None, bytes, bytes)):
        with pytest.raises(TypeError):
            Encoder(*args)
    fails_cleanly(store, TypeError, lambda: store.add_encoder('msgpack'), match='Encoder')


def test_open_unknown_engine():
    with pytest.raises(ValueError, match='NoSuchEngine') as info:
        centidb.open('NoSuchEngine')
    for name in ENGINE_NAMES:
        assert name in str(info.value)
    with pytest.raises(TypeError):
        centidb.open(42)


@pytest.mark.parametrize('not_an_engine', [None, 'ListEngine', ListEngine, {}])
def test_store_of_non_engine(not_an_engine):
    with pytest.raises(TypeError, match='Engine'):
        centidb.Store(not_an_engine)
