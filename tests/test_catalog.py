"""centidb.catalog: the format record, encoder and packer registration, reopen checks.

A store writes its format record on create and checks it on open; encoders
and packers are registered by name under persistent ids; a reopened store
checks a collection's encoder and packer, and names an unregistered one.
"""

import json
import operator

import pytest

import centidb
from centidb import encodings, keylib, metarecords
from centidb.catalog import CollectionMeta, StoreMetadata, read_metadata
from centidb.encodings import Encoder, make_json_encoder, make_msgpack_encoder
from centidb.engines import ListEngine
from centidb.errors import (
    EncoderMismatchError, IndexNotAddedError, StoreFormatError, UnknownEncoderError,
)

from stores import (
    PEOPLE, by_id, contents, fails_cleanly, list_store, open_store, reversing_packer,
)


# --- the format record -------------------------------------------------------

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
    ({'version': 1}, "no 'format' field"),
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


# --- registering encoders and packers ----------------------------------------

def test_encoder_bad_arguments(store):
    for args in (('e', 'pack', bytes), ('e', bytes, None), ('', bytes, bytes),
                 (None, bytes, bytes)):
        with pytest.raises(TypeError):
            Encoder(*args)
    fails_cleanly(store, TypeError, lambda: store.add_encoder('msgpack'), match='Encoder')


def test_unregistered_custom_encoder_and_packer_register_themselves(store):
    """Regression: registering a new encoder or packer needs a metadata write,
    which collection() and put() attempted inside the write transaction they
    had just opened. Now it is written in the caller's write transaction when
    there is one (and forgotten if that aborts), else in one of its own."""
    rev = encodings.Encoder('rev', lambda b: b[::-1], lambda b: b[::-1])
    mine = encodings.Encoder('mine', lambda v: repr(v).encode(), lambda b: eval(b))
    coll = store.collection('c', encoder=mine, packer=rev)
    coll.put((1, 2))
    zlib_coll = store.collection('z')
    other = encodings.Encoder('other', lambda b: b[::-1], lambda b: b[::-1])
    zlib_coll.put('x', packer=other)                 # no transaction open: registers
    assert coll.get(1) == (1, 2) and zlib_coll.get(1) == 'x'
    late = encodings.Encoder('late', lambda b: b[::-1], lambda b: b[::-1])
    with store.begin(write=True) as txn:
        zlib_coll.put('y', packer=late, txn=txn)      # numbered in this transaction
    assert zlib_coll.get(2) == 'y'
    aborted = encodings.Encoder('aborted', lambda b: b, lambda b: b)
    with store.begin(write=True) as txn:
        zlib_coll.put('z', packer=aborted, txn=txn)
        txn.abort()
    assert zlib_coll.get(3) is None
    zlib_coll.put('z', packer=aborted)               # numbered again, for real
    assert zlib_coll.get(3) == 'z'
    assert store.verify() == []


def test_builtin_encoder_object_in_write_txn_is_not_unknown(tmp_path):
    """Regression: a fresh make_msgpack_encoder() object (as in the README
    example) was reported as 'msgpack is not registered' inside a write
    transaction: the built-in name must be recognised, the collection open
    with it and the put commit with the transaction."""
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'))
    store.collection('a').put(1)
    store.close()
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'))
    with store.begin(write=True) as txn:
        coll = store.collection('a', encoder=encodings.make_msgpack_encoder())
        assert coll.encoder.name == 'msgpack'
        assert coll.put(2).key == (2,)
        assert coll.get(2, txn=txn) == 2
    assert list(coll.items()) == [((1,), 1), ((2,), 2)]
    store.close()
    with centidb.open('LmdbEngine', path=str(tmp_path / 'db')) as store:
        assert list(store.collection('a').values()) == [1, 2]


# --- reopening ---------------------------------------------------------------

