"""Parity of the two codec implementations: same bytes, same exceptions.

Runs in both passes of the test command; it needs the compiled twin to be
built (it is skipped, loudly, only when it was not built at all).
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from centidb import keyformat, keylib
import strategies

IMPLS = keylib.available_implementations()
PURE = IMPLS['python']
FAST = IMPLS.get('speedups')

pytestmark = pytest.mark.skipif(FAST is None, reason='centidb._speedups is not built')


def outcome(func, *args):
    """Return ('ok', result) or ('error', exception type) for a call."""
    try:
        return 'ok', repr(func(*args))
    except Exception as exc:  # the type is what is compared
        return 'error', type(exc)


def test_twin_format_constants_equal_pure_ones():
    from centidb import _speedups
    assert _speedups.FORMAT_CONSTANTS == keyformat.FORMAT_CONSTANTS


def test_both_export_the_same_functions():
    assert sorted(vars(PURE)) == sorted(vars(FAST))


@given(strategies.keys | st.lists(strategies.keys, min_size=1, max_size=3))
def test_same_bytes(key):
    assert PURE.packs(key) == FAST.packs(key)


@given(st.binary(max_size=40) | strategies.keys.map(keylib.PYTHON.packs))
def test_same_decoding_or_same_exception(data):
    assert outcome(PURE.unpacks_list, data) == outcome(FAST.unpacks_list, data)
    assert outcome(PURE.unpacks, data) == outcome(FAST.unpacks, data)


@given(strategies.keys, st.integers(0, 100), st.integers(0, 255))
def test_same_result_on_corrupted_bytes(key, where, value):
    data = bytearray(PURE.packs(key) or b'\x00')
    data[where % len(data)] = value
    data = bytes(data)
    assert outcome(PURE.unpacks_list, data) == outcome(FAST.unpacks_list, data)


@pytest.mark.parametrize('bad', [[1], object(), {1: 2}, 1j, bytearray(b'')])
def test_same_exception_for_bad_elements(bad):
    assert outcome(PURE.packs, (1, bad)) == outcome(FAST.packs, (1, bad))
    assert outcome(PURE.packs, []) == outcome(FAST.packs, [])
    assert outcome(PURE.packs, 1, 'str prefix') == outcome(FAST.packs, 1, 'str prefix')
    assert outcome(PURE.unpacks, 'text') == outcome(FAST.unpacks, 'text')
