"""On-disk constants of the key encoding, and the :class:`Desc` wrapper.

Both codec implementations (:mod:`centidb.keylib` and the compiled
``centidb._speedups``) import this module, so the shared types are defined
once. The byte values below are **on-disk format**: changing one makes
existing databases unreadable. ``tests/test_keylib_parity.py`` checks that
the compiled twin's copies equal these.

Layout rules (the full table with exact bytes is in ``docs/format.rst``):

* every element starts with a tag byte below 0x80; the tag order is the
  order across kinds;
* variable-length payloads (strings, float fractions) are made only of bytes
  0x80..0xFF, so the first byte below 0x80 ends them;
* a packed list of keys joins the keys with ``KEY_SEP``, which sorts below
  every tag, so a key sorts before every longer key that extends it.
"""

from __future__ import annotations

from typing import Any, Tuple

#: The type of a key: a tuple of elements (``Tuple[Any, ...]``), as
#: :func:`~centidb.keylib.unpacks` returns it. Exported as
#: ``centidb.keylib.Key`` too.
Key = Tuple[Any, ...]

#: Separates keys in a packed list of keys (for example index tuple + record key).
KEY_SEP = 0x01

#: ``None``.
TAG_NONE = 0x05

# Numbers (bool, int and float are one kind and interleave by value).
#: Negative infinity, below every other number.
TAG_NEG_INF = 0x10
#: Negative integer part needing more than ``INT_SMALL_MAX_BYTES`` bytes.
TAG_NEG_BIG = 0x11
#: Integer part -1 (magnitude bytes: 0). Negative integer parts with L
#: magnitude bytes use tag ``TAG_NEG_ONE - L``.
TAG_NEG_ONE = 0x1A
#: Integer part 0. Non-negative integer parts with L bytes use ``TAG_ZERO + L``.
TAG_ZERO = 0x1B
#: Non-negative integer part needing more than ``INT_SMALL_MAX_BYTES`` bytes.
TAG_POS_BIG = 0x24
#: Positive infinity, above every finite number.
TAG_POS_INF = 0x25
#: NaN (one encoding for every NaN), above every other number.
TAG_NAN = 0x26

#: ``bytes``: the tag, then the bytes as 7-bit groups.
TAG_BYTES = 0x30
#: ``str``: the tag, then its UTF-8 (surrogates allowed) as 7-bit groups.
TAG_STR = 0x31
#: ``datetime.date``: the tag, then ``date.toordinal()`` in ``DATE_BYTES`` bytes.
TAG_DATE = 0x37
#: ``datetime.datetime``: 8-byte instant, zone kind, 5-byte offset if aware.
TAG_DATETIME = 0x38
#: ``uuid.UUID``: the tag, then its 16 bytes.
TAG_UUID = 0x39
#: Wraps one inverted element: ``TAG_DESC``, inverted bytes, ``DESC_END``.
TAG_DESC = 0x40
#: Ends a :class:`Desc` element.
DESC_END = 0xFF

#: Integer parts of up to this many bytes have their length in the tag.
INT_SMALL_MAX_BYTES = 8

# Suffixes that may follow a number's integer part (all >= 0x80).
#: After integer part 0 or 1: the number is a ``bool``.
SUFFIX_BOOL = 0x80
#: After integer part 0: the number is the float ``-0.0``.
SUFFIX_NEG_ZERO = 0x81
#: The number is a ``float``; its fraction follows as 7-bit groups.
SUFFIX_FLOAT = 0x82

#: Bytes of a date's ordinal (1 is 0001-01-01), big-endian.
DATE_BYTES = 3

# Datetime zone kinds.
#: A naive datetime (no ``tzinfo``); no offset follows.
DT_NAIVE = 0x00
#: An aware datetime; its UTC offset follows.
DT_AWARE = 0x01
#: Bias added to microseconds since 1970-01-01T00:00Z (stored in 8 bytes).
DT_INSTANT_BIAS = 1 << 63
#: Bias added to the UTC offset in microseconds (stored in 5 bytes).
DT_OFFSET_BIAS = 1 << 39

#: Every constant above, by name: the parity test compares the twin's copy.
FORMAT_CONSTANTS = {name: value for name, value in list(globals().items())
                    if name.isupper() and isinstance(value, int)}


class Desc:
    """Wraps one key element so that it sorts in descending order.

    ``packs(('a', Desc(3)))`` sorts after ``packs(('a', Desc(4)))``. Any
    supported element type may be wrapped (not another ``Desc``); unpacking
    gives back a ``Desc`` holding the decoded value. Desc elements form
    their own kind, sorting after every plain kind; among themselves they
    sort in exactly the reverse of the plain order of their values.

    :param value: the element to wrap, available as ``value``.
    :raises TypeError: if `value` is itself a ``Desc``.
    """

    __slots__ = ('value',)

    def __init__(self, value: Any) -> None:
        if isinstance(value, Desc):
            raise TypeError('Desc cannot wrap another Desc')
        self.value = value

    def __repr__(self) -> str:
        return f'Desc({self.value!r})'

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Desc):
            result: bool = self.value == other.value
            return result
        return NotImplemented

    def __lt__(self, other: object) -> bool:
        if isinstance(other, Desc):
            result: bool = other.value < self.value
            return result
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if isinstance(other, Desc):
            result: bool = other.value > self.value
            return result
        return NotImplemented

    def __hash__(self) -> int:
        return hash((Desc, self.value))
