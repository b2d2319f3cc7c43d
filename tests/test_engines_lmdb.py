"""LmdbEngine specifics: opening errors, the map size (a large default that
costs no disk, so one big transaction fits), the key size limit, and the
reader table shared with other processes (some killed).

Opening wrong paths is tested for both disk engines in test_engine_contract.
"""

import os
import select
import signal
import subprocess
import sys
import time

import pytest

import centidb
from centidb.engines import DEFAULT_MAP_SIZE, LmdbEngine
from centidb.engines.lmdb import _default_map_size
from centidb.errors import (
    DatabaseLockedError,
    DatabaseNotFoundError,
    DatabasePathError,
    EngineClosedError,
    EngineError,
    MapFullError,
    ReadersFullError,
)


def test_lmdb_missing_database(tmp_path):
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'absent')
    with pytest.raises(DatabaseNotFoundError) as info:
        LmdbEngine(path, create_if_missing=False)
    assert isinstance(info.value, FileNotFoundError)
    assert path in str(info.value)
    assert 'create_if_missing=True' in str(info.value)
    assert not (tmp_path / 'absent').exists()


def test_lmdb_open_twice_in_process(tmp_path):
    pytest.importorskip('lmdb')
    with LmdbEngine(tmp_path / 'db', sync=False):
        with pytest.raises(DatabaseLockedError, match='already open'):
            LmdbEngine(tmp_path / 'db')


def test_lmdb_map_full_aborts_with_actionable_error(tmp_path):
    pytest.importorskip('lmdb')
    eng = LmdbEngine(tmp_path / 'db', map_size=64 << 10, autogrow=False,
                     sync=False)
    try:
        eng.put(b'before', b'1')
        with pytest.raises(MapFullError) as info:
            with eng.begin(write=True) as txn:
                for i in range(2000):
                    txn.put(b'%06d' % i, b'x' * 100)
        message = str(info.value)
        assert 'map_size=65536' in message and 'larger map_size' in message
        assert isinstance(info.value, OSError)
        assert txn.state == 'aborted'
        assert list(eng.items()) == [(b'before', b'1')]
        with pytest.raises(MapFullError):
            eng.put(b'big', b'x' * 200_000)
        assert eng.get(b'big') is None
        eng.put(b'after', b'2')  # the engine is still usable
        assert eng.get(b'after') == b'2'
    finally:
        eng.close()


def test_lmdb_autogrow(tmp_path):
    pytest.importorskip('lmdb')
    eng = LmdbEngine(tmp_path / 'db', map_size=64 << 10, sync=False)
    try:
        for t in range(100):
            with eng.begin(write=True) as txn:
                for i in range(20):
                    txn.put(b'%03d-%02d' % (t, i), b'x' * 100)
        assert eng.map_size > 64 << 10
        assert sum(1 for _ in eng.keys()) == 2000
        # An engine-level put larger than the map grows it and retries.
        eng.put(b'big', b'y' * 1_000_000)
        assert eng.get(b'big') == b'y' * 1_000_000
    finally:
        eng.close()


def test_lmdb_map_size_after_close_raises_engine_closed(tmp_path):
    """map_size after close() raised a raw lmdb.Error."""
    pytest.importorskip('lmdb')
    eng = LmdbEngine(tmp_path / 'db', map_size=1 << 20, sync=False)
    assert eng.map_size == 1 << 20
    eng.close()
    with pytest.raises(EngineClosedError, match='closed'):
        eng.map_size


def test_lmdb_key_size_limit(tmp_path):
    pytest.importorskip('lmdb')
    with LmdbEngine(tmp_path / 'db', sync=False) as eng:
        longest = b'k' * eng.max_key_size
        eng.put(longest, b'v')
        assert eng.get(longest) == b'v'
        with pytest.raises(EngineError, match='too long'):
            eng.put(longest + b'k', b'v')
        assert eng.get(longest + b'k') is None
        eng.delete(longest + b'k')
        assert list(eng.keys()) == [longest]


def test_lmdb_write_transaction_offers_replace_while_open(tmp_path):
    """A write transaction's ``fast.replace`` stores a pair and returns the
    value it replaced (what a non-blind put reads by); a read transaction
    has none, and an ended one none any more."""
    with LmdbEngine(tmp_path / 'db', sync=False) as eng:
        with eng.begin() as reader:
            assert reader.fast.replace is None
        txn = eng.begin(write=True)
        assert txn.fast.replace(b'k', b'1') is None
        assert txn.fast.replace(b'k', b'2') == b'1'
        assert txn.get(b'k') == b'2'
        txn.commit()
        assert txn.fast.replace is None and eng.get(b'k') == b'2'


