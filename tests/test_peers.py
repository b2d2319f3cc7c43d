"""benchmarks/peers.py --quick measures every peer this machine has, in one CSV table.

centidb and sqlite3 are always there; ZODB and PostgreSQL are measured when
installed and otherwise must show up as one row with an install note;
MongoDB always shows up as a note. Nothing is timed here: the test checks
the table's shape, counts and ratios, and that nothing is left behind.
"""

import csv
import glob
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'benchmarks', 'peers.py')
COLUMNS = ['peer', 'operation', 'records', 'seconds', 'cpu_seconds', 'records_per_s',
           'ratio_vs_centidb', 'ratio_vs_sqlite3', 'note']
OPS = ['insert one txn', 'insert commit/1000', 'get by key', 'get by index',
       'index range 1000', 'full scan', 'count per index value', 'update 10% commit/1000']
N = 2000                        # peers.py QUICK_RECORDS (and QUICK_RANGES ranges)
RECORDS = {'insert one txn': N, 'insert commit/1000': N, 'get by key': N, 'get by index': N,
           'index range 1000': 5 * 1000, 'full scan': N, 'count per index value': N,
           'update 10% commit/1000': N // 10}


def has_module(*names):
    return all(importlib.util.find_spec(name) is not None for name in names)


def has_postgres_server():
    return bool(shutil.which('pg_ctl') or glob.glob('/usr/lib/postgresql/*/bin/pg_ctl'))


INSTALLED = {
    'centidb LmdbEngine': True, 'centidb PlyvelEngine': True, 'sqlite3': True,
    'ZODB': has_module('ZODB', 'BTrees'),
    'PostgreSQL': has_module('psycopg') and has_postgres_server(),
    'MongoDB': False,
}


def peers(*args, cwd=ROOT):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=180, cwd=cwd, env=dict(os.environ, PYTHONPATH=ROOT))


@pytest.fixture(scope='module')
def workdir():
    # Not pytest's tmp_path: as root, PostgreSQL's server runs as another
    # user, which must reach its directory inside this one.
    path = tempfile.mkdtemp(prefix='test-peers-')
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope='module')
def quick_run(workdir):
    return peers('--quick', '--dir', workdir)


@pytest.fixture(scope='module')
def rows(quick_run):
    assert quick_run.returncode == 0, quick_run.stderr
    lines = quick_run.stdout.splitlines()
    assert lines and lines[0] == ','.join(COLUMNS), quick_run.stdout
    table = list(csv.DictReader(io.StringIO(quick_run.stdout)))
    assert len(table) == len(lines) - 1, 'stdout holds something besides the CSV'
    for row in table:
        assert None not in row and None not in row.values(), row
    return table


def test_every_peer_has_its_rows_in_order(rows):
    expected = []
    for peer, installed in INSTALLED.items():
        expected += [(peer, op) for op in OPS] if installed else [(peer, 'all')]
    assert sorted(expected) == sorted((row['peer'], row['operation']) for row in rows)
    order = ['centidb LmdbEngine', 'centidb PlyvelEngine', 'ZODB', 'PostgreSQL', 'sqlite3',
             'MongoDB']
    seen = list(dict.fromkeys(row['peer'] for row in rows))
    assert seen == order
    for peer in seen:
        ops = [row['operation'] for row in rows if row['peer'] == peer]
        assert ops in (OPS, ['all'])


def test_measured_rows_have_counts_rates_and_ratios(rows):
    for row in rows:
        if row['operation'] == 'all':
            continue
        assert row['note'] == '', row
        assert int(row['records']) == RECORDS[row['operation']], row
        seconds, rate = float(row['seconds']), float(row['records_per_s'])
        assert seconds > 0 and rate > 0 and float(row['cpu_seconds']) >= 0, row
        # seconds has 4 decimals; records_per_s comes from the unrounded time
        assert abs(rate * seconds - int(row['records'])) <= rate * 0.00005 + 1, row
        assert float(row['ratio_vs_centidb']) > 0 and float(row['ratio_vs_sqlite3']) > 0, row
        if row['peer'] == 'centidb LmdbEngine':
            assert row['ratio_vs_centidb'] == '1.00', row
        if row['peer'] == 'sqlite3':
            assert row['ratio_vs_sqlite3'] == '1.00', row


def test_missing_peers_say_how_to_install(rows):
    notes = {row['peer']: row['note'] for row in rows if row['operation'] == 'all'}
    assert 'MongoDB' in notes and 'no MongoDB runner' in notes['MongoDB']
    for peer, note in notes.items():
        assert note.startswith('not '), (peer, note)     # never 'failed: ...'
        assert all(row[c] == '' for c in COLUMNS[2:8] for row in rows
                   if row['peer'] == peer)
    if 'ZODB' in notes:
        assert 'pip install ZODB BTrees' in notes['ZODB']


def test_context_and_cleanup(quick_run, workdir):
    err = quick_run.stderr
    assert f'{N} records' in err and 'sqlite3 library' in err and 'keylib.IMPL' in err
    if INSTALLED['PostgreSQL']:
        assert 'PostgreSQL server' in err and 'fsync=off' in err
    assert os.listdir(workdir) == []    # stores removed, PostgreSQL's directory too


def test_unknown_peer_is_refused():
    result = peers('--quick', '--peers', 'sqlite3,oracle')
    assert result.returncode == 2
    assert 'oracle' in result.stderr and result.stdout == ''


def test_chart_of_the_quick_table(quick_run, tmp_path):
    pytest.importorskip('matplotlib')
    csv_path, png_path = tmp_path / 'peers.csv', tmp_path / 'peers.png'
    csv_path.write_text(quick_run.stdout)
    result = peers('--chart', str(csv_path), str(png_path))
    assert result.returncode == 0, result.stderr
    assert png_path.read_bytes().startswith(b'\x89PNG\r\n\x1a\n')
    bad = peers('--chart', os.path.join(ROOT, 'tests', 'key_vectors.csv'), str(png_path))
    assert bad.returncode != 0 and 'not a peers.csv table' in bad.stderr
