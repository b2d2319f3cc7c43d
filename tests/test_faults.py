"""Full disks and damaged files, on each disk engine: the short run of stress/faults.py.

The campaigns run in child processes of this implementation (pure or
compiled, as the test run is); ``stress/faults.py --long`` is the full run.
The first tests pin the engines' own fixes: a LevelDB engine refuses to
write after a failed write, and a truncated LMDB data file raises instead
of killing the process with SIGBUS.
"""

import errno
import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from centidb import keylib
from centidb.errors import (
    CentiError, DatabaseCorruptError, EngineFailedError, StorageIOError,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location(
    'faults', os.path.join(ROOT, 'stress', 'faults.py'))
faults = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(faults)

IMPL = 'compiled' if keylib.IMPL == 'speedups' else 'pure'


def run_child(code, *args):
    """Run `code` in a child of this implementation; its exit status and output."""
    return subprocess.run([sys.executable, '-c', code, *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ))


#: A child that writes 3 KB commits to a PlyvelEngine under a small file
#: size limit, lifts the limit at the first failure (space was freed) and
#: writes on; it prints a JSON report.
LEVELDB_FULL = '''
import json, resource, signal, sys
from centidb.engines.leveldb import PlyvelEngine
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
engine = PlyvelEngine(sys.argv[1], create_if_missing=True, sync=sys.argv[2] == '1')
resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, resource.RLIM_INFINITY))
acked, errors = [], []
for i in range(120):
    try:
        with engine.begin(write=True) as txn:
            txn.put(b'k%05d' % i, bytes([i % 256]) * 3000)
    except Exception as exc:
        errors.append([type(exc).__module__, type(exc).__name__, getattr(exc, 'errno', None), str(exc)])
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        continue
    acked.append(i)
read = engine.get(b'k%05d' % acked[-1]) is not None
engine.close()
print(json.dumps({'acked': acked, 'errors': errors, 'read': read}))
'''


@pytest.mark.parametrize('sync', [False, True])
def test_leveldb_refuses_writes_after_a_failed_write(tmp_path, sync):
    """A failed log write left LevelDB's log torn; later commits returned and were lost."""
    pytest.importorskip('plyvel')
    path = tmp_path / 'db'
    child = run_child(LEVELDB_FULL, path, int(sync))
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout)
    acked, errors = report['acked'], report['errors']
    assert acked and errors and report['read']
    first, later = errors[0], errors[1:]
    assert first[:3] == ['centidb.errors', 'EngineFailedError', errno.EFBIG]
    assert str(path) in first[3] and 'reopen' in first[3]
    # Every write after the first failure was refused, though space was freed.
    assert acked == list(range(len(acked))) and len(acked) + len(errors) == 120
    assert all(error[:2] == ['centidb.errors', 'EngineFailedError'] for error in later)
    from centidb.engines.leveldb import PlyvelEngine
    engine = PlyvelEngine(str(path))
    try:
        assert [i for i in acked if engine.get(b'k%05d' % i) is None] == []
        engine.put(b'after', b'reopen')     # writable again
        assert engine.get(b'after') == b'reopen'
    finally:
        engine.close()


def test_engine_failed_error_is_a_storage_error():
    assert issubclass(EngineFailedError, StorageIOError)
    assert issubclass(StorageIOError, OSError) and issubclass(StorageIOError, CentiError)
    assert issubclass(DatabaseCorruptError, OSError) and issubclass(DatabaseCorruptError, CentiError)
    error = EngineFailedError(errno.ENOSPC, 'disk full')
    assert error.errno == errno.ENOSPC


#: A child that opens each LMDB database of argv and counts its keys, a line each.
LMDB_READ = '''
import sys
from centidb.engines.lmdb import LmdbEngine
for path in sys.argv[1:]:
    try:
        engine = LmdbEngine(path)
        print(sum(1 for _ in engine.items()))
    except Exception as exc:
        print(type(exc).__module__, type(exc).__name__, exc)
    sys.stdout.flush()
'''


