"""centidb.index: secondary indexes, on every engine.

Index queries, entries kept right by put and delete, ``add_index`` (filling
in existing records, failing, racing another thread), ``drop_index``
(leaving no entry behind), re-adding indexes after a reopen
(``IndexNotAddedError`` until then), and entries that point at missing
records (``IndexInconsistentError``).
"""

import threading
import time

import pytest

import centidb
from centidb import keylib
from centidb.errors import (
    CentiError, CorruptKeyError, IndexInconsistentError, IndexNotAddedError, TransactionError,
    UniqueError, UnknownIndexError,
)
from centidb.keyformat import KEY_SEP, TAG_BYTES, TAG_STR
from centidb.records.access import FILL_CHUNK
from centidb.records.entries import ASIDE

from stores import (
    ENGINE_NAMES, by_id, contents, engine_keys, fails_cleanly, list_store, open_store,
    people, tag_of,
)


# --- queries -----------------------------------------------------------------

def test_indexes(store):
    coll = people(store)
    location = coll.indices['location']
    tags = coll.indices['tags']
    assert location.get('LONDON')['name'] == 'ash'
    assert location.has('PARIS') and not location.has('ROME')
    assert location.get('ROME', default='none') == 'none'
    assert list(location.tups()) == [('LONDON',), ('LONDON',), ('PARIS',), ('UNDERGROWN',)]
    assert list(location.keys(prefix='LONDON')) == [('ash', 'LONDON'), ('birch', 'LONDON')]
    assert [p['name'] for p in location.values(reverse=True, max=2)] == ['undergrown', 'cedar']
    assert list(tags.pairs()) == [(('a',), ('undergrown', 'UNDERGROWN')),
                                  (('b',), ('ash', 'LONDON')),
                                  (('b',), ('undergrown', 'UNDERGROWN'))]
    assert tags.count() == 3 and tags.count(lo='b') == 2
    assert [t for t, _ in tags.items(hi='b', include=True)] == [('a',), ('b',), ('b',)]
    assert coll.indices['rev_name'].find(startswith='hc')['name'] == 'birch'
    assert coll.indices['rev_name'].find(prefix='hc') is None


def test_compound_and_none_index_values(store):
    coll = store.collection('c', key_func=lambda r: r['id'])
    pair = coll.add_index('pair', lambda r: (r['a'], r['b']) if r['a'] else None)
    coll.put({'id': 1, 'a': 'x', 'b': 2})
    coll.put({'id': 2, 'a': None, 'b': 3})
    coll.put({'id': 3, 'a': 'x', 'b': 1})
    assert list(pair.pairs()) == [(('x', 1), (3,)), (('x', 2), (1,))]
    assert pair.get(('x', 2))['id'] == 1


# --- entries follow puts and deletes -----------------------------------------

def test_update_and_delete_maintain_indexes(store):
    coll = people(store)
    tags = coll.indices['tags']
    coll.put({'name': 'ash', 'location': 'LONDON', 'tags': ['c', 'c', 'a']})
    assert list(tags.pairs(prefix='b')) == [(('b',), ('undergrown', 'UNDERGROWN'))]
    assert sorted(tags.tups()) == [('a',), ('a',), ('b',), ('c',)]
    deleted = coll.delete(('undergrown', 'UNDERGROWN'))
    assert deleted.data['tags'] == ['a', 'b']
    assert coll.delete(('undergrown', 'UNDERGROWN')) is None
    assert list(tags.tups()) == [('a',), ('c',)]
    record = coll.get(('ash', 'LONDON'), rec=True)
    record.data['tags'] = []
    coll.put(record)
    assert list(tags.tups()) == []
    coll.delete(coll.get(('birch', 'LONDON'), rec=True))
    assert coll.get(('birch', 'LONDON')) is None


