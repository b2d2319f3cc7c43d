"""The in-memory engine, :class:`MemoryEngine` (formerly ``ListEngine``)."""

from __future__ import annotations

import bisect
import collections
import itertools
import operator
import threading
from typing import Any, Callable, Generator, Iterator, Mapping, Optional

from sortedcontainers import SortedDict, SortedList

from centidb.engines.base import (
    _OPEN,
    Engine,
    EngineTransaction,
    Item,
    ItemIterator,
    _bad_key,
    _check_bounds,
    _chunk_sizes,
    _not_bytes,
    chunked,
)
from centidb.engines.writelog import (
    TOMBSTONE,
    _irange_after,
    _Pending,
    _WriteLog,
    merge_overlay,
)

__all__ = ['ListEngine', 'MemoryEngine']

_CHUNK = 128  # keys a snapshot iterator fetches per step under the lock
_first = operator.itemgetter(0)
_Getter = Callable[[bytes], Optional[bytes]]  # an unchecked get (see FastCalls.get)


def _merge_key_chunks(a: list[bytes], b: list[bytes], reverse: bool) -> list[bytes]:
    """Merge two sorted key chunks, cut where either may be incomplete."""
    if not b:
        return a
    limits = [chunk[-1] for chunk in (a, b) if len(chunk) == _CHUNK]
    keys = sorted(set(a).union(b), reverse=reverse)
    if limits:
        if reverse:
            limit = max(limits)
            keys = [k for k in keys if k >= limit]
        else:
            limit = min(limits)
            keys = [k for k in keys if k <= limit]
    return keys


