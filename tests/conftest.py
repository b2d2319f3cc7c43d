"""Test configuration: the codec implementation under test, hypothesis, and
the store fixtures the document-layer tests share (helpers in ``stores.py``).
"""

import os

import pytest
from hypothesis import HealthCheck, settings

import centidb
from centidb import keylib

from stores import DISK_ENGINE_NAMES, ENGINE_NAMES, by_id, open_store, tag_of

import etcd_cluster as etcd_cluster_module

#: The session cluster's --max-txn-ops (etcd's default is 128).
ETCD_TXN_OPS = 4096

settings.register_profile(
    'ci', derandomize=True, deadline=None, max_examples=200,
    suppress_health_check=[HealthCheck.too_slow])
settings.register_profile('dev', deadline=None, max_examples=1000)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'ci'))


def _flag(name):
    return os.environ.get(name, '').strip() not in ('', '0')


def pytest_report_header(config):
    return f'centidb key codec implementation: {keylib.IMPL}'


def pytest_sessionstart(session):
    """Refuse to run a 'speedups' pass that silently fell back to Python."""
    if _flag('CENTIDB_REQUIRE_SPEEDUPS') and keylib.IMPL != 'speedups':
        pytest.exit('CENTIDB_REQUIRE_SPEEDUPS=1 but keylib.IMPL is '
                    f'{keylib.IMPL!r}', returncode=3)
    if _flag('CENTIDB_NO_SPEEDUPS') and keylib.IMPL != 'python':
        pytest.exit('CENTIDB_NO_SPEEDUPS=1 but keylib.IMPL is '
                    f'{keylib.IMPL!r}', returncode=3)


#: Store tests whose EtcdEngine variant is skipped, and why.
ETCD_SKIPS = {
    'test_txn.py::test_read_transaction_is_a_snapshot':
        'EtcdEngine takes the snapshot at the first read, not at begin()',
}
#: Modules whose EtcdEngine store variants are not collected, to keep the
#: suite fast: the model layer adds no engine calls of its own.
ETCD_LEAVE_OUT = {'test_models_model.py', 'test_models_fields.py'}


def pytest_collection_modifyitems(config, items):
    """Skip or leave out the EtcdEngine variants named above."""
    kept, left_out = [], []
    for item in items:
        callspec = getattr(item, 'callspec', None)
        if callspec is None or callspec.params.get('store') != 'EtcdEngine':
            kept.append(item)
            continue
        module = os.path.basename(str(item.fspath))
        reason = ETCD_SKIPS.get(f'{module}::{item.originalname}')
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
        if module in ETCD_LEAVE_OUT:
            left_out.append(item)
        else:
            kept.append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


# --- store fixtures ----------------------------------------------------------

@pytest.fixture(params=[*ENGINE_NAMES, 'EtcdEngine'])
def store(request, tmp_path):
    """A fresh store on each engine, closed afterwards.

    The EtcdEngine stores live on the session's cluster, each under a
    fresh prefix.
    """
    if request.param == 'EtcdEngine':
        cluster = request.getfixturevalue('etcd_cluster')
        store = centidb.Store(etcd_cluster_module.open_engine(cluster))
    else:
        store = open_store(request.param, tmp_path)
    yield store
    store.close()


@pytest.fixture
def docs(store):
    """A collection keyed by ``id`` with an index on ``tag``, holding one record."""
    coll = store.collection('docs', key_func=by_id)
    coll.add_index('tag', tag_of)
    coll.put({'id': 1, 'tag': 'a'})
    return coll


@pytest.fixture(scope='session')
def etcd_cluster():
    """A 3-member etcd cluster on 127.0.0.1 for the session (``etcd_cluster.py``).

    Skipped when etcd is not installed, except in CI, where that fails.
    Its ``--max-txn-ops`` is raised, as the suites write hundreds of keys
    per transaction; tests of the default limits open their own engines.
    """
    etcd_cluster_module.require_etcd()
    cluster = etcd_cluster_module.EtcdCluster(3, max_txn_ops=ETCD_TXN_OPS).start()
    yield cluster
    cluster.stop()


@pytest.fixture(params=DISK_ENGINE_NAMES)
def reopen(request, tmp_path):
    """A function opening the same on-disk store again (close the last first)."""
    return lambda: open_store(request.param, tmp_path)