def test_tuple_index_value_is_removed_on_update_and_delete():
    """Regression: put() computed new entries from the caller's object, but
    removal (update, delete) recomputed them from the *decoded* record, where
    msgpack had turned the tuple into a list: the tuple entry was never
    removed."""
    store = list_store()
    coll = store.collection('c')
    idx = coll.add_index('pair', lambda r: r['pair'])
    coll.put({'pair': ('x', 1)}, key=1)
    coll.put({'pair': ('y', 2)}, key=1)
    assert list(idx.pairs()) == [(('y', 2), (1,))]
    coll.delete(1)
    assert list(idx.pairs()) == []      # the ('x', 1) and ('y', 2) entries once stayed


def test_entries_pointing_at_a_missing_record_raise_index_inconsistent(store):
    # A blind put over an existing key leaves the old entry behind (as put()
    # documents); deleting the record then leaves it pointing at nothing.
    coll = store.collection('c', key_func=by_id)
    tags = coll.add_index('tag', tag_of)
    coll.put({'id': 1, 'tag': 'old'})
    coll.put({'id': 2, 'tag': 'other'})
    coll.put({'id': 1, 'tag': 'new'}, blind=True)
    assert tags.get('old') == {'id': 1, 'tag': 'new'}     # the stale entry, still resolvable
    coll.delete(1)
    assert list(tags.pairs()) == [(('old',), (1,)), (('other',), (2,))]
    assert tags.has('old') and list(tags.keys()) == [(1,), (2,)]
    message = r"index 'tag' of collection 'c' points at missing record \(1,\)"
    with pytest.raises(IndexInconsistentError, match=message) as info:
        tags.get('old')
    assert isinstance(info.value, LookupError) and isinstance(info.value, CentiError)
    with store.begin() as txn:
        with pytest.raises(IndexInconsistentError, match=message):
            tags.get('old', txn=txn)
    for query in (tags.values, tags.items):
        with pytest.raises(IndexInconsistentError, match=message):
            list(query())
    assert list(tags.values(lo='other')) == [{'id': 2, 'tag': 'other'}]


def test_reads_find_records_another_store_object_batched():
    """A collection object that has not seen the batch() of another store
    object on the same engine (another process) still finds the moved
    records: get, index get and index scans look in batches when the plain
    read misses. So does it once a write transaction told it."""
    engine = centidb.engines.MemoryEngine()
    first, second = centidb.Store(engine), centidb.Store(engine)
    coll = first.collection('c', key_func=by_id)
    tags = coll.add_index('tag', tag_of)
    for i in range(1, 4):
        coll.put({'id': i, 'tag': f't{i}'})
    other = second.collection('c', key_func=by_id)
    other.add_index('tag', tag_of)
    expected = [{'id': i, 'tag': f't{i}'} for i in range(1, 4)]
    for phase in ('plain', 'batched elsewhere', 'known batched'):
        if phase == 'batched elsewhere':
            other.batch()
            assert len(engine_keys(first, coll.prefix)) == 1
        if phase == 'known batched':
            first.begin(write=True).abort()         # a write transaction reloads metadata
        assert coll.records.batched is (phase == 'known batched')
        assert (coll.get(2), tags.get('t2'), list(tags.values())) == \
            (expected[1], expected[1], expected)
        assert list(tags.items(reverse=True)) == [((f't{i}',), expected[i - 1])
                                                   for i in (3, 2, 1)]
        with first.begin() as txn:
            assert coll.get(3, txn=txn) == tags.get('t3', txn=txn) == expected[2]
        assert coll.get(4, default='-') == tags.get('t4', default='-') == '-'


# --- add_index ---------------------------------------------------------------

def test_adding_an_index_to_existing_records_fills_it(store):
    coll = store.collection('late', key_func=lambda r: r['id'])
    for i in range(5):
        coll.put({'id': i, 'parity': i % 2})
    parity = coll.add_index('parity', lambda r: r['parity'])
    assert [k for _, k in parity.pairs(prefix=1)] == [(1,), (3,)]