@pytest.mark.parametrize('name', ['PlyvelEngine', 'LmdbEngine'])
def test_reopen_from_disk(name, tmp_path):
    reverse = encodings.Encoder('reverse', lambda b: b[::-1], lambda b: b[::-1])
    store = open_store(name, tmp_path)
    store.add_encoder(reverse)
    coll = store.collection('people', key_func=operator.itemgetter('name', 'location'),
                            encoder=encodings.make_json_encoder(), packer=reverse)
    coll.add_index('tags', lambda p: p['tags'])
    for person in PEOPLE:
        coll.put(person)
    logs = store.collection('log')
    logs.put('one')
    store.count('hits', n=5)
    store.close()

    store = open_store(name, tmp_path)
    with pytest.raises(UnknownEncoderError, match='reverse'):
        store.collection('people')
    store.add_encoder(reverse)
    with pytest.raises(EncoderMismatchError):
        store.collection('people', encoder=encodings.make_msgpack_encoder())
    coll = store.collection('people', key_func=operator.itemgetter('name', 'location'))
    assert coll.encoder.name == 'json' and coll.packer.name == 'reverse'
    assert coll.get(('ash', 'LONDON'))['tags'] == ['b']
    with pytest.raises(IndexNotAddedError, match='tags'):
        coll.put({'name': 'x', 'location': 'y', 'tags': []})
    tags = coll.add_index('tags', lambda p: p['tags'])
    assert tags.count() == 3            # not rebuilt: the stored entries are used
    coll.put({'name': 'x', 'location': 'y', 'tags': ['q']})
    assert tags.get('q')['name'] == 'x'
    assert store.collection('log').put('two').key == (2,)
    assert store.count('hits', n=0) == 6
    store.close()


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


def test_packer_mismatch_raises_encoder_mismatch_in_session_and_after_reopen(tmp_path):
    """Regression: a different packer raised a plain ValueError in the same
    session and was accepted silently (for this session only) after
    reopening the store; the encoder raised EncoderMismatchError in both
    cases."""
    def reopen():
        return centidb.open('LmdbEngine', path=str(tmp_path / 'db'))
    store = reopen()
    store.collection('c', packer=encodings.ZLIB_PACKER).put('x', key=1)
    with pytest.raises(EncoderMismatchError, match="packer 'zlib', not 'plain'"):
        store.collection('c', packer=encodings.PLAIN_PACKER)
    store.close()
    store = reopen()
    with pytest.raises(EncoderMismatchError, match="packer 'zlib', not 'plain'"):
        store.collection('c', packer=encodings.PLAIN_PACKER)
    coll = store.collection('c', packer=encodings.ZLIB_PACKER)     # its own: fine
    assert coll.packer is encodings.ZLIB_PACKER and coll.get(1) == 'x'
    coll.put('y', key=2, packer=encodings.PLAIN_PACKER)            # per record: fine
    assert store.collection('c').get(2) == 'y'
    store.close()


def test_packer_not_registered_after_reopen(reopen):
    with reopen() as store:
        packer = store.add_encoder(reversing_packer())
        docs = store.collection('docs', key_func=by_id)
        docs.put({'id': 1, 'v': 'packed'}, packer=packer)
        docs.put({'id': 2, 'v': 'plain'})
        # raw=True undoes the packer but not the encoder.
        packed = make_msgpack_encoder().pack({'id': 1, 'v': 'packed'})
        assert docs.get(1, raw=True) == packed
        stored = store.engine.get(keylib.packs(1, docs.prefix))
        assert stored[1:] == packed[::-1]
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


# --- metadata shared with other processes, and checked on read ---------------

def test_pickle_is_decoded_only_after_opting_in(reopen):
    with reopen() as store:
        store.collection('pickled', encoder=encodings.PICKLE_ENCODER).put({1, 2})
    with reopen() as store:
        with pytest.raises(centidb.errors.PickleNotAllowedError, match='trust'):
            store.collection('pickled')
        with pytest.raises(UnknownEncoderError):       # also an UnknownEncoderError
            store.collection('pickled')
    with reopen() as store:
        store.add_encoder(encodings.PICKLE_ENCODER)
        assert store.collection('pickled').get(1) == {1, 2}
    with reopen() as store:
        coll = store.collection('pickled', encoder=encodings.PICKLE_ENCODER)
        assert coll.get(1) == {1, 2}