# --- the default map size ----------------------------------------------------------

def test_lmdb_default_map_size_is_large_where_the_map_is_sparse():
    assert _default_map_size(2**63 - 1, 'linux') == 64 << 30
    assert _default_map_size(2**63 - 1, 'freebsd14') == 64 << 30
    assert _default_map_size(2**31 - 1, 'linux') == 64 << 20          # 32-bit
    assert _default_map_size(2**63 - 1, 'win32') == 64 << 20
    assert _default_map_size(2**63 - 1, 'darwin') == 64 << 20
    assert DEFAULT_MAP_SIZE == _default_map_size(sys.maxsize, sys.platform)


def _disk_bytes(path):
    stat = os.stat(path)
    return stat.st_size, stat.st_blocks * 512


def test_lmdb_default_map_costs_no_disk(tmp_path):
    pytest.importorskip('lmdb')
    with LmdbEngine(tmp_path / 'db') as eng:
        assert eng.map_size == DEFAULT_MAP_SIZE
        eng.put(b'k', b'v')
        size, on_disk = _disk_bytes(tmp_path / 'db' / 'data.mdb')
        assert size < 1 << 20 and on_disk < 1 << 20
    with LmdbEngine(tmp_path / 'db') as eng:      # reopening keeps it so
        assert eng.get(b'k') == b'v'
        assert _disk_bytes(tmp_path / 'db' / 'data.mdb')[0] < 1 << 20


HOLD_OPEN = '''
import sys
from centidb.engines import LmdbEngine
eng = LmdbEngine(sys.argv[1])
eng.put(sys.argv[2].encode(), b'here')
print(eng.map_size, flush=True)
sys.stdin.read()        # holds the database open until the test closes stdin
eng.close()
'''


def test_lmdb_several_processes_open_the_default_map_at_once(tmp_path):
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'db')
    with LmdbEngine(path) as eng:
        procs = [subprocess.Popen([sys.executable, '-c', HOLD_OPEN, path, f'p{n}'],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for n in range(3)]
        try:
            for proc in procs:        # every one has the database open now
                ready, _, _ = select.select([proc.stdout], [], [], 60)
                assert ready, 'a process did not open the database in time'
                assert int(proc.stdout.readline()) == DEFAULT_MAP_SIZE, proc.stderr.read()
            assert sorted(eng.keys()) == [b'p0', b'p1', b'p2']
            assert _disk_bytes(os.path.join(path, 'data.mdb'))[1] < 1 << 20
        finally:
            for proc in procs:
                proc.stdin.close()
            for proc in procs:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        assert [proc.returncode for proc in procs] == [0, 0, 0]


@pytest.mark.skipif(DEFAULT_MAP_SIZE < 1 << 30, reason='the default map is small here')
def test_lmdb_one_transaction_of_120_mib_with_default_settings(tmp_path):
    """A 100 MiB import in one transaction raised MapFullError with a 64 MiB map."""
    pytest.importorskip('lmdb')
    value = os.urandom(1 << 20)
    start = time.monotonic()
    with centidb.open('LmdbEngine', path=str(tmp_path / 'db')) as store:
        blobs = store.collection('blobs')
        with store.begin(write=True) as txn:
            for n in range(120):
                blobs.put(value[n:] + value[:n], txn=txn)
        assert blobs.count() == 120
        assert blobs.get(120) == value[119:] + value[:119]
        size, on_disk = _disk_bytes(tmp_path / 'db' / 'data.mdb')
        # About the data: not the 64 GiB map.
        assert 120 << 20 < size < 200 << 20
        assert 120 << 20 < on_disk < 200 << 20
        assert store.verify() == []
    assert time.monotonic() - start < 60


GROW_IN_ANOTHER_PROCESS = '''
import sys
from centidb.engines import LmdbEngine
eng = LmdbEngine(sys.argv[1], map_size=1 << 20, autogrow=True, sync=False)
for n in range(8):
    with eng.begin(write=True) as txn:
        for i in range(500):
            txn.put(b'%d-%05d' % (n, i), b'x' * 1000)
print(eng.map_size)
eng.close()
'''


def test_lmdb_follows_a_map_another_process_grew(tmp_path):
    """After another process grows the map, begin() raised lmdb.MapResizedError."""
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'db')
    eng = LmdbEngine(path, map_size=1 << 20, autogrow=True, sync=False)
    eng.put(b'mine', b'1')
    grown = subprocess.run([sys.executable, '-c', GROW_IN_ANOTHER_PROCESS, path],
                           capture_output=True, text=True, timeout=60)
    assert grown.returncode == 0, grown.stderr
    assert int(grown.stdout) > 1 << 20
    assert eng.get(b'mine') == b'1'
    with eng.begin() as txn:
        assert txn.get(b'7-00499') == b'x' * 1000
    assert eng.map_size == int(grown.stdout)
    eng.close()