def test_add_index_backfill_agrees_with_put():
    """Regression: the backfill decoded records and put() did not, so the
    same record got different index entries depending on when the index was
    added ([('x',), (1,)] against [('x', 1)])."""
    store = list_store()
    coll = store.collection('c')
    coll.put({'pair': ('x', 1)}, key=1)
    idx = coll.add_index('pair', lambda r: r['pair'])
    coll.put({'pair': ('x', 1)}, key=2)
    by_key = {}
    for tup, key in idx.pairs():
        by_key.setdefault(key, []).append(tup)
    assert by_key[(1,)] == by_key[(2,)]


def test_add_index_fills_in_existing_records_in_key_order():
    """The backfill scans the collection: the index function sees each
    record once, in key order, as a put would have."""
    store = list_store()
    coll = store.collection('c', key_func=by_id)
    for i in (3, 1, 2):
        coll.put({'id': i, 'tag': f't{i}'})
    seen = []
    tags = coll.add_index('tag', lambda r: seen.append(r['id']) or r['tag'])
    assert seen == [1, 2, 3]
    assert list(tags.pairs()) == [(('t1',), (1,)), (('t2',), (2,)), (('t3',), (3,))]


def test_add_index_whose_function_raises_on_existing_records(docs):
    fails_cleanly(docs.store, KeyError, lambda: docs.add_index('bad', lambda rec: rec['nope']))
    assert 'bad' not in docs.indices
    docs.put({'id': 2, 'tag': 'b'})  # the failed index does not block writes
    index = docs.add_index('bad', lambda rec: rec.get('nope', 0))
    assert index.count() == 2


def test_add_index_and_drop_index_inside_write_txn(docs):
    """Both join the thread's write transaction, and are undone with it."""
    store = docs.store
    before = contents(store)
    txn = store.begin(write=True)
    docs.put({'id': 2, 'tag': 'b'}, txn=txn)
    new = docs.add_index('new', lambda rec: rec['id'])
    assert list(new.keys(txn=txn)) == [(1,), (2,)]      # filled inside txn
    docs.drop_index('tag')
    assert set(docs.indices) == {'new'}
    txn.abort()
    assert contents(store) == before
    assert set(docs.indices) == {'tag'}
    assert docs.indices['tag'].get('b') is None
    with store.begin(write=True) as txn:
        new = docs.add_index('new', lambda rec: rec['id'])
        docs.put({'id': 3, 'tag': 'c'}, txn=txn)
    assert [key for key in new.keys()] == [(1,), (3,)]
    assert store.verify() == []


def test_failed_add_index_inside_write_txn_leaves_nothing(docs):
    store = docs.store
    with store.begin(write=True) as txn:
        before = contents(store, txn)
        with pytest.raises(KeyError):
            docs.add_index('broken', lambda rec: rec['missing'])
        assert contents(store, txn) == before
        assert 'broken' not in docs.indices
        docs.put({'id': 5, 'tag': 'e'}, txn=txn)        # the index left no trace
    assert store.verify() == []


def test_add_index_whose_commit_fails_is_not_left_bound():
    """Regression: add_index() bound the index before its commit: when the
    commit failed, the index stayed bound under a prefix id the store never
    recorded, and the next new index reused that id, so two indexes shared
    entries."""
    from centidb.engines import ListEngine, WrapperEngine, WrapperTransaction

    class FailingTransaction(WrapperTransaction):
        def _commit(self):
            if self.engine.fail:
                self.inner.abort()
                raise OSError('disk full (simulated)')
            super()._commit()

    class FailingEngine(WrapperEngine):
        transaction_class = FailingTransaction
        fail = False

    engine = FailingEngine(ListEngine())
    store = centidb.Store(engine)
    people, pets = store.collection('people'), store.collection('pets')
    people.put({'city': 'Leeds'}, key=1)
    engine.fail = True
    with pytest.raises(OSError, match='disk full'):
        people.add_index('city', lambda rec: rec['city'])
    engine.fail = False
    assert people.indices == {}
    people.put({'city': 'Bath'}, key=2)
    kinds = pets.add_index('kind', lambda rec: rec['kind'])
    pets.put({'kind': 'cat'}, key=1)
    assert list(kinds.pairs()) == [(('cat',), (1,))]
    city = people.add_index('city', lambda rec: rec['city'])
    assert city.prefix != kinds.prefix
    assert list(city.pairs()) == [(('Bath',), (2,)), (('Leeds',), (1,))]
    store.close()


