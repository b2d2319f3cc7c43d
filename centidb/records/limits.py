"""Limits: a collection's writes checked against the engine's limits before they are made.

An engine states its limits as attributes, ``None`` for none (see
:mod:`centidb.engines`): ``max_value_size``, and per commit ``max_txn_ops``
and ``max_txn_bytes``. The document layer checks them before it writes, so
a write the engine would refuse raises
:class:`~centidb.errors.LimitExceededError` naming the collection, the key
and the sizes, and leaves the transaction as it was:

* :func:`check_value_size`: the general path of ``put()`` checks each
  record's stored value.
* :class:`LimitedWriter`: on an engine with limits, the collection's
  common-case writer is wrapped in one. It lets the writer run on a
  stand-in for the engine transaction that holds its writes, and passes
  them on once :func:`check_commit` (for ``put()``, only its value check)
  has passed them.
* :class:`~centidb.records.savepoint.Savepoint` counts what the general path of
  ``put_many()`` writes, with :func:`commit_too_large` for the error.

The ``put_many()`` checks count the writes of that call only: what the
transaction wrote before is counted by the engine when it commits (and a
delete may cost an engine more than a put; EtcdEngine counts it twice), so
a commit can still be refused there, with nothing written either. On an
engine without limits none of this runs: :func:`limited_writer` returns the
writer as it is.

This layer calls engine transactions and :func:`centidb.records.fastpath.put_many`;
never a layer above.
"""

from __future__ import annotations

from typing import Any, Protocol

from centidb import keylib
from centidb.records import record as records
from centidb.records import fastpath
from centidb.engines import Engine, EngineTransaction, WrapperTransaction
from centidb.engines.base import Item
from centidb.errors import CorruptKeyError, LimitExceededError
from centidb.keylib import Key
from centidb.txn import Transaction

__all__ = ['LimitedWriter', 'limited_writer', 'check_value_size', 'check_commit',
           'commit_too_large']


class _Writer(Protocol):
    """What :class:`LimitedWriter` wraps (``centidb.records.writing.Writer``, seen from below)."""

    @property
    def usable(self) -> bool: ...

    def write(self, txn: Transaction, data: Any, key: object,
              blind: bool) -> records.Record | None: ...

    def write_many(self, etxn: EngineTransaction, datas: list[Any], blind: bool,
                   first_id: int | None) -> list[Key] | None: ...


def _has_limits(engine: Engine) -> bool:
    return not (engine.max_value_size is None and engine.max_txn_ops is None
                and engine.max_txn_bytes is None)


def limited_writer(writer: _Writer, engine: Engine, name: str, prefix: bytes) -> _Writer:
    """Return `writer`, wrapped in a :class:`LimitedWriter` if `engine` has limits.

    :param writer: the collection's common-case writer.
    :param engine: the store's :class:`~centidb.engines.Engine`.
    :param name: the collection's name, for errors.
    :param prefix: the collection's key prefix.
    """
    return LimitedWriter(writer, engine, name, prefix) if _has_limits(engine) else writer


def check_value_size(etxn: EngineTransaction, name: str, key: Key, value: bytes) -> None:
    """Refuse a record whose stored value is longer than the engine's ``max_value_size``.

    :param etxn: the engine transaction the put runs in.
    :param name: the collection's name, for the message.
    :param key: the record's key tuple, for the message.
    :param value: the stored value (packer id byte and the packer's output).
    :raises ~centidb.errors.LimitExceededError: naming the collection, the
        key and both sizes.
    """
    limit = etxn.engine.max_value_size
    if limit is not None and len(value) > limit:
        raise _value_too_long(name, key, len(value), limit)


def _value_too_long(name: str, key: object, size: int, limit: int) -> LimitExceededError:
    return LimitExceededError(
        f'collection {name!r}: the record under key {key!r} is stored as a value of '
        f"{size} bytes, more than the engine's max_value_size of {limit} bytes. "
        f'Nothing was written: store smaller records (a compressing packer, or '
        f'large parts split across records)')


def _fits(engine: Engine, ops: int, size: int) -> bool:
    max_ops, max_bytes = engine.max_txn_ops, engine.max_txn_bytes
    return (max_ops is None or ops <= max_ops) and (max_bytes is None or size <= max_bytes)


def commit_too_large(engine: Engine, what: str, count: int | None, ops: int, size: int,
                     fit: int) -> LimitExceededError:
    """The error for writes of records that one commit cannot hold.

    :param engine: the :class:`~centidb.engines.Engine`, for its limits.
    :param what: what writes, such as ``"collection 'c': put_many()"``.
    :param count: how many records the call writes, or None if unknown.
    :param ops: how many keys it writes (or deletes), at least.
    :param size: how many bytes of keys and values, at least.
    :param fit: how many of the records, from the first, fit in one commit.
    """
    limits = [f'{name} is {limit}' for name, limit in (
        ('max_txn_ops', engine.max_txn_ops), ('max_txn_bytes', engine.max_txn_bytes))
        if limit is not None]
    of = '' if count is None else f' of {count} records'
    return LimitExceededError(
        f'{what}{of} writes at least {ops} keys and {size} bytes of '
        f"keys and values, more than one commit of the engine holds ({', '.join(limits)}); "
        f'only the first {fit} records fit in one commit. Nothing was written: pass '
        f'at most {fit} records per call, each call in a transaction of its own')