def lmdb_with_2000_records(path):
    """An LMDB database at `path` holding 2,000 keys of 200 bytes; returns `path`."""
    pytest.importorskip('lmdb')
    from centidb.engines.lmdb import LmdbEngine
    engine = LmdbEngine(str(path))
    with engine.begin(write=True) as txn:
        for i in range(2000):
            txn.put(b'%05d' % i, bytes(200))
    engine.close()
    return path


#: A child that opens each LMDB database of argv, reads every item, then
#: commits a 50 KB value (LMDB reads its free-page tree to place it) and
#: reads it back; it prints the number of items and a digest of them, or
#: the error, a line each.
LMDB_READ_WRITE = '''
import hashlib, sys
from centidb.engines.lmdb import LmdbEngine
for path in sys.argv[1:]:
    try:
        engine = LmdbEngine(path)
        items = list(engine.items())
        engine.put(b'~written', bytes(50000))
        assert engine.get(b'~written') == bytes(50000)
        engine.close()
        print(len(items), hashlib.sha256(repr(items).encode()).hexdigest()[:16])
    except Exception as exc:
        print(type(exc).__module__, type(exc).__name__, exc)
    sys.stdout.flush()
'''


def lmdb_with_unwritten_tail(path):
    """An LMDB database at `path` whose data file ends 98 pages before its last page.

    The last commit reuses free pages, then puts 400 KB at the end of the
    file and deletes it again: LMDB lists those pages as free and never
    writes them. Returns `path`.
    """
    pytest.importorskip('lmdb')
    from centidb.engines.lmdb import LmdbEngine
    engine = LmdbEngine(str(path))
    engine.put(b'a', bytes(100))
    engine.put(b'big', bytes(20000))
    engine.put(b'big', bytes(10))           # frees 5 pages, reusable two commits on
    engine.put(b'b', bytes(10))
    with engine.begin(write=True) as txn:
        txn.put(b'x', bytes(10))
        txn.put(b'gone', bytes(400000))
        txn.delete(b'gone')
    engine.close()
    return path


def read_every_cut(tmp_path, path, also=()):
    """Cut `path`'s data.mdb at every page boundary and read each copy in a child.

    Returns (copies, lines): the copies, shortest first (the last one
    whole, then one cut at each offset from the end in `also`), and the
    child's line for each; fails if the child crashed.
    """
    whole = (path / 'data.mdb').read_bytes()
    copies = []
    for cut in [*range(0, len(whole) + 1, 4096), *(len(whole) - back for back in also)]:
        copy = tmp_path / f'cut{cut}'
        copy.mkdir()
        (copy / 'data.mdb').write_bytes(whole[:cut])
        copies.append(copy)
    child = run_child(LMDB_READ_WRITE, *copies)
    lines = child.stdout.splitlines()
    assert child.returncode == 0, (
        f'the child died ({child.returncode}) reading {copies[len(lines)]}', child.stderr)
    assert len(lines) == len(copies)
    return copies, lines


def assert_refused(copy, line):
    """`line` is the DatabaseCorruptError for the truncated data file of `copy`."""
    assert line.startswith('centidb.errors DatabaseCorruptError'), (copy, line)
    assert str(copy / 'data.mdb') in line and 'truncated' in line, line


def test_lmdb_file_cut_at_any_page_is_refused_before_it_is_mapped(tmp_path):
    """A data.mdb cut at a page boundary killed the reader with SIGBUS (within its last 64 pages, still)."""
    path = lmdb_with_2000_records(tmp_path / 'db')
    size = (path / 'data.mdb').stat().st_size
    # Also a cut 100 bytes short of the end (in the last page), and one to 100 bytes.
    copies, lines = read_every_cut(tmp_path, path, also=[100, size - 100])
    assert len(copies) > 100
    assert lines[-3].startswith('2000 ')
    for copy, line in zip(copies[:-3] + copies[-2:], lines[:-3] + lines[-2:]):
        assert_refused(copy, line)                  # one commit: every page is in use