def test_concurrent_add_index_same_name():
    """Regression: Collection.add_index checked `name in self.indices` outside
    Store._lock: two threads adding the same index both created one; the
    first one's entries were orphaned under an id nothing refers to (and
    drop_index could not reach)."""
    store = list_store()
    coll = store.collection('c')
    for i in range(200):
        coll.put(i)
    gate = threading.Event()
    results = []

    def slow(r):
        gate.wait()
        return r

    def add():
        try:
            results.append(coll.add_index('i', slow))
        except ValueError as exc:
            results.append(exc)

    threads = [threading.Thread(target=add) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    gate.set()
    for t in threads:
        t.join(10)
    live = [coll.prefix, coll.indices['i'].prefix, keylib.packs(0)]
    assert [k for k in store.engine.keys()
            if not any(k.startswith(p) for p in live)] == []
    assert sum(isinstance(r, ValueError) for r in results) == 1


# --- drop_index --------------------------------------------------------------

def test_drop_of_an_unknown_index_raises_a_centidb_key_error():
    """Regression: drop_index('nosuch') raised a plain KeyError, outside
    centidb.errors."""
    store = list_store()
    coll = store.collection('people')
    with pytest.raises(UnknownIndexError) as info:
        coll.drop_index('city')
    assert isinstance(info.value, KeyError) and isinstance(info.value, CentiError)
    assert str(info.value) == "collection 'people' has no index 'city' to drop"


def _index_metadata_key(coll, name):
    return keylib.packs((0, 'index', coll.coll_id, name))


def test_drop_index_leaves_no_entry_and_a_re_added_index_starts_fresh(store):
    coll = store.collection('docs', key_func=by_id)
    tags = coll.add_index('tags', lambda r: r['tags'])
    ids = coll.add_index('id', by_id)
    neighbour = store.collection('other', key_func=by_id)
    neighbour_tags = neighbour.add_index('tags', lambda r: r['tags'])
    with store.begin(write=True):
        for i in range(12):
            coll.put({'id': i, 'tags': [f't{i % 3}', 'all']})
            neighbour.put({'id': i, 'tags': ['n']})
    old_prefix = tags.prefix
    assert len(engine_keys(store, old_prefix)) == 24
    kept = {prefix: engine_keys(store, prefix)
            for prefix in (coll.prefix, ids.prefix, neighbour.prefix, neighbour_tags.prefix)}
    assert store.engine.get(_index_metadata_key(coll, 'tags')) is not None

    coll.drop_index('tags')
    assert engine_keys(store, old_prefix) == []
    assert store.engine.get(_index_metadata_key(coll, 'tags')) is None
    assert {prefix: engine_keys(store, prefix) for prefix in kept} == kept
    assert 'tags' not in coll.indices and list(neighbour_tags.keys()) == [(i,) for i in range(12)]
    coll.put({'id': 12, 'tags': ['late']})      # no IndexNotAddedError: it is gone
    coll.delete(0)

    fresh = coll.add_index('tags', lambda r: r['id'] % 2)     # same name, new function
    assert engine_keys(store, old_prefix) == []
    expected = sorted(((i % 2,), (i,)) for i in range(1, 13))
    assert list(fresh.pairs()) == expected
    assert engine_keys(store, fresh.prefix) == [
        keylib.packs([tup, key], fresh.prefix) for tup, key in expected]
    coll.put({'id': 13, 'tags': []})
    assert fresh.get(1) == {'id': 1, 'tags': ['t1', 'all']} and fresh.count(lo=1) == 7


def test_drop_index_after_reopen_without_re_adding_it(reopen):
    with reopen() as store:
        coll = store.collection('docs', key_func=by_id)
        tags = coll.add_index('tag', tag_of)
        for i in range(5):
            coll.put({'id': i, 'tag': f't{i}'})
        prefix = tags.prefix
        assert len(engine_keys(store, prefix)) == 5
    with reopen() as store:
        coll = store.collection('docs', key_func=by_id)
        coll.drop_index('tag')                  # never added in this session
        assert engine_keys(store, prefix) == []
        assert store.engine.get(_index_metadata_key(coll, 'tag')) is None
        coll.put({'id': 5, 'tag': 'new'})
        assert coll.count() == 6


# --- re-adding indexes after a reopen ----------------------------------------

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


def test_index_not_added_error_names_every_unbound_index(reopen):
    with reopen() as store:
        docs = store.collection('docs', key_func=by_id)
        docs.add_index('tag', tag_of)
        docs.add_index('id', by_id)
    with reopen() as store:
        docs = store.collection('docs', key_func=by_id)
        fails_cleanly(store, IndexNotAddedError, lambda: docs.put({'id': 1}),
                      match=r"^collection 'docs' has stored index\(es\) 'id', 'tag' that ")


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


# --- filling an index in chunks: progress, failures, rebuilds -------------------------

#: More records than two of fill_index's chunks, so a build writes before it fails.
MANY = 2 * FILL_CHUNK + FILL_CHUNK // 2


@pytest.fixture(params=ENGINE_NAMES)
def many(request, tmp_path):
    """A collection of MANY records on each engine (no index yet)."""
    store = open_store(request.param, tmp_path)
    coll = store.collection('many', key_func=by_id)
    coll.put_many([{'id': i, 'tag': f't{i % 7}', 'mail': f'm{i}'} for i in range(MANY)])
    yield coll
    store.close()


def test_add_index_reports_progress_in_chunks(many):
    calls = []
    tags = many.add_index('tag', tag_of, progress=calls.append)
    assert calls == [FILL_CHUNK, FILL_CHUNK, MANY - 2 * FILL_CHUNK]
    assert tags.count() == MANY
    assert many.store.verify() == []
    again = []
    many.reindex('tag', progress=again.append)
    assert again == calls
    assert many.store.verify() == []


def test_add_index_progress_is_not_called_without_records(store):
    coll = store.collection('empty', key_func=by_id)
    calls = []
    coll.add_index('tag', tag_of, progress=calls.append)
    coll.reindex('tag', progress=calls.append)
    assert calls == []


def test_progress_must_be_callable(docs):
    before = contents(docs.store)
    with pytest.raises(TypeError, match='progress must be callable'):
        docs.add_index('other', tag_of, progress=3)
    with pytest.raises(TypeError, match='progress must be callable'):
        docs.reindex('tag', progress='bar')
    assert 'other' not in docs.indices
    assert contents(docs.store) == before


def test_add_index_failing_after_chunks_were_written_leaves_nothing(many):
    """The function raises once two chunks of entries are written: they are deleted."""
    store = many.store

    def late(rec):
        if rec['id'] == MANY - 10:
            raise ValueError('cannot index this record')
        return rec['tag']
    calls = []
    fails_cleanly(store, ValueError, lambda: many.add_index('late', late, progress=calls.append))
    assert calls == [FILL_CHUNK, FILL_CHUNK] and 'late' not in many.indices
    with store.begin(write=True) as txn:        # the same, inside the caller's transaction
        many.put({'id': MANY, 'tag': 'x', 'mail': 'new'}, txn=txn)
        before = contents(store, txn)
        with pytest.raises(ValueError):
            many.add_index('late', late)
        assert contents(store, txn) == before
    assert many.get(MANY)['mail'] == 'new' and store.verify() == []


def test_unique_add_index_finds_duplicates_chunks_apart(many):
    many.put({'id': MANY + 5, 'tag': 'x', 'mail': 'm3'})     # m3 again, far from (3,)
    error = fails_cleanly(many.store, UniqueError,
                          lambda: many.add_index('mail', lambda r: r['mail'], unique=True))
    assert (error.index, error.value, error.key) == ('mail', ('m3',), (3,))
    assert 'mail' not in many.indices
    many.delete(MANY + 5)
    assert many.add_index('mail', lambda r: r['mail'], unique=True).count() == MANY


@pytest.mark.parametrize('unique', [False, True])
def test_reindex_replaces_changed_entries_and_keeps_the_rest(many, unique):
    version = [1]

    def mail(rec):      # version 2 changes the tuple of every third record
        if version[0] == 2 and rec['id'] % 3 == 0:
            return rec['mail'].upper()
        return rec['mail']
    index = many.add_index('mail', mail, unique=unique)
    version[0] = 2
    many.reindex('mail')
    assert sorted(index.pairs()) == sorted(
        ((mail({'id': i, 'mail': f'm{i}'}),), (i,)) for i in range(MANY))
    prefix = index.prefix
    assert not [key for key in engine_keys(many.store, prefix)
                if key[len(prefix):].startswith(ASIDE)]
    assert many.store.verify() == []


@pytest.mark.parametrize('unique', [False, True])
def test_a_failed_reindex_after_chunks_leaves_every_old_entry(many, unique):
    version = [1]

    def mail(rec):
        if version[0] == 1:
            return rec['mail']
        if not unique and rec['id'] == MANY - 3:
            raise ValueError('cannot index this record')
        return 'same' if rec['id'] in (1, MANY - 3) else rec['mail'].upper()
    index = many.add_index('mail', mail, unique=unique)
    store = many.store
    before = contents(store)
    version[0] = 2
    fails_cleanly(store, UniqueError if unique else ValueError, lambda: many.reindex('mail'))
    with store.begin(write=True) as txn:        # joined: the transaction stays usable
        version[0] = 1
        many.put({'id': MANY, 'tag': 'x', 'mail': 'new'}, txn=txn)
        version[0] = 2
        with pytest.raises(UniqueError if unique else ValueError):
            many.reindex('mail')
        assert index.get('NEW', txn=txn) is None and index.get('new', txn=txn)['id'] == MANY
    after = contents(store)
    assert [pair for pair in after if pair not in before] and all(
        pair in after for pair in before)
    version[0] = 1
    assert len(after) == len(before) + 2 and store.verify() == []


# Bad and good UTF-8 payloads for a str element's 7-bit groups (a bytes
# element takes any payload).
_PAYLOADS = [b'', b'a', b'\x00', b'\xc3\xa9', b'\xe0\xa0\x80', b'\xed\xa0\x80', b'\xf0\x90\x80\x80',
             b'\xf4\x8f\xbf\xbf', b'\xff', b'\x80', b'\xc0\x80', b'\xc2', b'\xe0\x80\x80',
             b'\xe2\x82', b'\xf4\x90\x80\x80', b'\xf5\x80\x80\x80', b'\xf0\x80\x80\x80',
             b'a\xed\xbf\xbfb', b'\xc3\xa9\xc3']
# Raw 7-bit groups: a dangling group, padding bits set, both with bad UTF-8.
_GROUPS = [b'\x80', b'\x80\x81', b'\xff\xff', b'\xc1\x80\x80\x80\x80\x80\x80\x80\x80']


def test_a_values_scan_refuses_a_corrupt_index_tuple_as_items_does():
    """Index.values() checks an entry's index tuple without decoding it;
    it raises exactly what items() (which decodes it) raises."""
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda r: r['k'])
    index = coll.add_index('v', lambda r: r['v'])
    coll.put({'k': 1, 'v': 'x'})
    elements = [bytes([tag]) + groups for tag in (TAG_STR, TAG_BYTES) for groups in _GROUPS]
    for payload in _PAYLOADS:
        for tag in (TAG_STR, TAG_BYTES):
            out = bytearray([tag])
            keylib._pack7(payload, out)
            elements.append(bytes(out))
    outcomes = set()
    for element in elements:
        entry = index.prefix + element + bytes([KEY_SEP]) + keylib.packs(1)
        with store.begin(write=True) as txn:
            txn.engine_txn.put(entry, b'')
        got = []
        for scan in (index.values, index.items):
            try:
                list(scan())
                got.append(None)
            except CorruptKeyError as exc:
                got.append(str(exc))
        with store.begin(write=True) as txn:
            txn.engine_txn.delete(entry)
        assert got[0] == got[1], element
        outcomes.add(got[0])
    assert None in outcomes and len(outcomes) >= 4   # accepted, and three kinds of error


