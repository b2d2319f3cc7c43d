"""The engine base classes: :class:`Engine` and :class:`EngineTransaction`.

They hold what every engine shares: argument and state checks, the writer
lock, the auto-commit engine methods and invalidation on close. (The checks
of a database directory, for the engines on disk, are in
:mod:`centidb.engines.paths`.) The interface they implement is described in
:mod:`centidb.engines`.
"""

from __future__ import annotations

import bisect
import itertools
import threading
import weakref
from types import TracebackType
from typing import (
    Any, Generator, Iterable, Iterator, Literal, NoReturn, Tuple, TypeVar,
)

from centidb.engines.fastcalls import FastCalls, FastCallsLike, SeekCursor
from centidb.errors import EngineClosedError, TransactionError

__all__ = ['Engine', 'EngineTransaction', 'FastCalls', 'FastCallsLike', 'Transaction', 'Item',
           'ItemIterator', 'KeyIterator', 'SeekCursor']

# Type aliases, for annotations (evaluated at import: typing's spelling).
#: A ``(key, value)`` pair of ``bytes``, as ``items()`` yields it.
Item = Tuple[bytes, bytes]
#: What ``items()`` returns: a generator of :data:`Item`; ``close()`` ends it.
ItemIterator = Generator[Item, None, None]
#: What ``keys()`` returns: a generator of keys; ``close()`` ends it.
KeyIterator = Generator[bytes, None, None]


_T = TypeVar('_T')
_Self = TypeVar('_Self')

# Transaction states, as reported by EngineTransaction.state.
_OPEN = 'open'
_COMMITTED = 'committed'
_ABORTED = 'aborted'
_CLOSED = 'closed'  # the engine was closed while the transaction was open


def _not_bytes(name: str, value: object) -> NoReturn:
    raise TypeError(f'{name} must be bytes, not {type(value).__name__}')


def _bad_key(key: object) -> NoReturn:
    """Raise the error for a key that is not non-empty bytes."""
    if type(key) is not bytes:
        _not_bytes('key', key)
    raise ValueError('key must not be empty: engines store non-empty keys only')


def _check_bounds(lo: bytes | None, hi: bytes | None) -> None:
    if lo is not None and type(lo) is not bytes:
        _not_bytes('lo', lo)
    if hi is not None and type(hi) is not bytes:
        _not_bytes('hi', hi)


