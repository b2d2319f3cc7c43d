"""Order-preserving encoding of key tuples into bytes.

``packs(key)`` turns a tuple of elements into bytes so that comparing the
bytes compares the tuples; ``unpacks(data)`` gives the tuple back. Supported
elements: ``None``, ``bool``, ``int`` (any size), ``float``, ``bytes``,
``str``, ``uuid.UUID``, ``datetime.date``, ``datetime.datetime`` and
:class:`Desc` (reverse order). The order across and within kinds, and the
exact bytes, are specified in ``docs/format.rst``.

This module is the pure-Python reference implementation. The compiled twin
``centidb._speedups`` replaces :func:`packs`, :func:`unpacks` and
:func:`unpacks_list` when :mod:`centidb.impl` chooses it (it is built, and
``CENTIDB_NO_SPEEDUPS=1`` is not set; ``CENTIDB_REQUIRE_SPEEDUPS=1`` makes a
missing twin an ``ImportError``). :data:`IMPL` names the active
implementation (``'speedups'`` or ``'python'``).
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import types
import uuid
from typing import Any, Callable, Iterable

from centidb import impl
from centidb.errors import CorruptKeyError
from centidb.errors import KeyEncodingError
from centidb.errors import UnsupportedKeyTypeError
from centidb.keyformat import (
    DATE_BYTES, DESC_END, DT_AWARE, DT_INSTANT_BIAS, DT_NAIVE, DT_OFFSET_BIAS,
    INT_SMALL_MAX_BYTES, KEY_SEP, SUFFIX_BOOL, SUFFIX_FLOAT, SUFFIX_NEG_ZERO,
    TAG_BYTES, TAG_DATE, TAG_DATETIME, TAG_DESC, TAG_NAN, TAG_NEG_BIG, TAG_NEG_INF,
    TAG_NEG_ONE, TAG_NONE, TAG_POS_BIG, TAG_POS_INF, TAG_STR, TAG_UUID,
    TAG_ZERO, Desc, Key,
)

__all__ = ['packs', 'unpacks', 'unpacks_list', 'pack_entry', 'split_first', 'first_key_end', 'decode_group', 'prefix_range',
           'past_elements', 'startswith_range', 'upper_bound',
           'after_key', 'next_prefix', 'count_groups', 'Desc', 'Key', 'IMPL']

_INVERT = bytes(range(255, -1, -1))
# Matches at any position (maybe empty): its .match() is never None.
_CONTINUATION_RUN = re.compile(rb'[\x80-\xff]*')
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_MAX_ORDINAL = _dt.date.max.toordinal()
_US_PER_SECOND = 1_000_000
_US_PER_DAY = 86_400 * _US_PER_SECOND
_SUPPORTED = ('None, bool, int, float, bytes, str, uuid.UUID, '
              'datetime.date, datetime.datetime, centidb.keylib.Desc')
#: A double's fraction has at most 1074 bits, so at most 154 7-bit groups.
_MAX_FRACTION_GROUPS = 154


# --- encoding ----------------------------------------------------------------

def _pack7(raw: bytes, out: bytearray) -> None:
    """Append `raw` to `out` as 7-bit groups, each with its high bit set."""
    for start in range(0, len(raw), 7):
        chunk = raw[start:start + 7]
        ngroups = (8 * len(chunk) + 6) // 7
        bits = int.from_bytes(chunk, 'big') << (7 * ngroups - 8 * len(chunk))
        for shift in range(7 * (ngroups - 1), -1, -7):
            out.append(0x80 | ((bits >> shift) & 0x7F))


def _encode_int_part(n: int, out: bytearray) -> None:
    """Append the tag and magnitude bytes of the integer `n`."""
    if n >= 0:
        length = (n.bit_length() + 7) >> 3
        if length <= INT_SMALL_MAX_BYTES:
            out.append(TAG_ZERO + length)
        else:
            length_bytes = length.to_bytes((length.bit_length() + 7) >> 3, 'big')
            out.append(TAG_POS_BIG)
            out.append(len(length_bytes))
            out += length_bytes
        out += n.to_bytes(length, 'big')
    else:
        magnitude = -n - 1
        length = (magnitude.bit_length() + 7) >> 3
        if length <= INT_SMALL_MAX_BYTES:
            out.append(TAG_NEG_ONE - length)
        else:
            length_bytes = length.to_bytes((length.bit_length() + 7) >> 3, 'big')
            out.append(TAG_NEG_BIG)
            out.append(0xFF - len(length_bytes))
            out += length_bytes.translate(_INVERT)
        out += magnitude.to_bytes(length, 'big').translate(_INVERT)


def _encode_float(x: float, out: bytearray) -> None:
    if x != x:
        out.append(TAG_NAN)
    elif x == math.inf:
        out.append(TAG_POS_INF)
    elif x == -math.inf:
        out.append(TAG_NEG_INF)
    elif x == 0.0:
        out.append(TAG_ZERO)
        out.append(SUFFIX_NEG_ZERO if math.copysign(1.0, x) < 0 else SUFFIX_FLOAT)
    else:
        numerator, denominator = x.as_integer_ratio()
        int_part = numerator // denominator
        _encode_int_part(int_part, out)
        out.append(SUFFIX_FLOAT)
        # The fraction is remainder / 2**nbits with an odd remainder, so its
        # last 7-bit group is never zero: each float has one encoding.
        remainder = numerator - int_part * denominator
        if remainder:
            nbits = denominator.bit_length() - 1
            ngroups = (nbits + 6) // 7
            bits = remainder << (7 * ngroups - nbits)
            for shift in range(7 * (ngroups - 1), -1, -7):
                out.append(0x80 | ((bits >> shift) & 0x7F))


def _encode_datetime(x: _dt.datetime, out: bytearray) -> None:
    wall_us = (((x.toordinal() - _EPOCH_ORDINAL) * 86_400
                + x.hour * 3600 + x.minute * 60 + x.second) * _US_PER_SECOND
               + x.microsecond)
    offset = x.utcoffset()
    out.append(TAG_DATETIME)
    if offset is None:
        out += (wall_us + DT_INSTANT_BIAS).to_bytes(8, 'big')
        out.append(DT_NAIVE)
    else:
        offset_us = ((offset.days * 86_400 + offset.seconds) * _US_PER_SECOND
                     + offset.microseconds)
        if not -_US_PER_DAY < offset_us < _US_PER_DAY:
            raise KeyEncodingError(f'UTC offset {offset!r} of {x!r} is not within a day')
        out += (wall_us - offset_us + DT_INSTANT_BIAS).to_bytes(8, 'big')
        out.append(DT_AWARE)
        out += (offset_us + DT_OFFSET_BIAS).to_bytes(5, 'big')


def _encode_element(x: Any, out: bytearray) -> None:
    """Append the encoding of one key element to the bytearray `out`."""
    kind = type(x)
    if kind is str:
        out.append(TAG_STR)
        _pack7(x.encode('utf-8', 'surrogatepass'), out)
    elif kind is int:
        _encode_int_part(x, out)
    elif x is None:
        out.append(TAG_NONE)
    elif kind is bool:
        _encode_int_part(int(x), out)
        out.append(SUFFIX_BOOL)
    elif kind is float:
        _encode_float(x, out)
    elif kind is bytes:
        out.append(TAG_BYTES)
        _pack7(x, out)
    elif kind is Desc:
        inner = bytearray()
        if isinstance(x.value, Desc):
            raise UnsupportedKeyTypeError('Desc cannot wrap another Desc')
        _encode_element(x.value, inner)
        out.append(TAG_DESC)
        out += inner.translate(_INVERT)
        out.append(DESC_END)
    elif isinstance(x, _dt.datetime):
        _encode_datetime(x, out)
    elif isinstance(x, _dt.date):
        # date.toordinal itself: a subclass's override does not change the value.
        out.append(TAG_DATE)
        out += _dt.date.toordinal(x).to_bytes(DATE_BYTES, 'big')
    elif isinstance(x, uuid.UUID):
        raw = x.bytes
        if type(raw) is not bytes or len(raw) != 16:
            raise KeyEncodingError(f'{kind.__name__}.bytes must be 16 bytes, not {raw!r:.40}')
        out.append(TAG_UUID)
        out += raw
    # Subclasses (enums too) encode their base-type value; the base type's
    # own conversion ignores any __str__ or __int__ the subclass overrides.
    elif isinstance(x, int):
        _encode_element(int.__int__(x), out)
    elif isinstance(x, float):
        _encode_element(float.__float__(x), out)
    elif isinstance(x, str):
        _encode_element(str.__str__(x), out)
    elif isinstance(x, bytes):
        _encode_element(bytes(memoryview(x)), out)
    else:
        raise UnsupportedKeyTypeError(
            f'cannot encode key element of type {kind.__name__!r} '
            f'({x!r:.60}); supported types: {_SUPPORTED}')


def _check_prefix(prefix: object) -> None:
    if type(prefix) is not bytes:
        raise TypeError(f'prefix must be bytes, not {type(prefix).__name__!r}')


def packs(key: object, prefix: bytes = b'') -> bytes:
    """Encode `key` into bytes that sort like the key, after `prefix`.

    A list of keys (tuples or bare elements) is packed as several keys
    joined by a separator; decode it with :func:`unpacks_list`.

    :param key: a tuple (or tuple subclass, such as a namedtuple) of
        elements; a bare element is treated as a 1-tuple; or a non-empty
        ``list`` of keys.
    :param prefix: ``bytes`` put before the encoding, for example a
        collection's prefix.
    :returns: the encoding, as ``bytes``.
    :raises ~centidb.errors.UnsupportedKeyTypeError: (a ``TypeError``) naming
        the type of an element that cannot be encoded, or for a :class:`Desc`
        wrapping a ``Desc``.
    :raises ~centidb.errors.KeyEncodingError: (a ``ValueError``) for an
        element of a supported type with a value that cannot be encoded: a
        ``datetime`` whose UTC offset is not within a day, or a ``uuid.UUID``
        subclass whose ``bytes`` is not 16 bytes.
    :raises TypeError: if `prefix` is not ``bytes``.
    :raises ValueError: for an empty list of keys.
    """
    _check_prefix(prefix)
    out = bytearray(prefix)
    if isinstance(key, tuple):
        for element in key:
            _encode_element(element, out)
    elif type(key) is list:
        if not key:
            raise ValueError('packs() needs at least one key in a list of keys')
        for index, one_key in enumerate(key):
            if index:
                out.append(KEY_SEP)
            if isinstance(one_key, tuple):
                for element in one_key:
                    _encode_element(element, out)
            else:
                _encode_element(one_key, out)
    else:
        _encode_element(key, out)
    return bytes(out)


# --- decoding ----------------------------------------------------------------

def pack_entry(key: object, prefix: bytes, tail: bytes) -> bytes:
    """Return one key packed under `prefix`, followed by `tail`.

    :func:`packs` for one key tuple (or bare element), never a list of keys.

    :param key: the key tuple, or one element.
    :param prefix: ``bytes`` to start with.
    :param tail: ``bytes`` to end with.
    :raises ~centidb.errors.KeyEncodingError: as :func:`packs` (and its subclass).
    """
    return packs(key if isinstance(key, tuple) else (key,), prefix) + tail


def _corrupt(message: str, pos: int) -> CorruptKeyError:
    return CorruptKeyError(f'invalid key encoding: {message} at offset {pos}')


def _take(data: bytes, pos: int, size: int) -> bytes:
    chunk = data[pos:pos + size]
    if len(chunk) != size:
        raise _corrupt(f'truncated: {size} bytes needed, {len(chunk)} left', pos)
    return chunk


def _decode_int_part(tag: int, data: bytes, pos: int) -> tuple[int, int]:
    """Decode an integer part whose tag is at `pos - 1`; return (int, pos)."""
    if TAG_ZERO <= tag <= TAG_ZERO + INT_SMALL_MAX_BYTES:
        length = tag - TAG_ZERO
        negative = False
    elif TAG_NEG_ONE - INT_SMALL_MAX_BYTES <= tag < TAG_NEG_ONE + 1:
        length = TAG_NEG_ONE - tag
        negative = True
    else:
        negative = tag == TAG_NEG_BIG
        width = _take(data, pos, 1)[0]
        if negative:
            width = 0xFF - width
        length_bytes = _take(data, pos + 1, width)
        if negative:
            length_bytes = length_bytes.translate(_INVERT)
        if not width or length_bytes[0] == 0:
            raise _corrupt('non-canonical integer length', pos)
        length = int.from_bytes(length_bytes, 'big')
        if length <= INT_SMALL_MAX_BYTES:
            raise _corrupt('non-canonical long integer', pos)
        pos += 1 + width
    magnitude = _take(data, pos, length)
    if negative:
        magnitude = magnitude.translate(_INVERT)
    if length and magnitude[0] == 0:
        raise _corrupt('non-canonical integer (leading zero byte)', pos)
    value = int.from_bytes(magnitude, 'big')
    return (-value - 1 if negative else value), pos + length


def _decode_number_suffix(int_part: int, data: bytes, pos: int) -> tuple[int | float, int]:
    """Decode what follows an integer part: nothing, a bool, or a float."""
    if pos >= len(data) or data[pos] < 0x80:
        return int_part, pos
    suffix = data[pos]
    pos += 1
    if suffix == SUFFIX_BOOL:
        if int_part not in (0, 1):
            raise _corrupt('bool with value other than 0 or 1', pos - 1)
        return int_part == 1, pos
    if suffix == SUFFIX_NEG_ZERO:
        if int_part != 0:
            raise _corrupt('negative-zero marker after non-zero integer', pos - 1)
        return -0.0, pos
    if suffix != SUFFIX_FLOAT:
        raise _corrupt(f'unknown number suffix 0x{suffix:02x}', pos - 1)
    end = _CONTINUATION_RUN.match(data, pos).end()  # type: ignore[union-attr]
    ngroups = end - pos
    if ngroups > _MAX_FRACTION_GROUPS:
        raise _corrupt('float fraction longer than any double has', pos)
    if ngroups and data[end - 1] == 0x80:
        raise _corrupt('non-canonical float fraction', end - 1)
    fraction = 0
    for group in data[pos:end]:
        fraction = (fraction << 7) | (group & 0x7F)
    numerator = (int_part << (7 * ngroups)) + fraction
    denominator = 1 << (7 * ngroups)
    try:
        value = numerator / denominator
    except OverflowError:
        raise _corrupt('number too large for a float', pos) from None
    exact_num, exact_den = value.as_integer_ratio() if math.isfinite(value) else (0, 0)
    if exact_num * denominator != numerator * exact_den or exact_den == 0:
        raise _corrupt('fraction is not exactly representable as a float', pos)
    return value, end


def _unpack7(data: bytes, pos: int, end: int) -> bytes:
    """Decode the 7-bit groups in data[pos:end] back into bytes."""
    out = bytearray()
    for start in range(pos, end, 8):
        block = data[start:min(start + 8, end)]
        nbytes = (7 * len(block)) >> 3
        padding = 7 * len(block) - 8 * nbytes
        if nbytes == 0:
            raise _corrupt('string has a dangling 7-bit group', start)
        bits = 0
        for group in block:
            bits = (bits << 7) | (group & 0x7F)
        if bits & ((1 << padding) - 1):
            raise _corrupt('string padding bits are not zero', start)
        out += (bits >> padding).to_bytes(nbytes, 'big')
    return bytes(out)


def _decode_datetime(data: bytes, pos: int) -> tuple[_dt.datetime, int]:
    instant = int.from_bytes(_take(data, pos, 8), 'big') - DT_INSTANT_BIAS
    kind = _take(data, pos + 8, 1)[0]
    pos += 9
    if kind == DT_NAIVE:
        offset_us = 0
        tzinfo = None
    elif kind == DT_AWARE:
        offset_us = int.from_bytes(_take(data, pos, 5), 'big') - DT_OFFSET_BIAS
        if not -_US_PER_DAY < offset_us < _US_PER_DAY:
            raise _corrupt('UTC offset out of range', pos)
        pos += 5
        tzinfo = _dt.timezone(_dt.timedelta(microseconds=offset_us))
    else:
        raise _corrupt(f'unknown datetime zone kind 0x{kind:02x}', pos - 1)
    days, day_us = divmod(instant + offset_us, _US_PER_DAY)
    ordinal = days + _EPOCH_ORDINAL
    if not 1 <= ordinal <= _MAX_ORDINAL:
        raise _corrupt('datetime out of range', pos)
    date = _dt.date.fromordinal(ordinal)
    seconds, microsecond = divmod(day_us, _US_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return _dt.datetime(date.year, date.month, date.day, hour, minute, second,
                        microsecond, tzinfo), pos


def _decode_date(data: bytes, pos: int) -> tuple[_dt.date, int]:
    ordinal = int.from_bytes(_take(data, pos, DATE_BYTES), 'big')
    if not 1 <= ordinal <= _MAX_ORDINAL:
        raise _corrupt('date out of range', pos)
    return _dt.date.fromordinal(ordinal), pos + DATE_BYTES


def _decode_element(data: bytes, pos: int) -> tuple[Any, int]:
    """Decode the element whose tag is at `pos`; return (value, next pos)."""
    tag = data[pos]
    pos += 1
    if tag == TAG_STR or tag == TAG_BYTES:
        end = _CONTINUATION_RUN.match(data, pos).end()  # type: ignore[union-attr]
        raw = _unpack7(data, pos, end)
        if tag == TAG_BYTES:
            return raw, end
        try:
            return raw.decode('utf-8', 'surrogatepass'), end
        except UnicodeDecodeError:
            raise _corrupt('string is not valid UTF-8', pos) from None
    if TAG_NEG_BIG <= tag <= TAG_POS_BIG:
        int_part, pos = _decode_int_part(tag, data, pos)
        return _decode_number_suffix(int_part, data, pos)
    if tag == TAG_NONE:
        return None, pos
    if tag == TAG_POS_INF:
        return math.inf, pos
    if tag == TAG_NEG_INF:
        return -math.inf, pos
    if tag == TAG_NAN:
        return math.nan, pos
    if tag == TAG_DATETIME:
        return _decode_datetime(data, pos)
    if tag == TAG_DATE:
        return _decode_date(data, pos)
    if tag == TAG_UUID:
        return uuid.UUID(bytes=_take(data, pos, 16)), pos + 16
    raise _corrupt(f'unknown tag 0x{tag:02x}', pos - 1)


def _decode_desc(data: bytes, inverted: bytes, pos: int) -> tuple[Desc, int]:
    """Decode the Desc element whose tag is at `pos`, given data inverted."""
    pos += 1
    if pos >= len(data):
        raise _corrupt('truncated Desc element', pos)
    if inverted[pos] == TAG_DESC:
        raise _corrupt('nested Desc element', pos)
    value, end = _decode_element(inverted, pos)
    if end >= len(data) or data[end] != DESC_END:
        raise _corrupt('Desc element is not terminated', end)
    return Desc(value), end + 1


def _as_bytes(data: object) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f'data must be bytes, not {type(data).__name__!r}')


def _decode_keys(data: object, prefix: bytes) -> list[Key]:
    data = _as_bytes(data)
    _check_prefix(prefix)
    if not data.startswith(prefix):
        raise CorruptKeyError(f'data does not start with the prefix {prefix!r}')
    keys: list[Key] = []
    elements: list[Any] = []
    pos = len(prefix)
    end = len(data)
    inverted = None  # made once, on the first Desc element
    while pos < end:
        tag = data[pos]
        if tag == KEY_SEP:
            keys.append(tuple(elements))
            elements = []
            pos += 1
        elif tag == TAG_DESC:
            if inverted is None:
                inverted = data.translate(_INVERT)
            value, pos = _decode_desc(data, inverted, pos)
            elements.append(value)
        else:
            value, pos = _decode_element(data, pos)
            elements.append(value)
    keys.append(tuple(elements))
    return keys


def split_first(data: bytes, prefix: bytes = b'') -> tuple[Key, int]:
    """Decode the first key of bytes made by :func:`packs` from a list of keys.

    An index entry's record key need not be decoded to be read: it is the
    bytes past the separator.

    :param data: the encoding (``bytes``).
    :param prefix: ``bytes`` that `data` must start with; they are skipped.
    :returns: ``(key tuple, position)``: the position is just past the
        separator that ends the first key, or ``0`` if there is none.
    :raises ~centidb.errors.CorruptKeyError: when `data` does not start with
        `prefix`, or its first key is truncated or corrupt.
    """
    _check_prefix(prefix)
    if not data.startswith(prefix):
        raise CorruptKeyError(f'data does not start with the prefix {prefix!r}')
    elements: list[Any] = []
    pos = len(prefix)
    end = len(data)
    while pos < end:
        tag = data[pos]
        if tag == KEY_SEP:
            return tuple(elements), pos + 1
        if tag == TAG_DESC:
            value, pos = _decode_desc(data, data.translate(_INVERT), pos)
        else:
            value, pos = _decode_element(data, pos)
        elements.append(value)
    return tuple(elements), 0


def first_key_end(data: bytes, prefix: bytes = b'') -> int:
    """:func:`split_first`'s position only (compiled, the key is checked, not decoded).

    :param data: the encoding (``bytes``).
    :param prefix: ``bytes`` that `data` must start with.
    :raises ~centidb.errors.CorruptKeyError: as :func:`split_first`.
    """
    return split_first(data, prefix)[1]


def decode_group(data: bytes, prefix: bytes, size: int,
                 parts: int) -> tuple[Key, int] | None:
    """Decode the group of an engine key, for ``group_counts()``.

    Every element is decoded (so checked), but only the first `size`
    elements of the first key are kept. (Pure Python in both
    implementations; the compiled ``count_groups`` has its own.)

    :param data: the engine key (``bytes``), `prefix` then packed keys.
    :param prefix: ``bytes`` that `data` must start with.
    :param size: how many leading elements make the group.
    :param parts: how many keys `data` must pack.
    :returns: ``(group tuple, end)``, where ``data[:end]`` is
        ``packs(group, prefix)`` (decoding accepts only the canonical
        encoding); ``None`` if `data` does not start with `prefix`, is
        corrupt or packs another number of keys.
    """
    try:
        first, past = split_first(data, prefix)
        rest = _decode_keys(data[past:], b'') if past else []
    except CorruptKeyError:
        return None
    if 1 + len(rest) != parts:
        return None
    group = first[:size]
    if len(group) < len(first):
        return group, len(packs(group, prefix))
    return group, (past - 1 if past else len(data))


def unpacks(data: bytes | bytearray | memoryview, prefix: bytes = b'') -> Key:
    """Decode bytes made by :func:`packs` back into a key tuple.

    :param data: the encoding (``bytes``, ``bytearray`` or ``memoryview``).
    :param prefix: ``bytes`` that `data` must start with; they are skipped.
    :returns: the key, a ``tuple``.
    :raises ~centidb.errors.CorruptKeyError: (a ``ValueError``) when `data`
        does not start with `prefix`, is truncated or corrupt, or holds more
        than one key (use :func:`unpacks_list` for those).
    :raises TypeError: if `data` or `prefix` has the wrong type.
    """
    keys = _decode_keys(data, prefix)
    if len(keys) != 1:
        raise CorruptKeyError(
            f'data holds {len(keys)} keys; use unpacks_list() to decode it')
    return keys[0]


def unpacks_list(data: bytes | bytearray | memoryview, prefix: bytes = b'') -> list[Key]:
    """Decode bytes made by :func:`packs` from a list of keys; return a list.

    :param data: the encoding (``bytes``, ``bytearray`` or ``memoryview``).
    :param prefix: ``bytes`` that `data` must start with; they are skipped.
    :returns: a ``list`` of key tuples; bytes holding a single key give a
        one-item list.
    :raises ~centidb.errors.CorruptKeyError: (a ``ValueError``) when `data`
        does not start with `prefix`, or is truncated or corrupt.
    :raises TypeError: if `data` or `prefix` has the wrong type.
    """
    return _decode_keys(data, prefix)


# --- ranges --------------------------------------------------------------------

def next_prefix(data: bytes) -> bytes | None:
    """Return the smallest bytes greater than every string starting with `data`.

    :param data: ``bytes``.
    :returns: ``bytes``, or ``None`` when there is none (`data` is empty or
        all 0xFF), which callers treat as "no upper bound".
    """
    stripped = data.rstrip(b'\xff')
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def prefix_range(key: object, prefix: bytes = b'') -> tuple[bytes, bytes | None]:
    """Return ``(lo, hi)`` bounding every key whose first elements equal `key`'s.

    Elements match whole and by their encoding, so ``1`` does not match
    ``1.0`` or ``True``, and ``prefix_range('ab')`` covers ``('ab',)`` and
    ``('ab', 1)`` but not ``('abc',)``: for that, see
    :func:`startswith_range`. Index entries for a matching index tuple are
    inside the range too. Because every element is self-delimiting, the
    range is ``packs(key)`` up to (excluding) ``packs(key) + b'\\x80'``.

    :param key: a key tuple, or a bare element as a 1-tuple; ``()``
        matches every key.
    :param prefix: ``bytes`` (for example a collection's prefix) put before
        both bounds.
    :returns: ``(lo, hi)``: `lo` inclusive, `hi` exclusive or ``None`` for
        unbounded.
    :raises ~centidb.errors.UnsupportedKeyTypeError: as :func:`packs`.
    :raises ~centidb.errors.KeyEncodingError: as :func:`packs`.
    :raises TypeError: if `prefix` is not ``bytes``.
    """
    if not isinstance(key, tuple):
        key = (key,)
    if not key:
        _check_prefix(prefix)
        return prefix, next_prefix(prefix)
    lo = packs(key, prefix)
    return lo, past_elements(lo)


def past_elements(data: bytes) -> bytes:
    """Return the exclusive bound of every key whose first elements are packed in `data`.

    :param data: packed elements (``packs(key, prefix)``), as ``bytes``.
    :returns: ``bytes`` above `data` followed by anything that may follow
        a complete element (a tag, ``KEY_SEP``, or the end: all below 0x80),
        and below a longer payload of its last element (0x80 or above).
    """
    return data + _ELEMENT_END


_ELEMENT_END = b'\x80'


def startswith_range(key: object, prefix: bytes = b'') -> tuple[bytes, bytes | None]:
    """Return ``(lo, hi)`` bounding every key that starts with `key`, string-wise.

    The elements of `key` but the last match whole, as for
    :func:`prefix_range`. The last one is a ``str`` or ``bytes`` (or a
    :class:`Desc` of one) and matches every string of the same type that
    starts with it: ``startswith_range('ab')`` covers ``('ab',)``,
    ``('ab', 1)`` and ``('abc', 2)`` but not ``('ac',)``.

    :param key: a non-empty key tuple, or a bare string as a 1-tuple.
    :param prefix: ``bytes`` put before both bounds.
    :returns: ``(lo, hi)``: `lo` inclusive, `hi` exclusive or ``None`` for
        unbounded.
    :raises ValueError: if `key` is empty.
    :raises TypeError: if the last element is not a ``str`` or ``bytes``
        (or a ``Desc`` of one), or `prefix` is not ``bytes``.
    :raises ~centidb.errors.UnsupportedKeyTypeError: as :func:`packs`.
    """
    if not isinstance(key, tuple):
        key = (key,)
    if not key:
        raise ValueError('startswith needs at least one element')
    last = key[-1]
    is_desc = isinstance(last, Desc)
    value = last.value if is_desc else last
    if not isinstance(value, (str, bytes)):
        raise TypeError(f'startswith: the last element must be a str or bytes, '
                        f'not {type(value).__name__!r}')
    head = packs(key[:-1], prefix)
    # Strings with the prefix share its complete 7-bit groups; in its last,
    # partial group only the high bits are fixed and the padding bits vary.
    element = packs((value,))
    raw = value.encode('utf-8', 'surrogatepass') if isinstance(value, str) else value
    padding = -8 * len(raw) % 7
    widest = element[:-1] + bytes([element[-1] | ((1 << padding) - 1)]) if raw else element
    if is_desc:
        tag = bytes([TAG_DESC])
        return (head + tag + widest.translate(_INVERT),
                next_prefix(head + tag + element.translate(_INVERT)))
    return head + element, next_prefix(head + widest)


def upper_bound(key: object, prefix: bytes = b'', include: bool = False) -> bytes:
    """Return the exclusive upper bound for keys below (or up to) `key`.

    :param key: a key tuple, or a bare element as a 1-tuple.
    :param prefix: ``bytes`` put before the bound.
    :param include: false: the bound admits every key that sorts before
        `key`. True: it also admits `key` itself and every packed list of
        keys whose first key is `key` (an index entry for index tuple
        `key`), but no longer key such as ``key + (x,)``.
    :returns: the bound, as ``bytes``.
    :raises ~centidb.errors.UnsupportedKeyTypeError: as :func:`packs`.
    :raises ~centidb.errors.KeyEncodingError: as :func:`packs`.
    :raises TypeError: if `prefix` is not ``bytes``.
    """
    data = packs(key, prefix)
    return after_key(data) if include else data


def after_key(data: bytes) -> bytes:
    """Return the exclusive bound just past the packed key `data`.

    :param data: a packed key, as ``bytes``.
    :returns: ``bytes`` that admit `data` and every packed list of keys
        starting with it (index entries for that index tuple), but no longer
        key that extends it.
    """
    return data + _AFTER_KEY_SEP


_AFTER_KEY_SEP = bytes([KEY_SEP + 1])


# --- counting groups -------------------------------------------------------------

def count_groups(chunks: Iterable[list[bytes]], prefix: bytes, size: int, reverse: bool,
                 max: int | None, parts: int,
                 group_of: Callable[[bytes, int], Key]) -> list[tuple[Key, int]]:
    """Count the engine keys of `chunks` per group: the loop of ``group_counts()``.

    A group is the first `size` elements of the first key packed in an
    engine key (a shorter key is a group of its own). Only the first engine
    key of each group is decoded (keeping the group's elements alone), and
    the group's bound is cut from its own bytes; the next keys are compared
    with the bound as bytes. Compiled twin in ``_keylib.pxi``.

    :param chunks: lists of engine keys, in key order (descending if
        `reverse`), as ``key_chunks`` yields them.
    :param prefix: the prefix every engine key starts with.
    :param size: how many leading elements make a group (``>= 1``).
    :param reverse: the keys descend.
    :param max: stop after this many groups (``None``: no limit).
    :param parts: how many keys each engine key packs: 1 (a record key)
        or 2 (an index entry: index tuple, then record key).
    :param group_of: called as ``group_of(engine key, size)`` for an engine
        key that does not decode into `parts` keys; it raises the caller's
        error (what it returns is used as the group otherwise).
    :returns: a ``list`` of ``(group tuple, count)``.
    """
    groups: list[tuple[Key, int]] = []
    if max == 0:
        return groups
    group: Key | None = None
    bound = b''         # where the keys of `group` end; set with it
    n = 0
    for chunk in chunks:
        for key_bytes in chunk:
            if type(key_bytes) is not bytes:
                raise TypeError(f'an engine key must be bytes, not {type(key_bytes).__name__!r}')
            if group is not None and (key_bytes >= bound if reverse else key_bytes < bound):
                n += 1
                continue
            if group is not None:
                groups.append((group, n))
                if len(groups) == max:
                    return groups
            found = decode_group(key_bytes, prefix, size, parts)
            if found is None:
                group = group_of(key_bytes, size)
                head = packs(group, prefix)
            else:
                group, end = found
                head = key_bytes[:end]
            if reverse:
                bound = head
            elif len(group) < size:     # a short key: only itself (and its entries)
                bound = after_key(head)
            else:
                bound = past_elements(head)
            n = 1
    if group is not None:
        groups.append((group, n))
    return groups


# --- the active implementation --------------------------------------------------

#: The pure-Python functions, whichever implementation is active.
PYTHON = types.SimpleNamespace(packs=packs, unpacks=unpacks, unpacks_list=unpacks_list,
                               count_groups=count_groups)


def available_implementations() -> dict[str, types.SimpleNamespace]:
    """Return ``{'python': ..., 'speedups': ...}`` for the implementations built.

    Used by parity tests and benchmarks.

    :returns: a ``dict`` from implementation name to a namespace with
        ``packs``, ``unpacks``, ``unpacks_list`` and ``count_groups``. ``'speedups'`` is
        included when the compiled twin is importable, even if
        ``CENTIDB_NO_SPEEDUPS`` keeps it inactive.
    """
    impls = {'python': PYTHON}
    compiled = impl.compiled_module()
    if compiled is not None:
        impls['speedups'] = types.SimpleNamespace(
            packs=compiled.packs, unpacks=compiled.unpacks,
            unpacks_list=compiled.unpacks_list, count_groups=compiled.count_groups)
    return impls


#: The active implementation, ``'speedups'`` or ``'python'`` (chosen by
#: :mod:`centidb.impl`).
IMPL = impl.IMPL
#: The active compiled module, or None (the older name of
#: :data:`centidb.impl.COMPILED`).
SPEEDUPS = impl.COMPILED
packs = impl.choose(packs)
unpacks = impl.choose(unpacks)
unpacks_list = impl.choose(unpacks_list)
count_groups = impl.choose(count_groups)
