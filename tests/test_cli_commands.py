"""centidb.cli.commands: the helpers of the subcommands, and ``compact`` under the store lock.

``parse_key`` and ``key_json`` turn keys into JSON arrays of tagged JSON and
back; ``copy_engine`` copies every key of one engine into another. The
subcommands themselves run end to end in test_cli.py.

The store lock: ``centidb compact`` proves that no other process has the
store open. Every LMDB and LevelDB engine holds a shared ``flock`` on the
store's ``centidb.lock``; ``compact`` makes it exclusive without waiting.
These tests run a second, real process that holds a store open (writing to
it, or only holding it, or compacting it) and check what the other side
sees.
"""

import datetime
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

import centidb
from centidb.cli import main
from centidb.cli.commands import COPY_BATCH, copy_engine, key_json, parse_key
from centidb.cli.common import EXIT_USAGE, CliError
from centidb.engines import LmdbEngine, MemoryEngine, PlyvelEngine
from centidb.engines.paths import LOCK_NAME
from centidb.errors import DatabaseLockedError, DatabaseNotFoundError

TIMEOUT = 120
KINDS = {'lmdb': 'LmdbEngine', 'leveldb': 'PlyvelEngine'}


# --- keys as JSON, and copies ------------------------------------------------------------

KEYS = [(), (1,), ('ann', 2), (b'\x00\xff', None, True, -1.5),
        (datetime.datetime(2020, 1, 2, 3, 4, 5), uuid.UUID(int=9), ('nested', 1))]


@pytest.mark.parametrize('key', KEYS, ids=repr)
def test_key_json_and_parse_key_round_trip(key):
    text = json.dumps(key_json(key))
    assert parse_key(text, 'KEY') == key


def test_parse_key_takes_a_bare_scalar_and_refuses_bad_json():
    assert parse_key('7', 'KEY') == (7,) and parse_key('"a"', '--lo') == ('a',)
    with pytest.raises(CliError, match='--lo must be a JSON array') as caught:
        parse_key('[1,', '--lo')
    assert caught.value.status == EXIT_USAGE
    with pytest.raises(CliError, match='^KEY: ') as caught:
        parse_key('[{"$bytes": "not base64!"}]', 'KEY')
    assert caught.value.status == EXIT_USAGE


def test_copy_engine_copies_every_key_in_batches():
    source, dest = MemoryEngine(), MemoryEngine()
    pairs = [(b'k%05d' % n, b'v%d' % n) for n in range(COPY_BATCH * 2 + 3)]
    with source.begin(write=True) as etxn:
        for key, value in pairs:
            etxn.put(key, value)
    assert copy_engine(source, dest, quiet=True, desc='copy') == len(pairs)
    with dest.begin() as etxn:
        assert list(etxn.items()) == pairs
    assert copy_engine(MemoryEngine(), MemoryEngine(), quiet=True, desc='copy') == 0

# argv: kind, store, mode, ready file, stop file. Modes: 'write' commits
# one record at a time until stop exists and prints how many it committed;
# 'hold' only keeps the store open; 'exclusive' holds the lock as compact does.
HOLDER = '''
import os, sys, time
import centidb
kind, path, mode, ready, stop = sys.argv[1:]
if kind == 'lmdb':
    store = centidb.open('LmdbEngine', path=path)
else:
    store = centidb.open('PlyvelEngine', name=path)
if mode == 'exclusive':
    store.engine.store_lock.make_exclusive('test')
coll = store.collection('log')
acked = 0
deadline = time.monotonic() + 60
while not os.path.exists(stop) and time.monotonic() < deadline:
    if mode == 'write':
        coll.put({'n': acked})
        acked += 1
    else:
        time.sleep(0.01)
    if acked == 100 or (mode != 'write' and not os.path.exists(ready)):
        open(ready, 'w').close()
store.close()
print(acked)
'''


def open_store(kind, path, create=False):
    if kind == 'lmdb':
        return centidb.open('LmdbEngine', path=str(path))
    return centidb.open('PlyvelEngine', name=str(path), create_if_missing=create)


def make_store(kind, path, n=200):
    with open_store(kind, path, create=True) as store:
        store.collection('log').put_many([{'n': -i} for i in range(n)])


def count(kind, path):
    with open_store(kind, path) as store:
        return len(store.collection('log'))


class Result:
    """A command line run in this process: its exit status and stderr."""

    def __init__(self, capfd, args):
        capfd.readouterr()
        self.returncode = main([str(arg) for arg in args], out=io.StringIO())
        self.stderr = capfd.readouterr().err


@pytest.fixture
def cli(capfd):
    """Run the command line in this process (the other process is the test's)."""
    return lambda *args: Result(capfd, args)


