"""Implicit metadata writes run again after a ConflictError, a bounded number of times.

Opening a store, ``collection()``, ``add_encoder()`` and ``add_index()``
write metadata in transactions of their own; on an engine with optimistic
transactions, clients doing them at once conflict (the real cluster test is
in ``test_engines_etcd.py``). Here an in-memory engine fails chosen commits
with :class:`~centidb.errors.ConflictError`, as an etcd commit would.
"""

import pytest

import centidb
import centidb.txn
from centidb.encodings import Encoder
from centidb.engines import MemoryEngine, WrapperEngine, WrapperTransaction
from centidb.errors import ConflictError


class ConflictingTransaction(WrapperTransaction):
    def _commit(self):
        engine = self.engine
        if engine.conflicts and self.write:
            engine.conflicts -= 1
            engine.refused += 1
            self.inner.abort()
            raise ConflictError('injected conflict')
        engine.committed += self.write
        self.inner.commit()


class ConflictingEngine(WrapperEngine):
    """Fails the next ``conflicts`` write commits with ConflictError."""

    transaction_class = ConflictingTransaction

    def __init__(self, inner, conflicts=0):
        super().__init__(inner)
        self.conflicts = conflicts
        self.refused = 0
        self.committed = 0


def test_opening_a_store_retries_conflicts():
    engine = ConflictingEngine(MemoryEngine(), conflicts=2)
    with centidb.Store(engine) as store:
        assert engine.refused == 2 and engine.committed == 1
        coll = store.collection('c')
        coll.put({'a': 1})
        assert list(coll.values()) == [{'a': 1}]
        assert store.verify() == []


def test_collection_add_encoder_and_add_index_retry_conflicts():
    engine = ConflictingEngine(MemoryEngine())
    with centidb.Store(engine) as store:
        engine.conflicts = 3
        upper = store.add_encoder(Encoder('upper', str.upper, str.lower))
        assert upper.name == 'upper' and engine.refused == 3
        engine.conflicts = 3
        coll = store.collection('c', key_func=lambda r: r['id'])
        assert engine.refused == 6
        coll.put({'id': 1, 'tag': 'x'})
        engine.conflicts = 3
        tags = coll.add_index('tag', lambda r: r['tag'])
        assert engine.refused == 9
        assert list(tags.values('x')) == [{'id': 1, 'tag': 'x'}]
        assert store.verify() == []
        with centidb.Store(engine.inner) as again:     # what was stored
            assert list(again.collection('c').items()) == [((1,), {'id': 1, 'tag': 'x'})]
            assert again.collection('c').add_index(
                'tag', lambda r: r['tag']).index_id == tags.index_id


def test_retries_are_bounded_in_count(monkeypatch):
    monkeypatch.setattr(centidb.txn, 'CONFLICT_RETRIES', 3)
    engine = ConflictingEngine(MemoryEngine())
    with centidb.Store(engine) as store:
        engine.conflicts = 10
        with pytest.raises(ConflictError, match='injected'):
            store.collection('c')
        assert engine.refused == 4          # the first try and 3 more
        engine.conflicts = 0
        coll = store.collection('c')        # forgotten after the failure
        coll.put({'a': 1})
        assert engine.committed >= 2 and store.verify() == []


def test_retries_are_bounded_in_time(monkeypatch):
    monkeypatch.setattr(centidb.txn, 'CONFLICT_RETRY_SECONDS', 0.0)
    engine = ConflictingEngine(MemoryEngine())
    with centidb.Store(engine) as store:
        store.collection('c').put({'a': 1})
        engine.conflicts = 10
        with pytest.raises(ConflictError):
            store.collection('c').add_index('a', lambda r: r['a'])
        assert engine.refused == 1


def test_in_an_open_write_transaction_the_conflict_is_the_callers():
    engine = ConflictingEngine(MemoryEngine())
    with centidb.Store(engine) as store:
        engine.conflicts = 1
        with pytest.raises(ConflictError):
            with store.begin(write=True):
                store.collection('c').put({'a': 1})     # joins; not retried
        assert engine.refused == 1
        runs = []

        def create(txn):
            runs.append(txn)
            store.collection('c').put({'a': 1})
        engine.conflicts = 1
        store.transact(create)
        assert len(runs) == 2 and list(store.collection('c').values()) == [{'a': 1}]


def test_drop_index_rename_and_drop_collection_retry_conflicts():
    engine = ConflictingEngine(MemoryEngine())
    with centidb.Store(engine) as store:
        coll = store.collection('c', key_func=lambda r: r['id'])
        coll.add_index('tag', lambda r: r['tag'])
        coll.put({'id': 1, 'tag': 'x'})
        engine.conflicts = 3
        coll.drop_index('tag')
        assert engine.refused == 3 and 'tag' not in coll.indices
        engine.conflicts = 3
        store.rename_collection('c', 'd')
        assert engine.refused == 6 and store.collections() == ['d']
        assert list(store.collection('d').values()) == [{'id': 1, 'tag': 'x'}]
        engine.conflicts = 3
        store.drop_collection('d')
        assert engine.refused == 9 and store.collections() == []
        assert store.verify() == []
        assert centidb.Store(engine.inner).collections() == []     # what was stored


def test_a_given_transaction_is_not_retried():
    engine = ConflictingEngine(MemoryEngine())
    with centidb.Store(engine) as store:
        store.collection('c').put(1)
        engine.conflicts = 1
        txn = store.begin(write=True)
        store.rename_collection('c', 'd', txn=txn)
        with pytest.raises(ConflictError):
            txn.commit()
        assert engine.refused == 1 and store.collections() == ['c']
        assert list(store.collection('c').values()) == [1]