def test_lmdb_subdir_false_wrong_paths(tmp_path):
    """With subdir=False the path is the data file, so a directory is wrong."""
    pytest.importorskip('lmdb')
    with pytest.raises(DatabasePathError, match='is a directory') as info:
        LmdbEngine(tmp_path, subdir=False)
    assert str(tmp_path) in str(info.value)
    (tmp_path / 'f').write_bytes(b'not lmdb' * 1000)
    with pytest.raises(DatabasePathError, match='not an LMDB data file'):
        LmdbEngine(tmp_path / 'f', subdir=False)
    with pytest.raises(DatabasePathError, match='is a file, not a directory'):
        LmdbEngine(tmp_path / 'f' / 'db', subdir=False)
    with pytest.raises(DatabaseNotFoundError):
        LmdbEngine(tmp_path / 'absent', subdir=False, create_if_missing=False)
    with LmdbEngine(tmp_path / 'new' / 'db', subdir=False, sync=False) as eng:
        eng.put(b'k', b'v')
    with LmdbEngine(tmp_path / 'new' / 'db', subdir=False) as eng:
        assert eng.get(b'k') == b'v'


# --- the reader table, shared with other processes ---------------------------
#
# LMDB keeps one slot per open read transaction in a table in lock.mdb that
# all processes share. A process killed while reading leaves its slot taken
# (and its snapshot pinned) until some process calls reader_check(). The
# table's size is set by the first process to open the database.

needs_sigkill = pytest.mark.skipif(
    not hasattr(signal, 'SIGKILL'), reason='needs SIGKILL (POSIX)')

#: A child process: open the database, hold `argv[2]` read transactions,
#: say "ready", and wait (for stdin to close, or to be killed).
HOLD_READERS = '''
import sys
from centidb.engines import LmdbEngine
eng = LmdbEngine(sys.argv[1], sync=False)
held = [eng.begin() for _ in range(int(sys.argv[2]))]
for txn in held:
    txn.get(b'k')
print('ready', flush=True)
sys.stdin.read()
'''


