"""The document layer refuses, before writing, what the engine's limits forbid.

Run on two engines with limits: a wrapper around the in-memory engine whose
limits are set small (the engine below enforces none, so only the document
layer's checks stand between the test and an oversized write), and
EtcdEngine with etcd's default limits (128 operations a commit), where a
``put_many`` said to fit must also commit.
"""

import re

import pytest

import centidb
from centidb.records import limits
from centidb.engines import MemoryEngine, WrapperEngine
from centidb.errors import LimitExceededError, UniqueError

import etcd_cluster


class SmallLimits(WrapperEngine):
    """The in-memory engine, stating small limits it does not enforce."""

    def __init__(self, inner):
        super().__init__(inner)
        self.max_value_size = 300
        self.max_txn_ops = 40
        self.max_txn_bytes = 3000


@pytest.fixture(params=['small', 'etcd'])
def store(request):
    if request.param == 'small':
        engine = SmallLimits(MemoryEngine())
    else:
        engine = etcd_cluster.open_engine(request.getfixturevalue('etcd_cluster'),
                                          max_txn_ops=128)
    with centidb.Store(engine) as store:
        yield store


def everything(store):
    return list(store.engine.items())


def tagged(store, **options):
    coll = store.collection('docs', key_func=lambda rec: rec['id'])
    return coll, coll.add_index('tag', lambda rec: rec['tag'], **options)


def fit_of(error):
    found = re.search(r'only the first (\d+) records fit in one commit', str(error))
    assert found, str(error)
    return int(found.group(1))


def test_a_put_past_max_value_size_is_refused_before_writing(store):
    coll, index = tagged(store)
    coll.put({'id': 1, 'tag': 'a', 'text': 'small'})
    limit = store.engine.max_value_size
    big = {'id': 1, 'tag': 'b', 'text': 'x' * limit}
    before = everything(store)
    for call in (lambda: coll.put(big), lambda: coll.put(dict(big, id=2)),
                 lambda: coll.put(big, blind=True)):
        with pytest.raises(LimitExceededError,
                           match=rf"collection 'docs': the record under key \([12],\) is "
                                 rf"stored as a value of \d+ bytes, more than the engine's "
                                 rf"max_value_size of {limit} bytes. Nothing was written"):
            call()
        assert everything(store) == before
    with store.begin(write=True) as txn:        # the transaction carries on unharmed
        coll.put({'id': 3, 'tag': 'c'}, txn=txn)
        with pytest.raises(LimitExceededError):
            coll.put(big, txn=txn)
        coll.put({'id': 4, 'tag': 'c'}, txn=txn)
    assert [rec['id'] for rec in coll.values()] == [1, 3, 4]
    assert index.get('a')['id'] == 1 and index.get('b') is None and store.verify() == []


@pytest.mark.parametrize('unique', [False, True])       # the common path, the general one
def test_put_many_with_a_value_past_the_limit_writes_nothing(store, unique):
    coll, _ = tagged(store, unique=unique)
    recs = [{'id': i, 'tag': f't{i}'} for i in range(5)]
    recs[3]['text'] = 'x' * store.engine.max_value_size
    with store.begin(write=True) as txn:
        coll.put({'id': 9, 'tag': 'kept'}, txn=txn)
        before = [(bytes(k), bytes(v)) for k, v in txn.engine_txn.items()]
        with pytest.raises(LimitExceededError, match=r"key \(3,\) .*max_value_size"):
            coll.put_many(recs, txn=txn)
        assert [(bytes(k), bytes(v)) for k, v in txn.engine_txn.items()] == before
    assert list(coll.keys()) == [(9,)] and store.verify() == []


@pytest.mark.parametrize('unique', [False, True])
def test_put_many_past_the_commit_limits_says_how_many_records_fit(store, unique):
    coll, _ = tagged(store, unique=unique)
    # Two keys a record (itself and its entry): more than max_txn_ops holds.
    recs = [{'id': i, 'tag': f't{i:04d}'} for i in range(store.engine.max_txn_ops)]
    before = everything(store)
    with pytest.raises(LimitExceededError,
                       match=r"collection 'docs': put_many\(\).* more than one commit "
                             r"of the engine holds \(max_txn_ops is \d+") as info:
        coll.put_many(recs)
    assert everything(store) == before
    fit = fit_of(info.value)
    assert 0 < fit < len(recs)
    with pytest.raises(LimitExceededError):
        coll.put_many(recs[:fit + 1])
    assert coll.put_many(recs[:fit]) == [(i,) for i in range(fit)]   # and it commits
    assert coll.count() == fit and store.verify() == []


def test_the_bytes_per_commit_are_counted_too(store):
    coll = store.collection('blobs', key_func=lambda rec: rec['id'])
    size = store.engine.max_value_size - 50
    n = store.engine.max_txn_bytes // size + 1          # few records, many bytes
    recs = [{'id': i, 'blob': 'x' * size} for i in range(n)]
    with pytest.raises(LimitExceededError, match=r'max_txn_bytes is \d+') as info:
        coll.put_many(recs)
    fit = fit_of(info.value)
    assert fit == n - 1 or fit == n - 2
    assert len(coll.put_many(recs[:fit])) == fit
    assert coll.count() == fit


def test_engines_without_limits_keep_their_writer():
    store = centidb.open('MemoryEngine')
    coll, _ = tagged(store)
    writer = coll.records.writer
    assert type(writer).__name__ == 'RecordWriter'
    assert limits.limited_writer(writer, store.engine, 'docs', b'p') is writer
    coll.put_many([{'id': i, 'tag': 'x' * 10_000} for i in range(1000)])
    assert coll.count() == 1000


def test_a_unique_clash_is_still_reported_before_the_limits(store):
    coll, _ = tagged(store, unique=True)
    coll.put({'id': 1, 'tag': 'same'})
    with pytest.raises(UniqueError):
        coll.put_many([{'id': 2, 'tag': 'same'}])
