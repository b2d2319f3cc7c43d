"""Store.transact(fn, retries=N): run a function in a write transaction and
commit, running it again when the commit conflicts; on every engine, and a
real conflict between two clients of one etcd store."""

import pytest

import centidb
from centidb.errors import ConflictError, TransactionError

from etcd_cluster import open_engine
from stores import Boom, by_id, contents


def test_transact_commits_and_returns_the_result(store):
    coll = store.collection('c', key_func=by_id)
    assert store.transact(lambda txn: [coll.put({'id': 1}, txn=txn), 'done'][1]) == 'done'
    assert store.transact(lambda txn: coll.get(1, txn=txn)) == {'id': 1}


def test_an_error_aborts_and_is_not_retried(store):
    coll = store.collection('c', key_func=by_id)
    runs = []

    def fail(txn):
        runs.append(1)
        coll.put({'id': 2}, txn=txn)
        raise Boom()
    with pytest.raises(Boom):
        store.transact(fail)
    assert runs == [1] and coll.get(2) is None


def test_a_conflict_is_retried_up_to_retries_times(store):
    coll = store.collection('c', key_func=by_id)
    runs = []

    def conflicting(conflicts):
        def fn(txn):
            runs.append(1)
            coll.put({'id': len(runs)}, txn=txn)
            if len(runs) <= conflicts:
                raise ConflictError('a read could not be repeated')
            return len(runs)
        return fn
    assert store.transact(conflicting(2), retries=2) == 3
    assert [r['id'] for r in coll.values()] == [3]      # the failed runs left nothing
    runs.clear()
    before = contents(store)
    with pytest.raises(ConflictError):
        store.transact(conflicting(5), retries=1)
    assert len(runs) == 2 and contents(store) == before


@pytest.mark.parametrize('retries, error', [(-1, ValueError), (1.0, TypeError),
                                            (None, TypeError)])
def test_bad_arguments(store, retries, error):
    with pytest.raises(error, match='retries'):
        store.transact(lambda txn: None, retries=retries)
    with pytest.raises(TypeError, match='fn must be callable'):
        store.transact(None)


def test_no_nesting_in_an_open_write_transaction(store):
    with store.begin(write=True):
        with pytest.raises(TransactionError, match='already has a write transaction'):
            store.transact(lambda txn: None)


def test_two_etcd_clients_conflict_and_the_retry_wins(etcd_cluster):
    first = centidb.Store(open_engine(etcd_cluster))
    second = centidb.Store(open_engine(etcd_cluster, prefix=first.engine.prefix))
    try:
        mine = first.collection('tally', key_func=by_id)
        theirs = second.collection('tally', key_func=by_id)
        mine.put({'id': 1, 'n': 0})
        runs = []

        def bump(txn):
            runs.append(1)
            record = mine.get(1, txn=txn)
            if len(runs) == 1:      # another client bumps it meanwhile
                theirs.put({'id': 1, 'n': record['n'] + 10})
            record['n'] += 1
            mine.put(record, txn=txn)
            return record['n']
        assert first.transact(bump) == 11
        assert len(runs) == 2 and theirs.get(1) == {'id': 1, 'n': 11}
        runs.clear()
        with pytest.raises(ConflictError):
            first.transact(lambda txn: bump(txn) if runs else bump(txn), retries=0)
        assert len(runs) == 1 and theirs.get(1)['n'] == 21
        assert first.verify() == [] and second.verify() == []
    finally:
        first.close()
        second.close()
