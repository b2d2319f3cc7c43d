"""keylib.split_first and keylib.decode_group: reading the first key of packed bytes.

Index entries pack the index tuple, a separator and the record key;
``split_first`` reads the first key and says where the rest starts, and
``decode_group`` (for ``group_counts()``) keeps the leading elements of the
first key and where their encoding ends. Both are pure Python in either
implementation.
"""

import pytest

from centidb import errors, keylib
from centidb.keylib import Desc

P = b'\x10'


@pytest.mark.parametrize('first,rest', [
    ((1, 'a'), [(2,)]),
    ((Desc('x'), -1.5), [('r',), (None,)]),
    ((), [(1,)]),
    ((b'\x01\x01',), [()]),
])
def test_split_first_returns_the_first_key_and_where_the_rest_starts(first, rest):
    data = keylib.packs([first] + rest, P)
    key, pos = keylib.split_first(data, P)
    assert key == first
    assert data[pos - 1] == 0x01 and data[:pos - 1] == keylib.packs(first, P)
    assert keylib.unpacks_list(data[pos:]) == rest


@pytest.mark.parametrize('key', [(1, 'a'), (Desc(3), Desc('b')), ()])
def test_split_first_of_a_single_key_returns_position_zero(key):
    assert keylib.split_first(keylib.packs(key, P), P) == (key, 0)
    assert keylib.split_first(keylib.packs(key)) == (key, 0)


def test_split_first_checks_the_prefix_and_the_first_key():
    with pytest.raises(errors.CorruptKeyError, match='does not start with the prefix'):
        keylib.split_first(keylib.packs([(1,), (2,)], b'\x11'), P)
    with pytest.raises(errors.CorruptKeyError):
        keylib.split_first(P + b'\x7f\x01\x1c\x01', P)          # unknown tag
    with pytest.raises(TypeError):
        keylib.split_first(keylib.packs(1), 'P')


@pytest.mark.parametrize('key,size,group', [
    ((1, 'a'), 1, (1,)), ((1, 'a'), 2, (1, 'a')), ((1, 'a'), 5, (1, 'a')), ((), 1, ())])
def test_decode_group_of_bytes_holding_one_key(key, size, group):
    data = keylib.packs(key, P)
    found, end = keylib.decode_group(data, P, size, 1)
    assert found == group
    assert data[:end] == keylib.packs(group, P)
    assert keylib.decode_group(data, P, size, 2) is None
