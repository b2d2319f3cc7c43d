"""Record checksums: a CRC-32 trailer on each stored value of a collection that keeps them.

A collection whose metadata holds ``"checksum": "crc32"`` stores every
record (and every batch) as its usual value followed by four bytes: the
CRC-32 (zlib's polynomial, as :func:`zlib.crc32`) of everything before them,
little-endian. Computing the CRC-32 of the whole stored value, trailer
included, then always gives :data:`RESIDUE`: one call checks a value
without slicing it. See ``docs/format.rst``. Both implementations use
:func:`zlib.crc32`.

This module knows bytes only; it calls no other part of centidb.
"""

from __future__ import annotations

from zlib import crc32

__all__ = ['NAME', 'RESIDUE', 'SIZE', 'Mismatch', 'seal', 'intact', 'opened']

#: The ``checksum`` field of a collection's metadata that turns checksums on.
NAME = 'crc32'
#: ``crc32(value + trailer)`` of every intact sealed value.
RESIDUE = 0x2144DF1C
#: Bytes of the trailer.
SIZE = 4


class Mismatch(ValueError):
    """A stored value whose trailer does not match its bytes.

    Internal: the record layer turns it into a
    :class:`~centidb.errors.ChecksumError` naming the collection and key.
    """


def seal(value: bytes) -> bytes:
    """Return `value` followed by its CRC-32 trailer.

    :param value: a stored value as a collection without checksums keeps it.
    """
    return value + crc32(value).to_bytes(SIZE, 'little')


def intact(stored: bytes) -> bool:
    """True if `stored` is a sealed value whose trailer matches its bytes.

    :param stored: a stored value, trailer included.
    """
    return len(stored) > SIZE and crc32(stored) == RESIDUE


def opened(stored: bytes) -> bytes:
    """Return `stored` without its trailer, once the trailer is checked.

    :param stored: a sealed stored value.
    :raises Mismatch: if the trailer does not match.
    :raises ValueError: if nothing precedes an intact trailer.
    """
    if len(stored) < SIZE or crc32(stored) != RESIDUE:
        raise Mismatch(f'its CRC-32 does not match its {len(stored)} stored bytes')
    if len(stored) == SIZE:
        raise ValueError('the stored value is empty')
    return stored[:-SIZE]
