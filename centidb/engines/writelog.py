"""Pending writes kept in memory, and merging them over a snapshot.

:func:`merge_overlay` iterates committed data with pending writes applied;
:data:`TOMBSTONE` marks a pending delete. ``_WriteLog`` is the write log the
in-memory and LevelDB write transactions share.
"""

from __future__ import annotations

import enum
from typing import Any, Callable, Iterator, Union

from sortedcontainers import SortedDict

from centidb.engines.base import _OPEN, EngineTransaction, Item, ItemIterator, _bad_key, _not_bytes

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


def _irange_after(sdict: SortedDict[bytes, Any], after: bytes | None, lo: bytes | None,
                 hi: bytes | None, reverse: bool) -> Iterator[bytes]:
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


class _WriteLog(EngineTransaction):
    """Base of write transactions that keep their writes in memory.

    ``_log`` lists every write in order as ``(key, value or TOMBSTONE)``:
    appending is the cheapest thing a write can do, and a transaction that
    only writes needs nothing else. Reads need a lookup table: ``_pending``
    (key -> latest value) is built from the log on the first read after a
    write, then kept in step, and so is the SortedDict ``_sorted`` on the
    first iteration. Subclasses set ``_read_committed``, the getter of the
    data as of ``begin()``; ``_log`` is None in a read-only transaction.
    """

    _read_committed: Callable[[bytes], bytes | None]
    _log: list[tuple[bytes, _Pending]] | None
    _pending: dict[bytes, _Pending] | None
    _sorted: SortedDict[bytes, _Pending] | None

    def _start_log(self) -> None:
        self._log = []
        self._pending = None
        self._sorted = None
        self._log_deletes = False   # whether the log holds a TOMBSTONE
        # Until a read needs the lookup table, a write is just an extend.
        self._fast_put_many = self._log.extend

    def get(self, key: bytes) -> bytes | None:
        """Return the value stored under ``key``, or ``None``."""
        if self._state is not _OPEN:
            self._raise_unusable()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if self._log:
            value = self._pending_writes().get(key)
            if value is not None:
                return None if value is TOMBSTONE else value
        return self._read_committed(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Store ``value`` under ``key``, replacing any previous value."""
        if self._log is None or self._state is not _OPEN:
            self._refuse_write()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if type(value) is not bytes:
            _not_bytes('value', value)
        self._remember(key, value)
        self.writes += 1

    def _delete(self, key: bytes) -> None:
        self._log_deletes = True
        self._remember(key, TOMBSTONE)

    def _remember(self, key: bytes, value: _Pending) -> None:
        # Callers checked that the log is there (a write transaction's).
        self._log.append((key, value))  # type: ignore[union-attr]
        if self._pending is not None:
            self._pending[key] = value
            if self._sorted is not None:
                self._sorted[key] = value

    def _put_many(self, pairs: list[Item]) -> None:
        if self._log is None or self._state is not _OPEN:
            self._refuse_write()
        self._log += pairs
        if self._pending is not None:
            self._pending.update(pairs)
            if self._sorted is not None:
                self._sorted.update(pairs)
        self.writes += len(pairs)

    def _pending_writes(self) -> dict[bytes, _Pending]:
        """The latest pending value of each written key (a dict)."""
        if self._pending is None:
            self._pending = dict(self._log)  # type: ignore[arg-type]  # not None
            self._fast_put_many = None   # writes must now update the table
        return self._pending

    def _sorted_writes(self) -> SortedDict[bytes, _Pending]:
        """The pending writes as a SortedDict (made once, then kept)."""
        if self._sorted is None:
            self._sorted = SortedDict(self._pending_writes())
        return self._sorted

    def _drop_log(self) -> None:
        self._log = self._pending = self._sorted = self._fast_put_many = None