class EngineTransaction:
    """A transaction on an :class:`Engine`; see :mod:`centidb.engines`.

    Subclasses implement ``_get``, ``_put``, ``_delete``, ``_items``,
    ``_commit`` and ``_abort``; the public methods check arguments and state
    first. ``_commit`` and ``_abort`` must release the transaction's
    resources, also when ``_commit`` fails. Made by :meth:`Engine.begin`;
    the arguments are kept as attributes of the same names.

    A subclass's constructor calls this one first, which makes :attr:`fast`
    with no unchecked call; an engine that offers some sets them on it (see
    :class:`~centidb.engines.FastCalls`), and sets them back to
    ``None`` when the transaction ends.

    Every method except :meth:`abort` raises
    :class:`~centidb.errors.TransactionError` once the transaction has
    ended, and :class:`~centidb.errors.EngineClosedError` once the engine is
    closed; iterators check this before each step.

    :param engine: the :class:`Engine` that began it.
    :param write: True if it may write.
    """

    # A slot, so that the record paths find `fast` without a dict lookup.
    __slots__ = ('fast', '__dict__', '__weakref__')

    def __init__(self, engine: Engine, write: bool) -> None:
        self.engine = engine
        self.write = bool(write)
        #: The unchecked calls this transaction offers, and its write
        #: counter (:class:`~centidb.engines.FastCalls`).
        self.fast = FastCalls()
        self._state = _OPEN
        self._registered = False

    def __repr__(self) -> str:
        kind = 'write' if self.write else 'read'
        return f'<{type(self).__name__} {kind} {self.state}>'

    @property
    def writes(self) -> int:
        """Alias of ``fast.writes``, the count :meth:`item_chunks` callers compare."""
        return self.fast.writes

    @writes.setter
    def writes(self, value: int) -> None:
        self.fast.writes = value

    @property
    def state(self) -> str:
        """``'open'``, ``'committed'``, ``'aborted'``, or ``'closed'``.

        ``'closed'`` means the engine was closed while this was open.
        """
        return self._state

    def _raise_unusable(self) -> NoReturn:
        if self.engine._closed:
            raise self.engine._closed_error()
        raise TransactionError(
            f'this transaction was already {self._state}; begin a new one')

    def _put_many_failed(self, exc: Exception, pairs: list[Item]) -> NoReturn:
        """Raise the engine's error for `exc`, raised by a write call of :attr:`fast`."""
        raise exc

    def _refuse_write(self) -> NoReturn:
        """Raise why this transaction cannot write now (ended, or read-only)."""
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        raise TransactionError(
            'put() in a read-only transaction; use begin(write=True)')

    def get(self, key: bytes) -> bytes | None:
        """Return the value stored under `key`, or ``None``.

        :param key: non-empty ``bytes``.
        :returns: the value (``bytes``), or ``None``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        """
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        if type(key) is not bytes or not key:
            _bad_key(key)
        return self._get(key)

    def get_many(self, keys: Iterable[bytes]) -> list[bytes | None]:
        """As :meth:`get` for each of `keys`, in order; a networked engine batches them.

        :param keys: an iterable of non-empty ``bytes``.
        :returns: a ``list`` of values (``bytes``) or ``None``, one per key.
        :raises TypeError: if a key is not ``bytes``.
        :raises ValueError: if a key is empty.
        """
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        checked = list(keys)
        for key in checked:
            if type(key) is not bytes or not key:
                _bad_key(key)
        return self._get_many(checked)

    def _get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return [self.get(key) for key in keys]    # engines override it to batch

    def put(self, key: bytes, value: bytes) -> None:
        """Store `value` under `key`, replacing any previous value.

        :param key: non-empty ``bytes``.
        :param value: ``bytes``.
        :raises TypeError: if `key` or `value` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: in a read-only transaction.
        :raises ~centidb.errors.EngineError: if the engine cannot store it
            (:class:`LmdbEngine`: a key longer than :attr:`Engine.max_key_size`,
            or :class:`~centidb.errors.MapFullError`, which aborts the
            transaction).
        """
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        if not self.write:
            raise TransactionError(
                'put() in a read-only transaction; use begin(write=True)')
        if type(key) is not bytes or not key:
            _bad_key(key)
        if type(value) is not bytes:
            _not_bytes('value', value)
        self._put(key, value)
        self.fast.writes += 1

    def delete(self, key: bytes) -> None:
        """Remove `key`; removing a missing key does nothing.

        :param key: non-empty ``bytes``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: in a read-only transaction.
        """
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        if not self.write:
            raise TransactionError(
                'delete() in a read-only transaction; use begin(write=True)')
        if type(key) is not bytes or not key:
            _bad_key(key)
        self._delete(key)
        self.fast.writes += 1

    def delete_range(self, lo: bytes | None, hi: bytes | None) -> None:
        """Remove every key ``lo <= key < hi``, as deleting each of them would.

        The bounds are those of :meth:`items` (``None``: unbounded; an empty
        range deletes nothing), but both must be given. Engines may do it
        without a round trip or a commit operation per key.

        :param lo: the lowest key removed (``bytes``), or ``None``.
        :param hi: the key at which to stop (kept), or ``None``.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        :raises ~centidb.errors.TransactionError: in a read-only transaction.
        """
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        if not self.write:
            raise TransactionError(
                'delete_range() in a read-only transaction; use begin(write=True)')
        _check_bounds(lo, hi)
        if lo is not None and hi is not None and lo >= hi:
            return
        self._delete_range(lo, hi)
        self.fast.writes += 1

    def items(self, lo: bytes | None = None, hi: bytes | None = None,
               reverse: bool = False) -> ItemIterator:
        """Iterate ``(key, value)`` with ``lo <= key < hi``; see the interface.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of ``(key, value)``; it survives writes made
            through this transaction between steps.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        return self._checked_items(lo, hi, reverse)

    def keys(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> KeyIterator:
        """Iterate the keys ``lo <= key < hi``, like :meth:`items`.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of keys.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        return _keys_only(self._checked_items(lo, hi, reverse))

    def count(self, lo: bytes | None = None, hi: bytes | None = None) -> int:
        """Return how many keys ``lo <= key < hi`` there are, as :meth:`keys` would yield.

        Engines may count without making a Python object per key.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :returns: the number of keys in the range.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        _check_bounds(lo, hi)
        if lo is not None and hi is not None and lo >= hi:
            return 0
        return self._count(lo, hi)

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
               reverse: bool = False) -> Item | None:
        """Return the first ``(key, value)`` :meth:`items` would yield, or None.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: ``(key, value)``, or ``None`` if the range is empty.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        items = self.items(lo, hi, reverse)
        try:
            return next(items, None)
        finally:
            items.close()

    def item_chunks(self, lo: bytes | None = None, hi: bytes | None = None,
                    reverse: bool = False) -> Generator[list[Item], None, None]:
        """Iterate the pairs :meth:`items` would yield, as lists of consecutive pairs.

        For callers that step through many pairs in a loop of their own:
        the lists are read ahead (from a few pairs up to
        :data:`MAX_CHUNK`), so they do not follow the transaction's later
        writes, nor its end. Before using each pair the caller compares
        ``fast.writes`` with its value when the call was made and, if it
        changed, closes the iterator and calls again past the last pair it
        used (which raises if the transaction ended).

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of non-empty lists of ``(key, value)``.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        if self._empty_range(lo, hi):
            return _no_chunks()
        return self._item_chunks(lo, hi, bool(reverse))

    def key_chunks(self, lo: bytes | None = None, hi: bytes | None = None,
                   reverse: bool = False) -> Iterator[list[bytes]]:
        """As :meth:`item_chunks`, but lists of keys alone, for callers that need no value.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of non-empty lists of keys.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        if self._empty_range(lo, hi):
            return _no_chunks()
        return self._key_chunks(lo, hi, bool(reverse))

    def _empty_range(self, lo: bytes | None, hi: bytes | None) -> bool:
        """Check the state and the bounds; True if ``[lo, hi)`` holds no key."""
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        _check_bounds(lo, hi)
        return lo is not None and hi is not None and lo >= hi

    def _checked_items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        if self._empty_range(lo, hi):
            return self._guarded(iter(()))
        return self._guarded(self._items(lo, hi, bool(reverse)))

    def _guarded(self, it: Iterator[Item]) -> ItemIterator:
        """Run ``it``, raising if this transaction ends before a next step."""
        engine = self.engine
        try:
            if self._state is not _OPEN or engine._closed:
                self._raise_unusable()
            for item in it:
                yield item
                if self._state is not _OPEN or engine._closed:
                    self._raise_unusable()
        finally:
            close = getattr(it, 'close', None)
            if close is not None:
                close()

    def commit(self) -> None:
        """Make the writes permanent and end the transaction.

        Raises ``TransactionError`` if the transaction already ended. If
        committing fails, the transaction is aborted and the error raised.
        """
        if self.engine._closed:
            raise self.engine._closed_error()
        if self._state is not _OPEN:
            raise TransactionError(
                f'cannot commit: this transaction was already {self._state}')
        try:
            self._commit()
        except BaseException:
            self._finish(_ABORTED)
            raise
        self._finish(_COMMITTED)

    def abort(self) -> None:
        """Discard the writes and end the transaction.

        Aborting a transaction that already ended (also by the engine's
        ``close()``) does nothing.
        """
        if self._state is not _OPEN:
            return
        if self.engine._closed:
            raise self.engine._closed_error()
        try:
            self._abort()
        finally:
            self._finish(_ABORTED)

    def _finish(self, state: str) -> None:
        self._state = state
        self.fast.writes += 1   # tells iterators that read ahead (see item_chunks)
        self.engine._transaction_ended(self)

    def _invalidate(self, state: str) -> None:
        """End the transaction without raising (engine close, garbage)."""
        if self._state is _OPEN:
            try:
                self._abort()
            except Exception:
                pass
            self._finish(state)

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        state = self.state
        if exc_type is None:
            # A transaction the engine's close() ended raises here: its
            # writes were lost.
            if state is _OPEN or state is _CLOSED:
                self.commit()
        elif state is _OPEN:
            self.abort()
        return False

    def __del__(self) -> None:
        if getattr(self, '_state', None) is _OPEN:
            self._invalidate(_ABORTED)

    def _put_many(self, pairs: list[Item]) -> None:
        """Store each ``(key, value)`` of the sequence ``pairs``, in order.

        For callers that built valid keys and values themselves (the
        collection layer): keys and values are not checked, but an ended or
        read-only transaction raises as :meth:`put` does. Engines override
        it with a faster path; this one calls :meth:`put`.
        """
        for key, value in pairs:
            self.put(key, value)

    # Implemented by subclasses.

    def _get(self, key: bytes) -> bytes | None:
        raise NotImplementedError

    def _put(self, key: bytes, value: bytes) -> None:
        raise NotImplementedError

    def _delete(self, key: bytes) -> None:
        raise NotImplementedError

    def _delete_range(self, lo: bytes | None, hi: bytes | None) -> None:
        """Delete key by key as it iterates (iterators survive writes); engines may do better."""
        for key in self.keys(lo, hi):
            self.delete(bytes(key))

    def _count(self, lo: bytes | None, hi: bytes | None) -> int:
        # Keys alone, in lists: no value is read and no pair is made.
        n = 0
        for chunk in self._key_chunks(lo, hi, False):
            n += len(chunk)
        return n

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> Iterator[Item]:
        raise NotImplementedError

    def _item_chunks(self, lo: bytes | None, hi: bytes | None,
                     reverse: bool) -> Generator[list[Item], None, None]:
        """The lists of :meth:`item_chunks`, cut from ``_items``; engines may read faster."""
        items = self._items(lo, hi, reverse)
        try:
            yield from chunked(items, None, None, reverse)
        finally:
            close = getattr(items, 'close', None)
            if close is not None:
                close()

    def _key_chunks(self, lo: bytes | None, hi: bytes | None,
                    reverse: bool) -> Iterator[list[bytes]]:
        """The lists of :meth:`key_chunks`, cut from ``_item_chunks``; engines may read faster."""
        return ([key for key, _ in chunk] for chunk in self._item_chunks(lo, hi, reverse))

    def _commit(self) -> None:
        raise NotImplementedError

    def _abort(self) -> None:
        raise NotImplementedError


