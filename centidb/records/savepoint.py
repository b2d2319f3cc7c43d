"""Savepoints: writes through an engine transaction that can be rolled back.

Engine transactions have no savepoints; a :class:`Savepoint` stands in for
one around the general path of ``Collection.put_many``, so a record that
fails undoes the writes of the records before it. On an engine with commit
limits it also refuses writes past them (see :mod:`centidb.records.limits`).

This layer calls engine transactions and :mod:`centidb.records.limits`; never a
layer above.
"""

from __future__ import annotations

from centidb.engines import EngineTransaction, WrapperTransaction
from centidb.engines.base import Item
from centidb.records.limits import commit_too_large

__all__ = ['Savepoint']


class Savepoint(WrapperTransaction):
    """Writes through an engine transaction that can be rolled back.

    Engine transactions have no savepoints, so this one remembers, for each
    key it writes, the value the transaction held before the first write;
    :meth:`roll_back` puts those values back, leaving the transaction as it
    was when the savepoint was made (as far as writes made through the
    savepoint go). A :class:`~centidb.engines.WrapperTransaction` over the
    engine transaction (``inner``): reads pass straight through, it offers
    no unchecked call (its ``fast`` calls are all ``None``: every write must
    be remembered), and ending it leaves ``inner`` open.

    If the engine has a ``max_txn_ops`` or ``max_txn_bytes``, a write that
    takes the keys written through the savepoint (or the bytes of their
    keys and values) past it raises
    :class:`~centidb.errors.LimitExceededError` before it is made; the
    message says how many records fit, counting each ``_put_many`` call
    (a record write path makes one per record) as a record.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param what: what writes through it, for that message.
    """

    def __init__(self, etxn: EngineTransaction, what: str = 'the savepoint') -> None:
        super().__init__(etxn.engine, etxn)  # type: ignore[arg-type]  # any engine will do
        self.what = what
        # Engine key -> value before the first write, or None.
        self.saved: dict[bytes, bytes | None] = {}
        #: Bytes of the keys and values written through it (overwrites too).
        self.size = 0
        #: ``_put_many`` calls made through it: records written.
        self.record_count = 0
        engine = etxn.engine
        self._limited = engine.max_txn_ops is not None or engine.max_txn_bytes is not None

    def _check(self) -> None:
        """Raise if the writes so far are more than one commit holds."""
        engine = self.inner.engine
        ops, max_ops, max_bytes = len(self.saved), engine.max_txn_ops, engine.max_txn_bytes
        if (max_ops is not None and ops > max_ops) or (
                max_bytes is not None and self.size > max_bytes):
            raise commit_too_large(engine, self.what, None, ops, self.size, self.record_count)

    def _save(self, key: bytes) -> None:
        if key not in self.saved:
            self.saved[key] = self.inner.get(key)

    def _put(self, key: bytes, value: bytes) -> None:
        self._save(key)
        self.size += len(key) + len(value)
        if self._limited:
            self._check()
        self.inner.put(key, value)

    def _delete(self, key: bytes) -> None:
        self._save(key)
        self.size += len(key)
        if self._limited:
            self._check()
        self.inner.delete(key)

    def _delete_range(self, lo: bytes | None, hi: bytes | None) -> None:
        # Reads every key of the range first, to remember its value.
        saved = self.saved
        for key, value in self.inner.items(lo, hi):
            key = bytes(key)
            if key not in saved:
                saved[key] = bytes(value)
        self.inner.delete_range(lo, hi)

    def _put_many(self, pairs: list[Item]) -> None:
        for key, value in pairs:
            self._save(key)
            self.size += len(key) + len(value)
        if self._limited:
            self._check()
        self.fast.writes += len(pairs)
        self.inner._put_many(pairs)
        self.record_count += 1

    def _commit(self) -> None:
        pass    # the writes stay in the engine transaction, which stays open

    def _abort(self) -> None:
        pass    # roll_back() undoes the writes; the engine transaction stays open

    def roll_back(self) -> None:
        """Put back every value written through the savepoint as it was.

        Does nothing if the engine transaction has ended (an engine error
        such as :class:`~centidb.errors.MapFullError` aborts it).
        """
        etxn = self.inner
        if etxn.state != 'open':
            return
        for key, value in self.saved.items():
            if value is None:
                etxn.delete(key)
            else:
                etxn.put(key, bytes(value))
        self.saved = {}
