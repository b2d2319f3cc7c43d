"""examples/batch.py --quick prints a well-formed table with sensible ratios."""

import csv
import io
import os
import subprocess
import sys

import pytest

from centidb import encodings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ['packer', 'batch_size', 'records', 'bytes_stored', 'ratio', 'gets_per_s',
           'range_recs_per_s']
QUICK_SIZES = [1, 4, 32]        # examples/batch.py QUICK_SIZES


def expected_packers():
    optional = (encodings.LZ4_PACKER, encodings.ZSTD_PACKER, encodings.SNAPPY_PACKER)
    return ['plain', 'zlib'] + [packer.name for packer in optional if packer is not None]


@pytest.fixture(scope='module')
def quick_run():
    return subprocess.run([sys.executable, os.path.join(ROOT, 'examples', 'batch.py'), '--quick'],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))


@pytest.fixture(scope='module')
def rows(quick_run):
    assert quick_run.returncode == 0, quick_run.stderr
    lines = quick_run.stdout.splitlines()
    assert lines and lines[0] == ','.join(COLUMNS), quick_run.stdout
    return list(csv.DictReader(io.StringIO(quick_run.stdout)))


def test_stdout_is_only_csv(quick_run, rows):
    lines = quick_run.stdout.splitlines()
    assert len(lines) == len(rows) + 1
    for row in rows:
        assert None not in row and None not in row.values(), row   # no extra or missing cells
        assert int(row['batch_size']) >= 1
        assert int(row['records']) > 0
        assert int(row['bytes_stored']) > 0
        assert float(row['ratio']) > 0
        assert float(row['gets_per_s']) > 0
        assert float(row['range_recs_per_s']) > 0


def test_context_goes_to_stderr(quick_run):
    assert 'key codec:' in quick_run.stderr
    assert 'engine: LmdbEngine' in quick_run.stderr


def test_one_row_per_packer_and_size(rows):
    seen = [(row['packer'], int(row['batch_size'])) for row in rows]
    assert seen == [(packer, size) for packer in expected_packers() for size in QUICK_SIZES]
    assert len({row['records'] for row in rows}) == 1


def test_zlib_compresses_better_in_bigger_batches(rows):
    ratio = {int(row['batch_size']): float(row['ratio'])
             for row in rows if row['packer'] == 'zlib'}
    assert all(ratio[size] > 1 for size in QUICK_SIZES if size > 1), ratio
    assert ratio[max(QUICK_SIZES)] > ratio[1], ratio
