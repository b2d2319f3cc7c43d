"""The command line on damaged stores and other failures: one line, the documented status.

Every failure prints one line on stderr naming the error's class and exits
with the status ``docs/cli.rst`` gives it (3: the store could not be
opened, read or written; 5: an unexpected error); ``--debug`` adds the
traceback. Damaged LMDB stores are run in a child process, so that a crash
in LMDB fails the test instead of ending the run.
"""

import io
import json
import os
import subprocess
import sys

import pytest

import centidb
from centidb.cli import main
from centidb.cli.common import EXIT_INTERNAL, EXIT_PROBLEMS, EXIT_STORE, EXIT_USAGE

TIMEOUT = 120
PAGE = 4096

APP = '''
def setup(store):
    people = store.collection('people', key_func=lambda r: (r['n'],))
    people.add_index('by_n', lambda r: [(1 // 0,)])     # built already: used by reindex
'''

# Runs main() on each argv of a JSON list; prints [status, stderr] per run.
RUNNER = '''
import contextlib, io, json, sys
from centidb.cli import main
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(argv, out=io.StringIO())
    print(json.dumps([status, err.getvalue()]), flush=True)
'''


@pytest.fixture
def cli(capfd):
    """Run the command line in this process: ``(status, stderr)``."""
    def run(*args, out=None):
        capfd.readouterr()
        status = main([str(arg) for arg in args], out=io.StringIO() if out is None else out)
        return status, capfd.readouterr().err
    return run


def one_line(stderr):
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def make_store(path, kind):
    if kind == 'lmdb':
        store = centidb.open('LmdbEngine', path=str(path))
    else:
        store = centidb.open('PlyvelEngine', name=str(path), create_if_missing=True)
    with store:
        people = store.collection('people', key_func=lambda r: (r['n'],))
        people.add_index('by_n', lambda r: [(r['n'],)])
        # Enough for many LMDB pages and LevelDB blocks that hold only records.
        people.put_many([{'n': n, 'name': f'Example {n}', 'pad': 'x' * 100}
                         for n in range(400)])
        if kind == 'leveldb':
            store.engine.compact()      # the records move into a table file


def test_paths_that_hold_no_store(tmp_path, cli):
    missing = tmp_path / 'missing'
    status, err = cli('info', missing)
    assert status == EXIT_STORE
    assert repr(str(missing)) in one_line(err) and 'no such file or directory' in err
    notes = tmp_path / 'notes'
    notes.mkdir()
    (notes / 'todo.txt').write_text('milk')
    status, err = cli('verify', notes)
    assert status == EXIT_STORE and 'no LMDB or LevelDB store' in one_line(err)
    status, err = cli('verify', notes / 'todo.txt', '--engine', 'lmdb')
    assert status == EXIT_STORE and 'DatabasePathError' in one_line(err)
    lmdb_store = tmp_path / 'db'
    make_store(lmdb_store, 'lmdb')
    status, err = cli('scan', lmdb_store, 'people', '--engine', 'leveldb')
    assert status == EXIT_STORE
    assert 'DatabasePathError' in one_line(err) and 'LmdbEngine' in err


def test_bad_engine_option_is_a_usage_error(tmp_path, cli):
    path = tmp_path / 'db'
    make_store(path, 'lmdb')
    status, err = cli('info', path, '--option', 'map_size=-1')
    assert status == EXIT_USAGE and 'map_size' in one_line(err)


def test_truncated_lmdb_file(tmp_path, cli):
    path = tmp_path / 'db'
    make_store(path, 'lmdb')
    os.truncate(path / 'data.mdb', 100)     # not even the meta pages
    for command in ('info', 'verify', 'dump'):
        status, err = cli(command, path)
        assert status == EXIT_STORE, err
        assert 'damaged' in one_line(err)


