"""The in-memory engine, :class:`MemoryEngine` (formerly ``ListEngine``)."""

from __future__ import annotations

import bisect
import collections
import itertools
import operator
import threading
from typing import Mapping

from sortedcontainers import SortedDict

from centidb.engines.base import (
    Engine,
    EngineTransaction,
    ItemIterator,
    _bad_key,
    _not_bytes,
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

    Data lives in a :class:`~sortedcontainers.SortedDict`: ``get`` is
    O(log n), and neither a write nor an iteration copies the data.

    * A write transaction buffers its writes in an overlay; ``commit()``
      applies them, ``abort()`` drops them.
    * A read transaction is a true snapshot without a copy: while readers are
      open, each commit records, per key it changes, the value it replaced.
      A reader that began at version ``v`` reads, for each key, the value
      replaced by the earliest commit after ``v`` that touched the key, or
      else the current value. The record is dropped when the last reader
      ends, so a long-lived reader keeps every replaced value meanwhile.
    * Iterators never hold a live ``SortedDict`` iterator across a
      ``yield``: each step looks up the next keys after the last one yielded,
      so concurrent commits and the transaction's own writes are safe.
    * Thread-safe; nothing is persisted, and ``close()`` drops the data.
    """

    def __init__(self) -> None:
        super().__init__()
        self._data: SortedDict[bytes, bytes] = SortedDict()
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
        self._data = SortedDict()
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
        return self._data.get(key)

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
            self._apply({key: value})
        finally:
            self._release_writer()

    def _lookup(self, key: bytes, version: int) -> _Pending:
        """Return the value of ``key`` as of ``version``, or TOMBSTONE.

        Lock-free: a commit bumps the version first, then records each
        replaced value before changing the key, and this reads in reverse
        order.
        """
        value = self._data.get(key, TOMBSTONE)
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
                    _irange_after(self._data, after, lo, hi, reverse), _CHUNK))
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

    def _apply(self, overlay: Mapping[bytes, _Pending]) -> None:
        """Apply pending writes (a mapping), recording replaced values."""
        with self._lock:
            data = self._data
            version = self._version + 1
            self._version = version
            history = self._history if self._readers else None
            for key, value in overlay.items():
                old = data.get(key, TOMBSTONE)
                if old is TOMBSTONE and value is TOMBSTONE:
                    continue
                if history is not None:
                    changes = history.get(key)
                    if changes is None:
                        history[key] = [(version, old)]
                    else:
                        changes.append((version, old))
                if value is TOMBSTONE:
                    del data[key]
                else:
                    data[key] = value


class _MemoryReadTransaction(EngineTransaction):
    """A snapshot of a :class:`MemoryEngine` as of ``begin()``."""

    engine: MemoryEngine

    def __init__(self, engine: MemoryEngine) -> None:
        super().__init__(engine, False)
        self._version = engine._register_reader()

    def _get(self, key: bytes) -> bytes | None:
        value = self.engine._lookup(key, self._version)
        return None if value is TOMBSTONE else value

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        return self.engine._snapshot_items(self._version, lo, hi, reverse)

    def _commit(self) -> None:
        self.engine._unregister_reader(self._version)

    _abort = _commit


class _MemoryWriteTransaction(_WriteLog, EngineTransaction):
    """Committed data as of ``begin()`` plus the pending writes."""

    engine: MemoryEngine

    def __init__(self, engine: MemoryEngine) -> None:
        super().__init__(engine, True)
        self._version = engine._version  # stable: writers are serialized
        self._read_committed = engine._data.get
        self._start_log()

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        base = self.engine._snapshot_items(self._version, lo, hi, reverse)
        # Always overlaid: later writes must show up in this iterator.
        return merge_overlay(self._sorted_writes(), base, lo, hi, reverse)

    def _commit(self) -> None:
        pending = self._pending
        self._drop_log()
        if pending:
            self.engine._apply(pending)

    def _abort(self) -> None:
        self._drop_log()


#: The old name of :class:`MemoryEngine` (the same class), kept so code and
#: ``centidb.open('ListEngine')`` keep working; it holds no list.
ListEngine = MemoryEngine
