"""Regression tests for bugs a review of the document layer found.

Each test states the promise it checks (from the module/method docstrings).
"""

import operator
import threading
import time

import pytest

import centidb
from centidb import encodings, keylib
from centidb.errors import (
    CentiError, EncoderMismatchError, EngineClosedError, MapFullError,
    TransactionError, UnknownIndexError,
)
from stores import ENGINE_NAMES, open_store


def _list_store():
    return centidb.open('ListEngine')


def _engine_keys_outside(store, live_prefixes):
    return [k for k in store.engine.keys()
            if not any(k.startswith(p) for p in live_prefixes)]


# --- index entries are computed from different forms of the record -----------------

def test_tuple_index_value_is_removed_on_update_and_delete():
    """put() computes new entries from the caller's object, but removal (update,
    delete) recomputes them from the *decoded* record, where msgpack turned the
    tuple into a list: the tuple entry is never removed."""
    store = _list_store()
    coll = store.collection('c')
    idx = coll.add_index('pair', lambda r: r['pair'])
    coll.put({'pair': ('x', 1)}, key=1)
    coll.put({'pair': ('y', 2)}, key=1)
    assert list(idx.pairs()) == [(('y', 2), (1,))]
    coll.delete(1)
    assert list(idx.pairs()) == []      # the ('x', 1) and ('y', 2) entries stay behind


def test_add_index_backfill_agrees_with_put():
    """Backfill decodes records; put() does not: the same record gets
    different index entries depending on when the index was added."""
    store = _list_store()
    coll = store.collection('c')
    coll.put({'pair': ('x', 1)}, key=1)
    idx = coll.add_index('pair', lambda r: r['pair'])
    coll.put({'pair': ('x', 1)}, key=2)
    by_key = {}
    for tup, key in idx.pairs():
        by_key.setdefault(key, []).append(tup)
    assert by_key[(1,)] == by_key[(2,)]     # [('x',), (1,)] vs [('x', 1)]


# --- transactions ----------------------------------------------------------------------

def test_abort_of_write_txn_after_close_is_a_noop():
    """Transaction.abort: 'no-op if ended'; close() ended it. store.py
    Transaction._end calls _current_write_txn(), which raises on a closed store."""
    store = _list_store()
    txn = store.begin(write=True)
    store.close()
    txn.abort()


def test_with_block_exception_is_not_masked_after_close():
    store = _list_store()
    with pytest.raises(KeyError):
        with store.begin(write=True):
            store.close()
            raise KeyError('original')


def test_iterator_is_bound_to_the_transaction_of_the_call():
    """An iterator made outside any transaction picks its transaction on the
    first next(): it joins a write transaction opened later and then dies
    when that one commits (store.py _iterate_raw is a lazy generator)."""
    store = _list_store()
    coll = store.collection('c')
    for i in range(5):
        coll.put(i)
    it = coll.values()
    with store.begin(write=True):
        coll.put(100)
        assert next(it) == 0
    assert list(it) == [1, 2, 3, 4]