#: The longest list :meth:`EngineTransaction.item_chunks` yields.
MAX_CHUNK = 1024
#: The first list is this short, so that a query that stops early reads little.
_FIRST_CHUNK = 16


def chunked(pairs: Iterator[Any], lo: bytes | None, hi: bytes | None,
            reverse: bool, keys: bool = False) -> Generator[list[Any], None, None]:
    """Cut the ordered `pairs` into the lists of ``item_chunks``, stopping at the range's end.

    :param pairs: ``(key, value)`` pairs in key order (descending if
        `reverse`), starting inside the range; keys alone if `keys`.
    :param lo: in reverse, stop before the first key below it (else ignored).
    :param hi: going forward, stop at the first key not below it (else ignored).
    :param reverse: the pairs descend.
    :param keys: `pairs` are keys (for ``key_chunks``).
    """
    for size in _chunk_sizes():
        chunk = list(itertools.islice(pairs, size))
        if not chunk:
            return
        last = chunk[-1] if keys else chunk[-1][0]
        if reverse:
            if lo is not None and last < lo:
                end = len(chunk)
                while end and (chunk[end - 1] if keys else chunk[end - 1][0]) < lo:
                    end -= 1
                del chunk[end:]
                if chunk:
                    yield chunk
                return
        elif hi is not None and last >= hi:
            # (hi,) sorts before every pair whose key is hi.
            del chunk[bisect.bisect_left(chunk, hi if keys else (hi,)):]
            if chunk:
                yield chunk
            return
        yield chunk
        if len(chunk) < size:
            return