def start_readers(path, count, *, each=1, timeout=30):
    """Start `count` HOLD_READERS processes and wait until all are ready."""
    procs = [subprocess.Popen(
        [sys.executable, '-c', HOLD_READERS, path, str(each)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for _ in range(count)]
    deadline = time.monotonic() + timeout
    try:
        for proc in procs:
            left = max(deadline - time.monotonic(), 0)
            readable, _, _ = select.select([proc.stdout], [], [], left)
            assert readable, f'a reader process was not ready in {timeout} s'
            line = proc.stdout.readline()
            if line != 'ready\n':
                proc.wait(timeout=10)
                pytest.fail(f'a reader process failed: {proc.stderr.read()}')
    except BaseException:
        stop(procs)
        raise
    return procs


def stop(procs):
    """SIGKILL the processes (if still running) and reap them."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    for proc in procs:
        proc.wait(timeout=10)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()


@needs_sigkill
def test_lmdb_begin_frees_reader_slots_of_killed_processes(tmp_path):
    """The reader table was full of dead processes' slots: begin() raised
    "too many read transactions ... close unfinished iterators", though this
    process held none."""
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'db')
    eng = LmdbEngine(path, max_readers=16, sync=False)   # 16 slots for all
    try:
        eng.put(b'k', b'v')
        killed = 0
        for _ in range(2):      # 20 readers killed, more than the table holds
            stop(start_readers(path, 10))
            killed += 10
        assert killed > eng._env.info()['max_readers'] == 16
        held = [eng.begin() for _ in range(16)]     # all 16 slots for us
        assert [txn.get(b'k') for txn in held] == [b'v'] * 16
        for txn in held:
            txn.abort()
    finally:
        eng.close()


@needs_sigkill
def test_lmdb_open_frees_reader_slots_of_killed_processes(tmp_path):
    """Opening an LmdbEngine frees the slots dead processes left."""
    lmdb = pytest.importorskip('lmdb')
    path = str(tmp_path / 'db')
    # A plain py-lmdb handle keeps the table alive (LMDB resets it when the
    # last process closes) and never checks for dead readers itself.
    keeper = lmdb.open(path, max_readers=16)
    try:
        stop(start_readers(path, 12))               # 12 of 16 slots stale
        with pytest.raises(lmdb.ReadersFullError):
            [keeper.begin() for _ in range(16)]
        opened = subprocess.run(
            [sys.executable, '-c',
             'import sys\nfrom centidb.engines import LmdbEngine\n'
             'LmdbEngine(sys.argv[1]).close()', path],
            capture_output=True, text=True, timeout=60)
        assert opened.returncode == 0, opened.stderr
        held = [keeper.begin() for _ in range(16)]  # the open freed them
        for txn in held:
            txn.abort()
    finally:
        keeper.close()


def test_lmdb_readers_full_says_who_holds_the_slots(tmp_path):
    """When live transactions hold every slot, the error says so, and how
    many are this engine's."""
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'db')
    eng = LmdbEngine(path, max_readers=4, sync=False)
    try:
        eng.put(b'k', b'v')
        txn = eng.begin()
        iterators = [eng.items(), eng.keys()]
        for it in iterators:
            next(it)                    # each holds a read transaction
        assert eng.get(b'k') == b'v'    # the fourth slot is free
        last = eng.begin()
        for begin in (eng.begin, lambda: eng.get(b'k'), eng.items):
            with pytest.raises(ReadersFullError) as info:
                begin()
            message = str(info.value)
            assert isinstance(info.value, EngineError)
            assert isinstance(info.value, OSError)
            assert 'all 4 reader slots' in message and path in message
            assert 'This engine holds 4 open read transactions' in message
            assert 'other processes hold' not in message
            assert 'Close unfinished iterators and transactions' in message
            assert 'larger max_readers=' in message
        for it in iterators:
            it.close()
        txn.abort()
        last.abort()
        with eng.begin() as txn:        # free again
            assert txn.get(b'k') == b'v'
    finally:
        eng.close()


@needs_sigkill
def test_lmdb_readers_full_counts_other_processes(tmp_path):
    """Live readers of another process are not freed, and are counted."""
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'db')
    eng = LmdbEngine(path, max_readers=4, sync=False)
    try:
        eng.put(b'k', b'v')
        procs = start_readers(path, 1, each=3)
        try:
            mine = eng.begin()
            with pytest.raises(ReadersFullError) as info:
                eng.begin()
            message = str(info.value)
            assert 'This engine holds 1 open read transaction (' in message
            assert f'other processes hold 3 (pids {procs[0].pid})' in message
            mine.abort()
        finally:
            stop(procs)
        held = [eng.begin() for _ in range(4)]      # theirs are freed now
        for txn in held:
            txn.abort()
    finally:
        eng.close()


@needs_sigkill
def test_lmdb_write_frees_a_killed_readers_snapshot(tmp_path):
    """A killed reader pinned its snapshot: every update of a value took new
    pages and data.mdb grew without bound. Write transactions free dead
    readers' slots at most every reader_check_interval seconds."""
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'db')
    data = tmp_path / 'db' / 'data.mdb'
    eng = LmdbEngine(path, sync=False)
    try:
        eng.reader_check_interval = 1e9         # no checks: the old behaviour
        eng.put(b'k', b'0' * 8000)
        stop(start_readers(path, 1))
        before = data.stat().st_size
        for i in range(300):
            eng.put(b'k', b'%d' % i * 8000)
        pinned = data.stat().st_size - before
        assert pinned > 300 * 8000              # no page was reused
        eng.reader_check_interval = 0           # check at every write
        stop(start_readers(path, 1))
        before = data.stat().st_size
        for i in range(300):
            eng.put(b'k', b'%d' % i * 8000)
        assert data.stat().st_size - before < pinned // 10
    finally:
        eng.close()


# --- page fill: long put lists in key order (MDB_APPEND), copies with filled pages ---------------

def _random_pairs(n, seed, value=b'v' * 60):
    import random
    rng = random.Random(seed)
    return [(b'k%08d' % rng.randrange(10 ** 8), value) for _ in range(n)]


