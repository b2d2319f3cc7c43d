"""EtcdEngine on real etcd clusters: what the contract suite does not cover.

Snapshots at a revision, optimistic conflicts (a read key, a read range, a
partly read range; disjoint ranges do not conflict), commits past etcd's
limits (refused before anything is written), prefix isolation, and faults:
a follower killed, the leader killed mid-workload, and two client processes
writing through ``Store.transact`` at once. The client's loading and
endpoint failover are in ``test_engines_etcd_client.py``.

Most tests use the session's cluster (``etcd_cluster`` in conftest.py); the
fault tests have a cluster of their own (``faulty``), since they kill
members. Every loop is bounded in count and time.
"""

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import centidb
from centidb.errors import (
    ConflictError,
    EngineError,
    LimitExceededError,
    UnknownIndexError,
)

from etcd_cluster import EtcdCluster, open_engine, random_prefix, require_etcd

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def run_python(code, *args, timeout=60):
    """Run `code` in a fresh interpreter with centidb importable; its result."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS]))
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def raw_keys(engine, prefix=b''):
    """Every etcd key starting with `prefix`, read past the engine."""
    rpc = engine.rpc
    end = prefix[:-1] + bytes([prefix[-1] + 1]) if prefix else b'\x00'
    request = rpc.RangeRequest(key=prefix or b'\x00', range_end=end, keys_only=True)
    return [kv.key for kv in engine._client.range(request).kvs]


# --- without a cluster --------------------------------------------------------------

def test_import_centidb_imports_no_client_library():
    result = run_python('''
        import sys
        import centidb
        centidb.open('MemoryEngine').close()
        loaded = [m for m in ('grpc', 'pyetcd', 'centidb.engines.etcd') if m in sys.modules]
        print(loaded)
    ''')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == '[]'


@pytest.mark.parametrize('kwargs, error, match', [
    ({'endpoints': []}, ValueError, 'at least one'),
    ({'endpoints': ['localhost']}, ValueError, "not 'host:port'"),
    ({'endpoints': ['https://a:1']}, ValueError, 'TLS'),
    ({'endpoints': [2379]}, TypeError, 'must be a str'),
    ({'prefix': 'app/'}, TypeError, 'prefix must be bytes'),
    ({'prefix': b''}, ValueError, 'prefix must be 1 to 256'),
    ({'timeout': 0}, ValueError, 'timeout must be at least'),
    ({'max_txn_ops': 2}, ValueError, 'max_txn_ops must be at least 4'),
    ({'max_request_bytes': 1.5}, TypeError, 'max_request_bytes must be an int'),
])
def test_bad_arguments_are_refused(kwargs, error, match):
    require_etcd()
    from centidb.engines.etcd import EtcdEngine
    kwargs = {'endpoints': ['127.0.0.1:9'], **kwargs}
    with pytest.raises(error, match=match):
        EtcdEngine(**kwargs)


def test_endpoints_accept_one_string_and_http_urls():
    require_etcd()
    with centidb.engines.get_engine_class('EtcdEngine')('http://127.0.0.1:9/') as eng:
        assert eng.endpoints == ['127.0.0.1:9']
        assert repr(eng) == "<EtcdEngine(127.0.0.1:9, prefix=b'centidb/') open>"


def unused_ports(count):
    """Ports on 127.0.0.1 where nothing listens (bound, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(('127.0.0.1', 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


# --- on the session's cluster ----------------------------------------------------------

@pytest.fixture
def eng(etcd_cluster):
    """An EtcdEngine under a fresh prefix of the session's cluster."""
    engine = open_engine(etcd_cluster)
    yield engine
    engine.close()


@pytest.fixture
def other(eng, etcd_cluster):
    """A second client (engine) on the same prefix as `eng`."""
    engine = open_engine(etcd_cluster, prefix=eng.prefix)
    yield engine
    engine.close()


def test_a_snapshot_reads_at_its_pinned_revision(eng):
    eng.put(b'a', b'1')
    eng.put(b'b', b'2')
    reader = eng.begin()
    assert reader.revision == 0
    assert reader.get(b'a') == b'1'         # pins the revision
    pinned = reader.revision
    assert pinned > 0
    eng.put(b'a', b'changed')
    eng.delete(b'b')
    eng.put(b'c', b'3')
    assert reader.get(b'a') == b'1' and reader.get(b'c') is None
    assert reader.get_many([b'b', b'c']) == [b'2', None]
    assert list(reader.items()) == [(b'a', b'1'), (b'b', b'2')]
    assert list(reader.keys(reverse=True)) == [b'b', b'a']
    assert reader.count() == 2 and reader.first(reverse=True) == (b'b', b'2')
    assert reader.revision == pinned
    reader.commit()
    assert list(eng.items()) == [(b'a', b'changed'), (b'c', b'3')]


def test_reading_a_key_another_client_changed_conflicts(eng, other):
    eng.put(b'n', b'1')
    for change in (lambda: other.put(b'n', b'2'), lambda: other.delete(b'n'),
                   lambda: other.put(b'n', b'3')):
        txn = eng.begin(write=True)
        value = txn.get(b'n')
        change()
        txn.put(b'out', value or b'none')
        with pytest.raises(ConflictError, match='run the transaction again'):
            txn.commit()
        assert txn.state == 'aborted'
        assert eng.get(b'out') is None      # nothing was written


def test_reading_a_missing_key_conflicts_when_it_is_created(eng, other):
    txn = eng.begin(write=True)
    assert txn.get(b'new') is None
    other.put(b'new', b'x')
    txn.put(b'seen', b'nothing')
    with pytest.raises(ConflictError):
        txn.commit()
    assert isinstance(ConflictError('x'), EngineError)
    assert isinstance(ConflictError('x'), RuntimeError)


@pytest.mark.parametrize('change', ['insert', 'update', 'delete'])
def test_scanning_a_range_another_client_changed_conflicts(eng, other, change):
    for key in (b'r1', b'r3', b'r5'):
        eng.put(key, b'v')
    txn = eng.begin(write=True)
    assert [k for k, _ in txn.items(b'r', b's')] == [b'r1', b'r3', b'r5']
    {'insert': lambda: other.put(b'r2', b'x'),
     'update': lambda: other.put(b'r3', b'x'),
     'delete': lambda: other.delete(b'r5')}[change]()
    txn.put(b'total', b'3')
    with pytest.raises(ConflictError):
        txn.commit()


def test_writers_of_disjoint_ranges_do_not_conflict(eng, other):
    for key in (b'a1', b'a2', b'b1', b'b2'):
        eng.put(key, b'0')
    mine = eng.begin(write=True)
    theirs = other.begin(write=True)
    assert len(list(mine.items(b'a', b'b'))) == 2
    assert theirs.count(b'b', b'c') == 2 and theirs.get(b'b1') == b'0'
    mine.put(b'a3', b'new')
    theirs.put(b'b3', b'new')
    theirs.delete(b'b1')
    theirs.commit()
    mine.commit()                           # no conflict: it read a*, they wrote b*
    assert [k for k, _ in eng.items()] == [b'a1', b'a2', b'a3', b'b2', b'b3']


def test_a_partly_read_range_conflicts_only_where_it_was_read(eng, other):
    for key in (b'k2', b'k4', b'k6'):
        eng.put(key, b'v')
    txn = eng.begin(write=True)
    assert txn.first(b'k') == (b'k2', b'v')           # read [k, k2] only
    other.put(b'k5', b'after the part read')
    txn.put(b'x', b'1')
    txn.commit()
    txn = eng.begin(write=True)
    assert txn.first(b'k', b'l', reverse=True) == (b'k6', b'v')  # read [k6, l)
    other.put(b'k1', b'before the part read')
    txn.put(b'x', b'2')
    txn.commit()
    txn = eng.begin(write=True)
    assert txn.first(b'k', b'l') == (b'k1', b'before the part read')
    other.put(b'k0', b'inside it')
    txn.put(b'x', b'3')
    with pytest.raises(ConflictError):
        txn.commit()
    assert eng.get(b'x') == b'2'


def test_blind_writes_never_conflict(eng, other):
    txn = eng.begin(write=True)
    txn.put(b'k', b'mine')
    other.put(b'k', b'theirs')
    txn.commit()
    assert eng.get(b'k') == b'mine'


def test_many_reads_are_compared_as_few_ranges(etcd_cluster):
    """A transaction that read more keys than etcd takes compares still
    commits, and still sees a change to any key it read; keys outside the
    span it read do not conflict."""
    keys = [b'%04d' % i for i in range(0, 600, 3)]
    with open_engine(etcd_cluster, max_txn_ops=128) as eng, \
            open_engine(etcd_cluster, prefix=eng.prefix) as other:
        with other.begin(write=True) as txn:      # its limit is the cluster's
            txn._put_many([(key, b'v') for key in keys])
        for changed, conflicts in ((None, False), (keys[0], True), (keys[-1], True),
                                   (keys[100], True), (b'9999', False), (b'/', False)):
            txn = eng.begin(write=True)
            assert None not in txn.get_many(keys)
            for key in keys[::7]:
                assert txn.get(key + b'!') is None
            if changed is not None:
                other.put(changed, b'changed')
            txn.put(b'result', b'x')
            if conflicts:
                with pytest.raises(ConflictError):
                    txn.commit()
            else:
                txn.commit()


def test_tombstones_are_purged_and_pinned_writers_retry(eng, other):
    eng.put(b'a', b'1')
    eng.delete(b'a')
    assert [k for k in raw_keys(eng, eng.prefix) if k.startswith(eng.prefix + b't')] \
        == [eng.prefix + b'ta']
    txn = other.begin(write=True)
    assert txn.get(b'a') is None
    assert eng.purge_tombstones() == 1
    txn.put(b'b', b'2')
    with pytest.raises(ConflictError):      # its compares could miss a delete now
        txn.commit()
    assert eng.purge_tombstones() == 0
    other.put(b'b', b'2')
    assert list(eng.items()) == [(b'b', b'2')]


def test_a_range_delete_another_client_committed_conflicts_where_read(eng, other):
    for key in (b'a1', b'm1', b'm5', b'z1'):
        eng.put(key, b'v')
    for read, conflicts in ((lambda txn: txn.get(b'm5'), True),
                            (lambda txn: list(txn.items(b'm', b'n')), True),
                            (lambda txn: txn.count(b'l', b'm2'), True),
                            (lambda txn: txn.get(b'a1'), False),      # read below it only
                            (lambda txn: txn.get(b'm3'), True)):      # missing: conservative
        eng.put(b'm1', b'v')
        eng.put(b'm5', b'v')
        txn = eng.begin(write=True)
        read(txn)
        with other.begin(write=True) as dropper:
            dropper.delete_range(b'm', b'n')
        txn.put(b'out', b'x')
        if conflicts:
            with pytest.raises(ConflictError):
                txn.commit()
        else:
            txn.commit()
    assert [k for k, _ in eng.items()] == [b'a1', b'out', b'z1']


def test_a_range_delete_takes_one_operation_and_no_tombstone_per_key(etcd_cluster):
    with open_engine(etcd_cluster, max_txn_ops=128) as eng:
        for start in range(0, 300, 100):
            with eng.begin(write=True) as txn:
                for i in range(start, start + 100):
                    txn.put(b'k%03d' % i, b'v')
        with eng.begin(write=True) as txn:
            txn.delete(b'k000')                 # inside the range: no op of its own
            txn.delete_range(b'k', b'l')        # 300 keys
            txn.put(b'k150', b'kept')           # written after it: cuts the range in two
            for i in range(123):                # 2 + tombstone + 124 puts + marker: 128
                txn.put(b'x%03d' % i, b'v')
        keys = raw_keys(eng, eng.prefix)
        assert [k for k in keys if k.startswith(eng.prefix + b'd')] == \
            [eng.prefix + b'dk150'] + [eng.prefix + b'dx%03d' % i for i in range(123)]
        assert [k for k in keys if k.startswith(eng.prefix + b't')] == []
        assert [k for k in keys if k.startswith(eng.prefix + b'r')] == [eng.prefix + b'rk']
        txn = eng.begin(write=True)
        txn.delete_range(None, None)
        for i in range(63):     # each cuts the range: 64 pieces, tombstone, puts, marker
            txn.put(b'n%03d' % i, b'v')
        with pytest.raises(LimitExceededError, match='129 etcd operations.*65 for range deletes'):
            txn.commit()
        assert raw_keys(eng, eng.prefix) == keys
        assert eng.purge_tombstones() == 1
        assert [k for k in raw_keys(eng, eng.prefix) if k.startswith(eng.prefix + b'r')] == []


# --- limits -------------------------------------------------------------------------------

def test_commits_past_the_default_limits_are_refused_before_writing(etcd_cluster):
    with open_engine(etcd_cluster, max_txn_ops=128) as eng:
        assert (eng.max_txn_ops, eng.max_txn_bytes) == (127, 1536 * 1024 - 384 * 1024)
        with eng.begin(write=True) as txn:                 # 127 puts + marker: fits
            for i in range(127):
                txn.put(b'%03d' % i, b'v')
        before = raw_keys(eng, eng.prefix)
        txn = eng.begin(write=True)
        for i in range(128):
            txn.put(b'n%03d' % i, b'v')
        with pytest.raises(LimitExceededError, match=r'129 etcd operations.*128.*--max-txn-ops'):
            txn.commit()
        txn = eng.begin(write=True)
        for i in range(64):                                # a delete counts twice
            txn.delete(b'%03d' % i)
        with pytest.raises(LimitExceededError, match='64 deletes counted twice'):
            txn.commit()
        txn = eng.begin(write=True)
        txn.put(b'big1', b'x' * 800_000)
        txn.put(b'big2', b'x' * 800_000)
        with pytest.raises(LimitExceededError, match='--max-request-bytes'):
            txn.commit()
        with eng.begin(write=True) as txn:
            with pytest.raises(LimitExceededError, match='max_value_size'):
                txn.put(b'huge', b'x' * (eng.max_value_size + 1))
            with pytest.raises(LimitExceededError, match='max_key_size'):
                txn.put(b'k' * 1025, b'')
        assert raw_keys(eng, eng.prefix) == before
        assert issubclass(LimitExceededError, ValueError)


def test_the_server_limit_below_the_engines_is_refused_cleanly(etcd_cluster):
    server = etcd_cluster.max_txn_ops
    with open_engine(etcd_cluster, max_txn_ops=server * 2) as eng:
        txn = eng.begin(write=True)
        for i in range(server + 10):
            txn.put(b'%05d' % i, b'v')
        with pytest.raises(LimitExceededError, match='too many operations'):
            txn.commit()
        assert raw_keys(eng, eng.prefix) == []


def test_a_store_refuses_a_put_many_past_the_limit(etcd_cluster):
    with centidb.Store(open_engine(etcd_cluster, max_txn_ops=128)) as store:
        coll = store.collection('c', key_func=lambda r: r['id'])
        coll.put_many([{'id': i} for i in range(100)])
        before = raw_keys(store.engine, store.engine.prefix)
        with pytest.raises(LimitExceededError):
            coll.put_many([{'id': i} for i in range(100, 300)])
        assert raw_keys(store.engine, store.engine.prefix) == before
        assert coll.count() == 100 and store.verify() == []


# --- clients creating the same metadata at once ------------------------------------------

CLIENTS = 6


def create_everything(cluster, prefix, barrier, results, errors):
    """One client: open the store, a collection, an encoder and two indexes."""
    try:
        barrier.wait(30)
        with centidb.Store(open_engine(cluster, prefix=prefix)) as store:
            store.add_encoder(centidb.encodings.Encoder(
                'upper', lambda s: s.upper(), lambda s: s.lower()))
            coll = store.collection('people', key_func=lambda r: r['id'])
            name = coll.add_index('name', lambda r: r['name'])
            age = coll.add_index('age', lambda r: r['age'], unique=True)
            store.transact(lambda txn: coll.put(
                {'id': len(results), 'name': 'x', 'age': len(results)}, txn=txn),
                retries=100)
            results.append((coll.coll_id, name.index_id, age.index_id))
    except Exception as exc:          # reported by the test
        errors.append(exc)


def test_clients_creating_a_store_at_once_all_succeed(etcd_cluster):
    """Store open, collection(), add_encoder() and add_index() retry conflicts."""
    for _ in range(3):
        prefix = random_prefix()
        barrier = threading.Barrier(CLIENTS)
        results, errors = [], []
        threads = [threading.Thread(target=create_everything,
                                    args=(etcd_cluster, prefix, barrier, results, errors))
                   for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads)
        assert errors == []
        assert len(results) == CLIENTS and len(set(results)) == 1
        with centidb.Store(open_engine(etcd_cluster, prefix=prefix)) as store:
            coll = store.collection('people')
            assert coll.add_index('age', lambda r: r['age'], unique=True).index_id == results[0][2]
            assert store.verify() == []


@pytest.mark.parametrize('step', ['delete_index', 'rename_collection', 'drop_collection'])
def test_drop_index_rename_and_drop_retry_a_real_conflict(etcd_cluster, monkeypatch, step):
    """Another client changes the metadata while the step's transaction is open: it runs again."""
    prefix = random_prefix()
    with centidb.Store(open_engine(etcd_cluster, prefix=prefix)) as mine, \
            centidb.Store(open_engine(etcd_cluster, prefix=prefix)) as theirs:
        coll = mine.collection('people', key_func=lambda r: r['id'])
        coll.add_index('age', lambda r: r['age'])
        coll.put({'id': 1, 'age': 30})
        catalog = mine._catalog
        original = getattr(catalog, step)
        calls = []

        def interfered(*args):
            calls.append(args)
            if len(calls) == 1:
                theirs.collection(f'other{len(calls)}')     # a metadata change: conflicts
            return original(*args)
        monkeypatch.setattr(catalog, step, interfered)
        if step == 'delete_index':
            coll.drop_index('age')
        elif step == 'rename_collection':
            mine.rename_collection('people', 'staff')
        else:
            mine.drop_collection('people')
        assert len(calls) == 2                  # the first try conflicted
        monkeypatch.undo()
        left = {'delete_index': ['other1', 'people'], 'rename_collection': ['other1', 'staff'],
                'drop_collection': ['other1']}[step]
        assert mine.collections() == theirs.collections() == left
        if step == 'delete_index':
            assert theirs.collection('people').get(1) == {'id': 1, 'age': 30}
            with pytest.raises(UnknownIndexError):        # no stored index 'age'
                theirs.collection('people').drop_index('age')
        assert mine.verify() == [] and theirs.verify() == []


# --- prefixes and failover --------------------------------------------------------------

def test_stores_under_different_prefixes_do_not_meet(etcd_cluster):
    with open_engine(etcd_cluster) as one, open_engine(etcd_cluster) as two:
        everything = set(raw_keys(one))
        one.put(b'k', b'one')
        two.put(b'k', b'two')
        with one.begin(write=True) as txn:
            txn.delete(b'k')
            txn.put(b'j', b'1')
        assert two.get(b'k') == b'two' and list(two.items()) == [(b'k', b'two')]
        assert list(one.items()) == [(b'j', b'1')]
        new = set(raw_keys(one)) - everything
        assert new and all(k.startswith((one.prefix, two.prefix)) for k in new)


# --- faults: a cluster of their own ----------------------------------------------------------

@pytest.fixture(scope='module')
def faulty():
    """A 3-member cluster (etcd's default limits) that the fault tests break."""
    require_etcd()
    cluster = EtcdCluster(3).start()
    yield cluster
    cluster.stop()


def pair_key(record):
    return record['n'], record['half']


def pair_workload(store, count, done, errors):
    """Commit `count` transactions, each writing two records, through transact()."""
    pairs = store.collection('pairs', key_func=pair_key)
    try:
        for n in range(count):
            def write(txn, n=n):
                pairs.put({'n': n, 'half': 0}, txn=txn)
                pairs.put({'n': n, 'half': 1}, txn=txn)
            store.transact(write, retries=20)
            done.append(n)
    except Exception as exc:   # reported by the test
        errors.append(exc)


def check_pairs(store, done):
    """Every committed pair is there, whole; no pair is half written."""
    pairs = store.collection('pairs', key_func=pair_key)
    keys = list(pairs.keys())
    halves = {}
    for n, half in keys:
        halves.setdefault(n, set()).add(half)
    assert all(h == {0, 1} for h in halves.values()), 'a partial commit'
    assert set(done) <= set(halves)
    assert store.verify() == []


def test_killing_a_follower_loses_nothing(faulty):
    with centidb.Store(open_engine(faulty, max_txn_ops=128)) as store:
        done, errors = [], []
        pair_workload(store, 10, done, errors)
        follower = next(i for i in faulty.alive() if i != faulty.leader())
        faulty.kill(follower)
        pair_workload(store, 10, done, errors)   # a quorum is left
        faulty.restart(follower)
        assert errors == []
        check_pairs(store, done)


def test_killing_the_leader_mid_workload_loses_nothing(faulty):
    store = centidb.Store(open_engine(faulty, max_txn_ops=128, timeout=20))
    try:
        done, errors = [], []
        thread = threading.Thread(target=pair_workload, args=(store, 60, done, errors))
        thread.start()
        deadline = time.monotonic() + 30
        while len(done) < 10 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        leader = faulty.leader()
        faulty.kill(leader)
        thread.join(60)
        assert not thread.is_alive(), 'the workload did not carry on'
        assert errors == [] and len(done) == 60
        faulty.restart(leader)
        check_pairs(store, done)
    finally:
        store.close()


CLIENT = '''
import sys
import centidb
from centidb.errors import ConflictError
endpoints, prefix, name, count = sys.argv[1].split(','), sys.argv[2].encode(), sys.argv[3], int(sys.argv[4])
store = centidb.open('EtcdEngine', endpoints=endpoints, prefix=prefix)
tally = store.collection('tally', key_func=lambda r: r['id'])
log = store.collection('log', key_func=lambda r: (r['who'], r['n']))
runs = 0
def bump(txn, n):
    global runs
    runs += 1
    record = tally.get(1, txn=txn) or {'id': 1, 'count': 0}
    record['count'] += 1
    tally.put(record, txn=txn)
    log.put({'who': name, 'n': n}, txn=txn)
print('ready', flush=True)
sys.stdin.readline()                    # both start together
for n in range(count):
    store.transact(lambda txn: bump(txn, n), retries=100)
store.close()
print(runs - count)
'''


def test_two_client_processes_write_concurrently(etcd_cluster):
    prefix = random_prefix()
    with centidb.Store(open_engine(etcd_cluster, prefix=prefix)) as store:
        store.collection('tally', key_func=lambda r: r['id'])
        store.collection('log', key_func=lambda r: (r['who'], r['n']))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS]))
    count = 25
    clients = [subprocess.Popen(
        [sys.executable, '-c', CLIENT, ','.join(etcd_cluster.endpoints), prefix.decode(),
         name, str(count)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env) for name in ('a', 'b')]
    try:
        for client in clients:
            assert client.stdout.readline() == 'ready\n'
        for client in clients:
            client.stdin.write('go\n')
            client.stdin.flush()
        retries = []
        for client in clients:
            out, err = client.communicate(timeout=120)
            assert client.returncode == 0, err
            retries.append(int(out))
    finally:
        for client in clients:
            if client.poll() is None:
                client.kill()
                client.wait(10)
    with centidb.Store(open_engine(etcd_cluster, prefix=prefix)) as store:
        tally = store.collection('tally', key_func=lambda r: r['id'])
        log = store.collection('log', key_func=lambda r: (r['who'], r['n']))
        assert tally.get(1)['count'] == 2 * count       # no lost update
        assert log.count() == 2 * count
        assert store.verify() == []
    print('conflicts retried:', retries)
