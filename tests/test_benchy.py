"""examples/benchy.py --quick prints the full benchmark table, and only that; --rss its memory
table; --etcd the EtcdEngine table (when an etcd binary is installed)."""

import csv
import io
import os
import subprocess
import sys

import pytest

from etcd_cluster import require_etcd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ['engine', 'mode', 'records', 'keys_written', 'seconds', 'records_per_s',
           'keys_per_s', 'ratio_vs_raw', 'ratio_vs_sqlite', 'ratio_vs_lmdbengine',
           'bytes_on_disk', 'ratio_vs_raw_runs']
RSS_COLUMNS = ['engine', 'task', 'records', 'seconds', 'baseline_rss_bytes',
               'peak_rss_bytes', 'peak_rss_per_record']
ENGINES = ['sqlite3', 'raw lmdb', 'LmdbEngine', 'raw plyvel', 'PlyvelEngine', 'ListEngine']
CENTIDB = {'LmdbEngine', 'PlyvelEngine', 'ListEngine'}
DURABLE = 'insert +2 idx 1000/txn durable'
#: Load modes -> engine keys written per record.
LOADS = {'insert blind': 1, 'insert blind +2 idx': 3, 'insert': 1, 'insert +2 idx': 3,
         'put_many +2 idx': 3, 'insert +2 idx 1000/txn': 3, DURABLE: 3}
#: The default run's reads ('index range scan', a scan of the whole index,
#: runs only when selected).
READS = ['get by key', 'get by index', 'index ranges of 1000', 'full scan', 'group counts']
UPDATE = 'update 10%'
BATCHED = {'get by key batched': 'get by key', 'full scan batched': 'full scan'}
MODES = [*LOADS, *READS, UPDATE, *BATCHED]
QUICK_RECORDS = 2000            # examples/benchy.py QUICK_RECORDS
#: Records per row under --quick: the loads, reads and scans see every
#: record; 2 ranges of 1,000 (one per 1,000 records); a tenth updated.
QUICK_COUNTS = {**{mode: QUICK_RECORDS for mode in MODES}, UPDATE: QUICK_RECORDS // 10,
                'index range scan': QUICK_RECORDS}
ETCD_COLUMNS = ['members', 'engine', 'mode', 'records', 'keys_written', 'seconds',
                'records_per_s', 'keys_per_s', 'ratio_vs_raw']
