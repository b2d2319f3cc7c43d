"""Start servers for tests that die with the process that started them.

A fixture's server (etcd members now; PostgreSQL, a browser) must not
outlive the test run, even when the run is SIGKILLed (a timeout, a mutation
run), since then no fixture teardown runs. :func:`popen` starts a child that
the kernel kills with SIGKILL when its parent dies: on Linux through
``prctl(PR_SET_PDEATHSIG)`` in the child before it execs (note: it fires
when the *thread* that started the child ends, so start servers from a
thread that lives as long as they do, as fixtures do). Elsewhere, or with
``watchdog=True``, a small watchdog process holds a pipe from this process;
when the pipe closes without a word (this process died), it kills the
child's process group. :func:`release` tells it the child was stopped
normally.

Run as ``python tests/reaper.py --demo N`` it starts N sleeping children
through :func:`popen`, prints their pids and waits: the tests SIGKILL it and
check the children are gone.
"""

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import time

_PR_SET_PDEATHSIG = 1

_WATCHDOG = r'''
import os, signal, sys
pid = int(sys.argv[1])
word = sys.stdin.buffer.read()
if word != b'released':
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
'''

# Watchdog processes by the pid of the child they guard.
_watchdogs = {}


def _libc_prctl():
    """libc's ``prctl`` function, or None where there is none (not Linux)."""
    if not sys.platform.startswith('linux'):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


_prctl = _libc_prctl()


def _die_with(parent):
    """A ``preexec_fn``: SIGKILL this child when `parent` dies."""
    def preexec():
        if _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            os._exit(127)
        if os.getppid() != parent:      # the parent died before the prctl
            os._exit(127)
    return preexec


def popen(args, *, watchdog=False, **kwargs):
    """``subprocess.Popen(args, **kwargs)`` of a child that dies with this process.

    The child gets a session (and process group) of its own, so a Ctrl-C
    in the terminal reaches only the test run, which then stops it.

    :param args: the command, as for ``Popen``.
    :param watchdog: use the watchdog process even where prctl exists.
    :param kwargs: more ``Popen`` arguments (not ``preexec_fn`` or
        ``start_new_session``).
    :returns: the ``Popen``.
    """
    if _prctl is not None and not watchdog:
        return subprocess.Popen(args, start_new_session=True,
                                preexec_fn=_die_with(os.getpid()), **kwargs)
    proc = subprocess.Popen(args, start_new_session=True, **kwargs)
    try:
        _watchdogs[proc.pid] = subprocess.Popen(
            [sys.executable, '-c', _WATCHDOG, str(proc.pid)], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc


def release(proc):
    """Call after `proc` (from :func:`popen`) was stopped and waited for.

    Ends its watchdog, if it has one, without a kill.
    """
    guard = _watchdogs.pop(proc.pid, None)
    if guard is not None:
        try:
            guard.communicate(b'released', timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            guard.kill()
            guard.wait(10)


def is_running(pid):
    """True if process `pid` exists and is not a zombie (dead, not yet reaped)."""
    try:
        with open(f'/proc/{pid}/stat', 'rb') as f:
            state = f.read().rsplit(b')', 1)[1].split()[0]
        return state not in (b'Z', b'X')
    except FileNotFoundError:
        return False
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_gone(pids, timeout=10.0):
    """Wait until none of `pids` runs; return those still running at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        running = [pid for pid in pids if is_running(pid)]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


if __name__ == '__main__':
    if len(sys.argv) >= 3 and sys.argv[1] == '--demo':
        use_watchdog = '--watchdog' in sys.argv[3:]
        children = [popen([sys.executable, '-c', 'import time; time.sleep(120)'],
                          watchdog=use_watchdog) for _ in range(int(sys.argv[2]))]
        print(' '.join(str(child.pid) for child in children), flush=True)
        time.sleep(120)
        sys.exit(1)
    sys.exit('usage: python tests/reaper.py --demo N [--watchdog]')