# --- field indexes: definitions stored with the store ---------------------------------

def _cities(store):
    coll = store.collection('people', key_func=lambda r: r['id'])
    coll.put_many([{'id': 1, 'city': 'Leeds', 'tags': ['red', 'blue'], 'addr': {'zip': 'LS1'}},
                   {'id': 2, 'city': 'York', 'tags': [], 'addr': {'zip': 'YO1'}},
                   {'id': 3, 'tags': ['red'], 'addr': 'unknown'},
                   {'id': 4, 'city': None, 'tags': 'red'}])
    return coll


def test_a_field_index_makes_the_entries_of_its_fields(store):
    coll = _cities(store)
    city = coll.add_index('city', fields='city')
    tags = coll.add_index('tags', fields=['tags'])
    both = coll.add_index('city_zip', fields=('city', 'addr.zip'))
    assert (city.fields, tags.fields, both.fields) == (('city',), ('tags',), ('city', 'addr.zip'))
    # A stored None is a value; record 3 has no city, so no entry.
    assert list(city.pairs()) == [((None,), (4,)), (('Leeds',), (1,)), (('York',), (2,))]
    assert list(tags.pairs()) == [(('blue',), (1,)), (('red',), (1,)), (('red',), (3,)),
                                  (('red',), (4,))]
    assert list(both.pairs()) == [(('Leeds', 'LS1'), (1,)), (('York', 'YO1'), (2,))]
    # Writes keep them, as any index.
    coll.put({'id': 2, 'city': 'Hull', 'tags': ['green'], 'addr': {'zip': 'HU1'}})
    coll.delete(1)
    assert list(city.pairs()) == [((None,), (4,)), (('Hull',), (2,))]
    assert [tup for tup, _ in tags.pairs()] == [('green',), ('red',), ('red',)]
    assert list(both.pairs()) == [(('Hull', 'HU1'), (2,))]
    assert coll.add_index('tags', fields='tags') is tags    # the same definition: as it is
    assert store.verify() == []


