"""Batches: runs of adjacent records stored as one compressed value.

``Collection.batch()`` replaces a run of adjacent records by one physical
record. This module holds the physical format (the functions) and the
algorithms over a collection's key range that read through, split and make
batches (:class:`BatchView`). It knows engine transactions and bytes only,
never the collection above. Layout (also in ``docs/format.rst``):

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

from __future__ import annotations

import struct
from typing import Callable, Sequence, Tuple

from centidb import checksums, keylib
from centidb.encodings import Packer
from centidb.engines import EngineTransaction
from centidb.engines.base import Item, ItemIterator
from centidb.errors import CentiError, ChecksumError, CorruptKeyError, CorruptRecordError
from centidb.keyformat import KEY_SEP

__all__ = ['BATCH_FLAG', 'MAX_MEMBERS', 'MAX_KEY_BYTES', 'MAX_VALUE_BYTES', 'PackerNotAllowed',
           'check_limits', 'is_batch', 'batch_key', 'batch_packer_id', 'encode_batch', 'decode_batch',
           'BatchView']

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

# A batch member, or a record being batched: (packed key without the
# collection prefix, encoded value).
_Member = Tuple[bytes, bytes]


class PackerNotAllowed(ValueError):
    """A stored value's header names a packer its collection does not use.

    Raised by a collection's packer lookup; the record layer turns it into a
    :class:`~centidb.errors.CorruptRecordError` naming the collection and
    key.
    """


def check_limits(max_recs: int | None, max_bytes: int | None) -> None:
    """Check the `max_recs` and `max_bytes` arguments of ``Collection.batch()``.

    :param max_recs: ``None``, or the most records in one batch.
    :param max_bytes: ``None``, or the most bytes of keys and values in one
        batch.
    :raises TypeError: for a value that is not an ``int``.
    :raises ValueError: for a value outside what the format holds.
    """
    limits = {'max_recs': (max_recs, MAX_MEMBERS), 'max_bytes': (max_bytes, MAX_VALUE_BYTES)}
    for name, (value, limit) in limits.items():
        if value is None:
            continue
        if type(value) is not int:
            raise TypeError(f'{name} must be an int or None, not {type(value).__name__!r}')
        if not 1 <= value <= limit:
            raise ValueError(f'{name}={value} is outside what the batch format '
                             f'can hold: 1 to {limit}')


def is_batch(value: bytes) -> bool:
    """Return True if a stored value is a batch (not a plain record).

    :param value: a stored value (non-empty ``bytes``).
    """
    return value[0] & BATCH_FLAG != 0


def batch_key(prefix: bytes, members: Sequence[_Member]) -> bytes:
    """Return the physical key of a batch.

    :param prefix: the collection's prefix (``bytes``).
    :param members: the batch's ``(packed key, encoded value)`` pairs,
        sorted by key; keys without the collection prefix.
    :returns: ``bytes``: `prefix`, the last key, ``KEY_SEP``, the first key.
    """
    return prefix + members[-1][0] + _SEP + members[0][0]


def encode_batch(packer_id: int, packer: Packer, members: Sequence[_Member]) -> bytes:
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
            + packer.encode(payload))


def batch_packer_id(value: bytes) -> int:
    """Return the id of the packer that compressed a stored batch.

    :param value: a stored batch (see :func:`is_batch`).
    """
    return value[0] & ~BATCH_FLAG


def decode_batch(value: bytes, packer: Packer, coll_name: str) -> list[_Member]:
    """Return the ``(packed key, encoded value)`` members of a stored batch.

    :param value: the stored batch.
    :param packer: the registered packer for :func:`batch_packer_id`.
    :param coll_name: the collection's name, for error messages.
    :returns: a ``list`` of ``(packed key, encoded value)`` pairs in key
        order, keys without the collection prefix.
    :raises ~centidb.errors.CorruptRecordError: for a malformed batch,
        also when ``packer.decode`` fails (e.g. ``zlib.error`` for corrupt
        compressed data; the packer's exception is the cause).
    """
    if len(value) < 3:
        raise CorruptRecordError(f'truncated batch in collection {coll_name!r}')
    count = _COUNT.unpack_from(value, 1)[0]
    try:
        payload = packer.decode(value[3:])
    except CentiError:
        raise
    except Exception as exc:
        raise CorruptRecordError(f'a batch in collection {coll_name!r} cannot be '
                                 f'unpacked ({type(exc).__name__}: {exc})') from exc
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


class BatchView:
    """One collection's stored records, plain or in batches, over engine transactions.

    Plain stored values are one header byte (the packer id) and the packed
    encoder bytes; batch members come out in the same shape, so callers see
    ``(key bytes, stored value)`` pairs whichever way a record is stored.

    :param prefix: the collection's key prefix (``bytes``).
    :param name: the collection's name, for error messages.
    :param plain_header: the header byte of a record stored with the plain
        packer.
    :param packer_of: ``packer_of(packer id)`` returns the registered
        packer, or raises :class:`~centidb.errors.UnknownEncoderError`.
    :param max_key_size: the engine's longest key, or ``None``.
    :param checksum: True if the collection keeps checksums: every stored
        value, plain record or batch, ends with a CRC-32 trailer (see
        :mod:`centidb.checksums`), and members come out sealed too.
    """

    def __init__(self, prefix: bytes, name: str, plain_header: bytes,
                 packer_of: Callable[[int], Packer], max_key_size: int | None,
                 checksum: bool = False) -> None:
        self.prefix = prefix
        self.name = name
        self.plain_header = plain_header
        self.packer_of = packer_of
        self.max_key_size = max_key_size
        self.checksum = checksum
        self.end = keylib.next_prefix(prefix)

    # --- checksums and packers -------------------------------------------------------

    def _where(self, key_bytes: bytes | None) -> str:
        if key_bytes is None:
            return f'collection {self.name!r}: a stored value'
        try:
            parts = keylib.unpacks_list(key_bytes, self.prefix)
        except CorruptKeyError:
            return f'collection {self.name!r}: the value under key bytes {bytes(key_bytes)!r}'
        if len(parts) == 2:
            return (f'collection {self.name!r}: the batch of keys {parts[1]!r} to '
                    f'{parts[0]!r}')
        return f'collection {self.name!r}: the record under key {parts[0]!r}'

    def opened(self, stored: bytes, key_bytes: bytes | None = None) -> bytes:
        """`stored` without its checksum trailer, checked (as it is, without checksums).

        :param stored: a stored value, plain record or batch.
        :param key_bytes: its engine key, for the error.
        :raises ~centidb.errors.ChecksumError: if the trailer does not match.
        """
        if not self.checksum:
            return stored
        try:
            return checksums.opened(stored)
        except checksums.Mismatch as exc:
            raise ChecksumError(f'{self._where(key_bytes)} is damaged: {exc}') from None

    def sealed(self, value: bytes) -> bytes:
        """`value` with its checksum trailer (as it is, without checksums).

        :param value: a plain record's header byte and the packer's output, or a batch.
        """
        return checksums.seal(value) if self.checksum else value

    def packer(self, packer_id: int, key_bytes: bytes | None = None) -> Packer:
        """The packer `packer_id` names, which the collection must use.

        :param packer_id: a header's packer id.
        :param key_bytes: the engine key of the value, for the error.
        :raises ~centidb.errors.CorruptRecordError: if the collection does
            not use that packer.
        """
        try:
            return self.packer_of(packer_id)
        except PackerNotAllowed as exc:
            raise CorruptRecordError(f'{self._where(key_bytes)} cannot be read: {exc}') from None

    # --- members -----------------------------------------------------------------

    def is_batch(self, key_bytes: bytes, stored: bytes) -> bool:
        """True if `stored` is a batch, False if a plain record.

        :param key_bytes: its engine key, for the error.
        :param stored: a stored value.
        :raises ~centidb.errors.CorruptRecordError: if it is empty.
        """
        try:
            return stored[0] & BATCH_FLAG != 0
        except IndexError:
            raise CorruptRecordError(f'collection {self.name!r}: the value stored under '
                                     f'{bytes(key_bytes)!r} is empty') from None

    def encoded(self, stored: bytes, key_bytes: bytes | None = None) -> bytes:
        """The encoder's bytes of a plain stored value (its packer undone).

        :param stored: a stored plain record.
        :param key_bytes: its engine key, for errors.
        """
        stored = self.opened(stored, key_bytes)
        return self.packer(stored[0], key_bytes).decode(stored[1:])

    def encoded_members(self, stored: bytes,
                        key_bytes: bytes | None = None) -> list[_Member]:
        """A stored batch's members: ``(packed key without prefix, encoded value)``.

        :param stored: a stored batch.
        :param key_bytes: its engine key, for errors.
        """
        stored = self.opened(stored, key_bytes)
        return decode_batch(stored, self.packer(batch_packer_id(stored), key_bytes), self.name)

    def members(self, stored: bytes, key_bytes: bytes | None = None) -> list[Item]:
        """A stored batch's members as ``(key bytes, stored value)``, like plain records.

        In a collection that keeps checksums, each member's value is sealed.

        :param stored: a stored batch.
        :param key_bytes: its engine key, for errors.
        """
        prefix, header = self.prefix, self.plain_header
        members = self.encoded_members(stored, key_bytes)
        if self.checksum:
            seal = checksums.seal
            return [(prefix + key, seal(header + value)) for key, value in members]
        return [(prefix + key, header + value) for key, value in members]

    # --- reading -------------------------------------------------------------------

    def get(self, etxn: EngineTransaction, key_bytes: bytes) -> bytes | None:
        """The stored value of a record, plain or inside a batch, or None.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param key_bytes: the record's engine key.
        """
        # One seek finds either the record itself or the batch that may hold it.
        found = etxn.first(key_bytes, self.end)
        if found is None:
            return None
        physical_key, stored = found
        if physical_key == key_bytes:
            return stored
        if self.is_batch(physical_key, stored):
            for member_key, member_stored in self.members(stored, physical_key):
                if member_key == key_bytes:
                    return member_stored
        return None

    def items(self, etxn: EngineTransaction, lo: bytes, hi: bytes, reverse: bool) -> ItemIterator:
        """Iterate ``(key bytes, stored)`` in [lo, hi), batch members expanded.

        A batch's members are decoded once; if the transaction writes while
        they are being yielded (which may split or rewrite that batch), the
        scan starts again right after the last key it yielded.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param lo: the lowest engine key.
        :param hi: the engine key at which to stop.
        :param reverse: iterate from `hi` down.
        """
        if reverse:
            return self._reverse(etxn, lo, hi)
        return self._forward(etxn, lo, hi)

    def _forward(self, etxn: EngineTransaction, lo: bytes, hi: bytes) -> ItemIterator:
        start = lo
        while True:
            fast = etxn.fast
            writes = fast.writes
            restart = False
            # A batch sits at its highest member, so the first one at or past
            # hi may still hold members below hi: scan to the collection end.
            items = etxn.items(start, self.end)
            try:
                for key_bytes, stored in items:
                    if not self.is_batch(key_bytes, stored):
                        if key_bytes >= hi:
                            return
                        yield key_bytes, stored
                        continue
                    for member_key, member_stored in self.members(stored, key_bytes):
                        if member_key >= hi:
                            return
                        if member_key >= start:
                            yield member_key, member_stored
                            if fast.writes != writes:
                                start = member_key + b'\x00'
                                restart = True
                                break
                    if restart:
                        break
            finally:
                items.close()
            if not restart:
                return

    def _reverse(self, etxn: EngineTransaction, lo: bytes, hi: bytes) -> ItemIterator:
        while True:
            fast = etxn.fast
            writes = fast.writes
            restart = False
            for member_key, member_stored in self._straddling(etxn, lo, hi):
                yield member_key, member_stored
                if fast.writes != writes:
                    hi, restart = member_key, True
                    break
            if restart:
                continue
            items = etxn.items(lo, hi, True)
            try:
                for key_bytes, stored in items:
                    if not self.is_batch(key_bytes, stored):
                        yield key_bytes, stored
                        continue
                    for member_key, member_stored in reversed(self.members(stored, key_bytes)):
                        if member_key < lo:
                            return
                        if member_key < hi:
                            yield member_key, member_stored
                            if fast.writes != writes:
                                hi, restart = member_key, True
                                break
                    if restart:
                        break
            finally:
                items.close()
            if not restart:
                return

    def _straddling(self, etxn: EngineTransaction, lo: bytes, hi: bytes) -> list[Item]:
        """Members below `hi` (and from `lo`) of the batch sitting at or after hi."""
        found = etxn.first(hi, self.end)
        if found is not None and self.is_batch(*found):
            return [m for m in self.members(found[1], found[0]) if lo <= m[0] < hi][::-1]
        return []

    # --- writing -------------------------------------------------------------------

    def batch(self, etxn: EngineTransaction, lo: bytes, hi: bytes, max_recs: int,
              max_bytes: int | None, packer_id: int,
              packer: Packer) -> tuple[int, int, bytes | None]:
        """Rewrite the records in [lo, hi) as batches; see ``Collection.batch()``.

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param lo: the lowest engine key.
        :param hi: the engine key at which to stop.
        :param max_recs: the most records in one batch.
        :param max_bytes: the most bytes in one batch, or None.
        :param packer_id: `packer`'s id.
        :param packer: the packer compressing each batch.
        :returns: ``(records found, batches made, packed key without prefix
            of the last record, or None)``.
        """
        records, physical = self._collect(etxn, lo, hi)
        # Build every new physical record before changing anything, so a
        # failure leaves the transaction as it was.
        writes: list[Item] = []
        made = 0
        run: list[_Member] = []
        run_bytes = 0
        for member in records:
            size = len(member[0]) + len(member[1])
            if len(member[0]) > MAX_KEY_BYTES:
                made += self._add_run(writes, run, packer_id, packer)
                run, run_bytes = [], 0
                # Too long to batch: stays plain.
                writes.append((self.prefix + member[0],
                               self.sealed(self.plain_header + member[1])))
                continue
            if run and (len(run) >= max_recs
                        or (max_bytes is not None and run_bytes + size > max_bytes)):
                made += self._add_run(writes, run, packer_id, packer)
                run, run_bytes = [], 0
            run.append(member)
            run_bytes += size
        made += self._add_run(writes, run, packer_id, packer)
        for key_bytes in physical:
            etxn.delete(key_bytes)
        for key_bytes, value in writes:
            etxn.put(key_bytes, value)
        return len(records), made, (records[-1][0] if records else None)

    def _collect(self, etxn: EngineTransaction, lo: bytes,
                 hi: bytes) -> tuple[list[_Member], list[bytes]]:
        """Records in range (whole batches at the ends) and their physical keys.

        Records are ``(packed key without prefix, encoded value)`` pairs.
        """
        records, physical = [], []
        start = len(self.prefix)
        for key_bytes, stored in etxn.items(lo, self.end):
            if self.is_batch(key_bytes, stored):
                members = self.encoded_members(stored, key_bytes)
                if self.prefix + members[0][0] >= hi:
                    break
                records.extend(members)
                physical.append(key_bytes)
                if key_bytes >= hi:
                    break
            else:
                if key_bytes >= hi:
                    break
                records.append((key_bytes[start:], self.encoded(stored, key_bytes)))
                physical.append(key_bytes)
        return records, physical

    def _add_run(self, writes: list[Item], run: list[_Member], packer_id: int,
                 packer: Packer, plain_single: bool = False) -> int:
        """Append the physical records of `run` to `writes`; 1 if a batch."""
        if not run:
            return 0
        if not (plain_single and len(run) == 1):
            key_bytes = batch_key(self.prefix, run)
            limit = self.max_key_size
            if limit is None or len(key_bytes) <= limit:
                writes.append((key_bytes, self.sealed(encode_batch(packer_id, packer, run))))
                return 1
        # A lone member, or a batch key longer than the engine stores.
        writes.extend((self.prefix + key, self.sealed(self.plain_header + value))
                      for key, value in run)
        return 0

    def _covering(self, etxn: EngineTransaction, key_bytes: bytes) -> Item | None:
        """The batch whose key range holds `key_bytes`: (physical key, stored) or None."""
        found = etxn.first(key_bytes, self.end)
        if found is not None and self.is_batch(*found):
            last, first = keylib.unpacks_list(found[0], self.prefix)
            if keylib.packs(first, self.prefix) <= key_bytes:
                return found
        return None

    def split(self, etxn: EngineTransaction, key_bytes: bytes,
              rejoin: bool = False) -> bytes | None:
        """Take `key_bytes` out of the batch covering it; return its stored value.

        The members below and above the key are written back as two batches
        (so a new record can go between them), or as one with `rejoin`; a
        lone member becomes a plain record. Returns None if no batch covers
        the key or the key is not a member.

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param key_bytes: the record's engine key.
        :param rejoin: write the other members back as one batch.
        """
        found = self._covering(etxn, key_bytes)
        if found is None:
            return None
        physical_key, stored = found
        members = self.encoded_members(stored, physical_key)  # names a missing packer clearly
        packer_id = batch_packer_id(stored)
        packer = self.packer(packer_id, physical_key)
        key = key_bytes[len(self.prefix):]
        below, above, old = [], [], None
        for member in members:
            if member[0] < key:
                below.append(member)
            elif member[0] > key:
                above.append(member)
            else:
                old = self.sealed(self.plain_header + member[1])
        writes: list[Item] = []
        if rejoin:
            self._add_run(writes, below + above, packer_id, packer, plain_single=True)
        else:
            self._add_run(writes, below, packer_id, packer, plain_single=True)
            self._add_run(writes, above, packer_id, packer, plain_single=True)
        etxn.delete(physical_key)
        for write_key, value in writes:
            etxn.put(write_key, value)
        return old
