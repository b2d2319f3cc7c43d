"""Opening a fresh engine of each kind, for the engine tests.

``engine`` is the fixture the contract tests (and the wrapper tests that run
on every engine) take: import it into a test module to use it there.
"""

import pytest

from centidb.engines import LmdbEngine, MemoryEngine, PlyvelEngine, TraceEngine

ENGINE_KINDS = ['memory', 'plyvel', 'lmdb', 'trace']


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
    eng = make_engine(request.param, tmp_path)
    yield eng
    eng.close()


def fill(engine, pairs):
    with engine.begin(write=True) as txn:
        for key, value in pairs:
            txn.put(key, value)