def test_a_field_index_is_there_after_a_reopen_without_add_index(reopen):
    store = reopen()
    coll = _cities(store)
    coll.add_index('city', fields='city', unique=True)
    coll.add_index('func', lambda r: r.get('city'))
    store.close()
    store = reopen()
    coll = store.collection('people', key_func=lambda r: r['id'])
    assert coll.indices['city'].fields == ('city',) and coll.indices['city'].unique
    assert 'func' not in coll.indices           # a function index waits for its function
    with pytest.raises(IndexNotAddedError, match="'func'"):
        coll.put({'id': 5, 'city': 'Ely'})
    coll.add_index('func', lambda r: r.get('city'))
    coll.put({'id': 5, 'city': 'Ely'})
    assert coll.indices['city'].get('Ely')['id'] == 5
    with pytest.raises(UniqueError):
        coll.put({'id': 6, 'city': 'Ely'})
    assert coll.add_index('city', fields=['city'], unique=True) is coll.indices['city']
    assert store.verify() == []
    store.close()


@pytest.mark.parametrize('given, words', [
    ({'fields': 'town'}, "stored as fields \\('city',\\); add_index\\(\\) was given fields "
                         "\\('town',\\)"),
    ({'fields': ('city', 'id')}, "given fields \\('city', 'id'\\)"),
    ({'func': lambda r: r.get('city')}, "stored as fields \\('city',\\); add_index\\(\\) was "
                                        "given a function index"),
    ({'fields': 'city', 'unique': True}, 'stored as not unique'),
])
def test_add_index_with_another_definition_names_both(store, given, words):
    coll = _cities(store)
    coll.add_index('city', fields='city')
    fails_cleanly(store, ValueError, lambda: coll.add_index('city', **given), words)