def _run_with_timeout(func, seconds=3):
    box = []
    thread = threading.Thread(target=lambda: box.append(func()), daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def test_no_deadlock_between_store_lock_and_writer_lock():
    """Thread B: add_index() takes Store._lock, then waits for the engine
    writer. Thread A holds the writer (begin(write=True)) and calls
    store.collection(), which waits for Store._lock: deadlock."""
    store = _list_store()
    coll = store.collection('c')
    ready = threading.Event()
    outcome = {}

    def thread_a():
        txn = store.begin(write=True)
        ready.set()
        time.sleep(0.3)             # B is now inside add_index, holding Store._lock
        store.collection('c')
        txn.commit()
        outcome['a'] = True

    def thread_b():
        ready.wait()
        coll.add_index('i', lambda r: r)
        outcome['b'] = True

    b = threading.Thread(target=thread_b, daemon=True)
    b.start()
    assert _run_with_timeout(thread_a, 5), 'collection() deadlocked against add_index()'
    b.join(5)
    assert outcome == {'a': True, 'b': True}


def test_concurrent_add_index_same_name():
    """Collection.add_index checks `name in self.indices` outside Store._lock:
    two threads adding the same index both create one; the first one's entries
    are orphaned under an id nothing refers to (and drop_index can't reach)."""
    store = _list_store()
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
    assert _engine_keys_outside(store, live) == []
    assert sum(isinstance(r, ValueError) for r in results) == 1


# --- put/delete atomicity --------------------------------------------------------------

def test_put_in_joined_txn_is_all_or_nothing_when_engine_rejects_entry(tmp_path):
    """The engine rejects an over-long index entry (LMDB: 511 bytes) after
    put() already deleted the old entries and wrote the record: inside a user
    transaction the record is replaced and its index entry is gone."""
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


# --- the engine transaction under a store transaction ended ---------------------------

@pytest.mark.parametrize('name', ENGINE_NAMES)
def test_put_after_the_engine_transaction_ended_raises_a_centidb_error(name, tmp_path):
    """put() writes through the engine's unchecked _put_many: once the engine
    transaction under a store transaction had ended (aborted, as LMDB does on
    MapFullError, or the engine closed), put() raised TypeError or
    AttributeError instead of TransactionError or EngineClosedError."""
    store = open_store(name, tmp_path)
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    txn = store.begin(write=True)
    coll.put({'k': 1}, txn=txn)
    txn.raw.abort()
    with pytest.raises(TransactionError, match='aborted'):
        coll.put({'k': 2}, txn=txn)
    with pytest.raises(TransactionError, match='aborted'):
        coll.put({'k': 2})                  # joins the same transaction
    txn.abort()
    txn = store.begin(write=True)
    store.engine.close()
    with pytest.raises(EngineClosedError):
        coll.put({'k': 3}, txn=txn)
    with pytest.raises(EngineClosedError):
        coll.get(3, txn=txn)
    store.close()


def test_put_after_map_full_in_a_store_transaction(tmp_path):
    """MapFullError aborts the LMDB transaction; the next put() in the same
    store transaction must say so (it raised AttributeError)."""
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'), map_size=64 << 10,
                         autogrow=False)
    coll = store.collection('c')
    txn = store.begin(write=True)
    with pytest.raises(MapFullError):
        for i in range(2000):
            coll.put('x' * 100, key=i, txn=txn)
    with pytest.raises(TransactionError, match='aborted'):
        coll.put('y', key=-1, txn=txn)
    txn.abort()
    assert coll.count() == 0
    store.close()


def test_add_index_whose_commit_fails_is_not_left_bound():
    """add_index() bound the index before its commit: when the commit failed,
    the index stayed bound under a prefix id the store never recorded, and
    the next new index reused that id, so two indexes shared entries."""
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


# --- keys ------------------------------------------------------------------------------

def test_key_func_returning_none_does_not_fall_back_to_counter():
    """key_func(rec) returning None silently gets an auto-increment key."""
    store = _list_store()
    coll = store.collection('c', key_func=operator.itemgetter('id'))
    rec = coll.put({'id': None})
    assert rec.key != (1,)


def test_delete_of_unstored_record_deletes_nothing():
    """Record(coll, data) has key None; delete() once turned it into key (None,)."""
    store = _list_store()
    coll = store.collection('c')
    coll.put('keep', key=(None,))
    with pytest.raises(ValueError, match='never stored'):
        coll.delete(centidb.Record(coll, 'other'))
    assert coll.get((None,)) == 'keep'


# --- error messages -----------------------------------------------------------------------

def test_builtin_encoder_object_in_write_txn_is_not_unknown(tmp_path):
    """A fresh make_msgpack_encoder() object (as in the README example) is
    reported as 'msgpack is not registered' inside a write transaction."""
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'))
    store.collection('a').put(1)
    store.close()
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'))
    with store.begin(write=True):
        coll = store.collection('a', encoder=encodings.make_msgpack_encoder())
        coll.put(2)
    store.close()


# --- API consistency ----------------------------------------------------------------------

def test_packer_mismatch_raises_encoder_mismatch_in_session_and_after_reopen(tmp_path):
    """A different packer raised a plain ValueError in the same session and
    was accepted silently (for this session only) after reopening the store;
    the encoder raised EncoderMismatchError in both cases."""
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


def test_drop_of_an_unknown_index_raises_a_centidb_key_error():
    """drop_index('nosuch') raised a plain KeyError, outside centidb.errors."""
    store = _list_store()
    coll = store.collection('people')
    with pytest.raises(UnknownIndexError) as info:
        coll.drop_index('city')
    assert isinstance(info.value, KeyError) and isinstance(info.value, CentiError)
    assert str(info.value) == "collection 'people' has no index 'city' to drop"
