"""Crash safety under SIGKILL, on each disk engine: a bounded run of stress/kill_writers.py.

The script kills a writing child again and again and checks, with the child
dead, that no committed transaction is lost, none is visible in part, every
index matches its records and ``Store.verify()`` finds nothing. The suite
runs 10 kills per engine; ``stress/kill_writers.py --kills 1000`` is the
long run.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'stress', 'kill_writers.py')
KILLS = 10


@pytest.mark.parametrize('engine', ['LmdbEngine', 'PlyvelEngine'])
def test_killed_writers_lose_nothing(engine, tmp_path):
    result = subprocess.run(
        [sys.executable, SCRIPT, '--engine', engine, '--kills', str(KILLS),
         '--dir', str(tmp_path / 'store'), '--seed', '7'],
        capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dict(line.split(':', 1) for line in result.stdout.splitlines() if ':' in line)
    print(result.stdout)
    assert int(lines['kills'].split()[0]) == KILLS