def test_a_function_index_is_not_taken_for_a_field_index(store):
    coll = _cities(store)
    coll.add_index('city', lambda r: r.get('city'))
    with pytest.raises(ValueError, match='already added'):
        coll.add_index('city', lambda r: r.get('city'))
    reopened = store.collection('people')
    assert reopened is coll
    other = centidb.Store(store.engine) if store.engine.__class__.__name__ == 'ListEngine' \
        else None
    if other is not None:
        c2 = other.collection('people')
        fails_cleanly(store, ValueError, lambda: c2.add_index('city', fields='city'),
                      "stored as a function index; add_index\\(\\) was given fields")


@pytest.mark.parametrize('args, kwargs, error, words', [
    ((), {}, TypeError, 'was given neither'),
    ((lambda r: 1,), {'fields': 'a'}, TypeError, 'not both'),
    ((), {'fields': ''}, ValueError, 'empty part'),
    ((), {'fields': ()}, ValueError, 'at least one'),
    ((), {'fields': 3}, TypeError, "not 'int'"),
    (('city',), {}, TypeError, 'must be callable'),
])
def test_add_index_refuses_a_bad_definition(store, args, kwargs, error, words):
    coll = _cities(store)
    fails_cleanly(store, error, lambda: coll.add_index('x', *args, **kwargs), words)
    assert 'x' not in coll.indices


