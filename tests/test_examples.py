"""The examples the README points to run and print what they promise."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_demo_runs():
    result = subprocess.run([sys.executable, os.path.join(ROOT, 'examples', 'demo.py')],
                            capture_output=True, text=True, timeout=120, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=ROOT))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('records after an aborted insert: 4') == 3
    assert 'LmdbEngine reopened: 4 people, ann lives in Leeds' in result.stdout