class MemoryEngine(Engine):
    """An in-memory engine, the reference the other engines are tested against.

    Data lives in a ``dict``, its keys in a :class:`~sortedcontainers.SortedList`:
    ``get`` is one dict lookup, neither a write nor an iteration copies the
    data, and the cyclic garbage collector does not walk the values (a
    ``dict`` holding only ``bytes`` is not tracked).

    * A write transaction buffers its writes in an overlay; ``commit()``
      applies them in one update (a large one sorts the keys in one go
      rather than insert each), ``abort()`` drops them.
    * A read transaction is a true snapshot without a copy: while readers are
      open, each commit records, per key it changes, the value it replaced.
      A reader that began at version ``v`` reads, for each key, the value
      replaced by the earliest commit after ``v`` that touched the key, or
      else the current value. The record is dropped when the last reader
      ends, so a long-lived reader keeps every replaced value meanwhile.
    * Iterators never hold a live iterator of the keys across a
      ``yield``: each step looks up the next keys after the last one yielded,
      so concurrent commits and the transaction's own writes are safe. (The
      lists of ``item_chunks`` are cut from one live iterator, but only while
      no commit has come since the snapshot, checked under the lock.)
    * Thread-safe; nothing is persisted, and ``close()`` drops the data.
    """

    def __init__(self) -> None:
        super().__init__()
        # The committed data: a plain dict of bytes to bytes, which the cyclic
        # garbage collector does not walk, and its keys in order.
        self._values: dict[bytes, bytes] = {}
        self._keys: SortedList[bytes] = SortedList()
        self._version = 0  # number of commits so far
        self._readers: collections.Counter[int] = collections.Counter()  # version -> open readers
        # key -> [(commit version, replaced value or TOMBSTONE), ...]
        self._history: SortedDict[bytes, list[tuple[int, _Pending]]] = SortedDict()
        self._lock = threading.RLock()

    def _begin(self, write: bool) -> EngineTransaction:
        if write:
            return _MemoryWriteTransaction(self)
        return _MemoryReadTransaction(self)

    def _close(self) -> None:
        self._values = {}
        self._keys = SortedList()
        self._history = SortedDict()

    def get(self, key: bytes) -> bytes | None:
        """Return the value stored under `key`, or ``None``.

        :param key: non-empty ``bytes``.
        :returns: the value (``bytes``), or ``None``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        """
        if self._closed:
            raise self._closed_error()
        if type(key) is not bytes or not key:
            _bad_key(key)
        return self._values.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Store `value` under `key` (auto-commit).

        :param key: non-empty ``bytes``.
        :param value: ``bytes``.
        :raises TypeError: if `key` or `value` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: if this thread holds a
            write transaction on this engine (use that instead).
        """
        if self._closed:
            raise self._closed_error()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if type(value) is not bytes:
            _not_bytes('value', value)
        self._write_now(key, value)

    def delete(self, key: bytes) -> None:
        """Remove `key` (auto-commit); removing a missing key is fine.

        :param key: non-empty ``bytes``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: if this thread holds a
            write transaction on this engine (use that instead).
        """
        if self._closed:
            raise self._closed_error()
        if type(key) is not bytes or not key:
            _bad_key(key)
        self._write_now(key, TOMBSTONE)

    def _write_now(self, key: bytes, value: _Pending) -> None:
        """Commit one write without building a transaction."""
        self._acquire_writer()
        try:
            self._apply({key: value}, value is TOMBSTONE)
        finally:
            self._release_writer()

    def _lookup(self, key: bytes, version: int) -> _Pending:
        """Return the value of ``key`` as of ``version``, or TOMBSTONE.

        Lock-free: a commit bumps the version first, then records each
        replaced value before changing the key, and this reads in reverse
        order.
        """
        value = self._values.get(key, TOMBSTONE)
        if version != self._version:
            changes = self._history.get(key)
            if changes:
                i = bisect.bisect_right(changes, version, key=_first)
                if i < len(changes):
                    return changes[i][1]
        return value

    def _snapshot_items(self, version: int, lo: bytes | None, hi: bytes | None,
                        reverse: bool) -> ItemIterator:
        """Iterate the committed data as of ``version``."""
        after = None
        while True:
            with self._lock:
                keys = list(itertools.islice(
                    _irange_after(self._keys, after, lo, hi, reverse), _CHUNK))
                if version != self._version and self._history:
                    keys = _merge_key_chunks(keys, list(itertools.islice(
                        _irange_after(self._history, after, lo, hi, reverse),
                        _CHUNK)), reverse)
            if not keys:
                return
            # Values are read at yield time; _lookup is correct regardless
            # of commits since the keys were fetched.
            for key in keys:
                value = self._lookup(key, version)
                if value is not TOMBSTONE:
                    yield key, value
            after = keys[-1]

    def _snapshot_chunks(self, version: int, lo: bytes | None, hi: bytes | None,
                         reverse: bool, values: bool = True) -> Generator[list[Any], None, None]:
        """The lists of ``item_chunks`` (``key_chunks`` without `values`) as of ``version``.

        While no commit has come since ``version``, the data is the snapshot:
        each list is sliced from the sorted keys in C, under the lock. After
        a commit, the rest is cut from :meth:`_snapshot_items`.
        """
        last = None
        with self._lock:
            keys: Iterator[bytes] | None = None
            if version == self._version:
                keys = self._keys.irange(lo, hi, (True, False), reverse)
        if keys is not None:
            for size in _chunk_sizes():
                with self._lock:
                    if version != self._version:
                        break
                    names = list(itertools.islice(keys, size))
                    chunk = (list(zip(names, map(self._values.__getitem__, names))) if values
                             else names)
                if chunk:
                    yield chunk
                if len(chunk) < size:
                    return
                last = names[-1]
        if last is not None:        # go on past the last key yielded
            if reverse:
                hi = last
            else:
                lo = last + b'\x00'
        items = self._snapshot_items(version, lo, hi, reverse)
        if values:
            yield from chunked(items, None, None, reverse)
        else:
            yield from chunked((key for key, _ in items), None, None, reverse, keys=True)

    def _first(self, version: int, lo: bytes | None, hi: bytes | None,
               reverse: bool) -> Item | None:
        """Return the first pair of ``_snapshot_items(version, lo, hi, reverse)``, or None."""
        with self._lock:
            if version == self._version:
                # No commit since: the data is the snapshot, and the lock
                # keeps it so during the seek.
                if reverse:
                    key = next(self._keys.irange(lo, hi, (True, False), True), None)
                else:
                    key = _seek(self._keys, lo)
                    if hi is not None and key is not None and key >= hi:
                        key = None
                return None if key is None else (key, self._values[key])
        return next(self._snapshot_items(version, lo, hi, reverse), None)

    def _first_key(self, version: int, lo: bytes) -> bytes | None:
        """Return the first key ``>= lo`` as of ``version``, or None (a seek cursor's step)."""
        with self._lock:
            if version == self._version:
                return _seek(self._keys, lo)
        found = next(self._snapshot_items(version, lo, None, False), None)
        return None if found is None else found[0]

    def _register_reader(self) -> int:
        with self._lock:
            version = self._version
            self._readers[version] += 1
        return version

    def _unregister_reader(self, version: int) -> None:
        with self._lock:
            self._readers[version] -= 1
            if not self._readers[version]:
                del self._readers[version]
            if not self._readers:
                self._history = SortedDict()

    def _apply(self, overlay: Mapping[bytes, _Pending], deletes: bool) -> None:
        """Apply pending writes, recording replaced values while readers are open.

        :param overlay: maps each key written to its value, or TOMBSTONE.
        :param deletes: False if no value in `overlay` is TOMBSTONE.
        """
        with self._lock:
            values, keys = self._values, self._keys
            version = self._version + 1
            self._version = version
            if self._readers:
                history = self._history
                for key, value in overlay.items():
                    old = values.get(key, TOMBSTONE)
                    if old is TOMBSTONE and value is TOMBSTONE:
                        continue
                    changes = history.get(key)
                    if changes is None:
                        history[key] = [(version, old)]
                    else:
                        changes.append((version, old))
            if deletes:
                for key, value in overlay.items():
                    if value is TOMBSTONE and values.pop(key, None) is not None:
                        keys.remove(key)
                overlay = {key: value for key, value in overlay.items()
                           if value is not TOMBSTONE}
            new = [key for key in overlay if key not in values]
            values.update(overlay)  # type: ignore[arg-type]  # no TOMBSTONE left
            # One update: SortedList sorts a large one's keys at once, in C,
            # rather than insert each key in turn.
            keys.update(new)


def _seek(keys: SortedList[bytes], lo: bytes | None) -> bytes | None:
    """The first of `keys` not below `lo`, or None: ``irange(lo)`` without its frames.

    It reads the layout of sortedcontainers' ``SortedList`` (``_lists``, its
    sorted sublists, and ``_maxes``, their last keys): two bisections.
    """
    maxes = keys._maxes  # type: ignore[attr-defined]
    pos = 0 if lo is None else bisect.bisect_left(maxes, lo)
    if pos == len(maxes):
        return None
    sublist = keys._lists[pos]  # type: ignore[attr-defined]
    return sublist[0 if lo is None else bisect.bisect_left(sublist, lo)]  # type: ignore[no-any-return]


def _snapshot_getter(engine: MemoryEngine, version: int) -> _Getter:
    """An unchecked ``get`` of `engine`'s data as of `version` (see ``_lookup``)."""
    data_get = engine._values.get
    lookup = engine._lookup

    def get(key: bytes) -> bytes | None:
        value = data_get(key)
        if version == engine._version:  # read after the value, as _lookup does
            return value
        found = lookup(key, version)
        return None if found is TOMBSTONE else found
    return get


def _overlay_getter(pending: Mapping[bytes, _Pending], committed: _Getter) -> _Getter:
    """An unchecked ``get`` of the `committed` data with the `pending` writes applied."""
    pending_get = pending.get

    def get(key: bytes) -> bytes | None:
        value = pending_get(key)
        if value is None:
            return committed(key)
        return None if value is TOMBSTONE else value
    return get


class _SeekCursor:
    """A read transaction's ``fast.seek_cursor`` (see ``FastCalls``): seeks its snapshot.

    :param engine: the :class:`MemoryEngine`.
    :param version: the snapshot's version.
    """

    __slots__ = ('_first_key', '_version', '_key')

    def __init__(self, engine: MemoryEngine, version: int) -> None:
        self._first_key = engine._first_key
        self._version = version
        self._key = b''

    def set_range(self, key: bytes) -> bool:
        """Move to the first key ``>= key``; False if there is none."""
        found = self._first_key(self._version, key)
        if found is None:
            return False
        self._key = found
        return True

    def key(self) -> bytes:
        """The key at the current position."""
        return self._key


class _MemoryReadTransaction(EngineTransaction):
    """A snapshot of a :class:`MemoryEngine` as of ``begin()``."""

    engine: MemoryEngine

    def __init__(self, engine: MemoryEngine) -> None:
        super().__init__(engine, False)
        self._version = engine._register_reader()
        self.fast.get = _snapshot_getter(engine, self._version)
        self.fast.seek_cursor = _SeekCursor(engine, self._version)

    def _get(self, key: bytes) -> bytes | None:
        value = self.engine._lookup(key, self._version)
        return None if value is TOMBSTONE else value

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """Return the first ``(key, value)`` :meth:`items` would yield, or None."""
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        _check_bounds(lo, hi)
        return self.engine._first(self._version, lo, hi, bool(reverse))

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        return self.engine._snapshot_items(self._version, lo, hi, reverse)

    def _item_chunks(self, lo: bytes | None, hi: bytes | None,
                     reverse: bool) -> Generator[list[Item], None, None]:
        return self.engine._snapshot_chunks(self._version, lo, hi, reverse)

    def _key_chunks(self, lo: bytes | None, hi: bytes | None,
                    reverse: bool) -> Generator[list[bytes], None, None]:
        return self.engine._snapshot_chunks(self._version, lo, hi, reverse, False)

    def _commit(self) -> None:
        self.fast.get = self.fast.seek_cursor = None
        self.engine._unregister_reader(self._version)

    _abort = _commit


class _MemoryWriteTransaction(_WriteLog):
    """Committed data as of ``begin()`` plus the pending writes."""

    engine: MemoryEngine

    def __init__(self, engine: MemoryEngine) -> None:
        super().__init__(engine, True)
        self._version = engine._version  # stable: writers are serialized
        self._read_committed = engine._values.get
        self._start_log()
        self.fast.get = _overlay_getter(
            self._pending, self._read_committed)  # type: ignore[arg-type]  # a dict now

    def _sorted_writes(self) -> SortedDict[bytes, _Pending]:
        pending = self._pending
        writes = super()._sorted_writes()
        if writes is not pending:   # a new table: the getter must read it
            self.fast.get = _overlay_getter(writes, self._read_committed)
        return writes

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """Return the first ``(key, value)`` :meth:`items` would yield, or None."""
        if self._pending or self._state is not _OPEN or self.engine._closed:
            return super().first(lo, hi, reverse)
        _check_bounds(lo, hi)
        return self.engine._first(self._version, lo, hi, bool(reverse))

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        base = self.engine._snapshot_items(self._version, lo, hi, reverse)
        # Always overlaid: later writes must show up in this iterator.
        return merge_overlay(self._sorted_writes(), base, lo, hi, reverse)

    def _item_chunks(self, lo: bytes | None, hi: bytes | None,
                     reverse: bool) -> Generator[list[Item], None, None]:
        if self._pending:
            return super()._item_chunks(lo, hi, reverse)
        # Nothing written yet: the committed data is all there is (chunks
        # need not follow later writes: see item_chunks).
        return self.engine._snapshot_chunks(self._version, lo, hi, reverse)

    def _key_chunks(self, lo: bytes | None, hi: bytes | None,
                    reverse: bool) -> Iterator[list[bytes]]:
        if self._pending:
            return super()._key_chunks(lo, hi, reverse)
        return self.engine._snapshot_chunks(self._version, lo, hi, reverse, False)

    def _commit(self) -> None:
        pending, deletes = self._pending, self._deletes
        self._end()
        if pending:
            self.engine._apply(pending, deletes)

    def _abort(self) -> None:
        self._end()

    def _end(self) -> None:
        self._drop_log()
        self.fast.get = None


#: The old name of :class:`MemoryEngine` (the same class), kept so code and
#: ``centidb.open('ListEngine')`` keep working; it holds no list.
ListEngine = MemoryEngine
