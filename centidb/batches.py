"""The physical format of batches: runs of records stored as one value.

``Collection.batch()`` replaces a run of adjacent records by one physical
record; reads and writes in :mod:`centidb.collection` expand and split
batches using the functions here. Layout (also in ``docs/format.rst``):

* **Key**: collection prefix, the packed key of the *last* (highest) member,
  ``KEY_SEP``, the packed key of the *first* member. It sorts right after
  the last member's own key position and before any key extending it, so a
  batch sits exactly where its highest member would, and a seek to the first
  physical key at or above ``k`` finds the batch that may hold ``k``.
* **Value**: one byte ``0x80 | packer id`` (plain records use the packer id
  alone, below 0x80), two bytes big-endian member count, then the packed
  payload: for each member a 2-byte key length and a 4-byte value length,
  then every member key (packed, without the collection prefix), then every
  member value (the encoder's bytes).

So a batch holds at most 65535 members, member keys of at most 65535 bytes
and member values of at most 4 GiB - 1 bytes; asking for more raises
``ValueError``.
"""

import struct

from centidb.errors import CorruptRecordError
from centidb.keyformat import KEY_SEP

__all__ = ['BATCH_FLAG', 'MAX_MEMBERS', 'MAX_KEY_BYTES', 'MAX_VALUE_BYTES',
           'is_batch', 'batch_key', 'batch_packer_id', 'encode_batch', 'decode_batch']

#: Set in the first value byte of a batch.
BATCH_FLAG = 0x80
#: Most members a batch holds.
MAX_MEMBERS = 0xFFFF
#: Longest packed member key (without the collection prefix), in bytes.
MAX_KEY_BYTES = 0xFFFF
#: Longest member value (the encoder's bytes), in bytes.
MAX_VALUE_BYTES = 0xFFFFFFFF

_COUNT = struct.Struct('>H')
_SIZES = struct.Struct('>HI')
_SEP = bytes([KEY_SEP])


def is_batch(value):
    """Return True if a stored value is a batch (not a plain record).

    :param value: a stored value (non-empty ``bytes``).
    """
    return value[0] & BATCH_FLAG != 0


def batch_key(prefix, members):
    """Return the physical key of a batch.

    :param prefix: the collection's prefix (``bytes``).
    :param members: the batch's ``(packed key, encoded value)`` pairs,
        sorted by key; keys without the collection prefix.
    :returns: ``bytes``: `prefix`, the last key, ``KEY_SEP``, the first key.
    """
    return prefix + members[-1][0] + _SEP + members[0][0]


def encode_batch(packer_id, packer, members):
    """Return the stored value of a batch of ``(packed key, encoded value)``.

    :param packer_id: the store's id for `packer` (below ``0x80``).
    :param packer: the :class:`~centidb.encodings.Encoder` that compresses
        the payload.
    :param members: ``(packed key, encoded value)`` pairs, sorted by key,
        keys without the collection prefix.
    :returns: the value to store, as ``bytes``.
    :raises ValueError: if there are no members or more than
        :data:`MAX_MEMBERS`, or a key or value exceeds
        :data:`MAX_KEY_BYTES` or :data:`MAX_VALUE_BYTES`.
    """
    if not 1 <= len(members) <= MAX_MEMBERS:
        raise ValueError(f'a batch holds 1 to {MAX_MEMBERS} records, not {len(members)}')
    table = bytearray()
    for key, value in members:
        if len(key) > MAX_KEY_BYTES or len(value) > MAX_VALUE_BYTES:
            raise ValueError('record too large for the batch format')
        table += _SIZES.pack(len(key), len(value))
    payload = b''.join([bytes(table)] + [key for key, _ in members]
                       + [value for _, value in members])
    return (bytes([BATCH_FLAG | packer_id]) + _COUNT.pack(len(members))
            + packer.pack(payload))


def batch_packer_id(value):
    """Return the id of the packer that compressed a stored batch.

    :param value: a stored batch (see :func:`is_batch`).
    """
    return value[0] & ~BATCH_FLAG


def decode_batch(value, packer, coll_name):
    """Return the ``(packed key, encoded value)`` members of a stored batch.

    :param value: the stored batch.
    :param packer: the registered packer for :func:`batch_packer_id`.
    :param coll_name: the collection's name, for error messages.
    :returns: a ``list`` of ``(packed key, encoded value)`` pairs in key
        order, keys without the collection prefix.
    :raises ~centidb.errors.CorruptRecordError: for a malformed batch.
        An error from ``packer.unpack`` (e.g. ``zlib.error`` for corrupt
        compressed data) propagates as it is.
    """
    if len(value) < 3:
        raise CorruptRecordError(f'truncated batch in collection {coll_name!r}')
    count = _COUNT.unpack_from(value, 1)[0]
    payload = packer.unpack(value[3:])
    table_end = count * _SIZES.size
    if count == 0 or len(payload) < table_end:
        raise CorruptRecordError(f'malformed batch in collection {coll_name!r}')
    sizes = [_SIZES.unpack_from(payload, i * _SIZES.size) for i in range(count)]
    if table_end + sum(k + v for k, v in sizes) != len(payload):
        raise CorruptRecordError(f'malformed batch in collection {coll_name!r}')
    members = []
    key_pos = table_end
    value_pos = table_end + sum(k for k, _ in sizes)
    for key_size, value_size in sizes:
        members.append((payload[key_pos:key_pos + key_size],
                        payload[value_pos:value_pos + value_size]))
        key_pos += key_size
        value_pos += value_size
    return members