def check_commit(engine: Engine, name: str, prefix: bytes, count: int | None,
                 deletes: list[bytes], puts: list[Item]) -> None:
    """Refuse ``put_many()`` writes past the engine's value or commit limits.

    :param engine: the :class:`~centidb.engines.Engine`.
    :param name: the collection's name, for the messages.
    :param prefix: the collection's key prefix: each record's writes in
        `puts` start with its key, which starts with it.
    :param count: how many records the call writes; None for a ``put()``,
        whose values only are checked (the engine refuses at commit more
        keys than it holds).
    :param deletes: the keys the call deletes.
    :param puts: the ``(key, value)`` pairs it stores.
    :raises ~centidb.errors.LimitExceededError: for a value longer than
        ``max_value_size`` (naming its key), or for more keys or bytes than
        ``max_txn_ops`` or ``max_txn_bytes`` (saying how many records fit).
    """
    limit = engine.max_value_size
    if limit is not None:
        for key_bytes, value in puts:
            if len(value) > limit:
                raise _value_too_long(name, _key_of(key_bytes, prefix), len(value), limit)
    if count is None:
        return
    ops = len(deletes) + len(puts)
    size = sum(map(len, deletes)) + sum(len(key) + len(value) for key, value in puts)
    if _fits(engine, ops, size):
        return
    # The records before each record key fit while the sum so far does.
    ops, size = len(deletes), sum(map(len, deletes))
    fit = started = 0
    for key, value in puts:
        if key.startswith(prefix):
            if _fits(engine, ops, size):
                fit = started
            started += 1
        ops += 1
        size += len(key) + len(value)
    raise commit_too_large(engine, f'collection {name!r}: put_many()', count, ops, size, fit)


def _key_of(key_bytes: bytes, prefix: bytes) -> object:
    try:
        return keylib.unpacks(key_bytes, prefix)
    except CorruptKeyError:
        return key_bytes


class _HeldWrites(WrapperTransaction):
    """Stands for the engine transaction in a ``write_many``: reads pass, writes wait.

    A :class:`~centidb.engines.WrapperTransaction` over it (``inner``):
    the writers' ``write_many`` reads first and then writes (deletes, then
    one ``_put_many``); :meth:`release` makes the held writes once they are
    checked. It offers the unchecked getter of ``inner`` and no unchecked
    write; ending it leaves ``inner`` open.
    """

    def __init__(self, etxn: EngineTransaction) -> None:
        super().__init__(etxn.engine, etxn)  # type: ignore[arg-type]  # any engine will do
        self.fast.get = etxn.fast.get
        self.deletes: list[bytes] = []
        self.puts: list[Item] = []

    def _put(self, key: bytes, value: bytes) -> None:
        self.puts.append((key, value))

    def _delete(self, key: bytes) -> None:
        self.deletes.append(key)

    def _delete_range(self, lo: bytes | None, hi: bytes | None) -> None:
        raise NotImplementedError('a write_many holds puts and deletes only')

    def _put_many(self, pairs: list[Item]) -> None:
        self.fast.writes += len(pairs)
        self.puts += pairs

    def _commit(self) -> None:
        pass    # release() makes the writes; the engine transaction stays open

    def _abort(self) -> None:
        pass    # the held writes are dropped; the engine transaction stays open

    def release(self) -> None:
        """Make the held writes in the engine transaction: the deletes, then the puts."""
        etxn = self.inner
        for key in self.deletes:
            etxn.delete(key)
        if self.puts:
            fastpath.put_many(etxn, etxn.fast, self.puts)


class LimitedWriter:
    """A collection's common-case writer on an engine with limits; see the module doc.

    :param writer: the writer it wraps
        (:class:`~centidb.records.RecordWriter`).
    :param engine: the :class:`~centidb.engines.Engine`, for its limits.
    :param name: the collection's name, for errors.
    :param prefix: the collection's key prefix.
    """

    __slots__ = ('writer', 'engine', 'name', 'prefix', 'usable')

    def __init__(self, writer: _Writer, engine: Engine, name: str, prefix: bytes) -> None:
        self.writer = writer
        self.engine = engine
        self.name = name
        self.prefix = prefix
        self.usable = writer.usable

    def write(self, txn: Transaction, data: Any, key: object,
              blind: bool) -> records.Record | None:
        """As the wrapped writer's, writing only once the stored value is checked.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param data: the record value.
        :param key: the key, or ``None``.
        :param blind: as for ``Collection.put``.
        :raises ~centidb.errors.LimitExceededError: for a stored value longer
            than the engine's ``max_value_size``; nothing was written.
        """
        etxn = txn.engine_txn if type(txn) is Transaction else None
        if etxn is None or self.engine.max_value_size is None:
            return self.writer.write(txn, data, key, blind)     # it raises, or needs no check
        held = _HeldWrites(etxn)
        # The writer finds the engine transaction on the store's; as put_many's
        # general path does, stand the holder in for it meanwhile.
        txn.engine_txn = held
        try:
            record = self.writer.write(txn, data, key, blind)
        finally:
            txn.engine_txn = etxn
        if record is not None:
            check_commit(self.engine, self.name, self.prefix, None, held.deletes, held.puts)
            held.release()
        return record

    def write_many(self, etxn: EngineTransaction, datas: list[Any], blind: bool,
                   first_id: int | None) -> list[Key] | None:
        """As the wrapped writer's, writing only once :func:`check_commit` passed.

        :param etxn: the write engine transaction.
        :param datas: a ``list`` of record values.
        :param blind: as for ``Collection.put``.
        :param first_id: ``None``, or the first counter key.
        :raises ~centidb.errors.LimitExceededError: see :func:`check_commit`;
            nothing was written.
        """
        held = _HeldWrites(etxn)
        keys = self.writer.write_many(held, datas, blind, first_id)
        if keys is not None:
            check_commit(self.engine, self.name, self.prefix, len(datas), held.deletes,
                         held.puts)
            held.release()
        return keys