def test_lmdb_file_with_unwritten_tail_opens_and_its_cuts_are_refused_or_read(tmp_path):
    """A healthy data.mdb ending more than 64 pages before its last page was refused as truncated."""
    path = lmdb_with_unwritten_tail(tmp_path / 'db')
    whole = (path / 'data.mdb').read_bytes()
    last_page = max((int.from_bytes(whole[at + 8:at + 16], 'little'),    # transaction id
                     int.from_bytes(whole[at:at + 8], 'little'))        # last page used
                    for at in (136, 4096 + 136))[1]
    assert last_page + 1 - len(whole) // 4096 > 64
    copies, lines = read_every_cut(tmp_path, path)
    assert lines[-1].startswith('4 ')
    assert lines.count(lines[-1]) > 1       # cuts that lose only free pages open too
    for copy, line in zip(copies, lines):
        if line != lines[-1]:
            assert_refused(copy, line)


def test_lmdb_meta_page_naming_a_last_page_past_its_map_is_refused(tmp_path):
    """A flipped high bit of the last page number raised "another process grew the LMDB map"."""
    pytest.importorskip('lmdb')
    from centidb.engines.lmdb import LmdbEngine
    path = tmp_path / 'db'
    engine = LmdbEngine(str(path))
    for commit in range(5):                 # the newer meta page: page 1 (id 5)
        engine.put(b'k%d' % commit, b'v')
    engine.close()
    whole = (path / 'data.mdb').read_bytes()
    last_page_at = 4096 + 136               # the meta's last page number, little-endian
    copies = []
    for byte, bit in ((7, 4), (1, 0)):      # 2**60 more pages; 256 more (inside the map)
        copy = tmp_path / f'flip{byte}-{bit}'
        copy.mkdir()
        data = bytearray(whole)
        data[last_page_at + byte] ^= 1 << bit
        (copy / 'data.mdb').write_bytes(bytes(data))
        copies.append(copy)
    child = run_child(LMDB_READ_WRITE, path, *copies)
    assert child.returncode == 0, (child.returncode, child.stdout, child.stderr)
    lines = child.stdout.splitlines()
    assert lines[0].startswith('5 ')
    assert lines[1].startswith('centidb.errors DatabaseCorruptError'), lines[1]
    assert 'past the end of its map' in lines[1] and str(copies[0]) in lines[1]
    assert lines[2] == lines[0]             # no page in use is past the end: it opens


#: A child that commits two transactions to the LMDB database at argv[1].
LMDB_COMMIT_TWICE = '''
import sys
from centidb.engines.lmdb import LmdbEngine
engine = LmdbEngine(sys.argv[1])
engine.put(b'c1', b'v')
engine.put(b'c2', b'v')
engine.close()
'''


def test_lmdb_file_another_process_commits_to_is_not_refused(tmp_path, monkeypatch):
    """Meta pages read either side of another process's commits were refused as damaged."""
    pytest.importorskip('lmdb')
    from centidb.engines import lmdbmeta
    from centidb.engines.lmdb import LmdbEngine
    path = tmp_path / 'db'
    engine = LmdbEngine(str(path))
    for i in range(5):                      # meta pages: ids 4 (page 0) and 5 (page 1)
        engine.put(b'k%d' % i, b'v')
    engine.close()
    commits = []
    real_pread = os.pread

    def pread(fd, size, offset):
        if offset == 4096 and not commits:  # after meta page 0, before meta page 1
            commits.append(run_child(LMDB_COMMIT_TWICE, path))
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, 'pread', pread)
    lmdbmeta.check_data_file(str(path / 'data.mdb'))    # read 4 and 7, then 6 and 7
    assert len(commits) == 1 and commits[0].returncode == 0, commits


