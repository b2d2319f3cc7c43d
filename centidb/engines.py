"""Storage engines: ordered byte-string key-value stores with transactions.

centidb keeps everything in an *engine*. An engine maps ``bytes`` keys to
``bytes`` values, keeps the keys sorted bytewise, and groups reads and writes
into transactions. The whole interface:

``engine.get(key) -> bytes | None``
    The value stored under ``key``, or ``None``.
``engine.put(key, value)`` / ``engine.delete(key)``
    Store or remove one key. Deleting a missing key does nothing.
``engine.items(lo=None, hi=None, reverse=False)``
    Iterate ``(key, value)`` pairs with ``lo <= key < hi`` (``None`` means
    unbounded) in ascending order, or descending with ``reverse=True``
    (descending starts at the largest key below ``hi``).
``engine.keys(lo=None, hi=None, reverse=False)``
    The same, yielding only keys.
``engine.first(lo=None, hi=None, reverse=False) -> (key, value) | None``
    The pair ``items()`` would yield first: a seek. The base class derives
    it from ``items()``; engines override it for speed.
``engine.begin(write=False) -> Transaction``
    A transaction with the same five methods plus ``commit()`` and
    ``abort()``; also a context manager that commits on success and aborts
    when the block raises (the exception propagates).
``engine.close()``
    Release the store. Closing twice is fine. Engines are context managers.

Guarantees shared by every engine here:

* Engine-level ``get/put/delete/items/keys`` each run in a transaction of
  their own. An engine-level iterator holds its read transaction until it is
  exhausted or closed.
* A read transaction sees a consistent snapshot as of ``begin()``. A write
  transaction sees the state committed before its ``begin()`` plus its own
  writes, including in iteration.
* An iterator survives puts and deletes made through its own transaction
  between ``next()`` calls: it resumes after the last key it yielded.
* Writers are serialized per engine: ``begin(write=True)`` blocks while
  another thread holds a write transaction. A thread that already holds one
  gets :class:`~centidb.errors.TransactionError` instead of a deadlock, also
  from engine-level ``put()``/``delete()``.
* After ``commit()`` or ``abort()`` a transaction raises ``TransactionError``
  on use (``abort()`` again is a harmless no-op). After ``close()`` every
  method of the engine, its transactions and its iterators raises
  :class:`~centidb.errors.EngineClosedError`, except ``abort()`` of a
  transaction, which ``close()`` already ended.
* Keys are non-empty ``bytes`` and values are ``bytes``: anything else
  raises ``TypeError``, an empty key ``ValueError``. (Bounds may be ``b''``.)

Writing your own engine
-----------------------
Subclass :class:`Engine` and :class:`Transaction`. The engine implements
``_begin(write)``, returning a new transaction, and ``_close()``. The
transaction implements ``_get``, ``_put``, ``_delete``, ``_items``,
``_commit`` and ``_abort``. The base classes do the rest: argument and state
checks, writer serialization, the auto-commit engine methods, ``keys()``,
context managers and invalidation on close. An engine that buffers writes can
build its iteration from :func:`merge_overlay`. :class:`WrapperEngine`
forwards every call to another engine, for tracing and fault injection.

Optional, for speed: the collection layer writes a record's keys with one
``_put_many(pairs)`` call (the default calls :meth:`Transaction.put` for
each), and uses a transaction's ``_fast_get`` and ``_fast_put_many``
callables, unchecked, while they are not ``None`` (see
:class:`Transaction`). An engine that leaves them ``None`` loses nothing but
speed.
"""

import bisect
import collections
import itertools
import operator
import os
import threading
import weakref

from sortedcontainers import SortedDict

from centidb.errors import (
    DatabaseLockedError,
    DatabaseNotFoundError,
    EngineClosedError,
    EngineError,
    MapFullError,
    TransactionError,
)

try:
    import plyvel
except ImportError:  # pragma: no cover - depends on the installation
    plyvel = None

try:
    import lmdb
except ImportError:  # pragma: no cover - depends on the installation
    lmdb = None

__all__ = [
    'DEFAULT_MAP_SIZE',
    'ENGINES',
    'Engine',
    'ListEngine',
    'LmdbEngine',
    'PlyvelEngine',
    'TOMBSTONE',
    'TraceEngine',
    'TraceTransaction',
    'Transaction',
    'WrapperEngine',
    'WrapperTransaction',
    'get_engine_class',
    'merge_overlay',
]


class _Tombstone:
    """Type of :data:`TOMBSTONE`."""

    __slots__ = ()

    def __repr__(self):
        return 'TOMBSTONE'


#: Marks a key deleted in a pending-writes overlay (see :func:`merge_overlay`).
TOMBSTONE = _Tombstone()

# Transaction states, as reported by Transaction.state.
_OPEN = 'open'
_COMMITTED = 'committed'
_ABORTED = 'aborted'
_CLOSED = 'closed'  # the engine was closed while the transaction was open


def _not_bytes(name, value):
    raise TypeError(f'{name} must be bytes, not {type(value).__name__}')


def _bad_key(key):
    """Raise the error for a key that is not non-empty bytes."""
    if type(key) is not bytes:
        _not_bytes('key', key)
    raise ValueError('key must not be empty: engines store non-empty keys only')


def _check_bounds(lo, hi):
    if lo is not None and type(lo) is not bytes:
        _not_bytes('lo', lo)
    if hi is not None and type(hi) is not bytes:
        _not_bytes('hi', hi)


# --- sorted-overlay helpers --------------------------------------------------

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


# --- base classes ------------------------------------------------------------

