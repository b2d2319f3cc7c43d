"""Reference model of key order and identity, independent of the codec.

The tests check the codec against these functions: packed bytes must sort
exactly like :func:`compare_keys`, and decoding must give back a key that
:func:`same_key` accepts. Nothing here imports centidb's encoder.
"""

import datetime
import functools
import math
import uuid
from fractions import Fraction

from centidb.keyformat import Desc

_EPOCH = datetime.datetime(1970, 1, 1)
_ONE_US = datetime.timedelta(microseconds=1)

# Kinds in their documented cross-kind order.
NONE, NUMBER, BYTES, STR, DATE, DATETIME, UUID, DESC = range(8)


def kind(x):
    """Return the documented kind rank of one key element."""
    if x is None:
        return NONE
    if isinstance(x, (bool, int, float)):
        return NUMBER
    if isinstance(x, bytes):
        return BYTES
    if isinstance(x, str):
        return STR
    if isinstance(x, datetime.datetime):
        return DATETIME
    if isinstance(x, datetime.date):
        return DATE
    if isinstance(x, uuid.UUID):
        return UUID
    if isinstance(x, Desc):
        return DESC
    raise TypeError(type(x))


def _number_key(x):
    """(class, exact value, tie rank): -inf < finite < +inf < NaN."""
    if isinstance(x, float):
        if math.isnan(x):
            return (3, 0, 0)
        if math.isinf(x):
            return (2 if x > 0 else 0, 0, 0)
        if x == 0 and math.copysign(1.0, x) < 0:
            return (1, Fraction(0), 2)
        return (1, Fraction(x), 3)
    if isinstance(x, bool):
        return (1, Fraction(int(x)), 1)
    return (1, Fraction(x), 0)


def _datetime_key(x):
    offset = x.utcoffset()
    if offset is None:
        return ((x - _EPOCH) // _ONE_US, 0, 0)
    wall = (x.replace(tzinfo=None) - _EPOCH) // _ONE_US
    offset_us = offset // _ONE_US
    return (wall - offset_us, 1, offset_us)


def _cmp(a, b):
    return (a > b) - (a < b)


def compare_elements(a, b):
    """Return -1, 0 or 1: the documented order of two key elements."""
    ka, kb = kind(a), kind(b)
    if ka != kb:
        return _cmp(ka, kb)
    if ka == NONE:
        return 0
    if ka == NUMBER:
        return _cmp(_number_key(a), _number_key(b))
    if ka in (BYTES, STR, DATE):
        return _cmp(a, b)
    if ka == DATETIME:
        return _cmp(_datetime_key(a), _datetime_key(b))
    if ka == UUID:
        return _cmp(a.int, b.int)
    return compare_elements(b.value, a.value)


def compare_keys(a, b):
    """Return -1, 0 or 1: tuples compare element-wise, shorter first."""
    for x, y in zip(a, b):
        c = compare_elements(x, y)
        if c:
            return c
    return _cmp(len(a), len(b))


sort_key = functools.cmp_to_key(compare_keys)


def same_element(a, b):
    """True when two elements are the same value of the same type."""
    return compare_elements(a, b) == 0 and type(a) is type(b) and (
        not isinstance(a, Desc) or same_element(a.value, b.value))


def same_key(a, b):
    """True when two keys hold the same elements of the same types."""
    return len(a) == len(b) and all(same_element(x, y) for x, y in zip(a, b))


def has_prefix(key, prefix):
    """Reference for ``prefix=`` queries: are `key`'s first elements `prefix`'s?"""
    return (len(key) >= len(prefix)
            and all(same_element(x, y) for x, y in zip(key, prefix)))


def starts_with(key, prefix):
    """Reference for ``startswith=`` queries: does `key` start with `prefix`?

    All prefix elements must equal the key's elements exactly; a str or
    bytes last element (or a Desc of one) also matches longer strings.
    """
    if len(key) < len(prefix):
        return False
    if not prefix:
        return True
    if not all(same_element(x, y) for x, y in zip(key, prefix[:-1])):
        return False
    last, candidate = prefix[-1], key[len(prefix) - 1]
    inner_last = last.value if isinstance(last, Desc) else last
    if isinstance(inner_last, (str, bytes)) and type(last) is type(candidate):
        inner_candidate = candidate.value if isinstance(candidate, Desc) else candidate
        return (type(inner_candidate) is type(inner_last)
                and inner_candidate.startswith(inner_last))
    return same_element(last, candidate)
