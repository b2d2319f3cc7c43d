"""Pending writes kept in memory, and merging them over a snapshot.

:func:`merge_overlay` iterates committed data with pending writes applied;
:data:`TOMBSTONE` marks a pending delete. ``_WriteLog`` keeps the pending
writes of the in-memory and LevelDB write transactions: one dict entry per
key written, holding the caller's objects. ``_CompactWriteLog`` (LevelDB's)
moves them, once they are many, into a compact form: key-sorted segments of
one memory block each, found again through a filter of key hashes.

Written once: Cython compiles this file as it is, with the types of
``writelog.pxd`` (see :data:`centidb.impl.PURE_MODE`).
"""

from __future__ import annotations

import bisect
import collections
import enum
import itertools
import mmap
import operator
import sys
from array import array
from typing import Any, Callable, Iterable, Iterator, MutableMapping, Union

from sortedcontainers import SortedDict, SortedList

from centidb.engines.base import _OPEN, EngineTransaction, Item, ItemIterator, _bad_key, _not_bytes
from centidb.engines.fastcalls import weakly

__all__ = ['TOMBSTONE', 'merge_overlay']


class _Tombstone(enum.Enum):
    """Type of :data:`TOMBSTONE`.

    A one-member enum, so that type checkers narrow ``value is TOMBSTONE``.
    """

    DELETED = 'deleted'

    def __repr__(self) -> str:
        return 'TOMBSTONE'


#: Marks a key deleted in a pending-writes overlay (see :func:`merge_overlay`).
TOMBSTONE = _Tombstone.DELETED

# A pending write: the new value, or TOMBSTONE for a delete.
_Pending = Union[bytes, _Tombstone]


def _irange_after(sdict: SortedDict[bytes, Any] | SortedList[bytes], after: bytes | None,
                  lo: bytes | None, hi: bytes | None, reverse: bool) -> Iterator[bytes]:
    """Lazily iterate the keys of ``sdict`` in ``[lo, hi)`` past ``after``.

    "Past" means greater than ``after`` going forward and smaller going in
    reverse; ``after=None`` starts at the beginning of the range. Consume the
    result before ``sdict`` next changes.
    """
    if reverse:
        if after is None:
            return sdict.irange(lo, hi, (True, False), reverse=True)
        return sdict.irange(lo, after, (True, False), reverse=True)
    if after is None:
        return sdict.irange(lo, hi, (True, False))
    return sdict.irange(after, hi, (False, False))


def merge_overlay(overlay: SortedDict[bytes, _Pending], base: Iterator[Item],
                  lo: bytes | None = None, hi: bytes | None = None,
                  reverse: bool = False) -> ItemIterator:
    """Yield ``(key, value)`` from ``base`` with pending writes applied.

    ``overlay`` is a :class:`~sortedcontainers.SortedDict` of pending writes,
    mapping a key to its new value or to :data:`TOMBSTONE` for a delete.
    ``base`` iterates the underlying ``(key, value)`` pairs in ``[lo, hi)``,
    ascending or, with ``reverse=True``, descending. Overlay values replace
    base values, tombstoned keys are skipped, and overlay-only keys in range
    are merged in order.

    ``overlay`` may change between ``next()`` calls: every step looks up the
    overlay afresh past the last key yielded, so iteration resumes after that
    key. ``base`` must not change while iterating (a snapshot). ``base`` is
    closed, if it has a ``close()`` method, when this generator ends.

    :param overlay: the pending writes, a ``SortedDict``.
    :param base: an iterator of the underlying ``(key, value)`` pairs.
    :param lo: the lowest key included, or ``None``.
    :param hi: the key at which to stop (excluded), or ``None``.
    :param reverse: merge in descending order; `base` must descend too.
    :returns: a generator of ``(key, value)``.
    """
    try:
        base_item = next(base, None)
        after = None
        while True:
            okey: bytes | None = None
            if overlay:
                okey = next(
                    _irange_after(overlay, after, lo, hi, reverse), None)
            if okey is not None and (base_item is None
                                     or (okey >= base_item[0] if reverse
                                         else okey <= base_item[0])):
                if base_item is not None and base_item[0] == okey:
                    base_item = next(base, None)
                after = okey
                value = overlay[okey]
                if value is not TOMBSTONE:
                    yield okey, value
            elif base_item is not None:
                after = base_item[0]
                yield base_item
                base_item = next(base, None)
            else:
                return
    finally:
        close = getattr(base, 'close', None)
        if close is not None:
            close()