def test_corrupt_lmdb_page_raises_a_centidb_error(tmp_path):
    """Flipped page bytes raised lmdb.CorruptedError or PageNotFoundError."""
    path = lmdb_with_2000_records(tmp_path / 'db')
    data = path / 'data.mdb'
    whole = bytearray(data.read_bytes())
    # Page 2 onwards hold the tree; spoil the header of every page.
    for page in range(2, len(whole) // 4096):
        whole[page * 4096 + 10] ^= 0xff
    data.write_bytes(bytes(whole))
    from centidb.engines.lmdb import LmdbEngine
    engine = LmdbEngine(str(path))
    try:
        with pytest.raises(DatabaseCorruptError, match='damaged') as info:
            list(engine.items())
        assert str(path) in str(info.value)
        with pytest.raises(DatabaseCorruptError):
            engine.get(b'01000')
    finally:
        engine.close()


# --- the short campaigns -------------------------------------------------------------

def test_diskfull_campaign_loses_nothing():
    figures = faults.diskfull(2, 11, log=lambda line: None)
    print(figures)
    for engine in faults.ENGINES:
        assert figures[engine]['trials'] == 2
        assert figures[engine]['refused'] > 0, 'no write failed: the limit was not reached'
    assert figures['acked'] > 100
    assert figures['lost'] == 0
    assert figures['raw'] == 0 and figures['crashes'] == 0
    assert figures['errors'] == []


def test_damage_campaign_has_no_crash_hang_raw_error_or_unnoticed_wrong_data():
    figures = faults.damage(30, 11, impls=(IMPL,), log=lambda line: None)
    print({k: v for k, v in figures.items() if k != 'errors'})
    assert figures['cases'] == 30 * len(faults.ENGINES)
    assert figures['error'] > 0
    assert figures['crash'] == 0 and figures['hang'] == 0 and figures['raw'] == 0, \
        figures['errors']
    assert figures['wrong'] == 0, figures['errors']


def test_driver_reports_missing_campaigns(monkeypatch):
    monkeypatch.setattr(sys, 'path', list(sys.path))
    figures = faults.external('no_such_campaign', 10, 1)
    assert figures['note'] == 'not present' and figures['cases'] == 0


def test_guarded_getter_maps_the_library_error():
    from centidb.engines.fastcalls import guarded

    def mapped(exc):
        return DatabaseCorruptError(f'mapped {exc}')

    get = guarded({b'a': b'1'}.__getitem__, KeyError, mapped)
    assert get(b'a') == b'1'
    with pytest.raises(DatabaseCorruptError, match='mapped') as info:
        get(b'b')
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(TypeError):     # other errors pass as they are
        get([])


def test_damaged_leveldb_table_raises_a_centidb_error_on_every_read(tmp_path):
    """A table file cut short raised plyvel.IOError from get (the unchecked path too)."""
    pytest.importorskip('plyvel')
    import centidb
    from centidb.engines.leveldb import PlyvelEngine
    path = str(tmp_path / 'db')
    store = centidb.open('PlyvelEngine', name=path, create_if_missing=True)
    coll = store.collection('c', key_func=lambda r: r['id'])
    coll.put_many([{'id': i, 'body': 'x' * 100} for i in range(3000)])
    store.close()
    engine = PlyvelEngine(path)
    engine.compact()
    keys = list(engine.keys())
    engine.close()
    tables = [name for name in os.listdir(path) if name.endswith('.ldb')]
    assert tables
    for name in tables:
        os.truncate(os.path.join(path, name), os.path.getsize(os.path.join(path, name)) // 2)
    # A copy for the store: LevelDB may compact the damaged table away
    # once reads have failed.
    copy = str(tmp_path / 'copy')
    shutil.copytree(path, copy)
    engine = PlyvelEngine(path)
    try:
        with pytest.raises(DatabaseCorruptError, match='damaged') as info:
            for key in keys:
                engine.get(key)
        assert path in str(info.value)
    finally:
        engine.close()
    with pytest.raises(DatabaseCorruptError, match='damaged'):
        store = centidb.open('PlyvelEngine', name=copy)
        try:
            coll = store.collection('c', key_func=lambda r: r['id'])
            with store.begin() as txn:
                for i in range(3000):
                    coll.get(i, txn=txn)
        finally:
            store.close()


def test_damaged_lmdb_meta_transaction_id_is_refused(tmp_path):
    """A flipped bit in a meta page's transaction id made LMDB open an older commit silently."""
    pytest.importorskip('lmdb')
    from centidb.engines.lmdb import LmdbEngine
    path = tmp_path / 'db'
    engine = LmdbEngine(str(path))
    for commit in range(5):                 # meta pages: ids 4 (page 0) and 5 (page 1)
        with engine.begin(write=True) as txn:
            txn.put(b'k%d' % commit, b'v')
    engine.close()
    whole = (path / 'data.mdb').read_bytes()
    txnid_at = 144                         # the meta's transaction id, after the page header
    copies = []
    for page, bit in ((0, 22), (0, 0), (1, 30)):
        copy = tmp_path / f'flip{page}-{bit}'
        copy.mkdir()
        data = bytearray(whole)
        at = page * 4096 + txnid_at + bit // 8
        data[at] ^= 1 << (bit % 8)
        (copy / 'data.mdb').write_bytes(bytes(data))
        copies.append(copy)
    child = run_child(LMDB_READ, path, *copies)
    assert child.returncode == 0, (child.returncode, child.stdout, child.stderr)
    lines = child.stdout.splitlines()
    assert lines[0] == '5'
    for copy, line in zip(copies, lines[1:]):
        assert line.startswith('centidb.errors DatabaseCorruptError'), (copy, line)
        assert 'transaction ids' in line


@pytest.mark.parametrize('name', ['values', 'metadata'])
def test_fuzz_campaigns_run_in_each_implementation(name):
    """``values`` and ``metadata`` run once per implementation, each in a child process."""
    figures = faults.external(name, 2, 3, log=lambda line: None)
    assert figures['errors'] == []
    for impl in faults.IMPLS:
        assert figures[impl]['impl'] == impl
        assert figures[impl]['cases'] == 2
    assert figures['cases'] == 2 * len(faults.IMPLS)


def test_a_fuzz_child_that_dies_is_a_failure(monkeypatch):
    def dead(args, **kwargs):
        return subprocess.CompletedProcess(args, -11, '', 'Fatal Python error: Segmentation fault')

    monkeypatch.setattr(faults.subprocess, 'run', dead)
    figures = faults.external('values', 2, 3, impls=('pure',), log=lambda line: None)
    assert figures['errors'] == [
        'pure: the child exited -11: Fatal Python error: Segmentation fault']
    assert faults.failures('values', figures) == 1


def test_damage_campaign_aims_at_overflow_sizes_and_check_pages_stops_the_crashes():
    """``--overflow``: half the flips hit LMDB overflow values' sizes (which can SIGBUS a
    read); opened with ``check_pages=True``, every such store is refused instead."""
    figures = faults.damage(24, 5, engines=('lmdb',), impls=(IMPL,), log=lambda line: None,
                            overflow=True, check_pages=True)
    print({k: v for k, v in figures.items() if k != 'errors'})
    assert figures['cases'] == 24
    assert figures['crash'] == 0 and figures['hang'] == 0 and figures['raw'] == 0, \
        figures['errors']
    assert figures['wrong'] == 0, figures['errors']
    assert figures['error'] > 0


def test_overflow_cases_flip_the_size_fields(tmp_path):
    pristine = str(tmp_path / 'store')
    faults.build_damage_store('lmdb', pristine, overflow=True)
    nodes = faults.overflow_nodes(os.path.join(pristine, 'data.mdb'))
    assert len(nodes) >= 36                  # 36 large values, and older copies of nodes
    cases = faults.damage_cases('lmdb', pristine, 40, 5, overflow=True)
    aimed = [case for case in cases if 'flip' in case and len(case['flip']) == 1
             and any(0 < case['flip'][0][0] - at < 4 for at in nodes)]
    assert len(aimed) >= 10
