"""Store management: listing, dropping and renaming collections.

``Store.collections()`` lists what the catalog holds; ``drop_collection()``
deletes a collection's records, batches, index entries, metadata and
default counter in one write transaction; ``rename_collection()`` moves its
metadata only. Local collection objects are detached (and attached again if
the transaction aborts); other store objects, standing for other processes,
detach theirs at their next write transaction. The last tests use real
processes on LMDB.
"""

import json
import subprocess
import sys
import textwrap

import pytest

import centidb
from centidb import keylib
from centidb.errors import (
    CollectionExistsError, StoreError, TransactionError, UnknownCollectionError,
)

from stores import by_id, contents, fails_cleanly, tag_of

TIMEOUT = 120


def make_docs(store, name='docs', n=20):
    """Collection `name` keyed by id, indexed by tag and by parity, part batched."""
    coll = store.collection(name, key_func=by_id)
    coll.add_index('tag', tag_of)
    coll.add_index('odd', lambda rec: rec['id'] % 2 == 1)
    for i in range(n):
        coll.put({'id': i, 'tag': 'abc'[i % 3]})
    coll.batch(hi=n // 2, max_recs=4)
    return coll


def prefix_ids(store, name):
    """The collection's prefix id and the prefix ids of its stored indexes."""
    catalog = store._catalog
    with store.begin() as txn:
        info = catalog.collection_info(txn.engine_txn, name)
        return [info['id'], *catalog.index_ids(txn.engine_txn, info['id']).values()]


def keys_under(store, prefix_id):
    prefix = keylib.packs(prefix_id)
    return [key for key in store.engine.keys() if key.startswith(prefix)]


# --- collections() ---------------------------------------------------------------

def test_collections_lists_every_stored_name(store):
    assert store.collections() == []
    store.collection('zebra')
    store.collection('ant', key_func=by_id)
    other = centidb.Store(store.engine)        # stands for another process
    other.collection('moth')
    assert store.collections() == ['ant', 'moth', 'zebra']
    assert store._collections.get('moth') is None    # read from the catalog, not the session


def test_collections_sees_the_open_write_transaction(store):
    with store.begin(write=True) as txn:
        store.collection('new')
        assert store.collections() == ['new']
        assert store.collections(txn=txn) == ['new']
        txn.abort()
    assert store.collections() == []


# --- drop_collection() -----------------------------------------------------------------

def test_drop_deletes_records_batches_entries_and_metadata(store):
    docs = make_docs(store)
    keep = make_docs(store, 'keep', 5)
    # An index stored by another store object, never added in this session.
    centidb.Store(store.engine).collection('docs', key_func=by_id).add_index(
        'by_tag_len', lambda rec: len(rec['tag']))
    auto = store.collection('auto')
    auto.put('x')
    auto.put('y')
    ids = prefix_ids(store, 'docs') + prefix_ids(store, 'auto')
    assert len(ids) == 5 and all(keys_under(store, i) for i in ids)
    kept = [(k, v) for k, v in contents(store) if k.startswith(keylib.packs(keep.coll_id))]

    store.drop_collection('docs')
    store.drop_collection('auto')

    assert store.collections() == ['keep']
    assert not any(keys_under(store, i) for i in ids)
    with store.begin() as txn:
        etxn = txn.engine_txn
        assert store._catalog.index_ids(etxn, ids[0]) == {}
        assert store._catalog.collection_info(etxn, 'docs') is None
    assert store.counter('auto:key', n=0, init=-1) == -1     # the counter is gone
    assert [(k, v) for k, v in contents(store)
            if k.startswith(keylib.packs(keep.coll_id))] == kept
    assert store.verify() == []
    assert keep.count() == 5 and keep.indices['tag'].get('b')['id'] == 1
    assert docs.name == 'docs'      # plain attributes still answer


def test_drop_detaches_the_collection_and_its_indexes(store):
    docs = make_docs(store)
    tag = docs.indices['tag']
    store.drop_collection('docs')
    for call in (lambda: docs.get(1), lambda: docs.put({'id': 99}), lambda: list(docs.items()),
                 lambda: docs.count(), lambda: docs.delete(1), lambda: docs.batch(),
                 lambda: tag.get('a'), lambda: list(tag.values())):
        with pytest.raises(StoreError, match="collection 'docs' cannot be used: it was "
                                             "dropped from the store"):
            call()
    # Re-adding an index does not bring the object back.
    with pytest.raises(StoreError, match='dropped'):
        docs.add_index('tag', tag_of)
    assert docs.indices == {}
    assert store.verify() == []


def test_a_collection_made_again_is_new_and_empty(store):
    old = make_docs(store)
    old_ids = prefix_ids(store, 'docs')
    auto = store.collection('auto')
    assert [auto.put(x).key for x in 'ab'] == [(1,), (2,)]
    store.drop_collection('docs')
    store.drop_collection('auto')
    new = store.collection('docs', key_func=by_id)
    assert new is not old and new.count() == 0 and new.get(1) is None
    tag = new.add_index('tag', tag_of)
    assert tag.get('a') is None
    new.put({'id': 1, 'tag': 'a'})
    new_ids = prefix_ids(store, 'docs')
    assert min(new_ids) > max(old_ids)          # prefix ids are never reused
    assert store.collection('auto').put('c').key == (1,)    # its counter starts again
    assert store.verify() == []


def test_drop_an_unknown_collection_raises(store):
    store.collection('there')
    exc = fails_cleanly(store, UnknownCollectionError,
                        lambda: store.drop_collection('missing'), match="no collection 'missing'")
    assert isinstance(exc, KeyError) and isinstance(exc, StoreError)
    assert 'store.collections()' in str(exc)
    with pytest.raises(TypeError, match='non-empty str'):
        store.drop_collection('')
    with pytest.raises(TypeError, match='non-empty str'):
        store.drop_collection(3)
    store.drop_collection('there')
    with pytest.raises(UnknownCollectionError):
        store.drop_collection('there')      # twice


def test_drop_in_a_read_only_transaction_raises(store):
    make_docs(store)
    with store.begin() as txn:
        with pytest.raises(TransactionError, match='read-only'):
            store.drop_collection('docs', txn=txn)
    assert store.collections() == ['docs']


def test_drop_in_an_aborted_transaction_changes_nothing(store):
    docs = make_docs(store)
    tag = docs.indices['tag']
    before = contents(store)
    with store.begin(write=True) as txn:
        store.drop_collection('docs', txn=txn)
        assert store.collections(txn=txn) == []
        with pytest.raises(StoreError, match='dropped'):
            docs.put({'id': 50}, txn=txn)
        txn.abort()
    assert contents(store) == before
    assert store.collections() == ['docs']
    assert store.collection('docs') is docs            # the same object, usable again
    assert sorted(docs.indices) == ['odd', 'tag'] and docs.indices['tag'] is tag
    docs.put({'id': 50, 'tag': 'z'})
    assert tag.get('z')['id'] == 50 and docs.get(3)['tag'] == 'a'
    assert store.verify() == []


def test_drop_then_make_again_in_an_aborted_transaction(store):
    docs = make_docs(store)
    before = contents(store)
    with store.begin(write=True) as txn:
        store.drop_collection('docs')             # joins the open transaction
        again = store.collection('docs', key_func=by_id)
        again.put({'id': 1, 'tag': 'new'})
        assert store.collection('docs') is again
        txn.abort()
    assert contents(store) == before
    assert store.collection('docs') is docs
    with pytest.raises(StoreError, match='aborted'):
        again.get(1)
    assert docs.get(1)['tag'] == 'b'
    assert store.verify() == []


def test_drop_commits_with_the_transaction_it_joins(store):
    make_docs(store)
    log = store.collection('log')
    with store.begin(write=True) as txn:
        log.put('dropping docs', txn=txn)
        store.drop_collection('docs')
    assert store.collections() == ['log']
    assert list(log.values()) == ['dropping docs']
    assert store.verify() == []


def test_drop_of_a_collection_not_opened_in_this_session(store):
    centidb.Store(store.engine).collection('theirs', key_func=by_id).put({'id': 1})
    store.drop_collection('theirs')
    assert store.collections() == []
    assert store.verify() == []


def test_drop_keeps_a_counter_named_with_counter_name(store):
    first = store.collection('first', counter_name='shared')
    second = store.collection('second', counter_name='shared')
    assert [first.put('a').key, second.put('b').key] == [(1,), (2,)]
    store.drop_collection('first')
    assert second.put('c').key == (3,)      # not numbered from 1 again
    assert store.counter('shared', n=0) == 4
    store.drop_collection('second')
    assert store.counter('shared', n=0) == 4
    assert store.verify() == []


def test_drop_a_large_collection(store):
    coll = store.collection('big', key_func=by_id)
    coll.add_index('tag', tag_of)
    for start in range(0, 3000, 1000):      # 2,000 keys a commit: etcd takes them
        with store.begin(write=True) as txn:
            for i in range(start, start + 1000):
                coll.put({'id': i, 'tag': i % 7}, txn=txn, blind=True)
    coll.batch(lo=1000, hi=2000, max_recs=50)
    ids = prefix_ids(store, 'big')
    store.drop_collection('big')
    assert not any(keys_under(store, i) for i in ids)
    assert store.verify() == []


def test_another_store_object_detaches_a_dropped_collection(store):
    make_docs(store)
    other = centidb.Store(store.engine)         # stands for another process
    theirs = other.collection('docs', key_func=by_id)
    theirs.add_index('tag', tag_of)
    theirs.add_index('odd', lambda rec: rec['id'] % 2 == 1)
    assert theirs.get(3)['tag'] == 'a'
    store.drop_collection('docs')
    # Its next write transaction reads the new generation and detaches it.
    with pytest.raises(StoreError, match="it was dropped from the store; "
                                         "store.collection\\('docs'\\) makes a new"):
        theirs.put({'id': 1, 'tag': 'x'})
    with pytest.raises(StoreError, match='dropped'):
        theirs.get(3)
    assert other.collections() == []
    fresh = other.collection('docs', key_func=by_id)
    assert fresh is not theirs and fresh.count() == 0
    assert other.verify() == []


def test_another_store_object_detaches_a_collection_dropped_and_made_again(store):
    make_docs(store)
    other = centidb.Store(store.engine)
    theirs = other.collection('docs', key_func=by_id)
    old_id = theirs.coll_id
    store.drop_collection('docs')
    store.collection('docs', key_func=by_id).put({'id': 7, 'tag': 'new'})
    with pytest.raises(StoreError, match='opens the new collection made since'):
        other.counter('anything')           # any write transaction notices
        theirs.get(7)
    fresh = other.collection('docs', key_func=by_id)
    assert fresh.coll_id > old_id and list(fresh.values()) == [{'id': 7, 'tag': 'new'}]


def test_unreadable_metadata_elsewhere_does_not_hide_a_drop(store):
    make_docs(store)
    other = centidb.Store(store.engine)
    theirs = other.collection('docs', key_func=by_id)
    store.drop_collection('docs')
    store.engine.put(keylib.packs((0, 'collection', 'broken')), b'not json')
    with pytest.raises(StoreError, match='it was dropped from the store'):
        theirs.put({'id': 1})


# --- rename_collection() -----------------------------------------------------------------

def test_rename_moves_the_metadata_only(store):
    docs = make_docs(store)
    ids = prefix_ids(store, 'docs')
    records = list(docs.items())
    store.rename_collection('docs', 'papers')
    assert store.collections() == ['papers']
    with pytest.raises(StoreError, match="renamed to 'papers'; open it as "
                                         "store.collection\\('papers'\\)"):
        docs.get(1)
    papers = store.collection('papers', key_func=by_id)
    assert prefix_ids(store, 'papers') == ids
    assert list(papers.items()) == records
    tag = papers.add_index('tag', tag_of)
    papers.add_index('odd', lambda rec: rec['id'] % 2 == 1)
    assert tag.get('c')['id'] == 2
    papers.put({'id': 100, 'tag': 'd'})
    assert store.verify() == []


def test_rename_moves_the_default_counter(store):
    log = store.collection('log')
    for word in 'abc':
        log.put(word)
    store.rename_collection('log', 'journal')
    assert store.counter('log:key', n=0, init=-1) == -1
    journal = store.collection('journal')
    assert journal.counter_name == 'journal:key'
    assert journal.put('d').key == (4,)
    assert store.collection('log').put('new').key == (1,)
    assert store.verify() == []


def test_rename_keeps_a_counter_it_cannot_move(store):
    store.counter('journal:key', n=10)       # a user's counter has the name already
    log = store.collection('log')
    log.put('a')
    store.rename_collection('log', 'journal')
    journal = store.collection('journal')
    assert journal.counter_name == 'log:key'
    assert journal.put('b').key == (2,)
    assert store.counter('journal:key', n=0) == 11
    assert store.verify() == []


def test_rename_errors(store):
    store.collection('a')
    store.collection('b')
    exc = fails_cleanly(store, CollectionExistsError,
                        lambda: store.rename_collection('a', 'b'), match="collection 'b' exists")
    assert isinstance(exc, ValueError)
    fails_cleanly(store, CollectionExistsError, lambda: store.rename_collection('a', 'a'))
    fails_cleanly(store, UnknownCollectionError, lambda: store.rename_collection('c', 'd'))
    with pytest.raises(TypeError, match='non-empty str'):
        store.rename_collection('a', '')
    assert store.collections() == ['a', 'b']


def test_rename_in_an_aborted_transaction_changes_nothing(store):
    docs = make_docs(store)
    before = contents(store)
    with store.begin(write=True) as txn:
        store.rename_collection('docs', 'papers', txn=txn)
        assert store.collections() == ['papers']
        txn.abort()
    assert contents(store) == before
    assert store.collection('docs') is docs
    docs.put({'id': 1, 'tag': 'c'})
    assert store.verify() == []


def test_another_store_object_detaches_a_renamed_collection(store):
    make_docs(store)
    other = centidb.Store(store.engine)
    theirs = other.collection('docs', key_func=by_id)
    store.rename_collection('docs', 'papers')
    with pytest.raises(StoreError, match="renamed to 'papers'"):
        theirs.put({'id': 1})
    assert other.collection('papers', key_func=by_id).get(4)['tag'] == 'b'


# --- on disk, and in other processes ----------------------------------------------------

def test_a_drop_survives_reopening(reopen):
    with reopen() as store:
        make_docs(store)
        make_docs(store, 'keep', 3)
        store.drop_collection('docs')
    with reopen() as store:
        assert store.collections() == ['keep']
        assert store.collection('docs').count() == 0
        assert store.verify() == []


PROCESS = textwrap.dedent('''
    import json, sys, centidb
    with centidb.open('LmdbEngine', path=sys.argv[1]) as store:
        names = store.collections()
        store.drop_collection('docs')
        docs = store.collection('docs', key_func=lambda r: r['id'])
        docs.put({'id': 7, 'tag': 'theirs'})
        print(json.dumps({'names': names, 'id': docs.coll_id}))
''')


def test_another_process_drops_and_makes_again(tmp_path):
    path = str(tmp_path / 'db.lmdb')
    with centidb.open('LmdbEngine', path=path) as store:
        docs = make_docs(store)
        store.collection('made_here')
        old_ids = prefix_ids(store, 'docs')
        done = subprocess.run([sys.executable, '-c', PROCESS, path], capture_output=True,
                              text=True, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result['names'] == ['docs', 'made_here']
        assert result['id'] > max(old_ids)
        with pytest.raises(StoreError, match='dropped'):
            docs.put({'id': 1, 'tag': 'mine'})
        with pytest.raises(StoreError, match='dropped'):
            docs.get(1)
        fresh = store.collection('docs', key_func=by_id)
        assert fresh.coll_id == result['id']
        assert list(fresh.values()) == [{'id': 7, 'tag': 'theirs'}]
        assert store.verify() == []
