"""Pending writes kept in memory, and merging them over a snapshot.

:func:`merge_overlay` iterates committed data with pending writes applied;
:data:`TOMBSTONE` marks a pending delete. ``_WriteLog`` keeps the pending
writes of the in-memory and LevelDB write transactions: one dict entry per
key written, holding the caller's objects.
"""

from __future__ import annotations

import enum
import itertools
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

    ``_pending`` maps each written key to its latest value, or to
    :data:`TOMBSTONE` for a delete. It holds the very ``bytes`` objects the
    caller passed, and nothing per write besides its table entry: no tuple,
    no log of superseded writes, no copy. A write is one dict update
    (``_fast_put_many`` is the dict's own ``update``, which runs in C), a
    read one lookup. Deleting a key that only this transaction wrote drops
    its entry, rather than keep a tombstone. The first iteration turns the
    dict into a :class:`~sortedcontainers.SortedDict`, kept from then on.
    An engine that commits through a batch empties the table with
    :meth:`_drain` as it copies it, so each write's objects are freed once
    copied and the commit's peak memory stays near that of the batch alone.

    Subclasses set ``_read_committed``, the getter of the data as of
    ``begin()``; ``_pending`` is None in a read-only transaction, and after
    the transaction ends.
    """

    _read_committed: Callable[[bytes], bytes | None]
    _pending: dict[bytes, _Pending] | SortedDict[bytes, _Pending] | None

    def _start_log(self) -> None:
        self._pending = {}
        self._deletes = False   # whether a TOMBSTONE was ever written
        self._fast_put_many = self._pending.update

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
        self.writes += 1

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
        self.writes += len(pairs)

    def _sorted_writes(self) -> SortedDict[bytes, _Pending]:
        """The pending writes as a SortedDict, which they stay from now on."""
        pending = self._pending
        if isinstance(pending, SortedDict):
            return pending
        # Made from the dict, which is then dropped: never both at once.
        made: SortedDict[bytes, _Pending] = SortedDict(pending or ())
        self._pending = made
        self._fast_put_many = made.update
        return made

    def _drain(self) -> Iterator[tuple[bytes, _Pending]]:
        """Take the pending writes away, yielding each as it is removed.

        Yields every ``(key, value or TOMBSTONE)`` once, in no particular
        order (the latest write of each key, so order does not matter), and
        drops each pair from the table as it goes: a consumer that keeps
        only a compact copy (a write batch) frees the objects meanwhile.
        Afterwards the transaction holds no pending writes and refuses more.
        """
        pending = self._pending
        self._drop_log()
        if not pending:
            return iter(())
        # A SortedDict: a plain copy, so the sorted list of keys is dropped.
        table = pending if type(pending) is dict else dict(pending)
        # popitem() from the end until it is empty, driven in C by islice;
        # when the consumer is done, the emptied table goes with the iterator.
        return itertools.islice(iter(table.popitem, None), len(table))

    def _drop_log(self) -> None:
        self._pending = self._fast_put_many = None