def test_a_unique_field_index_refuses_a_second_record(store):
    coll = _cities(store)
    zips = coll.add_index('zip', fields='addr.zip', unique=True)
    fails_cleanly(store, UniqueError, lambda: coll.put({'id': 9, 'addr': {'zip': 'LS1'}}))
    coll.put({'id': 9, 'addr': {'zip': 'LS2'}})
    assert zips.get('LS2')['id'] == 9
    with pytest.raises(UniqueError):
        coll.add_index('by_tag', fields='tags', unique=True)     # 'red' is on three records
    assert 'by_tag' not in coll.indices


def test_a_dropped_field_index_can_be_made_again_with_another_definition(store):
    coll = _cities(store)
    coll.add_index('i', fields='city')
    coll.drop_index('i')
    assert 'i' not in coll.indices
    index = coll.add_index('i', fields='addr.zip')
    assert [tup for tup, _ in index.pairs()] == [('LS1',), ('YO1',)]


def test_another_process_writes_through_a_field_index_without_add_index(tmp_path):
    import subprocess
    import sys
    import textwrap
    path = str(tmp_path / 'db.lmdb')
    with centidb.open('LmdbEngine', path=path) as store:
        coll = store.collection('c', key_func=lambda r: r['k'])
        coll.put({'k': 1, 'w': 'A'})
        script = textwrap.dedent('''
            import sys, centidb
            with centidb.open('LmdbEngine', path=sys.argv[1]) as store:
                coll = store.collection('c', key_func=lambda r: r['k'])
                if sys.argv[2] == 'add':
                    coll.add_index('w', fields='w')
                coll.put({'k': int(sys.argv[3]), 'w': sys.argv[4]})
        ''')
        subprocess.run([sys.executable, '-c', script, path, 'add', '2', 'B'], check=True,
                       timeout=60)
        # This process takes the index up at its next write, and keeps it.
        coll.put({'k': 3, 'w': 'C'})
        subprocess.run([sys.executable, '-c', script, path, 'write', '4', 'D'], check=True,
                       timeout=60)
        w = coll.indices['w']
        assert [w.get(x)['k'] for x in 'ABCD'] == [1, 2, 3, 4]
        assert store.verify() == []


def test_verify_checks_a_field_index_of_a_reopened_store(reopen):
    store = reopen()
    coll = _cities(store)
    index = coll.add_index('city', fields='city')
    entry = next(key for key in store.engine.keys() if key.startswith(index.prefix))
    store.engine.delete(entry)
    store.close()
    store = reopen()
    problems = store.verify()
    assert [(p.collection, p.key, "'city'" in p.message) for p in problems] == [('people', (4,), True)]
    store.close()
