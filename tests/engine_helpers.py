"""Opening a fresh engine of each kind, for the engine tests.

``engine`` is the fixture the contract tests (and the wrapper tests that run
on every engine) take: import it into a test module to use it there. Its
``'etcd'`` engines live on the session's etcd cluster, each under a fresh
prefix.
"""

import pytest

from centidb.engines import LmdbEngine, MemoryEngine, PlyvelEngine, TraceEngine

import etcd_cluster

ENGINE_KINDS = ['memory', 'plyvel', 'lmdb', 'trace', 'etcd']


def make_engine(kind, directory):
    """Open a fresh engine of ``kind`` storing its files in ``directory``."""
    if kind == 'memory':
        return MemoryEngine()
    if kind == 'plyvel':
        pytest.importorskip('plyvel')
        return PlyvelEngine(directory / 'leveldb', create_if_missing=True)
    if kind == 'lmdb':
        pytest.importorskip('lmdb')
        return LmdbEngine(directory / 'lmdb', sync=False)
    if kind == 'trace':
        return TraceEngine(MemoryEngine())
    raise AssertionError(kind)


@pytest.fixture(params=ENGINE_KINDS)
def engine(request, tmp_path):
    if request.param == 'etcd':     # on the session's cluster (conftest.py)
        eng = etcd_cluster.open_engine(request.getfixturevalue('etcd_cluster'))
    else:
        eng = make_engine(request.param, tmp_path)
    yield eng
    eng.close()


def fill(engine, pairs):
    with engine.begin(write=True) as txn:
        for key, value in pairs:
            txn.put(key, value)


#: The (pkg, n) pairs :func:`events` stores.
EVENTS = [('libc6', 1), ('libc6', 2), ('libc6-dev', 1), ('libc6-dev', 2),
          ('libc6-dev', 3), ('libc', 9), ('zlib', 1)]


def events(store):
    """A collection 'events' of EVENTS, keyed (pkg, n), with indexes 'pkg' and 'pkg_n'."""
    coll = store.collection('events', key_func=lambda r: (r['pkg'], r['n']))
    coll.add_index('pkg', lambda r: r['pkg'])
    coll.add_index('pkg_n', lambda r: (r['pkg'], r['n']))
    for pkg, n in EVENTS:
        coll.put({'pkg': pkg, 'n': n})
    return coll


def counting_engine(fast):
    """A MemoryEngine wrapper logging each get, seek and (if `fast`) unchecked get."""
    from centidb.engines import MemoryEngine, WrapperEngine, WrapperTransaction

    class Txn(WrapperTransaction):
        def __init__(self, engine, inner):
            super().__init__(engine, inner)
            if fast:
                self.fast.get = lambda key: engine.calls.append('fast_get') or inner.get(key)

        def get(self, key):
            self.engine.calls.append('get')
            return super().get(key)

        def get_many(self, keys):
            self.engine.calls.append('get_many')
            return super().get_many(keys)

        def first(self, lo=None, hi=None, reverse=False):
            self.engine.calls.append('first')
            return super().first(lo, hi, reverse)

    class Engine(WrapperEngine):
        transaction_class = Txn
        calls = []

    return Engine(MemoryEngine())