def test_lmdb_long_put_lists_match_a_model(tmp_path):
    """In key order or not, appended past the last key or not: the same result as put()."""
    pytest.importorskip('lmdb')
    with LmdbEngine(tmp_path / 'db', sync=False) as eng:
        model = {}
        with eng.begin(write=True) as txn:
            for key, value in [(b'k5', b'old'), (b'zz', b'last'), (b'a', b'first')]:
                txn.put(key, value)
                model[key] = value
        batches = [_random_pairs(500, 1), _random_pairs(300, 2)]
        batches[0] += [(b'k5', b'new'), (b'zz', b'newer'), (b'zzz', b'1'), (b'zzz', b'2'),
                       (b'a', b'again')]   # existing keys, the last key, a repeat
        batches.append([(b'zzzz%04d' % i, b'%d' % i) for i in range(200, 0, -1)])  # descending
        batches.append([(b'k%08d' % i, b'x') for i in range(0, 10 ** 8, 10 ** 6)]   # ascending:
                       + [(b'zz', b'z'), (b'zzz', b'3')]                          # up to the last
                       + [(b'zzzzz%04d' % i, b'%d' % i) for i in range(100)])      # and past it
        with eng.begin(write=True) as txn:
            txn._put_many(batches[0])
            txn.fast.writes += len(batches[1])
            txn.fast.put_many(batches[1])
            assert txn.get(b'zzz') == b'2'
            txn._put_many(batches[2])
            txn._put_many(batches[3])
            txn._put_many([(b'short', b'list')])
        for batch in batches + [[(b'short', b'list')]]:
            model.update(batch)
        assert list(eng.items()) == sorted(model.items())
        assert eng.get(b'k5') == b'new' and eng.get(b'a') == b'again'


def test_lmdb_a_long_put_list_in_key_order_fills_its_pages(tmp_path):
    """Appended (MDB_APPEND): no more pages than puts in key order, 2/3 of random ones."""
    pytest.importorskip('lmdb')
    pairs = sorted(dict(_random_pairs(6000, 3)).items())
    shuffled = _random_pairs(6000, 3)
    pages = {}
    for name in ('random', 'in order', 'bulk'):
        with LmdbEngine(tmp_path / name, sync=False) as eng:
            with eng.begin(write=True) as txn:
                txn.put(b'a', b'before them all')
                if name == 'bulk':
                    for first in range(0, len(pairs), 1000):
                        txn._put_many(pairs[first:first + 1000])
                else:
                    for key, value in shuffled if name == 'random' else pairs:
                        txn.put(key, value)
            pages[name] = eng._env.stat()['leaf_pages']
            assert list(eng.items()) == [(b'a', b'before them all')] + pairs
    assert pages['bulk'] <= pages['in order'] and pages['bulk'] < 0.8 * pages['random']


@pytest.mark.parametrize('fill_pages', [True, False])
def test_lmdb_backup_copies_every_key(tmp_path, fill_pages):
    pytest.importorskip('lmdb')
    pairs = _random_pairs(3000, 4)
    with LmdbEngine(tmp_path / 'db', sync=False) as eng:
        with eng.begin(write=True) as txn:
            for key, value in pairs:
                txn.put(key, value)
        eng.backup(tmp_path / 'copy', fill_pages=fill_pages)
        with pytest.raises(DatabasePathError, match='already holds'):
            eng.backup(tmp_path / 'copy', fill_pages=fill_pages)
        eng.backup(tmp_path / 'plain', compact=False)
        expected = list(eng.items())
    assert os.listdir(tmp_path / 'copy') == ['data.mdb']
    with LmdbEngine(tmp_path / 'copy') as copy:
        assert list(copy.items()) == expected
        copy.put(b'k', b'writable')
        assert copy.get(b'k') == b'writable'
    size = os.path.getsize(tmp_path / 'copy' / 'data.mdb')
    plain = os.path.getsize(tmp_path / 'plain' / 'data.mdb')
    if fill_pages:
        assert size < 0.8 * plain       # full pages, against two thirds full


def test_lmdb_backup_takes_repack_as_the_older_name_of_fill_pages(tmp_path):
    pytest.importorskip('lmdb')
    with LmdbEngine(tmp_path / 'db', sync=False) as eng:
        with eng.begin(write=True) as txn:
            for key, value in _random_pairs(3000, 4):
                txn.put(key, value)
        eng.backup(tmp_path / 'filled', repack=True, fill_pages=False)
        eng.backup(tmp_path / 'kept', repack=False)
    filled = os.path.getsize(tmp_path / 'filled' / 'data.mdb')
    kept = os.path.getsize(tmp_path / 'kept' / 'data.mdb')
    assert filled < 0.8 * kept


def test_lmdb_backup_of_an_empty_store(tmp_path):
    pytest.importorskip('lmdb')
    with LmdbEngine(tmp_path / 'db', sync=False) as eng:
        eng.backup(tmp_path / 'copy')
    with LmdbEngine(tmp_path / 'copy') as copy:
        assert list(copy.items()) == []