def test_key_kind_is_recorded_and_checked(reopen):
    with reopen() as store:
        store.collection('keyed', key_func=by_id).put({'id': 'ann'})
        store.collection('auto').put('first')
        store.collection('per_txn', txn_key_func=lambda txn, rec: rec['id'])
    with reopen() as store:
        with pytest.raises(centidb.errors.KeyKindMismatchError, match='auto-increment'):
            store.collection('auto', key_func=by_id)
        with pytest.raises(centidb.errors.KeyKindMismatchError, match='txn_key_func'):
            store.collection('keyed', txn_key_func=lambda txn, rec: rec['id'])
        with pytest.raises(centidb.errors.KeyKindMismatchError, match='key_func'):
            store.collection('per_txn', key_func=by_id)
        keyed = store.collection('keyed')      # no function: reads and explicit keys work
        assert keyed.get('ann') == {'id': 'ann'}
        before = contents(store)
        with pytest.raises(centidb.errors.KeyKindMismatchError, match='key_func='):
            keyed.put({'id': 'bob'})
        assert contents(store) == before
        keyed.put({'id': 'bob'}, key='bob')
        assert [key for key in keyed.keys()] == [('ann',), ('bob',)]


@pytest.mark.parametrize('meta, match, action', [
    ((0, 'collection', 'docs'), "collection 'docs'", lambda store: store.collection('docs')),
    ((0, 'counter', 'docs:key'), "counter 'docs:key'",
     lambda store: store.collection('docs').put('y')),
    ((0, 'sys', 'prefix'), 'prefix counter', lambda store: store.collection('new')),
    ((0, 'encoder', 'msgpack'), "encoder 'msgpack'", lambda store: None),
])
def test_unreadable_metadata_raises_store_format_error(meta, match, action):
    engine = ListEngine()
    store = centidb.Store(engine)
    store.collection('docs').put('x')
    engine.put(keylib.packs(meta), b'"a string"' if meta[1] == 'collection' else b'\xff')
    with pytest.raises(StoreFormatError, match=match):
        action(centidb.Store(engine))
    assert any(match in str(problem) for problem in store.verify())


def test_counter_holding_a_string_raises_store_format_error():
    store = centidb.open('ListEngine')
    store.engine.put(keylib.packs((0, 'counter', 'n')), keylib.packs('ten'))
    with pytest.raises(StoreFormatError, match="counter 'n'.* holds"):
        store.counter('n')


def test_collection_created_in_an_aborted_transaction_is_forgotten(store):
    with store.begin(write=True) as txn:
        temp = store.collection('temp', key_func=by_id)
        temp.put({'id': 1}, txn=txn)
        txn.abort()
    with pytest.raises(centidb.errors.StoreError, match='aborted'):
        temp.get(1)
    with pytest.raises(centidb.errors.StoreError, match='aborted'):
        temp.put({'id': 2})
    again = store.collection('temp', key_func=by_id)
    assert again is not temp and again.get(1) is None
    again.put({'id': 2})
    assert store.verify() == []


def test_collection_created_inside_a_write_transaction_commits_with_it(reopen):
    with reopen() as store:
        with store.begin(write=True) as txn:
            coll = store.collection('made_in_txn', key_func=by_id)
            coll.add_index('tag', lambda rec: rec['tag'])
            coll.put({'id': 1, 'tag': 'a'}, txn=txn)
    with reopen() as store:
        coll = store.collection('made_in_txn', key_func=by_id)
        tag = coll.add_index('tag', lambda rec: rec['tag'])
        assert tag.get('a') == {'id': 1, 'tag': 'a'}
        assert store.verify() == []


def test_another_store_object_sees_new_metadata_before_writing():
    """Two store objects on one engine stand for two processes."""
    engine = ListEngine()
    first = centidb.Store(engine)
    docs = first.collection('docs', key_func=by_id)
    docs.put({'id': 1, 'tag': 'a'})
    second = centidb.Store(engine)
    other = second.collection('docs', key_func=by_id)
    other.add_index('tag', lambda rec: rec['tag'])
    with pytest.raises(IndexNotAddedError, match="'tag'"):
        docs.put({'id': 2, 'tag': 'b'})
    tag = docs.add_index('tag', lambda rec: rec['tag'])
    assert tag.index_id == other.indices['tag'].index_id
    docs.put({'id': 2, 'tag': 'b'})
    assert other.indices['tag'].get('b') == {'id': 2, 'tag': 'b'}
    other.drop_index('tag')
    docs.put({'id': 3, 'tag': 'c'})            # reloads: the index is gone here too
    assert 'tag' not in docs.indices
    assert first.verify() == []


