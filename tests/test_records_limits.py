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
from centidb import keylib
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


# --- the checks themselves, against limits set on a wrapper ------------------------

def limited(value=None, ops=None, size=None):
    """An in-memory engine stating the given limits (None: no limit)."""
    engine = WrapperEngine(MemoryEngine())
    engine.max_value_size, engine.max_txn_ops, engine.max_txn_bytes = value, ops, size
    return engine


class StubWriter:
    """A common-case writer that stores `pairs` through the transaction it is given."""

    usable = True

    def __init__(self, pairs, keys):
        self.pairs, self.keys, self.counts = pairs, keys, []

    def write_many(self, etxn, datas, blind, first_id):
        self.counts.append(etxn.writes)
        etxn._put_many(self.pairs)
        self.counts.append(etxn.writes)
        return self.keys


@pytest.mark.parametrize('limit', [{'value': 10}, {'ops': 5}, {'size': 12}])
def test_any_one_limit_wraps_the_writer(limit):
    writer = StubWriter([], [])
    wrapped = limits.limited_writer(writer, limited(**limit), 'c', b'p')
    assert type(wrapped) is limits.LimitedWriter and wrapped.writer is writer
    assert limits.limited_writer(writer, limited(), 'c', b'p') is writer


def test_a_value_of_exactly_max_value_size_fits():
    engine = limited(value=10)
    key_bytes = keylib.packs((3,), b'p')
    with engine.begin(write=True) as etxn:
        limits.check_value_size(etxn, 'c', (3,), b'x' * 10)
        with pytest.raises(LimitExceededError,
                           match=r"'c': the record under key \(3,\) is stored as a value of "
                                 r"11 bytes, more than the engine's max_value_size of 10 "):
            limits.check_value_size(etxn, 'c', (3,), b'x' * 11)
    with limited(ops=5).begin(write=True) as etxn:
        limits.check_value_size(etxn, 'c', (3,), b'x' * 1000)      # no value limit
    limits.check_commit(engine, 'c', b'p', 1, [], [(key_bytes, b'x' * 10)])
    limits.check_commit(engine, 'c', b'p', None, [], [(key_bytes, b'x' * 10)])
    limits.check_commit(limited(ops=5), 'c', b'p', None, [], [(key_bytes, b'x' * 1000)])
    with pytest.raises(LimitExceededError, match=r'under key \(3,\) .* value of 11 bytes'):
        limits.check_commit(engine, 'c', b'p', None, [], [(key_bytes, b'x' * 11)])
    with pytest.raises(LimitExceededError, match=r"under key b'p\\xff\\xfe' .* 11 bytes"):
        limits.check_commit(engine, 'c', b'p', 1, [], [(b'p\xff\xfe', b'x' * 11)])


#: Two records (a key under b'p' and an index entry each) after one delete:
#: 5 keys, 12 bytes of keys and values.
DELETES = [b'dd']
PUTS = [(b'pa', b'v'), (b'ia', b''), (b'pb', b'v'), (b'ib', b'')]


def test_a_commit_may_hold_exactly_max_txn_ops_keys_and_max_txn_bytes_bytes():
    for engine in (limited(ops=5), limited(size=12), limited(ops=5, size=12)):
        limits.check_commit(engine, 'c', b'p', 2, DELETES, PUTS)
    for engine in (limited(ops=4), limited(size=11), limited(ops=4, size=100),
                   limited(ops=100, size=11)):
        with pytest.raises(LimitExceededError, match='only the first 1 records fit'):
            limits.check_commit(engine, 'c', b'p', 2, DELETES, PUTS)


def test_the_commit_error_counts_everything_and_says_how_many_records_fit():
    puts = PUTS + [(b'pc', b'v'), (b'ic', b'')]          # 7 keys, 17 bytes
    with pytest.raises(LimitExceededError) as info:
        limits.check_commit(limited(ops=5), 'c', b'p', 3, DELETES, puts)
    assert re.fullmatch(
        r"collection 'c': put_many\(\) of 3 records writes at least 7 keys and 17 bytes of "
        r'keys and values, more than one commit of the engine holds \(max_txn_ops is 5\); '
        r'only the first 2 records fit in one commit\. Nothing was written: pass at most 2 '
        r'records per call, each call in a transaction of its own', str(info.value))
    with pytest.raises(LimitExceededError,
                       match=r'at least 7 keys and 17 bytes .*\(max_txn_bytes is 9\); only '
                             r'the first 1 records fit'):
        limits.check_commit(limited(size=9), 'c', b'p', 3, DELETES, puts)
    with pytest.raises(LimitExceededError,
                       match=r'\(max_txn_ops is 6, max_txn_bytes is 100\); only the first 2 '):
        limits.check_commit(limited(ops=6, size=100), 'c', b'p', 3, DELETES, puts)
    with pytest.raises(LimitExceededError, match='only the first 0 records fit'):
        limits.check_commit(limited(ops=1), 'c', b'p', 3, DELETES, puts)


def test_a_commit_error_of_an_unknown_count_of_records_names_none():
    error = limits.commit_too_large(limited(ops=5), 'the savepoint', None, 7, 16, 2)
    assert str(error).startswith('the savepoint writes at least 7 keys and 16 bytes ')


def test_the_held_writes_count_as_writes_and_reach_the_engine_once_checked():
    engine = limited(ops=5)
    pairs = [(b'pa', b'v'), (b'ia', b'')]
    writer = StubWriter(pairs, [('a',)])
    with engine.begin(write=True) as etxn:
        assert limits.LimitedWriter(writer, engine, 'c', b'p').write_many(
            etxn, [{}], False, None) == [('a',)]
        assert writer.counts[1] - writer.counts[0] == 2
    assert list(engine.items()) == sorted(pairs)
    writer = StubWriter(pairs * 3, [('a',)])
    with engine.begin(write=True) as etxn:
        with pytest.raises(LimitExceededError):
            limits.LimitedWriter(writer, engine, 'c', b'p').write_many(
                etxn, [{}], False, None)
        etxn.delete(b'pa')
    assert list(engine.items()) == [(b'ia', b'')]


@pytest.mark.parametrize('limit', [{'value': 100}, {'ops': 100}, {'value': 100, 'size': 10_000}])
def test_the_limited_writer_writes_each_key_once(limit):
    with centidb.Store(limited(**limit)) as store:
        coll = store.collection('docs', key_func=lambda rec: rec['id'])
        assert type(coll.records.writer) is limits.LimitedWriter
        with store.begin(write=True) as txn:
            coll.put({'id': 0}, txn=txn)
            etxn = txn.engine_txn
            before = etxn.writes
            assert coll.put({'id': 1}, txn=txn).key == (1,)
            assert etxn.writes - before == 1
            assert coll.put_many([{'id': i} for i in (2, 3, 4)], txn=txn) == [(2,), (3,), (4,)]
            assert etxn.writes - before == 4
        assert list(coll.keys()) == [(i,) for i in range(5)]


def test_a_put_in_an_ended_transaction_is_refused_on_an_engine_with_limits():
    from centidb.errors import TransactionError
    with centidb.Store(limited(value=100)) as store:
        coll = store.collection('docs', key_func=lambda rec: rec['id'])
        with store.begin(write=True) as txn:
            coll.put({'id': 0}, txn=txn)
        with pytest.raises(TransactionError):
            coll.put({'id': 1}, txn=txn)
        assert list(coll.keys()) == [(0,)]
