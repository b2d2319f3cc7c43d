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
``engine.begin(write=False) -> EngineTransaction``
    A transaction with the same five methods plus ``count(lo=None,
    hi=None)`` (how many keys ``keys()`` would yield; the base class
    counts the lists of ``_key_chunks()``, LMDB counts with its cursor),
    ``get_many(keys)`` (a list with ``get(key)`` of each key, in order; a
    networked engine reads them in a few round trips, not one per key),
    ``delete_range(lo, hi)`` (in a write transaction, delete every key
    ``lo <= key < hi``, bounds as for ``items()`` but both given, exactly
    as deleting each would; the base class deletes key by key as it
    iterates, a networked engine sends one range delete),
    ``commit()`` and ``abort()``; also a context manager that commits on
    success and aborts when the block raises (the exception propagates).
    Optional: ``verify_storage() -> list[str]``, the damage the engine
    finds in its own files, one message each (LevelDB's transactions check
    their table files); :meth:`centidb.store.Store.verify` reports it.
``engine.close()``
    Release the store. Closing twice is fine. Engines are context managers.

Guarantees shared by every engine here:

* Engine-level ``get/put/delete/items/keys`` each run in a transaction of
  their own. An engine-level iterator holds its read transaction until it is
  exhausted or closed.
* A read transaction sees a consistent snapshot as of ``begin()``. A write
  transaction sees the state committed before its ``begin()`` plus its own
  writes, including in iteration. (An engine whose ``snapshot_at`` is
  ``'first read'``, :class:`~centidb.engines.etcd.EtcdEngine`, takes the
  snapshot at the transaction's first read instead of at ``begin()``.)
* An iterator survives puts, deletes and range deletes made through its own
  transaction between ``next()`` calls: it resumes after the last key it
  yielded.
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
* An engine states its limits as attributes, ``None`` for none:
  ``max_key_size`` and ``max_value_size`` (bytes), ``max_txn_ops`` (puts
  and deletes in one commit; a range delete counts as one) and ``max_txn_bytes`` (bytes of keys and values
  in one commit). Past one, it raises
  :class:`~centidb.errors.LimitExceededError` and writes nothing (LMDB: an
  :class:`~centidb.errors.EngineError` for a long key).
* An engine with optimistic write transactions
  (:class:`~centidb.engines.etcd.EtcdEngine`) may fail ``commit()`` with
  :class:`~centidb.errors.ConflictError` when another client changed what
  the transaction read; nothing is written, and the transaction can be run
  again (:meth:`centidb.store.Store.transact`).

Writing your own engine
-----------------------
Subclass :class:`Engine` and :class:`EngineTransaction`. The engine implements
``_begin(write)``, returning a new transaction, and ``_close()``. The
transaction implements ``_get``, ``_put``, ``_delete``, ``_items``,
``_commit`` and ``_abort`` (and ``_get_many``, to batch reads, and
``_delete_range``, to delete a range at once). The base classes do the rest: argument and state
checks, writer serialization, the auto-commit engine methods, ``keys()``,
context managers and invalidation on close. An engine that buffers writes can
build its iteration from :func:`merge_overlay`. :class:`WrapperEngine`
forwards every call to another engine, for tracing and fault injection.

Optional, for speed: the collection layer writes a record's keys with one
``_put_many(pairs)`` call (the default calls :meth:`EngineTransaction.put`
for each), and uses the unchecked calls of a transaction's ``fast``
(:class:`~centidb.engines.FastCalls`: ``get``, ``put``,
``put_many``, ``replace``, ``delete``, ``seek_cursor``) while they are not
``None``. An engine that leaves them ``None`` loses nothing but speed.
"""

from __future__ import annotations

import importlib

from centidb.engines import lmdb, writelog
from centidb.engines.base import Engine, EngineTransaction, Transaction
from centidb.engines.fastcalls import FastCalls, FastCallsLike
from centidb.engines.leveldb import PlyvelEngine
from centidb.engines.lmdb import LmdbEngine
from centidb.engines.memory import ListEngine, MemoryEngine
from centidb.engines.wrappers import (
    TraceEngine,
    TraceTransaction,
    WrapperEngine,
    WrapperTransaction,
)
from centidb.engines.writelog import merge_overlay

__all__ = [
    'DEFAULT_MAP_SIZE',
    'ENGINES',
    'ENGINE_ALIASES',
    'Engine',
    'EngineTransaction',
    'FastCalls',
    'FastCallsLike',
    'ListEngine',
    'LmdbEngine',
    'MemoryEngine',
    'PlyvelEngine',
    'TOMBSTONE',
    'TraceEngine',
    'TraceTransaction',
    'Transaction',
    'WrapperEngine',
    'WrapperTransaction',
    'OPTIONAL_ENGINES',
    'get_engine_class',
    'merge_overlay',
]

# Autodoc documents a constant where its ``#:`` comment is: these two are
# re-exported by assignment so that the API reference lists them here.

#: Default LMDB map size: 64 GiB on 64-bit Linux and Unix, 64 MiB on 32-bit,
#: Windows and macOS (defined in ``centidb.engines.lmdb``).
DEFAULT_MAP_SIZE = lmdb.DEFAULT_MAP_SIZE

#: Marks a key deleted in a pending-writes overlay (see :func:`merge_overlay`;
#: defined in ``centidb.engines.writelog``).
TOMBSTONE = writelog.TOMBSTONE

#: Storage engines by name. ``'ListEngine'``, the old name of
#: :class:`MemoryEngine`, names the same class.
ENGINES: dict[str, type[Engine]] = {
    'ListEngine': ListEngine,
    'MemoryEngine': MemoryEngine,
    'PlyvelEngine': PlyvelEngine,
    'LmdbEngine': LmdbEngine,
}

#: Engines whose module is imported only when one is asked for by name,
#: because they need an optional extra: name -> module. ``'EtcdEngine'``
#: (``pip install centidb[etcd]``) is :class:`centidb.engines.etcd.EtcdEngine`.
OPTIONAL_ENGINES: dict[str, str] = {
    'EtcdEngine': 'centidb.engines.etcd',
}


#: Short engine names, any case, for :func:`get_engine_class` (so
#: :func:`centidb.open`) and the command line's ``--engine``: short name ->
#: class name.
ENGINE_ALIASES: dict[str, str] = {
    'lmdb': 'LmdbEngine',
    'leveldb': 'PlyvelEngine',
    'plyvel': 'PlyvelEngine',
    'memory': 'MemoryEngine',
    'etcd': 'EtcdEngine',
}


def get_engine_class(name_or_class: str | type[Engine]) -> type[Engine]:
    """Return the engine class named `name_or_class` (see :data:`ENGINES`).

    :param name_or_class: a short name in :data:`ENGINE_ALIASES` (``'lmdb'``,
        ``'leveldb'``, ``'memory'``, ``'etcd'``; any case), a class name in
        :data:`ENGINES` or :data:`OPTIONAL_ENGINES` (whose module is
        imported now), or an :class:`Engine` subclass, which is returned as
        is.
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
    class_name = ENGINE_ALIASES.get(name_or_class.lower(), name_or_class)
    try:
        return ENGINES[class_name]
    except KeyError:
        module = OPTIONAL_ENGINES.get(class_name)
        if module is not None:
            engine_class: type[Engine] = getattr(importlib.import_module(module),
                                                 class_name)
            return engine_class
        known = ', '.join([*ENGINE_ALIASES, *sorted([*ENGINES, *OPTIONAL_ENGINES])])
        raise ValueError(
            f'unknown engine {name_or_class!r}; known engines: {known}'
        ) from None