# --- reading the catalog -------------------------------------------------------

def docs_store():
    """A store with collection 'docs' (one record, one index) and its engine."""
    engine = ListEngine()
    store = centidb.Store(engine)
    docs = store.collection('docs', key_func=by_id)
    docs.add_index('tag', lambda rec: rec['tag'])
    docs.put({'id': 1, 'tag': 'a'})
    return store, engine


def test_read_metadata_returns_the_parsed_catalog():
    store, engine = docs_store()
    store.counter('hits', 5)
    with engine.begin() as etxn:
        fmt, metas, counters = read_metadata(etxn)
    assert fmt == {'format': 'centidb', 'version': 1}
    assert [(meta.name, meta.info['id'], meta.indexes) for meta in metas] == [
        ('docs', 1, {'tag': False})]
    assert counters == {'docs:key': 1, 'hits': 6} or counters == {'hits': 6}


def test_read_metadata_lists_collections_indexes_and_counters_by_name():
    """The catalog's reader: every collection in name order, its indexes with their
    unique flag (those no session added too), every stored counter."""
    store = list_store()
    people = store.collection('people', key_func=by_id, counter_name='shared')
    people.add_index('name', lambda rec: rec['name'], unique=True)
    people.add_index('age', lambda rec: rec['age'])
    store.collection('cities', encoder=encodings.make_json_encoder(),
                     packer=encodings.ZLIB_PACKER).put({'n': 'Bath'})
    store.collection('Zed').put(1)
    store.collection('empty')
    store.counter('hits', 2)
    with store.engine.begin() as etxn:
        found = read_metadata(etxn)
    assert isinstance(found, StoreMetadata) and isinstance(found.collections[0], CollectionMeta)
    assert found.format_record == {'format': 'centidb', 'version': 1}
    assert [meta.name for meta in found.collections] == ['Zed', 'cities', 'empty', 'people']
    by_name = {meta.name: meta for meta in found.collections}
    assert by_name['people'].indexes == {'age': False, 'name': True}
    assert by_name['people'].info['counter'] == 'shared'
    assert (by_name['cities'].info['encoder'], by_name['cities'].info['packer']) == ('json', 'zlib')
    assert all(meta.indexes == {} for meta in found.collections if meta.name != 'people')
    ids = [meta.info['id'] for meta in found.collections]
    assert len(set(ids)) == 4
    assert found.counters == {'Zed:key': 2, 'cities:key': 2, 'hits': 3}
    fresh = centidb.Store(store.engine)     # no index added in this session
    with fresh.engine.begin() as etxn:
        assert read_metadata(etxn) == found


def test_read_metadata_of_an_empty_engine_and_in_a_store_transaction():
    engine = ListEngine()
    with engine.begin() as etxn:
        assert read_metadata(etxn) == ({}, [], {})
    store = centidb.Store(engine)
    with store.begin(write=True) as txn:
        store.collection('new').put('x', txn=txn)
        inside = read_metadata(txn.engine_txn)
        assert [meta.name for meta in inside.collections] == ['new']
        assert inside.counters == {'new:key': 2}
        txn.abort()
    with engine.begin() as etxn:
        assert read_metadata(etxn).collections == []


def test_two_encoders_with_one_id_refuse_to_open():
    store, engine = docs_store()
    with engine.begin() as etxn:
        plain = metarecords.read_record(etxn, 'encoder', 'plain')['id']
    engine.put(keylib.packs((0, 'encoder', 'zlib')), json.dumps({'id': plain}).encode())
    with pytest.raises(StoreFormatError, match=f"encoder 'zlib'.*id {plain}"):
        centidb.Store(engine)
    assert any(f'encoder id {plain} is used by' in str(p) for p in store.verify())


# --- prefix ids on creation ----------------------------------------------------

def _prefix_ids(store):
    with store.engine.begin() as etxn:
        return sorted([info['id'] for _, info in metarecords.scan(etxn, 'collection')]
                      + [info['id'] for _, info in metarecords.scan(etxn, 'index')])