class Transaction:
    """A transaction on an :class:`Engine`; see the module docstring.

    Subclasses implement ``_get``, ``_put``, ``_delete``, ``_items``,
    ``_commit`` and ``_abort``; the public methods check arguments and state
    first. ``_commit`` and ``_abort`` must release the transaction's
    resources, also when ``_commit`` fails. Made by :meth:`Engine.begin`;
    the arguments are kept as attributes of the same names.

    Every method except :meth:`abort` raises
    :class:`~centidb.errors.TransactionError` once the transaction has
    ended, and :class:`~centidb.errors.EngineClosedError` once the engine is
    closed; iterators check this before each step.

    :param engine: the :class:`Engine` that began it.
    :param write: True if it may write.
    """

    def __init__(self, engine, write):
        self.engine = engine
        self.write = bool(write)
        #: Counts puts and deletes: iterators that cache anything compare
        #: it to notice the transaction's own writes.
        self.writes = 0
        #: A callable ``(key) -> value or None`` that skips every check, for
        #: callers that pass non-empty bytes keys no longer than the engine's
        #: ``max_key_size``; ``None`` when :meth:`get` must be used. Engines
        #: set it while it is valid and reset it when the transaction ends.
        self._fast_get = None
        #: Likewise a callable ``(pairs)`` that stores a list of ``(key,
        #: value)`` pairs with no checks; the caller first adds
        #: ``len(pairs)`` to :attr:`writes`, and passes any exception it
        #: raises to :meth:`_put_many_failed`. ``None``: use ``_put_many``.
        self._fast_put_many = None
        self._state = _OPEN
        self._registered = False

    def __repr__(self):
        kind = 'write' if self.write else 'read'
        return f'<{type(self).__name__} {kind} {self.state}>'

    @property
    def state(self):
        """``'open'``, ``'committed'``, ``'aborted'``, or ``'closed'``.

        ``'closed'`` means the engine was closed while this was open.
        """
        return self._state

    def _raise_unusable(self):
        if self.engine._closed:
            raise self.engine._closed_error()
        raise TransactionError(
            f'this transaction was already {self._state}; begin a new one')

    def _put_many_failed(self, exc, pairs):
        """Raise the engine's error for `exc`, raised by ``_fast_put_many(pairs)``."""
        raise exc

    def _refuse_write(self):
        """Raise why this transaction cannot write now (ended, or read-only)."""
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        raise TransactionError(
            'put() in a read-only transaction; use begin(write=True)')

    def get(self, key):
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

    def put(self, key, value):
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
        self.writes += 1

    def delete(self, key):
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
        self.writes += 1

    def items(self, lo=None, hi=None, reverse=False):
        """Iterate ``(key, value)`` with ``lo <= key < hi``; see the module.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of ``(key, value)``; it survives writes made
            through this transaction between steps.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        return self._checked_items(lo, hi, reverse)

    def keys(self, lo=None, hi=None, reverse=False):
        """Iterate the keys ``lo <= key < hi``, like :meth:`items`.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of keys.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        return _keys_only(self._checked_items(lo, hi, reverse))

    def first(self, lo=None, hi=None, reverse=False):
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

    def _checked_items(self, lo, hi, reverse):
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        _check_bounds(lo, hi)
        if lo is not None and hi is not None and lo >= hi:
            return self._guarded(iter(()))
        return self._guarded(self._items(lo, hi, bool(reverse)))

    def _guarded(self, it):
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

    def commit(self):
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

    def abort(self):
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

    def _finish(self, state):
        self._state = state
        self.engine._transaction_ended(self)

    def _invalidate(self, state):
        """End the transaction without raising (engine close, garbage)."""
        if self._state is _OPEN:
            try:
                self._abort()
            except Exception:
                pass
            self._finish(state)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        state = self.state
        if exc_type is None:
            # A transaction the engine's close() ended raises here: its
            # writes were lost.
            if state is _OPEN or state is _CLOSED:
                self.commit()
        elif state is _OPEN:
            self.abort()
        return False

    def __del__(self):
        if getattr(self, '_state', None) is _OPEN:
            self._invalidate(_ABORTED)

    def _put_many(self, pairs):
        """Store each ``(key, value)`` of the sequence ``pairs``, in order.

        For callers that built valid keys and values themselves (the
        collection layer): keys and values are not checked, but an ended or
        read-only transaction raises as :meth:`put` does. Engines override
        it with a faster path; this one calls :meth:`put`.
        """
        for key, value in pairs:
            self.put(key, value)

    # Implemented by subclasses.

    def _get(self, key):
        raise NotImplementedError

    def _put(self, key, value):
        raise NotImplementedError

    def _delete(self, key):
        raise NotImplementedError

    def _items(self, lo, hi, reverse):
        raise NotImplementedError

    def _commit(self):
        raise NotImplementedError

    def _abort(self):
        raise NotImplementedError


def _keys_only(items):
    try:
        for key, _ in items:
            yield key
    finally:
        items.close()


def _hold_transaction(txn, it):
    """Yield from ``it``, then end ``txn`` (an engine-level iterator)."""
    try:
        yield from it
    finally:
        if txn.state is _OPEN:
            txn.abort()