def _no_chunks() -> Generator[list[Any], None, None]:
    yield from ()


def _chunk_sizes() -> Iterator[int]:
    """The lengths of the lists of one ``item_chunks`` call: doubling up to MAX_CHUNK."""
    size = _FIRST_CHUNK
    while True:
        yield size
        size = min(size * 2, MAX_CHUNK)


def _keys_only(items: ItemIterator) -> KeyIterator:
    try:
        for key, _ in items:
            yield key
    finally:
        items.close()


def _hold_transaction(txn: EngineTransaction, it: Iterator[_T]) -> Generator[_T, None, None]:
    """Yield from ``it``, then end ``txn`` (an engine-level iterator)."""
    try:
        yield from it
    finally:
        if txn.state is _OPEN:
            txn.abort()


class Engine:
    """Base class of storage engines; the interface is in :mod:`centidb.engines`.

    Subclasses implement ``_begin(write)`` and ``_close()``. The base class
    checks state, serializes writers, tracks open transactions (ending them
    on close), and implements the engine-level ``get/put/delete/items/keys``
    as auto-commit transactions through :meth:`begin`. After :meth:`close`,
    every method but ``close()`` raises
    :class:`~centidb.errors.EngineClosedError`.
    """

    #: Longest key the engine can store, in bytes (None: no limit).
    max_key_size: int | None = None
    #: Longest value the engine stores, in bytes (None: no limit).
    max_value_size: int | None = None
    #: Most puts and deletes one commit may hold (None: no limit).
    max_txn_ops: int | None = None
    #: Most bytes of keys and values one commit may write (None: no limit).
    max_txn_bytes: int | None = None
    #: When a transaction's snapshot is taken: ``'begin'`` or ``'first read'``.
    snapshot_at: str = 'begin'

    def __init__(self) -> None:
        self._closed = False
        self._write_lock = threading.Lock()
        self._writer: int | None = None  # ident of the thread holding the write lock
        self._open_etxns: weakref.WeakSet[EngineTransaction] = weakref.WeakSet()
        self._open_etxns_lock = threading.RLock()

    def _describe(self) -> str:
        return f'{type(self).__name__}()'

    def __repr__(self) -> str:
        return f"<{self._describe()} {'closed' if self._closed else 'open'}>"

    def _closed_error(self) -> EngineClosedError:
        return EngineClosedError(
            f'{self._describe()} is closed; it cannot be used after close()')

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def begin(self, write: bool = False) -> EngineTransaction:
        """Start and return an :class:`EngineTransaction` (see the interface).

        A write transaction waits while another thread holds one.

        :param write: True for a write transaction.
        :returns: the :class:`EngineTransaction`, also a context manager.
        :raises ~centidb.errors.TransactionError: if `write` and this thread
            already holds a write transaction on this engine.
        :raises ~centidb.errors.EngineError: if the engine cannot start one
            (:class:`LmdbEngine`: :class:`~centidb.errors.ReadersFullError`
            when live read transactions hold every reader slot).
        """
        if self._closed:
            raise self._closed_error()
        if not write:
            txn = self._begin(False)
        else:
            self._acquire_writer()
            try:
                txn = self._begin(True)
            except BaseException:
                self._release_writer()
                raise
        with self._open_etxns_lock:
            self._open_etxns.add(txn)
            txn._registered = True
        return txn

    def _acquire_writer(self) -> None:
        me = threading.get_ident()
        if self._writer == me:
            raise TransactionError(
                f'this thread already holds an open write transaction on '
                f'{self._describe()}; commit or abort it before starting '
                f'another (engine-level put() and delete() start one too: '
                f'use the open transaction instead)')
        self._write_lock.acquire()
        if self._closed:
            self._write_lock.release()
            raise self._closed_error()
        self._writer = me

    def _release_writer(self) -> None:
        self._writer = None
        self._write_lock.release()

    def _transaction_ended(self, txn: EngineTransaction) -> None:
        with self._open_etxns_lock:
            if not txn._registered:
                return
            txn._registered = False
            self._open_etxns.discard(txn)
        if txn.write:
            self._release_writer()

    def close(self) -> None:
        """Close the engine and end its open transactions.

        Closing twice does nothing. Do not call it while another thread is
        using the engine.
        """
        if self._closed:
            return
        self._closed = True
        with self._open_etxns_lock:
            open_txns = list(self._open_etxns)
        for txn in open_txns:
            txn._invalidate(_CLOSED)
        self._close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        self.close()
        return False

    def get(self, key: bytes) -> bytes | None:
        """Return the value stored under `key`, or ``None``.

        :param key: non-empty ``bytes``.
        :returns: the value (``bytes``), or ``None``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        """
        with self.begin() as txn:
            return txn.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Store `value` under `key` in a transaction of its own.

        :param key: non-empty ``bytes``.
        :param value: ``bytes``.
        :raises TypeError: if `key` or `value` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: if this thread holds a
            write transaction on this engine (use that instead).
        :raises ~centidb.errors.EngineError: if the engine cannot store it,
            as :meth:`EngineTransaction.put`.
        """
        with self.begin(write=True) as txn:
            txn.put(key, value)

    def delete(self, key: bytes) -> None:
        """Remove `key` in a transaction of its own (missing is fine).

        :param key: non-empty ``bytes``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: if this thread holds a
            write transaction on this engine (use that instead).
        """
        with self.begin(write=True) as txn:
            txn.delete(key)

    def items(self, lo: bytes | None = None, hi: bytes | None = None,
               reverse: bool = False) -> ItemIterator:
        """Iterate ``(key, value)`` with ``lo <= key < hi`` in a read txn.

        The read transaction stays open until the iterator is exhausted or
        closed.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of ``(key, value)``.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        return self._iterate_in_own_txn('items', lo, hi, reverse)

    def keys(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> KeyIterator:
        """Iterate the keys ``lo <= key < hi``, like :meth:`items`.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of keys.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        return self._iterate_in_own_txn('keys', lo, hi, reverse)

    def _iterate_in_own_txn(self, method: str, lo: bytes | None, hi: bytes | None,
                            reverse: bool) -> Generator[Any, None, None]:
        txn = self.begin()
        try:
            it = getattr(txn, method)(lo, hi, reverse)
        except BaseException:
            txn.abort()
            raise
        return _hold_transaction(txn, it)

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
               reverse: bool = False) -> Item | None:
        """Return the first ``(key, value)`` :meth:`items` would yield, or None.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: ``(key, value)``, or ``None`` if the range is empty.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        with self.begin() as txn:
            return txn.first(lo, hi, reverse)

    # Implemented by subclasses.

    def _begin(self, write: bool) -> EngineTransaction:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError


#: The old name of :class:`EngineTransaction` (the same class), kept so code
#: that subclasses or checks ``centidb.engines.Transaction`` keeps working.
#: ``centidb.Transaction`` is the store's, a different class.
Transaction = EngineTransaction
