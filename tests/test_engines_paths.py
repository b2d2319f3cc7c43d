"""centidb.engines.paths: the store lock an engine on disk holds.

A :class:`~centidb.engines.paths.StoreLock` is a shared ``flock`` on the
store's ``centidb.lock``; making it exclusive (as ``centidb compact`` does)
fails while any other engine, in this process too, has the store open, and
while it is held no engine opens the store. ``compact`` under the lock, with
a second process, is tested in ``test_cli_commands.py``; wrong paths in
``test_engine_contract.py``.
"""

import pytest

import centidb
from centidb.engines import LmdbEngine, PlyvelEngine
from centidb.engines.paths import StoreLock, lock_path
from centidb.errors import DatabaseLockedError

KINDS = {'lmdb': 'LmdbEngine', 'leveldb': 'PlyvelEngine'}


def open_store(kind, path, create=False):
    if kind == 'lmdb':
        return centidb.open('LmdbEngine', path=str(path))
    return centidb.open('PlyvelEngine', name=str(path), create_if_missing=create)


def make_store(kind, path, n=200):
    with open_store(kind, path, create=True) as store:
        store.collection('log').put_many([{'n': -i} for i in range(n)])


def count(kind, path):
    with open_store(kind, path) as store:
        return len(store.collection('log'))


@pytest.fixture(params=sorted(KINDS))
def kind(request):
    pytest.importorskip('lmdb' if request.param == 'lmdb' else 'plyvel')
    return request.param


def test_another_engine_in_this_process_blocks_the_exclusive_lock(tmp_path, kind):
    path = tmp_path / 'db'
    make_store(kind, path)
    engine = LmdbEngine(str(path)) if kind == 'lmdb' else PlyvelEngine(str(path))
    first = StoreLock(lock_path(str(path)), str(path))
    with pytest.raises(DatabaseLockedError, match='another open engine in this process'):
        first.make_exclusive('compact')
    engine.close()
    second = StoreLock(lock_path(str(path)), str(path))
    with pytest.raises(DatabaseLockedError):    # the failed attempt kept its shared lock
        second.make_exclusive('compact')
    second.release()
    first.make_exclusive('compact')
    with pytest.raises(DatabaseLockedError, match='being rewritten'):
        LmdbEngine(str(path)) if kind == 'lmdb' else PlyvelEngine(str(path))
    first.release()
    first.release()     # twice is fine
    assert not first.held
    assert count(kind, path) == 200
