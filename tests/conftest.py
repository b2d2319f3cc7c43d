"""Test configuration: the codec implementation under test, hypothesis, and
the store fixtures the document-layer tests share (helpers in ``stores.py``).
"""

import os

import pytest
from hypothesis import HealthCheck, settings

from centidb import keylib

from stores import DISK_ENGINE_NAMES, ENGINE_NAMES, by_id, open_store, tag_of

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


# --- store fixtures ----------------------------------------------------------

@pytest.fixture(params=ENGINE_NAMES)
def store(request, tmp_path):
    """A fresh store on each engine, closed afterwards."""
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


@pytest.fixture(params=DISK_ENGINE_NAMES)
def reopen(request, tmp_path):
    """A function opening the same on-disk store again (close the last first)."""
    return lambda: open_store(request.param, tmp_path)
