"""centidb.txn: store transactions, on every engine.

Begin, commit and abort (also as context managers), read snapshots, calls
without ``txn=`` joining the thread's open write transaction, the checks on
a ``txn=`` argument (read-only, ended, another store's), transactions that
outlive the store or their engine transaction, and threads.
"""

import gc
import sys
import threading
import time

import pytest

import centidb
from centidb.engines import ListEngine
from centidb.errors import (
    EngineClosedError, MapFullError, TransactionError, UnsupportedKeyTypeError,
)

from stores import (
    ENGINE_NAMES, Boom, contents, fails_cleanly, list_store, open_store, people,
)


# --- begin, commit, abort ----------------------------------------------------

def test_transactions_commit_abort_and_read_own_writes(store):
    coll = people(store)
    with store.begin(write=True) as txn:
        coll.put({'name': 'elm', 'location': 'OSLO', 'tags': ['z']}, txn=txn)
        assert coll.get(('elm', 'OSLO'), txn=txn)['name'] == 'elm'
        assert coll.indices['tags'].get('z', txn=txn)['name'] == 'elm'
        # Calls without txn= join this thread's open write transaction.
        assert coll.get(('elm', 'OSLO'))['name'] == 'elm'
    assert coll.get(('elm', 'OSLO')) is not None
    with pytest.raises(RuntimeError):
        with store.begin(write=True) as txn:
            coll.delete(('ash', 'LONDON'), txn=txn)
            coll.put({'name': 'fir', 'location': 'OSLO', 'tags': []})
            raise RuntimeError('roll back')
    assert coll.get(('ash', 'LONDON')) is not None
    assert coll.get(('fir', 'OSLO')) is None
    txn = store.begin(write=True)
    coll.put({'name': 'gum', 'location': 'OSLO', 'tags': []}, txn=txn)
    txn.abort()
    assert coll.get(('gum', 'OSLO')) is None


def test_read_transaction_is_a_snapshot(store):
    coll = people(store)
    with store.begin() as snapshot:
        coll.put({'name': 'holly', 'location': 'ROME', 'tags': ['b']})
        assert coll.get(('holly', 'ROME'), txn=snapshot) is None
        assert coll.indices['tags'].count(txn=snapshot) == 3
    assert coll.indices['tags'].count() == 4


def test_ending_a_transaction_inside_its_block_is_fine(store):
    """Regression: the with-block's exit committed (or aborted) a transaction
    the block had already ended, and raised TransactionError."""
    coll = store.collection('c')
    with store.begin(write=True) as txn:
        coll.put('kept', txn=txn)
        txn.commit()
    with store.begin(write=True) as txn:
        coll.put('dropped', txn=txn)
        txn.abort()
    assert list(coll.values()) == ['kept']


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


# --- the txn= argument -------------------------------------------------------

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


# --- joining the thread's write transaction ----------------------------------

def test_nested_write_begin_raises_clearly(store):
    with store.begin(write=True):
        with pytest.raises(TransactionError, match='already has a write'):
            store.begin(write=True)
        with store.begin() as reader:   # a read transaction is fine
            assert reader.write is False


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


def test_iterator_is_bound_to_the_transaction_of_the_call():
    """Regression: an iterator made outside any transaction picked its
    transaction on the first next(): it joined a write transaction opened
    later and then died when that one committed (store.py _iterate_raw was
    a lazy generator)."""
    store = list_store()
    coll = store.collection('c')
    for i in range(5):
        coll.put(i)
    it = coll.values()
    with store.begin(write=True):
        coll.put(100)
        assert next(it) == 0
    assert list(it) == [1, 2, 3, 4]


# --- transactions that outlive their store or engine transaction -------------

def test_abort_of_write_txn_after_close_is_a_noop():
    """Regression: Transaction.abort promises 'no-op if ended', and close()
    ended it; but Transaction._end called _current_write_txn(), which raised
    on a closed store."""
    store = list_store()
    txn = store.begin(write=True)
    store.close()
    txn.abort()


@pytest.mark.parametrize('name', ENGINE_NAMES)
def test_abort_and_iterators_after_close_do_not_raise(name, tmp_path, monkeypatch):
    """Regression: after store.close(), aborting a transaction (which close()
    already ended) or closing an iterator (whose read transaction close()
    ended) raised EngineClosedError. Both must end quietly, and stay ended.

    The iterator aborts its read transaction while it is being finalized,
    where Python reports an exception to ``sys.unraisablehook`` instead of
    raising it: the hook is watched too."""
    unraisable = []
    monkeypatch.setattr(sys, 'unraisablehook', unraisable.append)
    store = open_store(name, tmp_path)
    coll = store.collection('c')
    coll.put('a')
    coll.put('b')
    txn = store.begin()
    iterator = coll.items()
    in_txn = coll.items(txn=txn)
    assert next(iterator) == ((1,), 'a') and next(in_txn) == ((1,), 'a')
    store.close()
    assert txn.abort() is None      # already ended by close(): nothing to do
    assert txn.engine_txn is None and repr(txn) == '<Transaction read ended>'
    assert txn.abort() is None      # again: still nothing
    with pytest.raises(TransactionError, match='already ended'):
        txn.commit()
    assert iterator.close() is None     # its read transaction too
    gc.collect()
    assert unraisable == []
    with pytest.raises(StopIteration):
        next(iterator)
    with pytest.raises(EngineClosedError):
        next(in_txn)    # not closed: the closed engine says so
    if name != 'ListEngine':
        with open_store(name, tmp_path) as store:   # nothing left holding the files
            assert list(store.collection('c').items()) == [((1,), 'a'), ((2,), 'b')]


def test_with_block_exception_is_not_masked_after_close():
    """Regression: closing the store inside a write transaction's with-block
    made the block's exit raise EngineClosedError from the abort, hiding the
    exception the block raised."""
    store = list_store()
    with pytest.raises(KeyError):
        with store.begin(write=True):
            store.close()
            raise KeyError('original')


@pytest.mark.parametrize('name', ENGINE_NAMES)
def test_put_after_the_engine_transaction_ended_raises_a_centidb_error(name, tmp_path):
    """Regression: put() writes through the engine's unchecked _put_many:
    once the engine transaction under a store transaction had ended (aborted,
    as LMDB does on MapFullError, or the engine closed), put() raised
    TypeError or AttributeError instead of TransactionError or
    EngineClosedError."""
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
    """Regression: MapFullError aborts the LMDB transaction; the next put()
    in the same store transaction must say so (it raised AttributeError)."""
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


# --- threads -----------------------------------------------------------------

def _run_with_timeout(func, seconds=3):
    box = []
    thread = threading.Thread(target=lambda: box.append(func()), daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive()


def test_no_deadlock_between_store_lock_and_writer_lock():
    """Regression: thread B's add_index() took Store._lock, then waited for
    the engine writer; thread A held the writer (begin(write=True)) and
    called store.collection(), which waited for Store._lock: deadlock."""
    store = list_store()
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
