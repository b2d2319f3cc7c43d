"""LMDB damage that LMDB does not check on reads, found by ``verify()`` before it crashes.

LMDB stores a value larger than about 2 KB in a run of overflow pages and
keeps its size in the leaf node. It does not check that size against the
run: a size made larger by damage makes a read run past the run, and past
the end of the file the process dies with ``SIGBUS``.
:func:`centidb.engines.lmdbmeta.check_pages` reads the pages with plain
reads and reports such a node; ``Store.verify()`` runs it first, so it
reports the damage instead of crashing. Each damaged store is read in a
child process, where a crash cannot take the test run with it.
"""

import os
import struct
import subprocess
import sys

import pytest

import centidb
from centidb.engines import lmdbmeta
from centidb.errors import DatabaseCorruptError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = 4096


def build(path, checksums):
    store = centidb.open('LmdbEngine', path=str(path), sync=False)
    store.checksums = checksums
    coll = store.collection('c')
    for i in range(3):
        coll.put(bytes([i]) * 10_000, key=i)            # overflow values
    for i in range(3, 40):
        coll.put(b'small', key=i)
    store.close()
    return os.path.join(str(path), 'data.mdb')


def overflow_nodes(data_file):
    """The file offsets of every leaf node that names an overflow run (live or not)."""
    with open(data_file, 'rb') as f:
        raw = f.read()
    found = []
    for start in range(2 * PAGE, len(raw), PAGE):
        flags, lower = struct.unpack_from('<HH', raw, start + 10)
        if flags & 0x26 != 0x02 or lower > PAGE:      # leaf pages only
            continue
        for offset in struct.unpack_from(f'<{(lower - 16) // 2}H', raw, start + 16):
            if raw[start + offset + 4] & 0x01:          # F_BIGDATA
                found.append(start + offset)
    return found


def grow_sizes(data_file, bit=16):
    """Flip `bit` of the data size of every overflow node: the size grows past the run."""
    nodes = overflow_nodes(data_file)
    assert nodes
    with open(data_file, 'r+b') as f:
        for at in nodes:
            f.seek(at)
            size = struct.unpack('<I', f.read(4))[0]
            assert size & (1 << bit) == 0
            f.seek(at)
            f.write(struct.pack('<I', size | 1 << bit))


VERIFY = '''
import sys
import centidb
store = centidb.open('LmdbEngine', path=sys.argv[1], create_if_missing=False)
print(repr([str(problem) for problem in store.verify()]))
'''


@pytest.mark.parametrize('checksums', [True, False])
@pytest.mark.parametrize('bit', [16, 24, 31])
def test_verify_reports_an_overflow_size_past_its_run_without_crashing(tmp_path, checksums,
                                                                       bit):
    data_file = build(tmp_path / 'store', checksums)
    assert lmdbmeta.check_pages(data_file) is None
    grow_sizes(data_file, bit)
    child = subprocess.run([sys.executable, '-c', VERIFY, str(tmp_path / 'store')],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert child.returncode == 0, f'verify() died: {child.returncode} {child.stderr[-300:]}'
    problems = eval(child.stdout)
    assert len(problems) == 1
    assert 'overflow run' in problems[0] and 'data.mdb' in problems[0]
    assert 'more than its 3 pages hold' in problems[0]
    assert problems[0] == 'store: ' + lmdbmeta.check_pages(data_file)


def test_check_pages_passes_healthy_files(tmp_path):
    path = tmp_path / 'store'
    data_file = build(path, True)
    store = centidb.open('LmdbEngine', path=str(path), sync=False)
    coll = store.collection('c')
    for round_ in range(20):      # grow, shrink and free pages, small and large values
        for i in range(60):
            coll.put(os.urandom(50 + (i * round_ * 397) % 30_000), key=i)
        coll.delete_many([i for i in range(60) if (i + round_) % 3 == 0])
        assert lmdbmeta.check_pages(data_file) is None
    assert store.verify() == []
    store.close()


def test_check_pages_reports_a_node_past_its_page(tmp_path):
    data_file = build(tmp_path / 'store', False)
    with open(data_file, 'rb') as f:
        raw = f.read()
    # A small value's node in each leaf page: its size runs past the end of its page.
    doomed = []
    for start in range(2 * PAGE, len(raw), PAGE):
        flags, lower = struct.unpack_from('<HH', raw, start + 10)
        if flags & 0x26 == 0x02 and lower <= PAGE:
            for offset in struct.unpack_from(f'<{(lower - 16) // 2}H', raw, start + 16):
                if not raw[start + offset + 4] & 0x03:
                    doomed.append(start + offset)
                    break
    assert doomed
    with open(data_file, 'r+b') as f:
        for at in doomed:
            f.seek(at)
            f.write(struct.pack('<H', PAGE))
    assert 'does not fit in the page' in lmdbmeta.check_pages(data_file)


def test_check_pages_of_a_missing_or_foreign_file(tmp_path):
    assert lmdbmeta.check_pages(str(tmp_path / 'nothing.mdb')) is None
    other = tmp_path / 'other.mdb'
    other.write_bytes(b'not lmdb' * 1000)
    assert lmdbmeta.check_pages(str(other)) is None


def test_check_pages_at_open_refuses_the_damaged_file(tmp_path):
    path = tmp_path / 'store'
    data_file = build(path, True)
    with centidb.open('lmdb', path=str(path), check_pages=True) as store:
        assert store.collection('c').get(0) == bytes(10_000)       # a healthy file opens
    grow_sizes(data_file)
    with pytest.raises(DatabaseCorruptError, match='overflow run at page') as info:
        centidb.open('lmdb', path=str(path), check_pages=True)
    assert data_file in str(info.value)
    with centidb.open('lmdb', path=str(path)) as store:      # the lock was released
        assert len(store.verify()) == 1


def _healthy_data_file(tmp_path):
    with centidb.open('LmdbEngine', path=str(tmp_path / 'healthy')) as store:
        store.collection('c').put({'n': 1}, key=1)
    with open(tmp_path / 'healthy' / 'data.mdb', 'rb') as f:
        return f.read()


def test_an_empty_data_file_is_given_time_to_receive_its_meta_pages(tmp_path):
    """Another process creating the store makes data.mdb empty, then writes it."""
    import threading
    data = _healthy_data_file(tmp_path)
    empty = tmp_path / 'data.mdb'
    empty.write_bytes(b'')
    writer = threading.Timer(0.2, empty.write_bytes, (data,))
    writer.start()
    try:
        lmdbmeta.check_data_file(str(empty))
    finally:
        writer.join()
    assert empty.read_bytes() == data


def test_an_empty_data_file_that_stays_empty_is_truncated(tmp_path, monkeypatch):
    monkeypatch.setattr(lmdbmeta, 'CREATING_WAIT', 0.05)
    empty = tmp_path / 'data.mdb'
    empty.write_bytes(b'')
    with pytest.raises(DatabaseCorruptError, match='truncated: 0 bytes'):
        lmdbmeta.check_data_file(str(empty))