class Engine:
    """Base class of storage engines; the interface is in the module docstring.

    Subclasses implement ``_begin(write)`` and ``_close()``. The base class
    checks state, serializes writers, tracks open transactions (ending them
    on close), and implements the engine-level ``get/put/delete/items/keys``
    as auto-commit transactions through :meth:`begin`. After :meth:`close`,
    every method but ``close()`` raises
    :class:`~centidb.errors.EngineClosedError`.
    """

    #: Longest key the engine can store, in bytes (None: no limit).
    max_key_size = None

    def __init__(self):
        self._closed = False
        self._write_lock = threading.Lock()
        self._writer = None  # ident of the thread holding the write lock
        self._txns = weakref.WeakSet()
        self._txns_lock = threading.RLock()

    def _describe(self):
        return f'{type(self).__name__}()'

    def __repr__(self):
        return f"<{self._describe()} {'closed' if self._closed else 'open'}>"

    def _closed_error(self):
        return EngineClosedError(
            f'{self._describe()} is closed; it cannot be used after close()')

    @property
    def closed(self):
        """True once :meth:`close` was called."""
        return self._closed

    def begin(self, write=False):
        """Start and return a :class:`Transaction` (see the module doc).

        A write transaction waits while another thread holds one.

        :param write: True for a write transaction.
        :returns: the :class:`Transaction`, also a context manager.
        :raises ~centidb.errors.TransactionError: if `write` and this thread
            already holds a write transaction on this engine.
        :raises ~centidb.errors.EngineError: if the engine cannot start one
            (:class:`LmdbEngine`: too many open read transactions).
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
        with self._txns_lock:
            self._txns.add(txn)
            txn._registered = True
        return txn

    def _acquire_writer(self):
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

    def _release_writer(self):
        self._writer = None
        self._write_lock.release()

    def _transaction_ended(self, txn):
        with self._txns_lock:
            if not txn._registered:
                return
            txn._registered = False
            self._txns.discard(txn)
        if txn.write:
            self._release_writer()

    def close(self):
        """Close the engine and end its open transactions.

        Closing twice does nothing. Do not call it while another thread is
        using the engine.
        """
        if self._closed:
            return
        self._closed = True
        with self._txns_lock:
            open_txns = list(self._txns)
        for txn in open_txns:
            txn._invalidate(_CLOSED)
        self._close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False

    def get(self, key):
        """Return the value stored under `key`, or ``None``.

        :param key: non-empty ``bytes``.
        :returns: the value (``bytes``), or ``None``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        """
        with self.begin() as txn:
            return txn.get(key)

    def put(self, key, value):
        """Store `value` under `key` in a transaction of its own.

        :param key: non-empty ``bytes``.
        :param value: ``bytes``.
        :raises TypeError: if `key` or `value` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: if this thread holds a
            write transaction on this engine (use that instead).
        :raises ~centidb.errors.EngineError: if the engine cannot store it,
            as :meth:`Transaction.put`.
        """
        with self.begin(write=True) as txn:
            txn.put(key, value)

    def delete(self, key):
        """Remove `key` in a transaction of its own (missing is fine).

        :param key: non-empty ``bytes``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: if this thread holds a
            write transaction on this engine (use that instead).
        """
        with self.begin(write=True) as txn:
            txn.delete(key)

    def items(self, lo=None, hi=None, reverse=False):
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

    def keys(self, lo=None, hi=None, reverse=False):
        """Iterate the keys ``lo <= key < hi``, like :meth:`items`.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        :returns: an iterator of keys.
        :raises TypeError: if `lo` or `hi` is neither ``bytes`` nor ``None``.
        """
        return self._iterate_in_own_txn('keys', lo, hi, reverse)

    def _iterate_in_own_txn(self, method, lo, hi, reverse):
        txn = self.begin()
        try:
            it = getattr(txn, method)(lo, hi, reverse)
        except BaseException:
            txn.abort()
            raise
        return _hold_transaction(txn, it)

    def first(self, lo=None, hi=None, reverse=False):
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

    def _begin(self, write):
        raise NotImplementedError

    def _close(self):
        raise NotImplementedError


# --- ListEngine --------------------------------------------------------------

_CHUNK = 128  # keys a snapshot iterator fetches per step under the lock
_first = operator.itemgetter(0)


def _merge_key_chunks(a, b, reverse):
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


class ListEngine(Engine):
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

    def __init__(self):
        super().__init__()
        self._data = SortedDict()
        self._version = 0  # number of commits so far
        self._readers = collections.Counter()  # version -> open readers
        # key -> [(commit version, replaced value or TOMBSTONE), ...]
        self._history = SortedDict()
        self._lock = threading.RLock()

    def _begin(self, write):
        if write:
            return _ListWriteTransaction(self)
        return _ListReadTransaction(self)

    def _close(self):
        self._data = SortedDict()
        self._history = SortedDict()

    def get(self, key):
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

    def put(self, key, value):
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

    def delete(self, key):
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

    def _write_now(self, key, value):
        """Commit one write without building a transaction."""
        self._acquire_writer()
        try:
            self._apply({key: value})
        finally:
            self._release_writer()

    def _lookup(self, key, version):
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

    def _snapshot_items(self, version, lo, hi, reverse):
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

    def _register_reader(self):
        with self._lock:
            version = self._version
            self._readers[version] += 1
        return version

    def _unregister_reader(self, version):
        with self._lock:
            self._readers[version] -= 1
            if not self._readers[version]:
                del self._readers[version]
            if not self._readers:
                self._history = SortedDict()

    def _apply(self, overlay):
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


class _ListReadTransaction(Transaction):
    """A snapshot of a :class:`ListEngine` as of ``begin()``."""

    def __init__(self, engine):
        super().__init__(engine, False)
        self._version = engine._register_reader()

    def _get(self, key):
        value = self.engine._lookup(key, self._version)
        return None if value is TOMBSTONE else value

    def _items(self, lo, hi, reverse):
        return self.engine._snapshot_items(self._version, lo, hi, reverse)

    def _commit(self):
        self.engine._unregister_reader(self._version)

    _abort = _commit


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


class _ListWriteTransaction(_WriteLog, Transaction):
    """Committed data as of ``begin()`` plus the pending writes."""

    def __init__(self, engine):
        super().__init__(engine, True)
        self._version = engine._version  # stable: writers are serialized
        self._read_committed = engine._data.get
        self._start_log()

    def _items(self, lo, hi, reverse):
        base = self.engine._snapshot_items(self._version, lo, hi, reverse)
        # Always overlaid: later writes must show up in this iterator.
        return merge_overlay(self._sorted_writes(), base, lo, hi, reverse)

    def _commit(self):
        pending = self._pending_writes() if self._log else None
        self._drop_log()
        if pending:
            self.engine._apply(pending)

    def _abort(self):
        self._drop_log()


# --- PlyvelEngine ------------------------------------------------------------

def _plyvel_message(exc):
    arg = exc.args[0] if exc.args else ''
    if isinstance(arg, bytes):
        return arg.decode('utf-8', 'replace')
    return str(arg)


def _plyvel_items(snapshot, lo, hi, reverse):
    """Iterate a plyvel snapshot over ``[lo, hi)``, closing the iterator.

    In reverse, ``lo`` is checked here: plyvel 1.5 drops the only key of a
    range when that key equals ``start`` and ``reverse=True``.
    """
    if not reverse:
        it = snapshot.iterator(start=lo, stop=hi)
        try:
            yield from it
        finally:
            it.close()
        return
    it = snapshot.iterator(stop=hi, reverse=True)
    try:
        if lo is None:
            yield from it
        else:
            for item in it:
                if item[0] < lo:
                    return
                yield item
    finally:
        it.close()


class PlyvelEngine(Engine):
    """A LevelDB database on disk, through plyvel.

    A read transaction is a LevelDB snapshot. A write transaction reads a
    snapshot plus its pending writes, and ``commit()`` writes them all in one
    atomic write batch.

    :param name: the database directory (a path), kept as ``path``.
    :param create_if_missing: create the database (and missing parent
        directories) if it does not exist.
    :param sync: make each commit wait for the disk.
    :param plyvel_options: other keyword options, passed to ``plyvel.DB``.
    :raises ~centidb.errors.DatabaseNotFoundError: if the database does not
        exist and `create_if_missing` is false.
    :raises ~centidb.errors.DatabaseLockedError: if the database is open
        elsewhere (another process or handle).
    :raises ~centidb.errors.EngineError: if LevelDB cannot open it for
        another reason.
    :raises ImportError: if plyvel is not installed.
    """

    def __init__(self, name, *, create_if_missing=False, sync=False,
                 **plyvel_options):
        if plyvel is None:
            raise ImportError(
                'PlyvelEngine needs the plyvel package: pip install plyvel')
        super().__init__()
        self.path = os.fspath(name)
        self.sync = bool(sync)
        if create_if_missing:
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        try:
            self._db = plyvel.DB(
                self.path, create_if_missing=create_if_missing,
                **plyvel_options)
        except plyvel.IOError as exc:
            message = _plyvel_message(exc)
            if 'lock' in message.lower():
                raise DatabaseLockedError(
                    f'LevelDB database {self.path!r} is locked: another '
                    f'process or another open handle in this process is '
                    f'using it ({message})') from exc
            raise EngineError(
                f'cannot open LevelDB database {self.path!r}: {message}'
            ) from exc
        except plyvel.Error as exc:
            message = _plyvel_message(exc)
            if 'does not exist' in message:
                raise DatabaseNotFoundError(
                    f'no LevelDB database at {self.path!r}; pass '
                    f'create_if_missing=True to create one') from exc
            raise EngineError(
                f'cannot open LevelDB database {self.path!r}: {message}'
            ) from exc

    def _describe(self):
        return f'{type(self).__name__}({self.path!r})'

    def _begin(self, write):
        return _PlyvelTransaction(self, write)

    def compact(self):
        """Compact the whole database now, instead of in the background.

        LevelDB merges freshly written data in background threads; reads
        made meanwhile compete with that work. Benchmarks call this to read
        a settled database.

        :raises ~centidb.errors.EngineClosedError: after :meth:`close`.
        """
        if self._closed:
            raise self._closed_error()
        self._db.compact_range()

    def _close(self):
        self._db.close()
        self._db = None   # a closed plyvel.DB left for exit time prints an error

    def get(self, key):
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
        return self._db.get(key)


class _PlyvelTransaction(_WriteLog, Transaction):
    """A plyvel snapshot; if writing, also the log of pending writes.

    ``commit()`` writes the log in one atomic WriteBatch. Seeks (``first``)
    reuse one snapshot iterator while there are no pending writes.
    """

    def __init__(self, engine, write):
        super().__init__(engine, write)
        self._snapshot = engine._db.snapshot()
        self._read_committed = self._snapshot.get
        self._seeker = None                     # made by the first first()
        if write:
            self._start_log()
        else:
            self._log = None
            self._fast_get = self._snapshot.get

    def first(self, lo=None, hi=None, reverse=False):
        """Return the first ``(key, value)`` :meth:`items` would yield, or None."""
        if self._log or self._state is not _OPEN or self.engine._closed:
            return super().first(lo, hi, reverse)
        _check_bounds(lo, hi)
        it = self._seeker
        if it is None:
            it = self._seeker = self._snapshot.iterator()
        if reverse:
            if hi is None:
                it.seek_to_stop()
            else:
                it.seek(hi)
            try:
                item = it.prev()
            except StopIteration:
                return None
            if lo is None or item[0] >= lo:
                return item
        else:
            if lo is None:
                it.seek_to_start()
            else:
                it.seek(lo)
            item = next(it, None)
            if item is not None and (hi is None or item[0] < hi):
                return item
        return None

    def _items(self, lo, hi, reverse):
        base = _plyvel_items(self._snapshot, lo, hi, reverse)
        if self._log is None:
            return base
        return merge_overlay(self._sorted_writes(), base, lo, hi, reverse)

    def _commit(self):
        try:
            if self._log:
                batch = self.engine._db.write_batch(sync=self.engine.sync)
                put, delete = batch.put, batch.delete
                if not self._log_deletes:
                    # The loop runs in C: no bytecode per write.
                    collections.deque(itertools.starmap(put, self._log), maxlen=0)
                else:
                    for key, value in self._log:
                        if value is TOMBSTONE:
                            delete(key)
                        else:
                            put(key, value)
                batch.write()
        finally:
            self._abort()

    def _abort(self):
        self._fast_get = None
        if self._log is not None:
            self._drop_log()
        if self._seeker is not None:
            self._seeker.close()
            self._seeker = None
        self._snapshot.close()


# --- LmdbEngine --------------------------------------------------------------

#: Default LMDB map size: 64 MiB.
DEFAULT_MAP_SIZE = 64 << 20


class LmdbEngine(Engine):
    """An LMDB database on disk, through py-lmdb, using its transactions.

    Keys are stored as they are, so they may hold at most
    :attr:`Engine.max_key_size` bytes (511 by default); a longer key raises
    :class:`~centidb.errors.EngineError` on ``put``.

    :param path: a directory (pass ``subdir=False`` for a single file).
    :param map_size: the largest size in bytes the database may reach; a
        write that does not fit raises :class:`~centidb.errors.MapFullError`
        and aborts its transaction.
    :param create_if_missing: create the database if it does not exist.
    :param autogrow: double the map at ``begin(write=True)`` once more than
        half of it is used, and let an engine-level ``put()`` that finds the
        map full grow it and retry once. Growing needs no open transaction in
        this process, so autogrow is meant for single-process use.
    :param sync: false trades durability of the last commits for speed.
    :param lmdb_options: other keyword options, passed to ``lmdb.open``
        (not ``create``).
    :raises ~centidb.errors.DatabaseNotFoundError: if the database does not
        exist and `create_if_missing` is false.
    :raises ~centidb.errors.DatabaseLockedError: if this process already has
        the database open.
    :raises ~centidb.errors.EngineError: if LMDB cannot open it for another
        reason.
    :raises ValueError: if `map_size` is not a positive ``int``.
    :raises TypeError: if ``create`` is passed.
    :raises ImportError: if lmdb is not installed.
    """

    def __init__(self, path, *, map_size=DEFAULT_MAP_SIZE,
                 create_if_missing=True, autogrow=True, sync=True,
                 **lmdb_options):
        if lmdb is None:
            raise ImportError(
                'LmdbEngine needs the lmdb package: pip install lmdb')
        if type(map_size) is not int or map_size <= 0:
            raise ValueError(
                f'map_size must be a positive int, not {map_size!r}')
        if 'create' in lmdb_options:
            raise TypeError(
                'LmdbEngine takes create_if_missing, not create')
        super().__init__()
        self.path = os.fspath(path)
        self.autogrow = bool(autogrow)
        subdir = lmdb_options.setdefault('subdir', True)
        data_file = self.path
        if subdir:
            data_file = os.path.join(self.path, 'data.mdb')
        if not os.path.exists(data_file):
            if not create_if_missing:
                raise DatabaseNotFoundError(
                    f'no LMDB database at {self.path!r}; pass '
                    f'create_if_missing=True to create one')
            directory = self.path if subdir else os.path.dirname(self.path)
            os.makedirs(directory or '.', exist_ok=True)
        try:
            self._env = lmdb.open(self.path, map_size=map_size,
                                  create=create_if_missing, sync=sync,
                                  **lmdb_options)
        except lmdb.Error as exc:
            if 'already open' in str(exc):
                raise DatabaseLockedError(
                    f'LMDB database {self.path!r} is already open in this '
                    f'process; share that engine instead') from exc
            raise EngineError(
                f'cannot open LMDB database {self.path!r}: {exc}') from exc
        self._page_size = self._env.stat()['psize']
        self.max_key_size = self._env.max_key_size()
        # LMDB can only resize the map while this process has no open
        # transaction: count them, and grow under the same lock.
        self._active = 0
        self._active_lock = threading.Lock()

    def _describe(self):
        return f'{type(self).__name__}({self.path!r})'

    @property
    def map_size(self):
        """The current size of the memory map in bytes.

        :raises ~centidb.errors.EngineClosedError: after :meth:`close`.
        """
        if self._closed:
            raise self._closed_error()
        return self._env.info()['map_size']

    def _begin(self, write):
        if write and self.autogrow:
            self._grow()
        with self._active_lock:
            self._active += 1
        try:
            txn = self._env.begin(write=write, buffers=False)
        except lmdb.MapResizedError as exc:
            self._release_active()
            if not self._adopt_map_size():
                raise EngineError(
                    f'another process grew the LMDB map of {self.path!r}; it can be '
                    f'followed only when no transaction or iterator of this '
                    f'process is open: finish those and retry') from exc
            return self._begin(write)
        except lmdb.ReadersFullError as exc:
            self._release_active()
            raise EngineError(
                f'too many read transactions open on LMDB database {self.path!r} '
                f'(max_readers={self._env.info()["max_readers"]}): close unfinished '
                f'iterators, or reopen with a larger max_readers=') from exc
        except BaseException:
            self._release_active()
            raise
        return _LmdbTransaction(self, txn, write)

    def _release_active(self):
        with self._active_lock:
            self._active -= 1

    def _adopt_map_size(self):
        """Follow a map another process grew; False if a transaction is open."""
        with self._active_lock:
            if self._active:
                return False
            self._env.set_mapsize(0)
            return True

    def _grow(self, need=0, force=False):
        """Enlarge the map if over half full (or, if ``force``, anyway).

        Return True if the map grew; False if it did not need to or could
        not because a transaction is open.
        """
        with self._active_lock:
            if self._active:
                return False
            info = self._env.info()
            size = info['map_size']
            used = (info['last_pgno'] + 1) * self._page_size + need
            new_size = size * 2 if force else size
            while used > new_size // 2:
                new_size *= 2
            if new_size == size:
                return False
            self._env.set_mapsize(new_size)
            return True

    def _map_full_error(self):
        size = self.map_size
        if self.autogrow:
            hint = ('autogrow grows the map only between transactions, when '
                    'none is open in this process')
        else:
            hint = 'or pass autogrow=True'
        return MapFullError(
            f'LMDB map of {self.path!r} is full at map_size={size} bytes '
            f'({size / 2**20:g} MiB); the transaction was aborted. Reopen '
            f'with a larger map_size, e.g. map_size={size * 2} ({hint})')

    def _close(self):
        self._env.close()

    def get(self, key):
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
        with self._active_lock:
            self._active += 1
        try:
            with self._env.begin(buffers=False) as txn:
                return txn.get(key)
        except lmdb.BadValsizeError:
            return None  # too long to have been stored
        except lmdb.MapResizedError:
            pass    # another process grew the map: the general path follows it
        finally:
            self._release_active()
        return super().get(key)

    def put(self, key, value):
        """Store `value` under `key`; autogrow grows and retries once.

        :param key: non-empty ``bytes``.
        :param value: ``bytes``.
        :raises TypeError: if `key` or `value` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: if this thread holds a
            write transaction on this engine (use that instead).
        :raises ~centidb.errors.MapFullError: if the map is full (and could
            not grow).
        :raises ~centidb.errors.EngineError: for a key longer than
            :attr:`Engine.max_key_size`.
        """
        try:
            super().put(key, value)
            return
        except MapFullError:
            if not (self.autogrow
                    and self._grow(len(key) + len(value), force=True)):
                raise
        super().put(key, value)


class _LmdbTransaction(Transaction):
    """A native LMDB transaction."""

    def __init__(self, engine, txn, write):
        super().__init__(engine, write)
        self._txn = txn
        self._cursor = None  # reused by first() and _put_many()
        self._fast_get = txn.get
        if write:
            self._fast_put_many = self._shared_cursor().putmulti

    def _shared_cursor(self):
        if self._cursor is None:
            self._cursor = self._txn.cursor()
        return self._cursor

    def get(self, key):
        """Return the value stored under ``key``, or ``None``."""
        if self._state is not _OPEN:
            self._raise_unusable()
        if type(key) is not bytes or not key:
            _bad_key(key)
        try:
            return self._txn.get(key)
        except lmdb.BadValsizeError:
            return None  # too long to have been stored

    def put(self, key, value):
        """Store ``value`` under ``key``, replacing any previous value."""
        if self._state is not _OPEN:
            self._raise_unusable()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if type(value) is not bytes:
            _not_bytes('value', value)
        try:
            self._txn.put(key, value)
        except lmdb.ReadonlyError:
            raise TransactionError(
                'put() in a read-only transaction; use begin(write=True)') from None
        except lmdb.Error as exc:
            self._fail(exc, key)
        self.writes += 1

    def _put_many(self, pairs):
        if self._state is not _OPEN or not self.write:
            self._refuse_write()
        self.writes += len(pairs)   # first: a failure may have written some
        try:
            self._shared_cursor().putmulti(pairs)
        except lmdb.Error as exc:
            self._put_many_failed(exc, pairs)

    def _put_many_failed(self, exc, pairs):
        if not isinstance(exc, lmdb.Error):
            raise exc
        self._fail(exc, max((key for key, _ in pairs), key=len))

    def first(self, lo=None, hi=None, reverse=False):
        """Return the first ``(key, value)`` :meth:`items` would yield, or None."""
        if self._state is not _OPEN:
            self._raise_unusable()
        _check_bounds(lo, hi)
        cursor = self._shared_cursor()
        if reverse:
            if _seek_before(cursor, hi) and (lo is None or cursor.key() >= lo):
                return cursor.item()
        elif cursor.first() if lo is None else cursor.set_range(lo):
            if hi is None or cursor.key() < hi:
                return cursor.item()
        return None

    def _delete(self, key):
        try:
            self._txn.delete(key)
        except lmdb.BadValsizeError:
            return  # too long to have been stored
        except lmdb.Error as exc:
            self._fail(exc, key)

    def _fail(self, exc, key):
        engine = self.engine
        if isinstance(exc, lmdb.BadValsizeError):
            raise EngineError(
                f'key of {len(key)} bytes is too long for LMDB: at most '
                f'{engine.max_key_size} bytes') from exc
        self.abort()
        if isinstance(exc, lmdb.MapFullError):
            raise engine._map_full_error() from exc
        raise EngineError(
            f'LMDB error in {engine.path!r}, transaction aborted: {exc}'
        ) from exc

    def _items(self, lo, hi, reverse):
        cursor = self._txn.cursor()
        if reverse:
            found = _seek_before(cursor, hi)
            while found:
                key, value = cursor.item()
                if lo is not None and key < lo:
                    return
                mutations = self.writes
                yield key, value
                if self.writes != mutations:
                    found = _seek_before(cursor, key)
                else:
                    found = cursor.prev()
        else:
            found = cursor.first() if lo is None else cursor.set_range(lo)
            while found:
                key, value = cursor.item()
                if hi is not None and key >= hi:
                    return
                mutations = self.writes
                yield key, value
                if self.writes != mutations:
                    found = _seek_after(cursor, key)
                else:
                    found = cursor.next()

    def _commit(self):
        try:
            self._txn.commit()
        except lmdb.MapFullError as exc:
            raise self.engine._map_full_error() from exc
        except lmdb.Error as exc:
            raise EngineError(
                f'LMDB commit failed in {self.engine.path!r}: {exc}') from exc
        finally:
            self._release()

    def _abort(self):
        try:
            self._txn.abort()
        finally:
            self._release()

    def _release(self):
        if self._txn is not None:
            self._txn = self._cursor = self._fast_get = self._fast_put_many = None
            self.engine._release_active()


def _seek_after(cursor, key):
    """Put ``cursor`` on the first key greater than ``key``."""
    if not cursor.set_range(key):
        return False
    if cursor.key() == key:
        return cursor.next()
    return True


def _seek_before(cursor, key):
    """Put ``cursor`` on the last key smaller than ``key`` (None: last key)."""
    if key is None or not cursor.set_range(key):
        return cursor.last()
    return cursor.prev()


# --- wrappers ----------------------------------------------------------------

class WrapperTransaction(Transaction):
    """Forwards every call to a transaction of the wrapped engine (``inner``).

    Override a public method (e.g. ``put``) to inject a fault or observe.
    The base class checks arguments and state before forwarding.

    :param engine: the :class:`WrapperEngine` that began it.
    :param inner: the inner engine's :class:`Transaction`, kept as
        ``inner``.
    """

    def __init__(self, engine, inner):
        super().__init__(engine, inner.write)
        self.inner = inner

    def _get(self, key):
        return self.inner.get(key)

    def _put(self, key, value):
        self.inner.put(key, value)

    def _delete(self, key):
        self.inner.delete(key)

    def _items(self, lo, hi, reverse):
        return self.inner.items(lo, hi, reverse)

    def first(self, lo=None, hi=None, reverse=False):
        """Check the state and bounds, then forward to ``inner.first``.

        So the inner engine's own seek is used, not an iteration.

        :param lo: as for :meth:`Transaction.first`.
        :param hi: as for :meth:`Transaction.first`.
        :param reverse: as for :meth:`Transaction.first`.
        :returns: ``(key, value)``, or ``None`` if the range is empty.
        """
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        _check_bounds(lo, hi)
        return self.inner.first(lo, hi, reverse)

    def _commit(self):
        self.inner.commit()

    def _abort(self):
        self.inner.abort()


class WrapperEngine(Engine):
    """An engine that forwards every call to another engine, ``inner``.

    Subclass it and override one method to trace or inject faults. Its
    transactions are instances of :attr:`transaction_class`, which forward
    to the inner engine's transactions. Closing the wrapper closes ``inner``.

    :param inner: the :class:`Engine` to forward to, kept as ``inner``.
    :raises TypeError: if `inner` is not an ``Engine``.
    """

    #: Class of the transactions :meth:`Engine.begin` returns.
    transaction_class = WrapperTransaction

    def __init__(self, inner):
        if not isinstance(inner, Engine):
            raise TypeError(
                f'inner must be an Engine, not {type(inner).__name__}')
        super().__init__()
        self.inner = inner
        self.max_key_size = inner.max_key_size

    def _describe(self):
        return f'{type(self).__name__}({self.inner._describe()})'

    def _begin(self, write):
        return self.transaction_class(self, self.inner.begin(write))

    def _close(self):
        self.inner.close()

    def _check_open(self):
        if self._closed:
            raise self._closed_error()

    def get(self, key):
        """Forward to ``inner.get``.

        :param key: as for :meth:`Engine.get`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.get`` raises.
        """
        self._check_open()
        return self.inner.get(key)

    def put(self, key, value):
        """Forward to ``inner.put``.

        :param key: as for :meth:`Engine.put`.
        :param value: as for :meth:`Engine.put`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.put`` raises.
        """
        self._check_open()
        self.inner.put(key, value)

    def delete(self, key):
        """Forward to ``inner.delete``.

        :param key: as for :meth:`Engine.delete`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.delete`` raises.
        """
        self._check_open()
        self.inner.delete(key)

    def items(self, lo=None, hi=None, reverse=False):
        """Forward to ``inner.items``.

        :param lo: as for :meth:`Engine.items`.
        :param hi: as for :meth:`Engine.items`.
        :param reverse: as for :meth:`Engine.items`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.items`` raises.
        """
        self._check_open()
        return self.inner.items(lo, hi, reverse)

    def keys(self, lo=None, hi=None, reverse=False):
        """Forward to ``inner.keys``.

        :param lo: as for :meth:`Engine.keys`.
        :param hi: as for :meth:`Engine.keys`.
        :param reverse: as for :meth:`Engine.keys`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.keys`` raises.
        """
        self._check_open()
        return self.inner.keys(lo, hi, reverse)

    def first(self, lo=None, hi=None, reverse=False):
        """Forward to ``inner.first``.

        :param lo: as for :meth:`Engine.first`.
        :param hi: as for :meth:`Engine.first`.
        :param reverse: as for :meth:`Engine.first`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.first`` raises.
        """
        self._check_open()
        return self.inner.first(lo, hi, reverse)


class TraceTransaction(WrapperTransaction):
    """A :class:`WrapperTransaction` that records calls on its engine.

    :param engine: the :class:`TraceEngine` that began it.
    :param inner: the inner engine's :class:`Transaction`.
    """

    def get(self, key):
        """Record ``('txn.get', (key,))`` and forward.

        :param key: as for :meth:`Transaction.get`.
        """
        self.engine.record('txn.get', (key,))
        return super().get(key)

    def put(self, key, value):
        """Record ``('txn.put', (key, value))`` and forward.

        :param key: as for :meth:`Transaction.put`.
        :param value: as for :meth:`Transaction.put`.
        """
        self.engine.record('txn.put', (key, value))
        super().put(key, value)

    def delete(self, key):
        """Record ``('txn.delete', (key,))`` and forward.

        :param key: as for :meth:`Transaction.delete`.
        """
        self.engine.record('txn.delete', (key,))
        super().delete(key)

    def items(self, lo=None, hi=None, reverse=False):
        """Record ``('txn.items', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Transaction.items`.
        :param hi: as for :meth:`Transaction.items`.
        :param reverse: as for :meth:`Transaction.items`.
        """
        self.engine.record('txn.items', (lo, hi, reverse))
        return super().items(lo, hi, reverse)

    def keys(self, lo=None, hi=None, reverse=False):
        """Record ``('txn.keys', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Transaction.keys`.
        :param hi: as for :meth:`Transaction.keys`.
        :param reverse: as for :meth:`Transaction.keys`.
        """
        self.engine.record('txn.keys', (lo, hi, reverse))
        return super().keys(lo, hi, reverse)

    def first(self, lo=None, hi=None, reverse=False):
        """Record ``('txn.first', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Transaction.first`.
        :param hi: as for :meth:`Transaction.first`.
        :param reverse: as for :meth:`Transaction.first`.
        """
        self.engine.record('txn.first', (lo, hi, reverse))
        return super().first(lo, hi, reverse)

    def commit(self):
        """Record ``('txn.commit', ())`` and forward."""
        self.engine.record('txn.commit', ())
        super().commit()

    def abort(self):
        """Record ``('txn.abort', ())`` and forward."""
        self.engine.record('txn.abort', ())
        super().abort()


class TraceEngine(WrapperEngine):
    """A :class:`WrapperEngine` that records every call it forwards.

    Each call is appended to the list ``calls`` as ``(name, args)``, counted
    in ``counts`` (a :class:`collections.Counter` by name), and, if ``log``
    is given, passed to it as one line such as ``"txn.put(b'k', b'v')"``.
    Transaction calls are named ``'txn.get'``, ``'txn.commit'`` and so on.

    :param inner: the :class:`Engine` to forward to.
    :param log: a callable taking one ``str``, or ``None``.
    :raises TypeError: if `inner` is not an ``Engine``.
    """

    transaction_class = TraceTransaction

    def __init__(self, inner, *, log=None):
        super().__init__(inner)
        self.calls = []
        self.counts = collections.Counter()
        self.log = log

    def record(self, name, args):
        """Record one call.

        :param name: the call's name, such as ``'put'`` or ``'txn.get'``.
        :param args: the ``tuple`` of its arguments.
        """
        self.calls.append((name, args))
        self.counts[name] += 1
        if self.log is not None:
            self.log(f"{name}({', '.join(map(repr, args))})")

    def begin(self, write=False):
        """Record ``('begin', (write,))`` and forward.

        :param write: as for :meth:`Engine.begin`.
        """
        self.record('begin', (write,))
        return super().begin(write)

    def close(self):
        """Record ``('close', ())`` and forward."""
        self.record('close', ())
        super().close()

    def get(self, key):
        """Record ``('get', (key,))`` and forward.

        :param key: as for :meth:`Engine.get`.
        """
        self.record('get', (key,))
        return super().get(key)

    def put(self, key, value):
        """Record ``('put', (key, value))`` and forward.

        :param key: as for :meth:`Engine.put`.
        :param value: as for :meth:`Engine.put`.
        """
        self.record('put', (key, value))
        super().put(key, value)

    def delete(self, key):
        """Record ``('delete', (key,))`` and forward.

        :param key: as for :meth:`Engine.delete`.
        """
        self.record('delete', (key,))
        super().delete(key)

    def items(self, lo=None, hi=None, reverse=False):
        """Record ``('items', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Engine.items`.
        :param hi: as for :meth:`Engine.items`.
        :param reverse: as for :meth:`Engine.items`.
        """
        self.record('items', (lo, hi, reverse))
        return super().items(lo, hi, reverse)

    def keys(self, lo=None, hi=None, reverse=False):
        """Record ``('keys', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Engine.keys`.
        :param hi: as for :meth:`Engine.keys`.
        :param reverse: as for :meth:`Engine.keys`.
        """
        self.record('keys', (lo, hi, reverse))
        return super().keys(lo, hi, reverse)

    def first(self, lo=None, hi=None, reverse=False):
        """Record ``('first', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Engine.first`.
        :param hi: as for :meth:`Engine.first`.
        :param reverse: as for :meth:`Engine.first`.
        """
        self.record('first', (lo, hi, reverse))
        return super().first(lo, hi, reverse)


# --- registry ----------------------------------------------------------------

#: Storage engines by name.
ENGINES = {cls.__name__: cls for cls in (ListEngine, PlyvelEngine, LmdbEngine)}


def get_engine_class(name_or_class):
    """Return the engine class named `name_or_class` (see :data:`ENGINES`).

    :param name_or_class: a name in :data:`ENGINES`, or an :class:`Engine`
        subclass, which is returned as is.
    :returns: the :class:`Engine` subclass.
    :raises ValueError: for an unknown name (the message lists the known
        ones).
    :raises TypeError: if `name_or_class` is neither a ``str`` nor an
        ``Engine`` subclass.
    """
    if isinstance(name_or_class, type) and issubclass(name_or_class, Engine):
        return name_or_class
    if not isinstance(name_or_class, str):
        raise TypeError(
            f'engine must be a name or an Engine subclass, not '
            f'{type(name_or_class).__name__}')
    try:
        return ENGINES[name_or_class]
    except KeyError:
        known = ', '.join(sorted(ENGINES))
        raise ValueError(
            f'unknown engine {name_or_class!r}; known engines: {known}'
        ) from None
