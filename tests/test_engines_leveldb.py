"""PlyvelEngine specifics: opening errors, locking, compaction, commit order.

Opening wrong paths is tested for both disk engines in test_engine_contract.
"""

import os
import subprocess
import sys

import pytest

from centidb.engines import PlyvelEngine
from centidb.errors import (
    DatabaseLockedError,
    DatabaseNotFoundError,
    DatabasePathError,
    EngineClosedError,
)

from engine_helpers import make_engine


def test_plyvel_missing_database(tmp_path):
    pytest.importorskip('plyvel')
    path = str(tmp_path / 'absent')
    with pytest.raises(DatabaseNotFoundError) as info:
        PlyvelEngine(path)
    assert isinstance(info.value, FileNotFoundError)
    assert path in str(info.value)
    assert 'create_if_missing=True' in str(info.value)


def test_plyvel_locked_by_another_handle(tmp_path):
    pytest.importorskip('plyvel')
    path = str(tmp_path / 'db')
    with PlyvelEngine(path, create_if_missing=True):
        with pytest.raises(DatabaseLockedError) as info:
            PlyvelEngine(path)
        assert isinstance(info.value, OSError)
        assert path in str(info.value)
    with PlyvelEngine(path) as eng:  # free again once closed
        assert list(eng.items()) == []


def test_plyvel_locked_by_another_process(tmp_path):
    pytest.importorskip('plyvel')
    path = str(tmp_path / 'db')
    code = ('import plyvel, sys\n'
            'db = plyvel.DB(sys.argv[1], create_if_missing=True)\n'
            'print("ready", flush=True)\n'
            'sys.stdin.read()\n'
            'db.close()\n')
    proc = subprocess.Popen([sys.executable, '-c', code, path],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == 'ready'
        with pytest.raises(DatabaseLockedError, match='locked'):
            PlyvelEngine(path)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0
    with PlyvelEngine(path) as eng:
        eng.put(b'k', b'v')
        assert eng.get(b'k') == b'v'


def test_plyvel_lock_file_that_cannot_be_opened_is_not_locked(tmp_path):
    """Any LevelDB error naming the LOCK file was reported as "locked"."""
    pytest.importorskip('plyvel')
    path = tmp_path / 'db'
    with PlyvelEngine(path, create_if_missing=True) as eng:
        eng.put(b'k', b'v')
    (path / 'LOCK').unlink()
    (path / 'LOCK').mkdir()
    with pytest.raises(DatabasePathError, match='Is a directory') as info:
        PlyvelEngine(path)
    assert not isinstance(info.value, DatabaseLockedError)
    assert str(path) in str(info.value)
    (path / 'LOCK').rmdir()
    with PlyvelEngine(path) as eng:
        assert eng.get(b'k') == b'v'


def test_engine_is_a_context_manager(tmp_path):
    with make_engine('plyvel', tmp_path) as eng:
        eng.put(b'k', b'v')
    assert eng.closed
    with pytest.raises(EngineClosedError):
        eng.get(b'k')
    with make_engine('plyvel', tmp_path) as again:  # the lock was released
        assert again.get(b'k') == b'v'


def test_plyvel_compact_keeps_the_data_and_refuses_after_close(tmp_path):
    pytest.importorskip('plyvel')
    eng = PlyvelEngine(tmp_path / 'db', create_if_missing=True)
    with eng.begin(write=True) as txn:
        for i in range(2000):
            txn.put(b'k%05d' % i, b'v' * 100)
        txn.delete(b'k00007')
    eng.compact()
    assert eng.get(b'k00006') == b'v' * 100 and eng.get(b'k00007') is None
    assert sum(1 for _ in eng.keys()) == 1999
    eng.close()
    with pytest.raises(EngineClosedError):
        eng.compact()


def table_bytes(path):
    """The bytes of LevelDB's table files in `path`."""
    return sum(os.path.getsize(path / name) for name in os.listdir(path)
               if name.endswith(('.ldb', '.sst')))


def test_plyvel_compact_merges_the_whole_key_space(tmp_path):
    """compact() called plyvel's compact_range() unbounded, which merged nothing."""
    pytest.importorskip('plyvel')
    path = tmp_path / 'db'
    keys = [b'k%06d' % i for i in range(30000)] + [b'\xff' * 300]
    with PlyvelEngine(path, create_if_missing=True, write_buffer_size=1 << 20) as eng:
        for rewrite in range(3):
            with eng.begin(write=True) as txn:
                for key in keys:
                    txn.put(key, os.urandom(100))
        with eng.begin(write=True) as txn:
            for key in keys[1:]:
                txn.delete(key)
        eng._db.compact_range()          # what compact() did: flushes, merges nothing
        before = table_bytes(path)
        assert before > 3 * len(keys) * 100 // 2
        eng.compact()
        # One key's record is left, and no overwritten or deleted data,
        # the longest key (past every prefix of 0xff bytes) included.
        assert table_bytes(path) < 1000
        assert list(eng.keys()) == keys[:1]


def test_plyvel_commit_of_writes_and_deletes_keeps_their_order(tmp_path):
    """The commit writes the log in order, deletes included."""
    pytest.importorskip('plyvel')
    with PlyvelEngine(tmp_path / 'db', create_if_missing=True) as eng:
        with eng.begin(write=True) as txn:
            txn.put(b'a', b'1')
            txn.delete(b'a')
            txn.put(b'b', b'1')
            txn.delete(b'b')
            txn.put(b'b', b'2')
        assert list(eng.items()) == [(b'b', b'2')]
        with eng.begin(write=True) as txn:
            txn._put_many([(b'c', b'3'), (b'c', b'4')])
        assert list(eng.items()) == [(b'b', b'2'), (b'c', b'4')]


def test_plyvel_read_transaction_offers_its_seek_iterator_as_a_seek_cursor(tmp_path):
    """After the first seek; a write transaction never (seeks must see its pending writes)."""
    pytest.importorskip('plyvel')
    with PlyvelEngine(str(tmp_path / 'db'), create_if_missing=True) as eng:
        for key in (b'b', b'd'):
            eng.put(key, b'v')
        with eng.begin(write=True) as txn:
            assert txn.first(b'a') == (b'b', b'v') and txn.fast.seek_cursor is None
        txn = eng.begin()
        assert txn.fast.seek_cursor is None
        assert txn.first(b'c') == (b'd', b'v')
        cursor = txn.fast.seek_cursor
        assert cursor.set_range(b'a') and cursor.key() == b'b'
        assert cursor.set_range(b'd') and cursor.key() == b'd'
        assert not cursor.set_range(b'e')
        assert cursor.set_range(b'c') and cursor.key() == b'd'
        txn.abort()
        assert txn.fast.seek_cursor is None