#: --etcd --quick: mode -> records (a tenth read by key; 2 ranges of 1,000).
ETCD_COUNTS = {'put_many blind +2 idx': QUICK_RECORDS, 'get by key': QUICK_RECORDS // 10,
               'get_many': QUICK_RECORDS // 10, 'index ranges of 1000': QUICK_RECORDS}


def benchy(*args, timeout=120):
    return subprocess.run([sys.executable, os.path.join(ROOT, 'examples', 'benchy.py'),
                           *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))


def table(result, columns=COLUMNS):
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and lines[0] == ','.join(columns), result.stdout
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
    assert seen == [(engine, mode) for engine in ENGINES for mode in MODES
                    if not (engine == 'ListEngine' and mode == DURABLE)]


def test_counts_and_rates(rows):
    for row in rows:
        records, keys_written = int(row['records']), int(row['keys_written'])
        assert records == QUICK_COUNTS[row['mode']], row
        assert float(row['seconds']) > 0 and float(row['records_per_s']) > 0, row
        if row['mode'] in LOADS:
            assert keys_written == records * LOADS[row['mode']], row
        elif row['mode'] == UPDATE:
            assert keys_written == 2 * records, row     # the record and its new entry
        else:
            assert keys_written == 0 and row['keys_per_s'] == '', row
        if keys_written:
            assert float(row['keys_per_s']) >= float(row['records_per_s']), row


def test_ratios_where_promised(rows):
    for row in rows:
        if row['engine'] in CENTIDB:
            # A number is written (two decimals: on a loaded machine a
            # --quick run's tiny times can round a ratio down to 0.00).
            assert float(row['ratio_vs_raw']) >= 0 and float(row['ratio_vs_sqlite']) >= 0, row
        else:
            assert row['ratio_vs_raw'] == '', row
            if row['engine'] == 'sqlite3':
                assert row['ratio_vs_sqlite'] == '', row
        if row['engine'] == 'ListEngine':
            assert float(row['ratio_vs_lmdbengine']) >= 0, row
        else:
            assert row['ratio_vs_lmdbengine'] == '', row


def test_sizes_on_disk(rows):
    """Non-blind loads, and the reads compared with their batched twins, have a size."""
    sized = {'insert', 'insert +2 idx', 'put_many +2 idx', 'insert +2 idx 1000/txn', DURABLE,
             *BATCHED, *BATCHED.values()}
    sizes = {(row['engine'], row['mode']): row['bytes_on_disk'] for row in rows}
    for (engine, mode), size in sizes.items():
        if engine == 'ListEngine' or mode not in sized:
            assert size == '', (engine, mode)
        else:
            assert int(size) > 0, (engine, mode)
    # zlib batches are smaller in LevelDB (in LMDB, each batch's overflow
    # pages round it up to whole pages, so at this size they are not).
    assert int(sizes['PlyvelEngine', 'full scan batched']) < int(sizes['PlyvelEngine', 'full scan'])
    # Two indexes take room.
    assert all(int(sizes[engine, 'insert +2 idx']) > int(sizes[engine, 'insert'])
               for engine in ENGINES if engine != 'ListEngine')


def test_baselines_repeat_what_they_have_no_call_for(rows):
    """A baseline's put_many and batched rows are its insert +2 idx and unbatched rows."""
    by = {(row['engine'], row['mode']): row for row in rows}
    for engine in ('sqlite3', 'raw lmdb', 'raw plyvel'):
        for mode, same in {'put_many +2 idx': 'insert +2 idx', **BATCHED}.items():
            assert by[engine, mode]['seconds'] == by[engine, same]['seconds'], (engine, mode)


def test_context_goes_to_stderr(quick_run):
    assert 'keylib.IMPL' in quick_run.stderr
    assert 'sqlite3 library' in quick_run.stderr
    assert f'{QUICK_RECORDS} records' in quick_run.stderr
    assert 'durable stores in' in quick_run.stderr


def test_selection_brings_its_baselines():
    rows = table(benchy('--records', '200', '--runs', '1', '--engines', 'PlyvelEngine',
                        '--modes', 'get by index,insert'))
    seen = [(row['engine'], row['mode']) for row in rows]
    assert seen == [(engine, mode) for engine in ('sqlite3', 'raw plyvel', 'PlyvelEngine')
                    for mode in ('insert', 'get by index')]


def test_each_runs_ratio_is_listed_and_the_ratio_is_their_median():
    rows = table(benchy('--records', '200', '--runs', '3', '--passes', '1',
                        '--engines', 'LmdbEngine', '--modes', 'get by key,insert'))
    for row in rows:
        runs = row['ratio_vs_raw_runs'].split()
        if row['engine'] != 'LmdbEngine':
            assert runs == [] and row['ratio_vs_raw'] == '', row
            continue
        assert len(runs) == 3 and all(float(run) > 0 for run in runs), row
        # Of three, the median is one of them: rounding each first changes nothing.
        assert sorted(runs, key=float)[1] == row['ratio_vs_raw'], row


def test_list_engine_brings_lmdb_engine():
    rows = table(benchy('--records', '300', '--runs', '1', '--engines', 'ListEngine',
                        '--modes', 'full scan batched,update 10%,index range scan'))
    seen = [(row['engine'], row['mode']) for row in rows]
    assert seen == [(engine, mode) for engine in ('sqlite3', 'raw lmdb', 'LmdbEngine', 'ListEngine')
                    for mode in ('index range scan', UPDATE, 'full scan batched')]
    assert all(float(row['ratio_vs_lmdbengine']) > 0 for row in rows
               if row['engine'] == 'ListEngine')


def test_unknown_engine_is_refused():
    result = benchy('--quick', '--engines', 'NoSuchEngine')
    assert result.returncode == 2
    assert 'NoSuchEngine' in result.stderr and result.stdout == ''


def test_rss_table():
    """--rss: one child per task and backend, each reporting its peak RSS growth."""
    rows = table(benchy('--rss', '--records', '300', '--engines', 'LmdbEngine'), RSS_COLUMNS)
    seen = [(row['engine'], row['task']) for row in rows]
    backends = ['sqlite3', 'raw lmdb', 'LmdbEngine']
    assert seen == ([(engine, 'import +2 idx') for engine in backends]
                    + [('LmdbEngine', 'put_many +2 idx')]
                    + [(engine, 'add_index') for engine in backends])
    for row in rows:
        assert int(row['records']) == 300 and float(row['seconds']) > 0, row
        baseline, peak = int(row['baseline_rss_bytes']), int(row['peak_rss_bytes'])
        assert 0 < baseline <= peak, row
        assert float(row['peak_rss_per_record']) == pytest.approx((peak - baseline) / 300,
                                                                  abs=0.1), row


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


def test_etcd_table():
    """--etcd --quick: a raw etcd loop and EtcdEngine on clusters of 1 and 3 members."""
    require_etcd()
    result = benchy('--etcd', '--quick', timeout=90)
    rows = table(result, ETCD_COLUMNS)
    seen = [(row['members'], row['engine'], row['mode']) for row in rows]
    assert seen == [(members, engine, mode) for members in ('1', '3')
                    for engine in ('raw etcd', 'EtcdEngine') for mode in ETCD_COUNTS]
    for row in rows:
        assert int(row['records']) == ETCD_COUNTS[row['mode']], row
        assert float(row['seconds']) > 0 and float(row['records_per_s']) > 0, row
        if row['mode'] == 'put_many blind +2 idx':
            assert int(row['keys_written']) == 3 * QUICK_RECORDS, row
            assert float(row['keys_per_s']) > float(row['records_per_s']), row
        else:
            assert row['keys_written'] == '0' and row['keys_per_s'] == '', row
        if row['engine'] == 'EtcdEngine':
            assert float(row['ratio_vs_raw']) > 0, row
        else:
            assert row['ratio_vs_raw'] == '', row
    assert 'keylib.IMPL' in result.stderr and 'fsync on' in result.stderr
    assert f'--etcd: {QUICK_RECORDS} records' in result.stderr


def test_etcd_and_rss_are_refused_together():
    result = benchy('--etcd', '--rss')
    assert result.returncode == 2
    assert '--etcd and --rss' in result.stderr and result.stdout == ''
