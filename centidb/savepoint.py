"""Savepoints: writes through an engine transaction that can be rolled back.

Engine transactions have no savepoints; a :class:`Savepoint` stands in for
one around the general path of ``Collection.put_many``, so a record that
fails undoes the writes of the records before it. On an engine with commit
limits it also refuses writes past them (see :mod:`centidb.limits`).

This layer calls engine transactions and :mod:`centidb.limits`; never a
layer above.
"""

from __future__ import annotations

from typing import Generator, Iterable, Iterator

from centidb.engines import Engine, EngineTransaction
from centidb.engines.base import Item, ItemIterator, KeyIterator
from centidb.limits import commit_too_large

__all__ = ['Savepoint']


class Savepoint:
    """Writes through an engine transaction that can be rolled back.

    Engine transactions have no savepoints, so this one remembers, for each
    key it writes, the value the transaction held before the first write;
    :meth:`roll_back` puts those values back, leaving the transaction as it
    was when the savepoint was made (as far as writes made through the
    savepoint go). It has the engine transaction methods the record write
    paths use; reads pass straight through.

    If the engine has a ``max_txn_ops`` or ``max_txn_bytes``, a write that
    takes the keys written through the savepoint (or the bytes of their
    keys and values) past it raises
    :class:`~centidb.errors.LimitExceededError` before it is made; the
    message says how many records fit, counting each ``_put_many`` call
    (a record write path makes one per record) as a record.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param what: what writes through it, for that message.
    """

    #: The unchecked paths are not offered: every write must be remembered.
    _fast_get = None
    _fast_put_many = None
    _fast_put = None
    _fast_replace = None
    _token = None       # a Record read through it never skips a later read
    _fast_delete = None

    def __init__(self, etxn: EngineTransaction, what: str = 'these writes') -> None:
        self.etxn = etxn
        self.what = what
        # Engine key -> value before the first write, or None.
        self.saved: dict[bytes, bytes | None] = {}
        #: Bytes of the keys and values written through it (overwrites too).
        self.size = 0
        #: ``_put_many`` calls made through it: records written.
        self.records = 0
        engine = etxn.engine
        self._limited = engine.max_txn_ops is not None or engine.max_txn_bytes is not None

    @property
    def engine(self) -> Engine:
        """The engine transaction's engine."""
        return self.etxn.engine

    def _check(self) -> None:
        """Raise if the writes so far are more than one commit holds."""
        engine = self.etxn.engine
        ops, max_ops, max_bytes = len(self.saved), engine.max_txn_ops, engine.max_txn_bytes
        if (max_ops is not None and ops > max_ops) or (
                max_bytes is not None and self.size > max_bytes):
            raise commit_too_large(engine, self.what, None, ops, self.size, self.records)

    @property
    def writes(self) -> int:
        """The engine transaction's count of writes."""
        return self.etxn.writes

    @property
    def state(self) -> str:
        """The engine transaction's state."""
        return self.etxn.state

    def get(self, key: bytes) -> bytes | None:
        """As :meth:`~centidb.engines.EngineTransaction.get`.

        :param key: non-empty ``bytes``.
        """
        return self.etxn.get(key)

    def get_many(self, keys: Iterable[bytes]) -> list[bytes | None]:
        """As :meth:`~centidb.engines.EngineTransaction.get_many`.

        :param keys: an iterable of non-empty ``bytes``.
        """
        return self.etxn.get_many(keys)

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """As :meth:`~centidb.engines.EngineTransaction.first`.

        :param lo: the lowest key included, or ``None``.
        :param hi: the key at which to stop, or ``None``.
        :param reverse: descend.
        """
        return self.etxn.first(lo, hi, reverse)

    def items(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> ItemIterator:
        """As :meth:`~centidb.engines.EngineTransaction.items`.

        :param lo: the lowest key included, or ``None``.
        :param hi: the key at which to stop, or ``None``.
        :param reverse: descend.
        """
        return self.etxn.items(lo, hi, reverse)

    def item_chunks(self, lo: bytes | None = None, hi: bytes | None = None,
                    reverse: bool = False) -> Generator[list[Item], None, None]:
        """As :meth:`~centidb.engines.EngineTransaction.item_chunks`.

        :param lo: the lowest key included, or ``None``.
        :param hi: the key at which to stop, or ``None``.
        :param reverse: descend.
        """
        return self.etxn.item_chunks(lo, hi, reverse)

    def key_chunks(self, lo: bytes | None = None, hi: bytes | None = None,
                   reverse: bool = False) -> Iterator[list[bytes]]:
        """As :meth:`~centidb.engines.EngineTransaction.key_chunks`.

        :param lo: the lowest key included, or ``None``.
        :param hi: the key at which to stop, or ``None``.
        :param reverse: descend.
        """
        return self.etxn.key_chunks(lo, hi, reverse)

    def keys(self, lo: bytes | None = None, hi: bytes | None = None,
             reverse: bool = False) -> KeyIterator:
        """As :meth:`~centidb.engines.EngineTransaction.keys`.

        :param lo: the lowest key included, or ``None``.
        :param hi: the key at which to stop, or ``None``.
        :param reverse: descend.
        """
        return self.etxn.keys(lo, hi, reverse)

    def count(self, lo: bytes | None = None, hi: bytes | None = None) -> int:
        """As :meth:`~centidb.engines.EngineTransaction.count`.

        :param lo: the lowest key included, or ``None``.
        :param hi: the key at which to stop, or ``None``.
        """
        return self.etxn.count(lo, hi)

    def _save(self, key: bytes) -> None:
        if key not in self.saved:
            self.saved[key] = self.etxn.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """As :meth:`~centidb.engines.EngineTransaction.put`, remembering the old value.

        :param key: non-empty ``bytes``.
        :param value: ``bytes``.
        """
        self._save(key)
        self.size += len(key) + len(value)
        if self._limited:
            self._check()
        self.etxn.put(key, value)

    def delete(self, key: bytes) -> None:
        """As :meth:`~centidb.engines.EngineTransaction.delete`, remembering the old value.

        :param key: non-empty ``bytes``.
        """
        self._save(key)
        self.size += len(key)
        if self._limited:
            self._check()
        self.etxn.delete(key)

    def delete_range(self, lo: bytes | None, hi: bytes | None) -> None:
        """As :meth:`~centidb.engines.EngineTransaction.delete_range`, remembering the old values.

        Reads every key of the range first, to remember its value.

        :param lo: the lowest key removed, or ``None``.
        :param hi: the key at which to stop, or ``None``.
        """
        saved = self.saved
        for key, value in self.etxn.items(lo, hi):
            key = bytes(key)
            if key not in saved:
                saved[key] = bytes(value)
        self.etxn.delete_range(lo, hi)

    def _put_many(self, pairs: list[Item]) -> None:
        for key, value in pairs:
            self._save(key)
            self.size += len(key) + len(value)
        if self._limited:
            self._check()
        self.etxn._put_many(pairs)
        self.records += 1

    def roll_back(self) -> None:
        """Put back every value written through the savepoint as it was.

        Does nothing if the engine transaction has ended (an engine error
        such as :class:`~centidb.errors.MapFullError` aborts it).
        """
        etxn = self.etxn
        if etxn.state != 'open':
            return
        for key, value in self.saved.items():
            if value is None:
                etxn.delete(key)
            else:
                etxn.put(key, bytes(value))
        self.saved = {}