#: :meth:`_WriteLog._drain_into` reads a table of at most this many writes in
#: place and clears it afterwards (faster); a larger one it empties as it
#: copies it (each write freed at once).
_DRAIN_WHOLE = 1 << 16


class _WriteLog(EngineTransaction):
    """Base of write transactions that keep their writes in memory.

    ``_pending`` maps each written key to its latest value, or to
    :data:`TOMBSTONE` for a delete. It holds the very ``bytes`` objects the
    caller passed, and nothing per write besides its table entry: no tuple,
    no log of superseded writes, no copy. A write is one dict update
    (``fast.put_many`` and ``fast.put`` are the dict's own ``update`` and
    ``__setitem__``, which run in C), a read one lookup. Deleting a key that
    only this transaction wrote drops its entry, rather than keep a
    tombstone. The first iteration turns the dict into a
    :class:`~sortedcontainers.SortedDict`, kept from then on.
    An engine that commits through a batch hands the table over with
    :meth:`_drain_into`; a large table is emptied as it is copied, so each
    write's objects are freed once copied and the commit's peak memory
    stays near that of the batch alone.

    Subclasses set ``_read_committed``, the getter of the data as of
    ``begin()``; ``_pending`` is None in a read-only transaction, and after
    the transaction ends.
    """

    _read_committed: Callable[[bytes], bytes | None]
    _pending: dict[bytes, _Pending] | SortedDict[bytes, _Pending] | None

    def _start_log(self) -> None:
        self._pending = {}
        self._deletes = False   # whether a TOMBSTONE was ever written
        self.fast.put_many = self._pending.update
        self.fast.put = self._pending.__setitem__

    def get(self, key: bytes) -> bytes | None:
        """Return the value stored under ``key``, or ``None``."""
        if self._state is not _OPEN:
            self._raise_unusable()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if self._pending:
            value = self._pending.get(key)
            if value is not None:
                return None if value is TOMBSTONE else value
        return self._read_committed(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Store ``value`` under ``key``, replacing any previous value."""
        if self._pending is None or self._state is not _OPEN:
            self._refuse_write()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if type(value) is not bytes:
            _not_bytes('value', value)
        self._pending[key] = value
        self.fast.writes += 1

    def _delete(self, key: bytes) -> None:
        # Callers checked that this is an open write transaction.
        pending: dict[bytes, _Pending] = self._pending  # type: ignore[assignment]
        if key in pending and self._read_committed(key) is None:
            # Written in this transaction only: forgetting it deletes it.
            del pending[key]
        else:
            self._deletes = True
            pending[key] = TOMBSTONE

    def _put_many(self, pairs: list[Item]) -> None:
        if self._pending is None or self._state is not _OPEN:
            self._refuse_write()
        self._pending.update(pairs)
        self.fast.writes += len(pairs)

    def _sorted_writes(self) -> SortedDict[bytes, _Pending]:
        """The pending writes as a SortedDict, which they stay from now on."""
        pending = self._pending
        if isinstance(pending, SortedDict):
            return pending
        # Made from the dict, which is then dropped: never both at once.
        made: SortedDict[bytes, _Pending] = SortedDict(pending or ())
        self._pending = made
        self.fast.put_many = made.update
        self.fast.put = made.__setitem__
        return made

    def _holds_writes(self) -> bool:
        """True if this transaction has pending writes."""
        return bool(self._pending)

    def _drain_into(self, put: Callable[[bytes, bytes], object],
                    delete: Callable[[bytes], object]) -> None:
        """Take the pending writes away, passing each to `put` or `delete`.

        Calls ``put(key, value)`` or ``delete(key)`` once per key written,
        with its latest write, in no particular order (only the latest write
        of each key is left, so order does not matter). A table of more
        than :data:`_DRAIN_WHOLE` writes loses each pair as it goes: a
        consumer that keeps only a compact copy (a write batch) frees the
        objects meanwhile. Afterwards the transaction holds no pending
        writes and refuses more.
        """
        pending, deletes = self._pending, self._deletes
        self._drop_log()
        if not pending:
            return
        # A SortedDict: a plain copy, so the sorted list of keys is dropped.
        table = pending if type(pending) is dict else dict(pending)
        del pending
        if len(table) > _DRAIN_WHOLE:
            # popitem() from the end until it is empty, driven in C by islice.
            drained = itertools.islice(iter(table.popitem, None), len(table))
            if not deletes:
                collections.deque(itertools.starmap(put, drained), maxlen=0)
                return
            for key, value in drained:
                if value is TOMBSTONE:
                    delete(key)
                else:
                    put(key, value)
            return
        # Small enough to keep until copied: read in place, split in C.
        live: Iterable[tuple[bytes, _Pending]] = table.items()
        if deletes:
            collections.deque(map(delete, itertools.compress(table, map(
                operator.is_, table.values(), itertools.repeat(TOMBSTONE)))), maxlen=0)
            live = itertools.compress(live, map(
                operator.is_not, table.values(), itertools.repeat(TOMBSTONE)))
        collections.deque(itertools.starmap(put, live), maxlen=0)
        table.clear()

    def _drop_log(self) -> None:
        self._pending = self.fast.put_many = self.fast.put = None



#: The number of cells of a :class:`LogCalls`' `heads`.
HEADS = 1024
_CELL_MASK = HEADS - 1
_EVERY_CELL = b'\x01' * HEADS
# _may_write_in looks at most this many two-byte prefixes, then guesses yes.
_MOST_PREFIXES = 64


def _two_bytes(key: bytes) -> int:
    """The first two bytes of a non-empty `key` as a number (a missing second byte counts as 0)."""
    return key[0] << 8 | (key[1] if len(key) > 1 else 0)


def _prefix_cell(prefix: int) -> int:
    return ((prefix >> 8) * 37 + (prefix & 0xff)) & _CELL_MASK


def head_cell(key: bytes) -> int:
    """The cell of a write log's `heads` that a write of the non-empty `key` sets.

    It stands for the key's first two bytes, hashed: a cell left 0 means no
    key starting with those bytes was written.

    :param key: non-empty ``bytes``.
    """
    return _prefix_cell(_two_bytes(key))


#: A :class:`_CompactWriteLog` freezes its dict into a segment when the dict
#: holds this many keys.
FREEZE_AT = 1 << 17
# A segment keeps every _SPARSE-th key as an object, to bisect on.
_SPARSE = 16
# The filter of frozen keys has 8 to 16 cells per key; each key marks two.
_CELLS_PER_KEY = 8
# A filter cell holds the number of the newest segment that marked it, from
# 1; this value stands for every segment from the 255th on.
_LATE = 255


def _mark_cells(cells: bytearray, hashes: list[int], number: int) -> None:
    """Set the two cells each hash picks to `number` (at most ``_LATE``)."""
    mask = len(cells) - 1
    values = itertools.repeat(min(number, _LATE))
    collections.deque(map(cells.__setitem__, map(
        operator.and_, hashes, itertools.repeat(mask)), values), maxlen=0)
    collections.deque(map(cells.__setitem__, map(
        operator.and_, map(operator.rshift, hashes, itertools.repeat(32)),
        itertools.repeat(mask)), values), maxlen=0)


def freeze_table(table: dict[bytes, bytes], cells: bytearray,
                 number: int) -> tuple[list[bytes], bytes, array[int]]:
    """The parts of a :class:`_Segment` holding the writes of `table`, its keys marked in `cells`.

    Returns ``(index, joined, offsets)``: every ``_SPARSE``-th key in key
    order (from the first), the keys and values in key order back to back
    (key 0, value 0, key 1, ...), and the ``2n + 1`` boundaries of those
    pieces (an ``array`` of type ``'I'``, or ``'Q'`` past 4 GiB). Each key's
    two cells of `cells` (see :class:`_FrozenWrites`) are set to `number`
    (``_LATE`` past it). `table` is left as it was.

    :param table: the writes, not empty: non-empty ``bytes`` keys, ``bytes``
        values (the write log checked them).
    :param cells: the filter; its length is a power of two.
    :param number: the segment's number, from 1.
    """
    keys = sorted(table)
    values = list(map(table.__getitem__, keys))
    flat = list(itertools.chain.from_iterable(zip(keys, values)))
    del values
    joined = b''.join(flat)
    offsets = array('I' if len(joined) < 1 << 32 else 'Q',
                    itertools.accumulate(map(len, flat), initial=0))
    del flat
    _mark_cells(cells, list(map(hash, keys)), number)
    return keys[::_SPARSE], joined, offsets


def put_pairs(block: mmap.mmap, offsets: array[int],
              put: Callable[[bytes, bytes], object]) -> None:
    """Call ``put(key, value)`` for each pair of a segment's block, in order.

    :param block: the keys and values back to back (a :class:`_Segment`'s
        ``data``).
    :param offsets: their boundaries, as :func:`freeze_table` returns them.
    :param put: called with each key and its value, as ``bytes``.
    """
    pieces = map(block.__getitem__, map(slice, offsets[:-1], offsets[1:]))
    collections.deque(itertools.starmap(put, zip(pieces, pieces)), maxlen=0)


class _Segment:
    """Frozen pending writes: distinct keys in order, and their values, in one block.

    ``data`` holds key 0, value 0, key 1, value 1, ... back to back, and
    ``offsets`` their ``2n + 1`` boundaries: key ``i`` is ``data[offsets[2i]
    :offsets[2i + 1]]``, its value the slice after it. ``index`` keeps every
    ``_SPARSE``-th key, to find the stretch of the block a key can be in.
    The block is an anonymous memory map, so that :meth:`close` gives its
    memory back to the system at once (a freed heap block can stay with the
    process, and a write batch growing next to it would not reuse it).

    :param index: every ``_SPARSE``-th key, from the first.
    :param joined: the keys and values, back to back (copied into the block).
    :param offsets: their boundaries, as :func:`freeze_table` returns them.
    """

    __slots__ = ('data', 'offsets', 'index')

    def __init__(self, index: list[bytes], joined: bytes, offsets: array[int]) -> None:
        self.offsets = offsets
        self.data = mmap.mmap(-1, len(joined))
        self.data.write(joined)
        self.index = index

    def __len__(self) -> int:
        return len(self.offsets) // 2

    def get(self, key: bytes) -> bytes | None:
        """The value of `key`, or None if this segment does not hold it."""
        stretch = bisect.bisect_right(self.index, key) - 1
        if stretch < 0:
            return None
        offsets, data = self.offsets, self.data
        lo = 2 * _SPARSE * stretch
        hi = min(lo + 2 * _SPARSE, len(offsets) - 1)
        end = offsets[hi]
        found = data.find(key, offsets[lo], end)
        while found >= 0:
            # The last boundary at or before it: a key's start has an even
            # number (keys are not empty, so no later boundary equals it).
            at = bisect.bisect_right(offsets, found, lo, hi) - 1
            if not at & 1 and offsets[at] == found and offsets[at + 1] == found + len(key):
                return data[offsets[at + 1]:offsets[at + 2]]
            found = data.find(key, found + 1, end)
        return None

    def keys(self) -> Iterator[bytes]:
        offsets = self.offsets
        return map(self.data.__getitem__, map(slice, offsets[0::2], offsets[1::2]))

    def close(self) -> None:
        self.data.close()


class _FrozenWrites:
    """The frozen writes of a :class:`_CompactWriteLog`: segments, oldest first.

    ``deleted`` holds the keys whose latest frozen write is a delete: newer
    than every segment's write of them. ``cells`` tells most keys that were
    never frozen apart without searching the segments: each frozen key
    sets the two cells its hash picks to the number of its segment (from 1,
    at most ``_LATE``), so a key is frozen only if both its cells are
    non-zero, and then in none of the segments after the smaller of them.
    """

    __slots__ = ('segments', 'deleted', 'cells', 'count')

    def __init__(self) -> None:
        self.segments: list[_Segment] = []
        self.deleted: set[bytes] = set()
        self.cells = bytearray(1)
        self.count = 0

    def add(self, table: dict[bytes, _Pending], deletes: bool) -> None:
        """Freeze the writes of `table`, newer than the frozen ones, and empty it.

        :param deletes: `table` may hold :data:`TOMBSTONE` values.
        """
        gone: list[bytes] = []
        if deletes:
            gone = [key for key, value in table.items() if value is TOMBSTONE]
            for key in gone:
                del table[key]
        if self.deleted:
            self.deleted.difference_update(table)
        self.deleted.update(gone)
        if not table:
            return
        count = self.count + len(table)
        if count * _CELLS_PER_KEY > len(self.cells):
            # At least twice the cells (8 to 16 a key): the older segments'
            # keys marked again.
            self.cells = bytearray(1 << (count * _CELLS_PER_KEY - 1).bit_length())
            for number, segment in enumerate(self.segments, 1):
                self._mark(list(map(hash, segment.keys())), number)
        # No TOMBSTONE is left among the values.
        parts = freeze_table(table, self.cells, len(self.segments) + 1)  # type: ignore[arg-type]
        table.clear()
        self.segments.append(_Segment(*parts))
        self.count = count

    def _mark(self, hashes: list[int], number: int) -> None:
        """Set the cells of the keys of `hashes` to the segment `number` (from 1)."""
        _mark_cells(self.cells, hashes, number)

    def get(self, key: bytes) -> _Pending | None:
        """The latest frozen write of `key`, or None if it has none."""
        if key in self.deleted:
            return TOMBSTONE
        cells = self.cells
        mask = len(cells) - 1
        hashed = hash(key)
        newest = cells[hashed & mask]
        if newest:
            newest = min(newest, cells[(hashed >> 32) & mask])
            segments = self.segments
            if newest == _LATE:
                newest = len(segments)
            for number in range(newest - 1, -1, -1):
                value = segments[number].get(key)
                if value is not None:
                    return value
        return None

    def drain_into(self, put: Callable[[bytes, bytes], object],
                   delete: Callable[[bytes], object]) -> None:
        """Pass every frozen write to `put` or `delete`, oldest first, freeing each segment."""
        segments = self.segments
        self.segments = []
        segments.reverse()
        while segments:
            segment = segments.pop()
            put_pairs(segment.data, segment.offsets, put)
            segment.close()
        deleted, self.deleted = self.deleted, set()
        collections.deque(map(delete, deleted), maxlen=0)


class LogCalls:
    """The unchecked calls of a :class:`_CompactWriteLog` over its current tables.

    Its methods are the transaction's calls of the same names in ``fast``
    (see :class:`~centidb.engines.FastCalls`); the log makes a new
    one when it replaces its dict or first freezes. ``get`` keeps the last
    value it read from `committed`, which must always give the same value
    for a key (a snapshot), so that reading a record and writing it back
    reads the database once. Every key written or deleted sets its cell of
    `heads` (see :func:`head_cell`), so that an ordered read can tell that
    no pending write falls in its range. Compiled, each is a C method, not a
    Python frame.

    :param pending: the pending writes, a dict or a ``SortedDict`` (key ->
        value or `tombstone`).
    :param frozen_get: the frozen writes' ``get``, or None if none are frozen.
    :param committed: the getter of the committed data.
    :param freeze_at: call `freeze` once `pending` holds this many keys.
    :param freeze: freezes `pending` (and empties it).
    :param deleted: called before the first `tombstone` is written.
    :param tombstone: :data:`TOMBSTONE`.
    :param heads: :data:`HEADS` bytes, shared by the log's calls; a key
        written sets ``heads[head_cell(key)]`` to 1.
    """

    def __init__(self, pending: MutableMapping[bytes, Any],
                 frozen_get: Callable[[bytes], Any] | None,
                 committed: Callable[[bytes], bytes | None], freeze_at: int,
                 freeze: Callable[[], object], deleted: Callable[[], object],
                 tombstone: object, heads: bytearray) -> None:
        self.pending, self.frozen_get, self.committed = pending, frozen_get, committed
        self.freeze_at, self.freeze, self.deleted = freeze_at, freeze, deleted
        self.tombstone, self.heads = tombstone, heads
        self.last_key = b''     # never a key
        self.last_value: bytes | None = None
        self.noted = False      # whether deleted() was called

    def get(self, key: bytes) -> bytes | None:
        """The value of `key`: pending, else frozen, else committed (or None).

        :param key: a non-empty ``bytes`` key.
        """
        value = self.pending.get(key)
        if value is None and self.frozen_get is not None:
            value = self.frozen_get(key)
        if value is None:
            if key != self.last_key:
                self.last_value = self.committed(key)
                self.last_key = key
            return self.last_value
        return None if value is self.tombstone else value

    def put(self, key: bytes, value: bytes) -> None:
        """Write `value` under `key`.

        :param key: a non-empty ``bytes`` key.
        :param value: the ``bytes`` value.
        """
        self.heads[head_cell(key)] = 1     # first: a write marked and lost is harmless
        pending = self.pending
        pending[key] = value
        if len(pending) >= self.freeze_at:
            self.freeze()

    def replace(self, key: bytes, value: bytes) -> bytes | None:
        """Write `value` under `key`; return the value it held (or None), as :meth:`get` would.

        :param key: a non-empty ``bytes`` key.
        :param value: the ``bytes`` value.
        """
        old = self.get(key)
        self.put(key, value)
        return old

    def put_many(self, pairs: list[Item]) -> None:
        """Write each ``(key, value)`` pair of `pairs`.

        :param pairs: a list of ``(bytes, bytes)``.
        """
        heads = self.heads
        if type(pairs) is list:
            for pair in pairs:
                heads[head_cell(pair[0])] = 1
        else:
            heads[:] = _EVERY_CELL     # an iterator can be read once only
        pending = self.pending
        pending.update(pairs)
        if len(pending) >= self.freeze_at:
            self.freeze()

    def delete(self, key: bytes) -> None:
        """Delete `key`.

        :param key: a non-empty ``bytes`` key.
        """
        pending = self.pending
        self.heads[head_cell(key)] = 1
        # A frozen write of it may be older than the dict's: only a
        # tombstone hides it. Without one, a key written in this
        # transaction only is deleted by forgetting it.
        if self.frozen_get is None and key in pending and self.committed(key) is None:
            del pending[key]
            return
        if not self.noted:
            self.deleted()
            self.noted = True
        pending[key] = self.tombstone
        if len(pending) >= self.freeze_at:
            self.freeze()


class _CompactWriteLog(_WriteLog):
    """A write log that keeps the writes of a large transaction compact.

    Writes go to the dict of :class:`_WriteLog`; once it holds
    :data:`FREEZE_AT` keys, they move into a :class:`_Segment`: the keys
    sorted, keys and values copied into one memory block, and the dict
    emptied. A frozen write costs its bytes, two offsets, a sixteenth of a
    key object and 8 to 16 filter cells, instead of two objects and a dict
    entry. :meth:`get` looks in the dict, then in the segments (newest
    first, past a filter that turns away most keys never written). The
    commit passes the segments to the batch oldest first, each in key
    order (which LevelDB inserts into its memtable faster than a random
    order), then the deletes, then the dict.

    The unchecked calls (``fast.get``, ``fast.put``, ``fast.put_many``,
    ``fast.replace``, ``fast.delete``) are the methods of a :class:`LogCalls` over the
    current dict and frozen writes, made again by :meth:`_arm` when either
    is replaced; the checked methods check, then call them.

    An ordered read (``items``, ``first``...) of a range that a pending
    write may fall in turns every pending write back into objects in one
    :class:`~sortedcontainers.SortedDict`, as :class:`_WriteLog` does; the
    transaction freezes nothing from then on. The log keeps a cell per
    first two bytes of the keys written (``_heads``, hashed): a range none
    of them can fall in is read from the snapshot alone
    (:meth:`_log_items`), such as a collection's records while
    ``add_index`` writes its entries.
    """

    _frozen: _FrozenWrites | None = None
    _freeze_at = FREEZE_AT
    _heads: bytearray

    def _start_log(self) -> None:
        super()._start_log()
        self._frozen = None
        self._freeze_at = FREEZE_AT
        self._heads = bytearray(HEADS)
        self._arm()

    def _arm(self) -> None:
        """Make the unchecked calls over the current dict and frozen writes."""
        frozen = self._frozen
        pending: MutableMapping[bytes, Any] = self._pending  # type: ignore[assignment]
        calls = LogCalls(pending, None if frozen is None else frozen.get,
                         self._read_committed, self._freeze_at, weakly(self._freeze),
                         weakly(self._deleted), TOMBSTONE, self._heads)
        self.fast.get, self.fast.put = calls.get, calls.put
        self.fast.put_many, self.fast.delete, self.fast.replace = (
            calls.put_many, calls.delete, calls.replace)

    def _deleted(self) -> None:
        """Note that the log may hold a TOMBSTONE (called by ``LogCalls.delete``)."""
        self._deletes = True

    def _holds_writes(self) -> bool:
        return bool(self._pending) or self._frozen is not None

    def get(self, key: bytes) -> bytes | None:
        """Return the value stored under ``key``, or ``None``."""
        get = self.fast.get
        if get is None or self._state is not _OPEN:
            self._raise_unusable()
        if type(key) is not bytes or not key:
            _bad_key(key)
        return get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Store ``value`` under ``key``, replacing any previous value."""
        put = self.fast.put
        if put is None or self._state is not _OPEN:
            self._refuse_write()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if type(value) is not bytes:
            _not_bytes('value', value)
        put(key, value)
        self.fast.writes += 1

    def _put_many(self, pairs: list[Item]) -> None:
        put_many = self.fast.put_many
        if put_many is None or self._state is not _OPEN:
            self._refuse_write()
        put_many(pairs)
        self.fast.writes += len(pairs)

    def _delete(self, key: bytes) -> None:
        # Callers checked that this is an open write transaction.
        self.fast.delete(key)  # type: ignore[misc]

    def _may_write_in(self, lo: bytes | None, hi: bytes | None) -> bool:
        """False if no key in ``[lo, hi)`` was written in this transaction.

        Judged by the first two bytes of the keys (see :func:`head_cell`),
        so True may be wrong; a range over many two-byte prefixes is True.
        """
        first = _two_bytes(lo) if lo else 0
        if hi is None:
            last = 0xffff
        elif len(hi) > 2 or (len(hi) == 2 and hi[1] == 0):
            last = _two_bytes(hi)       # (the one-byte key hi[0] is below hi[0] + 0x00)
        elif hi:
            last = _two_bytes(hi) - 1   # keys below a short hi start lower
        else:
            return False
        if last - first >= _MOST_PREFIXES:
            return True
        heads = self._heads
        return any(heads[_prefix_cell(prefix)] for prefix in range(first, last + 1))

    def _log_items(self, make_base: Callable[[bytes | None, bytes | None], ItemIterator],
                   lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        """Iterate ``[lo, hi)`` with the pending writes applied.

        While no pending write can fall in the range, the items come from
        the snapshot alone; from the first write that may, the rest of the
        range is merged with the pending writes.

        :param make_base: ``make_base(lo, hi)`` iterates the snapshot over
            ``[lo, hi)``, in this read's direction.
        """
        if self._may_write_in(lo, hi):
            return merge_overlay(self._sorted_writes(), make_base(lo, hi), lo, hi, reverse)
        return self._unless_written(make_base, lo, hi, reverse, self.fast.writes)

    def _unless_written(self, make_base: Callable[[bytes | None, bytes | None], ItemIterator],
                        lo: bytes | None, hi: bytes | None, reverse: bool,
                        writes: int) -> ItemIterator:
        last = None     # the last key yielded
        base = make_base(lo, hi)
        try:
            for item in base:
                if self.fast.writes != writes:
                    writes = self.fast.writes
                    if self._pending is not None and self._may_write_in(lo, hi):
                        break
                yield item
                last = item[0]
            else:
                # The snapshot has no more; a write since may have added some.
                if (self.fast.writes == writes or self._pending is None
                        or not self._may_write_in(lo, hi)):
                    return
        finally:
            close = getattr(base, 'close', None)
            if close is not None:
                close()
        # A write may now fall anywhere past the last key yielded.
        if last is not None:
            if reverse:
                hi = last
            else:
                lo = last + b'\x00'
        yield from merge_overlay(self._sorted_writes(), make_base(lo, hi), lo, hi, reverse)

    def _freeze(self) -> None:
        first = self._frozen is None
        if first:
            self._frozen = _FrozenWrites()
        self._frozen.add(self._pending, self._deletes)  # type: ignore[union-attr,arg-type]
        if first:
            self._arm()     # reads must look in the frozen writes now

    def _sorted_writes(self) -> SortedDict[bytes, _Pending]:
        frozen = self._frozen
        self._freeze_at = sys.maxsize
        if frozen is not None:
            # Objects again, oldest writes first so that later ones win.
            self._frozen = None
            table: dict[bytes, _Pending] = {}
            frozen.drain_into(table.__setitem__, _setter(table, TOMBSTONE))
            table.update(self._pending)  # type: ignore[arg-type]
            self._pending = table
        pending = self._pending
        made = super()._sorted_writes()
        if made is not pending or frozen is not None:
            self._arm()
        return made

    def _drain_into(self, put: Callable[[bytes, bytes], object],
                    delete: Callable[[bytes], object]) -> None:
        """As :meth:`_WriteLog._drain_into`, the frozen writes first (so in order)."""
        frozen = self._frozen
        self._frozen = None
        if frozen is not None:
            frozen.drain_into(put, delete)
        super()._drain_into(put, delete)

    def _drop_log(self) -> None:
        self._frozen = None
        super()._drop_log()
        self.fast.get = self.fast.delete = self.fast.replace = None


def _setter(table: dict[bytes, _Pending], value: _Pending) -> Callable[[bytes], None]:
    """A callable that sets ``table[key] = value``."""
    def set_value(key: bytes) -> None:
        table[key] = value
    return set_value
