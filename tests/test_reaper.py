"""Servers a test starts die with the run that started them, even on SIGKILL.

``reaper.popen`` ties a child to its parent (Linux: PR_SET_PDEATHSIG; else a
watchdog process); here a parent process starts children through it, prints
their pids, and is SIGKILLed, so no teardown runs. Every child must be gone
within a bounded time. The etcd test cluster starts its members this way.
"""

import os
import shutil
import signal
import subprocess
import sys

import pytest

import reaper
from etcd_cluster import require_etcd

TESTS = os.path.dirname(os.path.abspath(__file__))


def start_and_kill(script, *args, timeout=60):
    """Run `script` with `args`; read its first line; SIGKILL it; the line's words."""
    parent = subprocess.Popen([sys.executable, os.path.join(TESTS, script), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=TESTS)
    try:
        line = parent.stdout.readline()
        assert line, parent.stderr.read()
        words = line.split()
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.communicate(timeout=timeout)
    return words


@pytest.mark.parametrize('mode', ['prctl', 'watchdog'])
def test_children_die_when_their_parent_is_killed(mode):
    if mode == 'prctl' and reaper._prctl is None:
        pytest.skip('no prctl here (not Linux)')
    extra = ['--watchdog'] if mode == 'watchdog' else []
    pids = [int(word) for word in start_and_kill('reaper.py', '--demo', '3', *extra)]
    assert len(pids) == 3
    still = reaper.wait_gone(pids, timeout=20)
    for pid in still:           # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert still == []


def test_a_released_child_is_not_killed_by_its_watchdog():
    child = reaper.popen([sys.executable, '-c', 'import time; time.sleep(60)'], watchdog=True)
    guard = reaper._watchdogs[child.pid]
    child.kill()
    child.wait(10)
    reaper.release(child)
    assert guard.returncode == 0 and child.pid not in reaper._watchdogs


def test_a_killed_run_leaves_no_etcd_members():
    require_etcd()
    *pids, directory = start_and_kill('etcd_cluster.py', '--serve')
    try:
        pids = [int(pid) for pid in pids]
        assert len(pids) == 3
        still = reaper.wait_gone(pids, timeout=20)
        for pid in still:
            os.kill(pid, signal.SIGKILL)
        assert still == []
    finally:
        shutil.rmtree(directory, ignore_errors=True)
