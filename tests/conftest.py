"""Test configuration: the codec implementation under test and hypothesis."""

import os

import pytest
from hypothesis import HealthCheck, settings

from centidb import keylib

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