def test_flipped_lmdb_pages(tmp_path):
    """Each page's header flags flipped in turn: correct output or one line and 3."""
    pytest.importorskip('lmdb')
    source = tmp_path / 'db'
    make_store(source, 'lmdb')
    data = (source / 'data.mdb').read_bytes()
    runs = []
    for page in range(2, len(data) // PAGE):    # pages 0 and 1 are the meta pages
        damaged = bytearray(data)
        damaged[page * PAGE + 10] ^= 0x55       # the page's flags: its type
        copy = tmp_path / f'page{page}'
        copy.mkdir()
        (copy / 'data.mdb').write_bytes(bytes(damaged))
        runs += [[command, str(copy)] for command in ('verify', 'dump')]
        runs.append(['scan', str(copy), 'people'])
    result = subprocess.run([sys.executable, '-c', RUNNER, json.dumps(runs)],
                            capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    outcomes = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(outcomes) == len(runs)
    failed = 0
    for argv, (status, err) in zip(runs, outcomes):
        if status == 0:
            continue
        failed += 1
        assert status == EXIT_STORE, (argv, err)
        line = one_line(err)
        assert line.startswith(f'centidb {argv[0]}: error: ') and 'damaged' in line, line
    assert failed >= 3     # the damage was seen, by every command


@pytest.mark.parametrize('damage', ['flip table', 'truncate table', 'flip manifest',
                                    'empty current'])
def test_damaged_leveldb_files(tmp_path, cli, damage):
    pytest.importorskip('plyvel')
    path = tmp_path / 'db'
    make_store(path, 'leveldb')
    names = os.listdir(path)
    if damage.endswith('table'):
        [name] = [name for name in names if name.endswith(('.ldb', '.sst'))]
    elif damage.endswith('manifest'):
        [name] = [name for name in names if name.startswith('MANIFEST-')]
    else:
        name = 'CURRENT'
    target = path / name
    size = os.path.getsize(target)
    if damage.startswith('flip'):
        with open(target, 'r+b') as f:
            f.seek(size // 2)
            chunk = f.read(8)
            f.seek(size // 2)
            f.write(bytes(b ^ 0xff for b in chunk))
    else:
        os.truncate(target, 0 if damage == 'empty current' else size // 2)
    for command in ('verify', 'dump'):
        out = io.StringIO()
        status, err = cli(command, path, out=out)
        if command == 'verify' and status == EXIT_PROBLEMS:
            # verify reads every table block and lists the damaged ones.
            assert 'damaged' in out.getvalue(), out.getvalue()
            continue
        assert status == EXIT_STORE, err
        line = one_line(err)
        assert line.startswith(f'centidb {command}: error: '), line
        assert 'damaged' in line, line


def test_unexpected_error_and_debug(tmp_path, cli, monkeypatch):
    path = tmp_path / 'db'
    make_store(path, 'lmdb')
    (tmp_path / 'badapp.py').write_text(APP)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    status, err = cli('reindex', path, 'people', '--app', 'badapp:setup')
    assert status == EXIT_INTERNAL
    line = one_line(err)
    assert 'unexpected ZeroDivisionError' in line and '--debug' in line
    for argv in (['--debug', 'reindex', path, 'people', '--app', 'badapp:setup'],
                 ['reindex', '--debug', path, 'people', '--app', 'badapp:setup']):
        status, err = cli(*argv)
        assert status == EXIT_INTERNAL
        lines = err.splitlines()
        assert lines[0] == 'Traceback (most recent call last):'
        assert any('1 // 0' in text for text in lines)
        assert lines[-1] == line
    status, err = cli('--debug', 'info', tmp_path / 'missing')
    assert status == EXIT_STORE and err.startswith('Traceback')


def test_every_exit_status_is_documented():
    from centidb import cli
    from centidb.cli import common as cli_common
    statuses = {value for name, value in vars(cli_common).items() if name.startswith('EXIT_')}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, 'docs', 'cli.rst'), encoding='utf-8') as f:
        page = f.read()
    table = page.split('Errors and exit status\n')[1].split('===  ')[1]
    rows = {int(line.split()[0]) for line in table.splitlines() if line[:1].isdigit()}
    assert rows == statuses
    epilog = cli.make_parser().epilog
    assert all(f'{status} ' in epilog for status in statuses), epilog
