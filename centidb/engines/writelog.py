"""Pending writes kept in memory, and merging them over a snapshot.

:func:`merge_overlay` iterates committed data with pending writes applied;
:data:`TOMBSTONE` marks a pending delete. ``_WriteLog`` is the write log the
in-memory and LevelDB write transactions share.
"""

from sortedcontainers import SortedDict

from centidb.engines.base import _OPEN, _bad_key, _not_bytes

__all__ = ['TOMBSTONE', 'merge_overlay']


class _Tombstone:
    """Type of :data:`TOMBSTONE`."""

    __slots__ = ()

    def __repr__(self):
        return 'TOMBSTONE'


#: Marks a key deleted in a pending-writes overlay (see :func:`merge_overlay`).
TOMBSTONE = _Tombstone()


def _irange_after(sdict, after, lo, hi, reverse):
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


def merge_overlay(overlay, base, lo=None, hi=None, reverse=False):
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
            okey = None
            if overlay:
                okey = next(
                    _irange_after(overlay, after, lo, hi, reverse), None)
            if okey is None:
                if base_item is None:
                    return
                use_overlay = False
            elif base_item is None:
                use_overlay = True
            elif reverse:
                use_overlay = okey >= base_item[0]
            else:
                use_overlay = okey <= base_item[0]

            if use_overlay:
                if base_item is not None and base_item[0] == okey:
                    base_item = next(base, None)
                after = okey
                value = overlay[okey]
                if value is not TOMBSTONE:
                    yield okey, value
            else:
                after = base_item[0]
                yield base_item
                base_item = next(base, None)
    finally:
        close = getattr(base, 'close', None)
        if close is not None:
            close()


class _WriteLog:
    """Mixin for write transactions that keep their writes in memory.

    ``_log`` lists every write in order as ``(key, value or TOMBSTONE)``:
    appending is the cheapest thing a write can do, and a transaction that
    only writes needs nothing else. Reads need a lookup table: ``_pending``
    (key -> latest value) is built from the log on the first read after a
    write, then kept in step, and so is the SortedDict ``_sorted`` on the
    first iteration. Subclasses set ``_read_committed``, the getter of the
    data as of ``begin()``; ``_log`` is None in a read-only transaction.
    """

    def _start_log(self):
        self._log = []
        self._pending = None
        self._sorted = None
        self._log_deletes = False   # whether the log holds a TOMBSTONE
        # Until a read needs the lookup table, a write is just an extend.
        self._fast_put_many = self._log.extend

    def get(self, key):
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

    def put(self, key, value):
        """Store ``value`` under ``key``, replacing any previous value."""
        if self._log is None or self._state is not _OPEN:
            self._refuse_write()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if type(value) is not bytes:
            _not_bytes('value', value)
        self._remember(key, value)
        self.writes += 1

    def _delete(self, key):
        self._log_deletes = True
        self._remember(key, TOMBSTONE)

    def _remember(self, key, value):
        self._log.append((key, value))
        if self._pending is not None:
            self._pending[key] = value
            if self._sorted is not None:
                self._sorted[key] = value

    def _put_many(self, pairs):
        if self._log is None or self._state is not _OPEN:
            self._refuse_write()
        self._log += pairs
        if self._pending is not None:
            self._pending.update(pairs)
            if self._sorted is not None:
                self._sorted.update(pairs)
        self.writes += len(pairs)

    def _pending_writes(self):
        """The latest pending value of each written key (a dict)."""
        if self._pending is None:
            self._pending = dict(self._log)
            self._fast_put_many = None   # writes must now update the table
        return self._pending

    def _sorted_writes(self):
        """The pending writes as a SortedDict (made once, then kept)."""
        if self._sorted is None:
            self._sorted = SortedDict(self._pending_writes())
        return self._sorted

    def _drop_log(self):
        self._log = self._pending = self._sorted = self._fast_put_many = None
