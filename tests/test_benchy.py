"""examples/benchy.py --quick prints the full benchmark table, and only that."""

import csv
import io
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ['engine', 'mode', 'records', 'keys_written', 'seconds', 'records_per_s',
           'keys_per_s', 'ratio_vs_raw', 'ratio_vs_sqlite']
ENGINES = ['sqlite3', 'raw lmdb', 'LmdbEngine', 'raw plyvel', 'PlyvelEngine', 'ListEngine']
INSERTS = {'insert blind': 1, 'insert blind +2 idx': 3, 'insert': 1, 'insert +2 idx': 3}
READS = ['get by key', 'get by index', 'index range scan']
CENTIDB = {'LmdbEngine', 'PlyvelEngine', 'ListEngine'}
QUICK_RECORDS = 2000            # examples/benchy.py QUICK_RECORDS


def benchy(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, 'examples', 'benchy.py'),
                           *args], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))


def table(result):
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and lines[0] == ','.join(COLUMNS), result.stdout
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(lines) == len(rows) + 1, 'stdout holds something besides the CSV'
    for row in rows:
        assert None not in row and None not in row.values(), row   # no extra or missing cells
    return rows


@pytest.fixture(scope='module')
def quick_run():
    return benchy('--quick')


@pytest.fixture(scope='module')
def rows(quick_run):
    return table(quick_run)


def test_one_row_per_engine_and_mode(rows):
    seen = [(row['engine'], row['mode']) for row in rows]
    assert seen == [(engine, mode) for engine in ENGINES for mode in [*INSERTS, *READS]]


def test_counts_and_rates(rows):
    for row in rows:
        records, keys_written = int(row['records']), int(row['keys_written'])
        assert 0 < records <= QUICK_RECORDS, row
        assert float(row['seconds']) > 0 and float(row['records_per_s']) > 0, row
        if row['mode'] in INSERTS:
            assert records == QUICK_RECORDS, row
            assert keys_written == records * INSERTS[row['mode']], row
            assert float(row['keys_per_s']) >= float(row['records_per_s']), row
        else:
            assert keys_written == 0 and row['keys_per_s'] == '', row


def test_ratios_where_promised(rows):
    for row in rows:
        if row['engine'] in CENTIDB:
            assert float(row['ratio_vs_raw']) > 0 and float(row['ratio_vs_sqlite']) > 0, row
        else:
            assert row['ratio_vs_raw'] == '', row
            if row['engine'] == 'sqlite3':
                assert row['ratio_vs_sqlite'] == '', row


def test_context_goes_to_stderr(quick_run):
    assert 'keylib.IMPL' in quick_run.stderr
    assert 'sqlite3 library' in quick_run.stderr
    assert f'{QUICK_RECORDS} records' in quick_run.stderr


def test_selection_brings_its_baselines():
    rows = table(benchy('--records', '200', '--runs', '1', '--engines', 'PlyvelEngine',
                        '--modes', 'get by index,insert'))
    seen = [(row['engine'], row['mode']) for row in rows]
    assert seen == [(engine, mode) for engine in ('sqlite3', 'raw plyvel', 'PlyvelEngine')
                    for mode in ('insert', 'get by index')]


def test_unknown_engine_is_refused():
    result = benchy('--quick', '--engines', 'NoSuchEngine')
    assert result.returncode == 2
    assert 'NoSuchEngine' in result.stderr and result.stdout == ''


def test_chart_script_draws_the_quick_table(quick_run, tmp_path):
    """benchmarks/benchy_chart.py turns benchy.csv into a PNG with one panel per mode."""
    pytest.importorskip('matplotlib')
    csv_path, png_path = tmp_path / 'benchy.csv', tmp_path / 'benchy.png'
    csv_path.write_text(quick_run.stdout)
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'benchmarks', 'benchy_chart.py'),
                             str(csv_path), str(png_path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    data = png_path.read_bytes()
    assert data.startswith(b'\x89PNG\r\n\x1a\n') and len(data) > 20000
    bad = subprocess.run([sys.executable, os.path.join(ROOT, 'benchmarks', 'benchy_chart.py'),
                          os.path.join(ROOT, 'tests', 'key_vectors.csv'), str(png_path)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and 'not a benchy.csv table' in bad.stderr