@pytest.mark.parametrize('counter', [1, 2, 3])
def test_a_prefix_counter_behind_never_aliases(counter):
    """Regression: with the prefix counter set back, collection() and
    add_index() handed out ids in use, and the collections overwrote each
    other."""
    store = list_store()
    empty = store.collection('empty')                 # id 1, no records
    full = store.collection('full')                   # id 2
    full.add_index('n', lambda rec: rec)              # id 3
    full.put(7)
    store.engine.put(keylib.packs((0, 'sys', 'prefix')), keylib.packs(counter))
    again = centidb.Store(store.engine)
    for where in (store, again):
        new = where.collection(f'new_{id(where)}')
        idx = new.add_index('n', lambda rec: rec)
        assert new.coll_id not in (1, 2, 3) and idx.index_id not in (1, 2, 3)
        new.put(1)
    assert len(set(_prefix_ids(store))) == len(_prefix_ids(store)) == 7
    assert list(empty.items()) == [] and list(full.values()) == [7]
    assert store.verify() == []


def test_a_new_prefix_id_skips_data_no_collection_owns():
    store = list_store()
    store.collection('a').put(1)
    store.engine.put(keylib.packs((2, 'stray')), b'\x01junk')
    store.engine.put(keylib.packs((3, 'stray')), b'\x01junk')
    coll = store.collection('b')
    assert coll.coll_id == 4 and list(coll.items()) == []
    assert sorted(p.key for p in store.verify()) == [keylib.packs((2, 'stray')),
                                                     keylib.packs((3, 'stray'))]


@pytest.mark.parametrize('value', [keylib.packs(0), keylib.packs(-5), keylib.packs(True),
                                   keylib.packs('1')])
def test_a_malformed_prefix_counter_refuses_to_create(value):
    store = list_store()
    store.collection('a').put(1)
    store.engine.put(keylib.packs((0, 'sys', 'prefix')), value)
    fails_cleanly(store, StoreFormatError, lambda: store.collection('b'),
                  match='prefix counter')
    fails_cleanly(store, StoreFormatError, lambda: store.collection('a').add_index(
        'n', lambda rec: rec), match='prefix counter')


@pytest.mark.parametrize('coll_id', [0, -1, 'true'])
def test_a_collection_stored_with_prefix_id_0_or_below_is_refused(coll_id):
    """Regression: id 0 (the metadata space) and negative ids were accepted."""
    store = list_store()
    store.collection('a').put(1)
    info = {'id': coll_id, 'encoder': 'msgpack', 'packer': 'plain', 'counter': 'm:key'}
    raw = json.dumps(info).replace('"true"', 'true').encode()
    store.engine.put(keylib.packs((0, 'collection', 'm')), raw)
    fails_cleanly(store, StoreFormatError, lambda: centidb.Store(store.engine).collection('m'),
                  match="collection 'm'")


@pytest.mark.parametrize('key, value, match', [
    ((0, 'collection', 'docs'), b'\xff\xfe', "collection 'docs'.*unreadable"),
    ((0, 'collection', 'docs'), b'{"id": 1, "encoder": "msgpack", "counter": "c"}',
     "collection 'docs'.*no 'packer'"),
    ((0, 'index', 1, 'tag'), b'\xff', "index 'tag'"),
    ((0, 'format'), b'[', 'format record'),
])
def test_read_metadata_raises_store_format_error(key, value, match):
    """Regression: the CLI's reader called json.loads itself and failed with
    UnicodeDecodeError, JSONDecodeError or KeyError: 'packer'."""
    _, engine = docs_store()
    engine.put(keylib.packs(key), value)
    with engine.begin() as etxn, pytest.raises(StoreFormatError, match=match):
        read_metadata(etxn)


def test_encoder_ids_run_out_with_a_centidb_error():
    """Regression: a ValueError that was no centidb error, also from Store()
    when a built-in encoder's record was missing and the counter at 128."""
    store, engine = docs_store()
    engine.put(keylib.packs((0, 'sys', 'encoder')), keylib.packs(128))
    with pytest.raises(centidb.errors.TooManyEncodersError, match="'extra'.*127"):
        store.add_encoder(Encoder('extra', lambda b: b, lambda b: b))
    engine.delete(keylib.packs((0, 'encoder', 'zlib')))
    with pytest.raises(centidb.errors.TooManyEncodersError, match="'zlib'"):
        centidb.Store(engine)
