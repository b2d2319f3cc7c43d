"""Writing: what a collection hands its record paths, and its common-case writers.

:class:`Writer` is the common-case writer a collection calls first, and a
:class:`ReportingWriter` one that records its changes for commit hooks.
:class:`KeySource` and :class:`BoundIndex` are what the collection hands
its record paths (:class:`~centidb.records.access.Records`).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from centidb.engines import EngineTransaction
from centidb.keylib import Key
from centidb.records.record import Record
from centidb.txn import Change, Transaction

__all__ = ['BoundIndex', 'KeySource', 'Writer', 'ReportingWriter']


class BoundIndex(Protocol):
    """What the record paths read of an index added in this session.

    :class:`~centidb.index.Index` is one; this layer, below it, names only
    what it reads.
    """

    @property
    def name(self) -> str:
        """The index's name."""

    @property
    def func(self) -> Callable[[Any], Any]:
        """The index function."""

    @property
    def prefix(self) -> bytes:
        """The bytes every entry of the index starts with."""

    @property
    def unique(self) -> bool:
        """True if no two records may have the same index tuple."""


class KeySource:
    """How a collection's records get their keys.

    :param kind: ``'key_func'``, ``'txn_key_func'`` or ``'auto'``, as
        recorded for the collection.
    :param key_func: ``key_func(record)``, or None.
    :param txn_key_func: ``txn_key_func(txn, record)``, or None.
    :param next_key: ``next_key(engine txn)`` reads the counter's value,
        the next auto-increment key (``at_least`` then moves it on).
    :param at_least: ``at_least(engine txn, n)`` raises the counter to `n`.
    """

    __slots__ = ('kind', 'key_func', 'txn_key_func', 'next_key', 'at_least')

    def __init__(self, kind: str, key_func: Callable[[Any], Any] | None,
                 txn_key_func: Callable[[Transaction, Any], Any] | None,
                 next_key: Callable[[EngineTransaction], int],
                 at_least: Callable[[EngineTransaction, int], object]) -> None:
        self.kind = kind
        self.key_func = key_func
        self.txn_key_func = txn_key_func
        self.next_key = next_key
        self.at_least = at_least



class Writer(Protocol):
    """The common-case writer of a collection: a RecordWriter, or one reporting changes.

    :class:`~centidb.records.RecordWriter` is one, and so is
    :class:`ReportingWriter`.
    """

    @property
    def usable(self) -> bool:
        """False when the collection's puts are never the common case."""

    def write(self, txn: Transaction, data: Any, key: object, blind: bool) -> Record | None:
        """As :meth:`~centidb.records.RecordWriter.write`.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param data: the record value.
        :param key: the key, or ``None``.
        :param blind: as for ``Collection.put``.
        """

    def write_many(self, etxn: EngineTransaction, datas: list[Any], blind: bool,
                   first_id: int | None) -> list[Key] | None:
        """As :meth:`~centidb.records.RecordWriter.write_many`.

        :param etxn: the write engine transaction.
        :param datas: a ``list`` of record values.
        :param blind: as for ``Collection.put``.
        :param first_id: ``None``, or the first counter key.
        """


class ReportingWriter:
    """A :class:`~centidb.records.RecordWriter` whose puts also record their change.

    While the store has :meth:`~centidb.store.Store.on_commit` hooks, the
    collection writes through this: each record :meth:`write` stores adds a
    :class:`~centidb.txn.Change` to the store transaction's ``changes``.
    :meth:`write_many` only passes the call on; :meth:`~centidb.records.access.Records.put_many`
    records those changes, as it holds the store transaction.

    :param writer: the collection's :class:`~centidb.records.RecordWriter`.
    :param name: the collection's name.
    """

    __slots__ = ('writer', 'name', 'usable')

    def __init__(self, writer: Writer, name: str) -> None:
        self.writer = writer
        self.name = name
        self.usable = writer.usable

    def write(self, txn: Transaction, data: Any, key: object, blind: bool) -> Record | None:
        """As :meth:`~centidb.records.RecordWriter.write`, recording the change.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param data: the record value.
        :param key: the key, or ``None``.
        :param blind: as for ``Collection.put``.
        """
        record = self.writer.write(txn, data, key, blind)
        if record is not None:
            # A stored Record's key is never None.
            txn.changes.append(Change(self.name, record.key, record.data))  # type: ignore[arg-type]
        return record

    def write_many(self, etxn: EngineTransaction, datas: list[Any], blind: bool,
                   first_id: int | None) -> list[Key] | None:
        """As :meth:`~centidb.records.RecordWriter.write_many` (recording nothing).

        :param etxn: the write engine transaction.
        :param datas: a ``list`` of record values.
        :param blind: as for ``Collection.put``.
        :param first_id: ``None``, or the first counter key.
        """
        return self.writer.write_many(etxn, datas, blind, first_id)
