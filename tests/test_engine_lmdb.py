"""LmdbEngine specifics: opening errors, the map size, the key size limit."""

import subprocess
import sys

import pytest

from centidb.engines import LmdbEngine
from centidb.errors import (
    DatabaseLockedError,
    DatabaseNotFoundError,
    EngineClosedError,
    EngineError,
    MapFullError,
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
