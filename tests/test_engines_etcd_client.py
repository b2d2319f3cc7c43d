"""EtcdClient (centidb.engines.etcd_client): the engine's connection to the cluster.

Its client libraries load when an engine is made, and a missing one names
the install extra; an endpoint that does not answer fails over to the next,
and a cluster none of whose endpoints answer raises
:class:`~centidb.errors.ClusterUnavailableError` in bounded time. The engine
on real clusters is tested in ``test_engines_etcd.py``.
"""

import time

import pytest

import centidb
from centidb.errors import ClusterUnavailableError, OptionalDependencyError

from etcd_cluster import open_engine, require_etcd
from test_engines_etcd import run_python, unused_ports


def test_a_missing_client_library_names_the_extra():
    result = run_python('''
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in ('grpc', 'pyetcd'):
                    raise ImportError(f'No module named {name!r} (blocked)')

        sys.meta_path.insert(0, Block())
        import centidb
        from centidb.errors import OptionalDependencyError
        try:
            centidb.open('EtcdEngine', endpoints=['127.0.0.1:9'])
        except OptionalDependencyError as exc:
            print(isinstance(exc, ImportError), exc)
    ''')
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('True ')
    assert 'pip install centidb[etcd]' in result.stdout
    assert issubclass(OptionalDependencyError, ImportError)


def test_no_endpoint_answering_raises_in_bounded_time():
    require_etcd()
    dead = [f'127.0.0.1:{port}' for port in unused_ports(2)]
    with centidb.engines.get_engine_class('EtcdEngine')(dead, timeout=1) as eng:
        started = time.monotonic()
        with pytest.raises(ClusterUnavailableError, match='answered within 1 s'):
            eng.get(b'k')
        with pytest.raises(ClusterUnavailableError, match='outcome is unknown'):
            eng.put(b'k', b'v')
        assert time.monotonic() - started < 30
    assert issubclass(ClusterUnavailableError, ConnectionError)


def test_a_dead_first_endpoint_fails_over(etcd_cluster):
    dead = f'127.0.0.1:{unused_ports(1)[0]}'
    with open_engine(etcd_cluster) as eng, \
            centidb.engines.get_engine_class('EtcdEngine')(
                [dead, *etcd_cluster.endpoints], prefix=eng.prefix) as failing:
        failing.put(b'k', b'v')
        assert eng.get(b'k') == b'v' and failing.get(b'k') == b'v'
