"""Store transactions: begin, join the thread's open write transaction, check ownership.

A :class:`Transaction` wraps one engine transaction
(:class:`~centidb.engines.EngineTransaction`) for a store; a
:class:`TxnManager` begins them on one engine and remembers, per thread, the
write transaction that thread has open.

The joining rule: a collection or index method called without ``txn=`` runs
in a transaction of its own, except in a thread that has a write transaction
open on the store: there the call **joins** that transaction, so it sees and
commits (or aborts) with the rest. Opening a second write transaction in that
thread raises :class:`~centidb.errors.TransactionError`.

After a write transaction that changed records commits, the manager's
``after_commit`` callable (the store's :meth:`~centidb.store.Store.on_commit`
hooks) is handed the transaction's :class:`Change` list.

This layer knows engines only; it never calls the collection layer above.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import threading
import time
import weakref
from types import TracebackType
from typing import Any, Callable, Generator, Iterator, Literal, NamedTuple, TypeVar

from centidb.engines import Engine, EngineTransaction
from centidb.errors import ConflictError, EngineClosedError, TransactionError
from centidb.keylib import Key

__all__ = ['Change', 'Transaction', 'TxnManager']

_R = TypeVar('_R')
_T = TypeVar('_T')


class Change(NamedTuple):
    """One record a committed transaction wrote or deleted.

    :meth:`centidb.store.Store.on_commit` hooks receive a list of these, in
    the order the writes were made. Also ``centidb.Change``.

    :param collection: the collection's name.
    :param key: the record's key tuple.
    :param value: the value stored, as given to ``put()`` (not read back
        from the store); ``None`` for a delete.
    """

    collection: str
    key: Key
    value: Any


class Transaction:
    """A store transaction, from :meth:`centidb.store.Store.begin`.

    Pass it as ``txn=`` to collection and index methods. As a context
    manager it commits when the block succeeds and aborts when it raises.
    Made by :meth:`TxnManager.begin`, not directly.

    :param manager: the :class:`TxnManager` that began it.
    :param write: True for a write transaction.
    :param engine_txn: the :class:`~centidb.engines.EngineTransaction`
        underneath; ``None`` once this transaction has ended.
    """

    # Slots: checked_engine_txn reads the first three on every call
    # (compiled, they are the C fields txn.pxd declares).
    __slots__ = ('manager', 'write', 'engine_txn', 'undo', 'changes', '__weakref__')

    def __init__(self, manager: TxnManager, write: bool,
                 engine_txn: EngineTransaction | None) -> None:
        #: The :class:`TxnManager` that began it.
        self.manager = manager
        #: True for a write transaction.
        self.write = write
        #: The :class:`~centidb.engines.EngineTransaction` underneath;
        #: ``None`` once this transaction has ended.
        self.engine_txn = engine_txn
        #: Callables that forget, in this process, what the transaction
        #: created (collections, indexes, encoder ids), run if it aborts or
        #: fails to commit, last first.
        self.undo: list[Callable[[], object]] = []
        #: The :class:`Change` of each record written, in order, while the
        #: manager has an ``after_commit`` (write paths record none without
        #: one); handed to it once the transaction commits.
        self.changes: list[Change] = []

    @property
    def store(self) -> Any:
        """The store this transaction belongs to."""
        return self.manager.owner

    @property
    def raw(self) -> EngineTransaction | None:
        """Alias of :attr:`engine_txn` (the older name)."""
        return self.engine_txn

    def __repr__(self) -> str:
        state = 'open' if self.engine_txn is not None else 'ended'
        return f"<Transaction {'write' if self.write else 'read'} {state}>"

    def _end(self, committed: bool = False) -> None:
        self.engine_txn = None
        undo, self.undo = self.undo, []
        if self.changes:
            self.changes = []
        if self.write:
            self.manager._forget(self)
        if not committed:
            for func in reversed(undo):
                func()

    def commit(self) -> None:
        """Make the writes permanent and end the transaction.

        The transaction ends even if committing fails. Once committed, if
        it changed records, the store's
        :meth:`~centidb.store.Store.on_commit` hooks are called with the
        changes; an exception from a hook propagates from here, the commit
        already durable.

        :raises ~centidb.errors.TransactionError: if it already ended.
        :raises ~centidb.errors.EngineError: if the engine fails to commit
            (for example :class:`~centidb.errors.MapFullError`); the writes
            are lost.
        """
        if self.engine_txn is None:
            raise TransactionError('this transaction has already ended')
        try:
            self.engine_txn.commit()
        except BaseException:
            self._end()
            raise
        changes = self.changes
        self._end(committed=True)
        if changes:
            after_commit = self.manager.after_commit
            if after_commit is not None:
                after_commit(changes)

    def abort(self) -> None:
        """Discard the writes and end the transaction (no-op if ended)."""
        if self.engine_txn is None:
            return
        try:
            self.engine_txn.abort()
        finally:
            self._end()

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if self.engine_txn is None:     # committed or aborted inside the block
            return False
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False


#: How many more times an implicit metadata write is run after a
#: :class:`~centidb.errors.ConflictError` (see :meth:`TxnManager.retry_conflicts`).
CONFLICT_RETRIES = 30

#: How long, in seconds, an implicit metadata write is retried after conflicts.
CONFLICT_RETRY_SECONDS = 20.0


class TxnManager:
    """Begins store transactions on one engine and tracks each thread's writer.

    :param engine: the open :class:`~centidb.engines.Engine`.
    :param owner: the object transactions report as their ``store``.
    :param on_write: ``on_write(engine txn)``, called as each write
        transaction begins (the store brings its cached metadata up to
        date); if it raises, the transaction is aborted.
    :param after_commit: ``after_commit(changes)``, called with the
        :class:`Change` list of each committed write transaction that
        changed records (the store runs its hooks), or None. Kept as the
        attribute of the same name, which the store sets and clears: while
        it is None, write paths record no changes.
    """

    def __init__(self, engine: Engine, owner: Any,
                 on_write: Callable[[EngineTransaction], object] | None = None,
                 after_commit: Callable[[list[Change]], object] | None = None) -> None:
        self.engine = engine
        self.owner = owner
        self.on_write = on_write
        self.after_commit = after_commit
        self.closed = False
        self._local = threading.local()   # .txn: a weakref to the thread's writer

    def check_open(self) -> None:
        """Raise :class:`~centidb.errors.EngineClosedError` once closed."""
        if self.closed:
            raise EngineClosedError('this store is closed; open it again to use it')

    def begin(self, write: bool = False) -> Transaction:
        """Start a :class:`Transaction`; see :meth:`centidb.store.Store.begin`.

        :param write: True for a write transaction.
        """
        self.check_open()
        if write:
            if self.current_write() is not None:
                raise TransactionError(
                    'this thread already has a write transaction open on this '
                    'store; nested transactions are not supported: pass '
                    'txn= or call without txn to join the open one')
        etxn = self.engine.begin(write=bool(write))
        if write and self.on_write is not None:
            try:
                self.on_write(etxn)
            except BaseException:
                etxn.abort()
                raise
        txn = Transaction(self, bool(write), etxn)
        if write:
            # Weak, so a transaction the caller dropped is aborted by the
            # garbage collector instead of holding the writer lock forever.
            self._local.txn = weakref.ref(txn)
        return txn

    def _forget(self, txn: Transaction) -> None:
        ref = getattr(self._local, 'txn', None)
        if ref is not None and ref() is txn:
            self._local.txn = None

    def current_write(self) -> Transaction | None:
        """The write :class:`Transaction` this thread has open, or None."""
        if self.closed:
            self.check_open()
        ref: weakref.ref[Transaction] | None = getattr(self._local, 'txn', None)
        if ref is None:
            return None
        txn = ref()
        if txn is None or txn.engine_txn is None:
            self._local.txn = None
            return None
        return txn

    @contextlib.contextmanager
    def writing(self) -> Iterator[Transaction]:
        """Run a block in the thread's write transaction, or in one of its own.

        Yields the :class:`Transaction`: the one this thread has open (the
        block's writes then commit or abort with it), or a new one that
        commits when the block succeeds and aborts when it raises.
        """
        current = self.current_write()
        if current is not None:
            yield current
            return
        with self.begin(True) as txn:
            yield txn

    def engine_txn(self, txn: Transaction, write: bool) -> EngineTransaction:
        """Return the engine transaction of `txn`, checking it fits.

        :param txn: a :class:`Transaction` of this manager.
        :param write: True if the caller writes.
        :raises TypeError: for anything else.
        :raises ~centidb.errors.TransactionError: if `txn` has ended, or is
            read-only and `write` is true.
        """
        if type(txn) is not Transaction or txn.manager is not self:
            raise TypeError(f'txn must be a transaction from this store\'s begin(), '
                            f'not {txn!r}')
        etxn = txn.engine_txn
        if etxn is None:
            raise TransactionError('this transaction has already ended')
        if write and not txn.write:
            raise TransactionError(
                'cannot write in a read-only transaction; use begin(write=True)')
        return etxn

    def run(self, txn: Transaction | None, write: bool,
            func: Callable[..., _R], *args: Any) -> _R:
        """Call ``func(txn, engine_txn, *args)`` in the right transaction.

        `txn` if given; else the thread's open write transaction; else a
        transaction of its own, committed when `func` returns and aborted
        when it raises.

        :param txn: a :class:`Transaction` of this manager, or None.
        :param write: True if `func` writes.
        :param func: ``func(txn, engine txn, *args)``.
        :param args: more arguments for `func`.
        :returns: what `func` returns.
        """
        if txn is None:
            txn = self.current_write()
            if txn is None:
                own = self.begin(write)
                try:
                    result = func(own, own.engine_txn, *args)
                except BaseException:
                    own.abort()
                    raise
                own.commit()
                return result
        return func(txn, self.engine_txn(txn, write), *args)

    def retry_conflicts(self, func: Callable[..., _R], *args: Any) -> _R:
        """Call ``func(*args)``, again while it fails with a conflict.

        For metadata writes a call makes implicitly (creating the store, a
        collection or an index; numbering an encoder): on an engine with
        optimistic transactions, clients doing them at once conflict, and
        `func`, which runs its own transactions, is called again from its
        first read, after a short random pause, at most
        :data:`CONFLICT_RETRIES` more times and while
        :data:`CONFLICT_RETRY_SECONDS` have not passed. When this thread has
        a write transaction open, `func` joins it and runs once: a conflict
        is the caller's to retry (:meth:`centidb.store.Store.transact`).

        :param func: the callable; it must undo its cached changes when its
            transaction fails, so a second call starts afresh.
        :param args: its arguments.
        :returns: what `func` returns.
        :raises ~centidb.errors.ConflictError: the last conflict, once the
            retries or the time are used up.
        """
        if self.current_write() is not None:
            return func(*args)
        deadline = time.monotonic() + CONFLICT_RETRY_SECONDS
        for attempt in itertools.count():
            try:
                return func(*args)
            except ConflictError:
                if attempt >= CONFLICT_RETRIES or time.monotonic() >= deadline:
                    raise
            time.sleep(random.uniform(0.0, min(0.1, 0.002 * 2 ** attempt)))
        raise AssertionError('unreachable')   # pragma: no cover

    def iterate(self, txn: Transaction | None, lo: bytes | None, hi: bytes | None,
                reverse: bool, max: int | None,
                source: Callable[[EngineTransaction, bytes | None, bytes | None, bool],
                                 Iterator[_T]]) -> Iterator[_T]:
        """Iterate ``source(engine_txn, lo, hi, reverse)`` within a transaction.

        The transaction is chosen now, as for :meth:`run`; a read
        transaction begun for this iterator ends with it. With neither
        `max` nor a read transaction of its own, the result is the source's
        generator itself.

        :param txn: a :class:`Transaction` of this manager, or None.
        :param lo: passed to `source`.
        :param hi: passed to `source`.
        :param reverse: passed to `source`.
        :param max: stop after this many items (None: no limit).
        :param source: ``source(engine txn, lo, hi, reverse)`` returns a
            generator (one with ``close()``), which does nothing until
            first advanced.
        """
        if txn is not None:
            etxn, own = self.engine_txn(txn, False), None
        else:
            current = self.current_write()
            if current is not None:
                # current_write() returns an open transaction: engine_txn is set.
                etxn, own = current.engine_txn, None  # type: ignore[assignment]
            else:
                etxn = own = self.engine.begin()
        if own is None and max is None:
            # Nothing to add to the source's generator: no layer around it.
            return source(etxn, lo, hi, reverse)
        return _iterate(etxn, own, lo, hi, reverse, max, source)

    def close(self) -> None:
        """Refuse every later transaction (the engine is closed by its owner)."""
        self.closed = True


def _iterate(etxn: EngineTransaction, own: EngineTransaction | None, lo: bytes | None,
             hi: bytes | None, reverse: bool, max: int | None,
             source: Callable[[EngineTransaction, bytes | None, bytes | None, bool],
                              Iterator[_T]]) -> Generator[_T, None, None]:
    try:
        items = source(etxn, lo, hi, reverse)
        if max is not None:
            items = itertools.islice(items, max)
        yield from items
    finally:
        if own is not None:
            own.abort()