class Holder:
    """A second process holding the store at `path` open, in `mode`."""

    def __init__(self, work, kind, path, mode):
        script = work / 'holder.py'
        script.write_text(textwrap.dedent(HOLDER))
        self.ready, self.stop = work / f'ready-{mode}', work / f'stop-{mode}'
        self.proc = subprocess.Popen(
            [sys.executable, str(script), kind, str(path), mode, str(self.ready),
             str(self.stop)], stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + TIMEOUT
        while not self.ready.exists():
            assert self.proc.poll() is None, 'the holder process died'
            assert time.monotonic() < deadline, 'the holder process never got ready'
            time.sleep(0.02)

    def finish(self):
        """Stop the process; return how many records it committed."""
        self.stop.touch()
        out, _ = self.proc.communicate(timeout=TIMEOUT)
        assert self.proc.returncode == 0
        return int(out)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.communicate(timeout=TIMEOUT)


@pytest.fixture(params=sorted(KINDS))
def kind(request):
    pytest.importorskip('lmdb' if request.param == 'lmdb' else 'plyvel')
    return request.param


def one_line(stderr):
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def data_files(path):
    return {name: os.stat(path / name).st_ino for name in os.listdir(path)
            if name.endswith(('.mdb', '.ldb', '.log'))}


def test_compact_refused_while_another_process_writes(tmp_path, kind, cli):
    path = tmp_path / 'db'
    make_store(kind, path)
    writer = Holder(tmp_path, kind, path, 'write')
    try:
        before = data_files(path)
        result = cli('compact', path)
        assert result.returncode == 3, result.stderr
        line = one_line(result.stderr)
        assert 'DatabaseLockedError' in line and repr(str(path)) in line, line
        if kind == 'lmdb':
            assert data_files(path)['data.mdb'] == before['data.mdb']   # not replaced
    finally:
        acked = writer.finish()
    assert acked >= 100
    assert count(kind, path) == 200 + acked     # every acknowledged commit is there
    assert cli('compact', path).returncode == 0   # now nobody has it open
    assert count(kind, path) == 200 + acked


def test_a_killed_process_leaves_no_lock(tmp_path, kind, cli):
    path = tmp_path / 'db'
    make_store(kind, path)
    Holder(tmp_path, kind, path, 'hold').kill()
    result = cli('compact', path)
    assert result.returncode == 0, result.stderr
    assert count(kind, path) == 200


def test_no_engine_opens_the_store_while_it_is_compacted(tmp_path, kind, cli):
    path = tmp_path / 'db'
    make_store(kind, path)
    holder = Holder(tmp_path, kind, path, 'exclusive')
    try:
        with pytest.raises(DatabaseLockedError) as info:
            open_store(kind, path)
        assert 'being rewritten by another process' in str(info.value)
        assert repr(str(path)) in str(info.value)
        result = cli('info', path)
        assert result.returncode == 3
        assert 'DatabaseLockedError' in one_line(result.stderr)
    finally:
        holder.finish()
    assert count(kind, path) == 200


def test_lock_file_places(tmp_path, kind, cli):
    path = tmp_path / 'db'
    make_store(kind, path)
    assert (path / LOCK_NAME).is_file()
    # A directory holding only the lock file is an empty one.
    empty = tmp_path / 'empty'
    empty.mkdir()
    (empty / LOCK_NAME).touch()
    with pytest.raises(DatabaseNotFoundError) as info:
        LmdbEngine(str(empty), create_if_missing=False) if kind == 'lmdb' else \
            PlyvelEngine(str(empty))
    assert 'other files' not in str(info.value)
    make_store(kind, empty)
    assert count(kind, empty) == 200
    if kind == 'lmdb':
        single = tmp_path / 'single.mdb'
        with LmdbEngine(str(single), subdir=False) as engine:
            engine.put(b'k', b'v')
            assert engine.store_lock.path == f'{single}-{LOCK_NAME}'
            assert os.path.isfile(engine.store_lock.path)
        result = cli('compact', single, '--engine', 'lmdb', '--option', 'subdir=false')
        assert result.returncode == 2
        assert 'centidb backup' in one_line(result.stderr)


def test_without_flock_the_store_opens_and_compact_refuses(tmp_path, kind, cli,
                                                           monkeypatch):
    import errno
    import fcntl
    path = tmp_path / 'db'
    make_store(kind, path)

    def no_flock(fd, operation):
        raise OSError(errno.ENOLCK, 'No locks available')
    monkeypatch.setattr(fcntl, 'flock', no_flock)
    with open_store(kind, path) as store:
        assert not store.engine.store_lock.held
        assert len(store.collection('log')) == 200
    result = cli('compact', path)
    assert result.returncode == 3
    assert 'could not be locked' in one_line(result.stderr)
