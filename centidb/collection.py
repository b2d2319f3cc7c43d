"""Collections of records, their secondary indexes, and query parameters.

A :class:`Collection` stores records (any value its encoder supports) under
tuple keys; an :class:`Index` maps each record to zero, one or many index
tuples through a plain Python function. Both are prefix views of the
store's engine; the byte layout is in ``docs/format.rst``.

Every read and write method takes ``txn=``, a transaction from
:meth:`centidb.store.Store.begin`. Without it, a call runs in a transaction of its
own, or joins the write transaction this thread has open on the store.

Iterating methods and ``count()`` take the query parameters described in
:mod:`centidb.query`.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Final, Iterable, Iterator, NoReturn, TypeVar

from centidb import batches, encodings, keylib
from centidb.records.access import CollectionCalls, Records
from centidb.batches import BatchView
from centidb.catalog import Catalog, StoredIndex
from centidb.expr import Expr
from centidb.collinfo import CollectionMeta
from centidb.encodings import Encoder
from centidb.engines import EngineTransaction
from centidb.errors import CorruptKeyError, StoreError
from centidb.hooks import BeforeWriteHooks
from centidb.where import WhereQuery, as_expr
from centidb.index import Index, IndexSet  # Index: also the older import path
from centidb.keylib import Key
from centidb.metarecords import CollectionInfo
from centidb.query import KeySpace, check_query, doc_of, query_doc, readonly
from centidb.records import Record, as_key
from centidb.records.entry import collection_get, collection_put
from centidb.txn import Transaction, TxnManager
from centidb.records.writing import KeySource

_T = TypeVar('_T')
#: Pairs a collection's group count takes from its scan at a time.
_CHUNK = 256
_Check = TypeVar('_Check', bound=Callable[[Key, Any], object])
_MISSING = object()

__all__ = ['Collection']


class Collection:
    """A named set of records in a store, with its indexes.

    Made by :meth:`centidb.store.Store.collection`, not directly; see there
    for the arguments users give. ``indices`` maps index names to the
    :class:`Index` objects added in this session; the index methods
    (``add_index``, ``drop_index``, ``reindex``) come from
    :class:`~centidb.index.Indexed`.

    A collection also behaves like a mapping from keys to values, each call
    in a transaction of its own (or the thread's write transaction):
    ``key in coll``, ``coll[key]`` (``KeyError`` when missing),
    ``coll[key] = value`` (``put(value, key=key)``), ``del coll[key]``
    (``KeyError`` when missing), ``iter(coll)`` (the keys in order),
    ``len(coll)`` (``coll.count()``, one pass over the keys) and
    ``bool(coll)`` (whether it holds any record).

    :param store: the :class:`~centidb.store.Store` (kept, not called).
    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param catalog: the store's :class:`~centidb.catalog.Catalog`.
    :param name: the collection's name.
    :param info: its metadata ``dict`` (``'id'``, ``'encoder'``,
        ``'packer'``, ``'counter'``, ``'batched'``).
    :param key_func: ``key_func(record)``, or ``None``.
    :param txn_key_func: ``txn_key_func(txn, record)``, or ``None``.
    :param encoder: the record :class:`~centidb.encodings.Encoder`.
    :param packer: the default packer (an ``Encoder``).
    :param indexes: a ``dict`` from the name to the
        :class:`~centidb.catalog.StoredIndex` of each index stored for the
        collection.
    """

    def __init__(self, store: Any, txns: TxnManager, catalog: Catalog, name: str,
                 info: CollectionInfo, key_func: Callable[[Any], Any] | None,
                 txn_key_func: Callable[[Transaction, Any], Any] | None, encoder: Encoder,
                 packer: Encoder, indexes: dict[str, StoredIndex]) -> None:
        self._store = store
        self._txns = txns
        self._catalog = catalog
        self._name = name
        self._coll_id = info['id']
        self._prefix = keylib.packs(self._coll_id)
        self._encoder = encoder
        self._packer = packer
        self._key_func = key_func
        self._txn_key_func = txn_key_func
        self._counter_name = info['counter']
        self._meta = CollectionMeta(catalog, name, info, encoder, packer)
        given = ('key_func' if key_func is not None else
                 'txn_key_func' if txn_key_func is not None else 'auto')
        # Stores from before key kinds were recorded: the functions given decide.
        self._keys = KeySource(info.get('key', given), key_func, txn_key_func,
                               self._next_key, self._at_least)
        self._header = bytes([catalog.encoder_id(packer)])
        plain_id = catalog.encoder_id(encodings.PLAIN_PACKER)
        #: True if every stored value carries a CRC-32 trailer (see centidb.checksums).
        self._checksum = info.get('checksum') is not None
        self._view = BatchView(self._prefix, name, bytes([plain_id]), self._meta.packer_of,
                               txns.engine.max_key_size, self._checksum)
        self._plain_id = plain_id
        #: What :meth:`get` and :meth:`put` read (a
        #: :class:`~centidb.records.access.CollectionCalls`): the store's
        #: transaction manager and the collection's current record paths.
        self.calls = CollectionCalls(txns, self._put_general, catalog.encoder_id)
        self._space = KeySpace(self._prefix, txns, self.values, self._entry_keys,
                               self._entry_chunks, self._group_of, 1, self._meta.unbatched)
        self._hooks = BeforeWriteHooks(name, self._rebuild)
        self._index_set = IndexSet(self, txns, catalog, name, indexes, self._fill_index,
                                   self._rebuild)
        #: Index name -> :class:`Index`, for the indexes added in this session.
        self.indices = self._index_set.added
        self._rebuild()

    def __repr__(self) -> str:
        return f'<Collection {self.name!r} of {self.store!r}>'

    # Read-only: put() and get() are prepared from these. (The store is Any:
    # this layer cannot name the Store class.)

    store: Final[Any] = readonly(
        '_store', 'The :class:`~centidb.store.Store` holding the collection.')
    name: Final[str] = readonly('_name', "The collection's name (``str``).")
    coll_id: Final[int] = readonly(
        '_coll_id', "The collection's number in the store; its keys start with it.")
    prefix: Final[bytes] = readonly(
        '_prefix', 'The bytes every record key of the collection starts with.')
    encoder: Final[Encoder] = readonly(
        '_encoder', 'The :class:`~centidb.encodings.Encoder` of the records.')
    packer: Final[Encoder] = readonly(
        '_packer', 'The default packer (an ``Encoder``) of new records.')
    key_func: Final[Callable[[Any], Any] | None] = readonly(
        '_key_func', "``key_func(record)`` making each record's key, or ``None``.")
    txn_key_func: Final[Callable[[Transaction, Any], Any] | None] = readonly(
        '_txn_key_func', '``txn_key_func(txn, record)`` making each key, or ``None``.')
    checksum: Final[bool] = readonly(
        '_checksum', 'True if each stored value carries a CRC-32 checksum, checked on every read.')
    counter_name: Final[str] = readonly(
        '_counter_name', 'The name of the counter that numbers keyless records.')

    @property
    def records(self) -> Records:
        """The collection's record paths (:class:`~centidb.records.access.Records`).

        Made again whenever its indexes, hooks or batching change.
        """
        return self.calls.records

    def _next_key(self, etxn: EngineTransaction) -> int:
        return self._catalog.counter(etxn, self._counter_name, 0, 1)

    def _at_least(self, etxn: EngineTransaction, n: int) -> None:
        self._catalog.raise_counter(etxn, self._counter_name, n)

    def _fill_index(self, etxn: EngineTransaction, func: Callable[[Any], Any],
                    index_prefix: bytes, unique_name: str | None, replace: bool,
                    progress: Callable[[int], object] | None = None) -> None:
        self.calls.records.fill_index(etxn, func, index_prefix, unique_name, replace,
                                      progress)

    def reload(self, info: CollectionInfo, indexes: dict[str, StoredIndex]) -> None:
        """Take up metadata another process changed (called by the store).

        :param info: the collection's stored metadata ``dict``.
        :param indexes: name to :class:`~centidb.catalog.StoredIndex` of
            every index stored for it.
        """
        self._meta.reload(info)
        self._index_set.reload(indexes)    # rebuilds the record paths

    def detach(self, why: str) -> Callable[[], None]:
        """Make every later use raise :class:`~centidb.errors.StoreError`.

        Called by the store when the collection no longer exists as this
        object knows it (created in an aborted transaction, or removed).

        :param why: the error message.
        :returns: a callable that attaches the collection again as it was
            (the store calls it when a drop's transaction aborts).
        """
        added, stored = dict(self.indices), dict(self._index_set.stored)
        calls = self.calls
        calls.records = calls.writer = calls.reader = _Detached(why)  # type: ignore[assignment]
        self._index_set.reload({})      # forgets every index; stays detached

        def attach() -> None:
            calls.records = None  # type: ignore[assignment]  # _rebuild() makes them
            self.indices.update(added)
            self._index_set.reload(stored)  # rebuilds the record paths
        return attach

    def _rebuild(self) -> None:
        """Prepare the record paths again after the indexes, hooks or batching changed."""
        calls = self.calls
        if type(getattr(calls, 'records', None)) is _Detached:
            return      # detached: no index change brings it back
        indexes = tuple(self.indices.values())
        unbound = self._index_set.unbound()
        records = Records(
            self, self._txns, Transaction, self._name, self._prefix, self._encoder,
            self._packer, self._header, self._plain_id, self._meta.packer_of, self._keys,
            indexes, unbound, self._view,
            self._meta.batched, self._txns.engine.max_key_size,
            before_write=self._hooks.hooks,
            report=self._txns.after_commit is not None, checksum=self._checksum)
        calls.records, calls.writer, calls.reader = records, records.writer, records.reader

    def rebuild(self) -> None:
        """Prepare the write and read paths again.

        Called by the store when it starts or stops recording changes for
        its :meth:`~centidb.store.Store.on_commit` hooks.
        """
        self._rebuild()

    # --- writing -------------------------------------------------------------

    put = collection_put

    def _put_general(self, txn: Transaction, rec: Any, key: object, blind: bool,
                     packer: Encoder | None) -> Record:
        """put() once the common-case writer declined (or, with `packer`, was skipped)."""
        etxn = self._txns.engine_txn(txn, True)
        if packer is None:
            return self.calls.records.put(txn, etxn, rec, key, blind)
        header = bytes([self._catalog.encoder_id(packer)])
        packer = self._catalog.packer_for(packer)
        new = self._meta.new_packer(packer)
        record = self.calls.records.put(txn, etxn, rec, key, blind, packer, header)
        if new:
            self._meta.use_packer(txn, packer)
        return record

    def delete(self, key: object, txn: Transaction | None = None) -> Record | None:
        """Delete the record under `key` (or a :class:`Record`'s key).

        Removes its index entries too.

        :param key: the key tuple (a bare value means a 1-tuple), or a
            stored :class:`Record`.
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: see the module doc).
        :returns: the deleted :class:`Record`, or ``None`` if there was no
            such record.
        :raises ValueError: for a :class:`Record` that was never stored.
        :raises ~centidb.errors.CorruptRecordError: if the stored record
            cannot be decoded; the message names the
            :meth:`~centidb.store.Store.remove_record` call that deletes it.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        """
        if type(key) is Record:
            if key.key is None:
                raise ValueError('this Record was never stored, so it has no key to delete')
            key = key.key
        return self._txns.run(txn, True, self._delete, as_key(key))

    def _delete(self, txn: Transaction, etxn: EngineTransaction, key: Key) -> Record | None:
        return self.calls.records.delete(txn, etxn, key)

    # --- reading -------------------------------------------------------------

    get = collection_get

    def get_many(self, keys: Iterable[object], default: Any = None,
                 txn: Transaction | None = None) -> list[Any]:
        """Return a list with the value of each key in `keys` (or `default`).

        All are read in one transaction.

        :param keys: an iterable of key tuples (a bare value means a
            1-tuple).
        :param default: the item for a key with no record.
        :param txn: a :class:`~centidb.txn.Transaction` of the store to
            read in (default: see the module doc).
        :returns: a ``list``, in the order of `keys`.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key element
            the key codec cannot encode (see :func:`~centidb.keylib.packs`).
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.UnknownEncoderError: for a record stored
            with a packer not registered in this session.
        """
        packed = [keylib.packs(as_key(key), self.prefix) for key in keys]
        return self._txns.run(txn, False, self._read_many, packed, default)

    def _read_many(self, txn: Transaction, etxn: EngineTransaction, packed: list[bytes],
                   default: Any) -> list[Any]:
        return self.calls.records.read_many(txn, etxn, packed, default)

    def _scan(self, txn: Transaction | None, lo: object, hi: object, prefix: object,
              startswith: object, reverse: bool, max: int | None, include: bool,
              source: Callable[[EngineTransaction, bytes, bytes, bool], Iterator[_T]]
              ) -> Iterator[_T]:
        check_query(reverse, max)
        lo_bytes, hi_bytes = self._space.bounds(lo, hi, prefix, startswith, include)
        return self._txns.iterate(txn, lo_bytes, hi_bytes, reverse, max,
                                  source)  # type: ignore[arg-type]  # hi: never None here

    @query_doc('key')
    def items(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, reverse: bool = False, max: int | None = None,
              include: bool = False,
              txn: Transaction | None = None) -> Iterator[tuple[Key, Any]]:
        """Iterate ``(key, value)`` pairs in key order.

        {query}
        :returns: an iterator of ``(key tuple, value)``.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record stored with a packer not registered in this session.
        """
        return self._scan(txn, lo, hi, prefix, startswith, reverse, max, include,
                          self.calls.reader.items)

    @query_doc('key')
    def keys(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, max: int | None = None,
             include: bool = False, txn: Transaction | None = None) -> Iterator[Key]:
        """Iterate keys in key order, without decoding any value.

        {query}
        :returns: an iterator of key tuples.
        """
        return self._scan(txn, lo, hi, prefix, startswith, reverse, max, include,
                          self.calls.reader.keys)

    @query_doc('key')
    def values(self, lo: object = None, hi: object = None, *, prefix: object = None,
               startswith: object = None, reverse: bool = False, max: int | None = None,
               include: bool = False, txn: Transaction | None = None) -> Iterator[Any]:
        """Iterate values in key order.

        {query}
        :returns: an iterator of record values.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record stored with a packer not registered in this session.
        """
        return self._scan(txn, lo, hi, prefix, startswith, reverse, max, include,
                          self.calls.reader.values)

    # --- queries ---------------------------------------------------------------

    def where(self, *exprs: Expr, **equalities: Any) -> WhereQuery:
        """The records meeting every condition, planned over the field indexes.

        ``where(F('age') >= 30, city='Leeds')`` is ``F('age') >= 30`` and
        ``F('city') == 'Leeds'`` (see :mod:`centidb.expr` for the
        comparison rules and :mod:`centidb.where` for the plan rules).
        Nothing is read until a terminal call: iterating (values),
        ``items()``, ``keys()``, ``first()``, ``count()`` or ``delete()``.

        :param exprs: expressions made with :class:`~centidb.expr.F`.
        :param equalities: ``field=value`` for ``F('field') == value``.
        :returns: a :class:`~centidb.where.WhereQuery`.
        :raises TypeError: for an argument that is not an expression, or a
            value the key codec cannot encode.
        """
        return WhereQuery(self, self._txns, as_expr(exprs, equalities))

    @doc_of(KeySpace.find)
    def find(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, include: bool = False,
             txn: Transaction | None = None, default: Any = None) -> Any:
        return self._space.find(lo, hi, prefix=prefix, startswith=startswith, reverse=reverse,
                                include=include, txn=txn, default=default)

    @doc_of(KeySpace.count)
    def count(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, reverse: bool = False, max: int | None = None,
              include: bool = False, txn: Transaction | None = None) -> int:
        return self._space.count(lo, hi, prefix=prefix, startswith=startswith,
                                 reverse=reverse, max=max, include=include, txn=txn)

    @doc_of(KeySpace.group_counts)
    def group_counts(self, size: int = 1, lo: object = None, hi: object = None, *,
                     prefix: object = None, startswith: object = None, reverse: bool = False,
                     max: int | None = None, include: bool = False,
                     txn: Transaction | None = None) -> list[tuple[Key, int]]:
        return self._space.group_counts(size, lo, hi, prefix=prefix, startswith=startswith,
                                        reverse=reverse, max=max, include=include, txn=txn)

    # --- many records at once -------------------------------------------------

    def put_many(self, recs: Iterable[Any], *, blind: bool = False,
                 txn: Transaction | None = None) -> list[Key]:
        """Store every record of `recs` in one transaction; return their keys.

        Each gets its key and index entries as :meth:`put` gives them, in
        order (a key that comes twice ends with the later record). The call
        is atomic: if anything fails for any record (a key or index
        function raises, a value cannot be encoded, a key is too long),
        nothing of the call is written and the exception propagates; a
        transaction passed as `txn` is left as it was, including what a
        ``txn_key_func`` wrote through it. For a collection with a
        ``key_func`` or counter keys and plain values, every record is
        encoded and checked before the first write, and the writes go to the
        engine in one call; the stored bytes of the whole call are held in
        memory until then, so split a very large import into calls of some
        thousands of records (in one transaction, if it must be atomic).

        :param recs: an iterable of record values (or :class:`Record`
            objects, whose ``data`` is stored and ``key``, if not ``None``,
            reused).
        :param blind: as for :meth:`put`: True skips reading the records
            already under the keys, promising there are none.
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: see the module doc).
        :returns: a ``list`` of key tuples, in the order of `recs`.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key or index
            tuple element the key codec cannot encode.
        :raises ValueError: if a packed key or index entry is longer than
            the engine's ``max_key_size``.
        :raises ~centidb.errors.LimitExceededError: (a ``ValueError``) if a
            stored value is longer than the engine's ``max_value_size``, or
            the call writes more keys or bytes than one commit of the engine
            holds (``max_txn_ops``, ``max_txn_bytes``); the message says how
            many of the records fit. Only this call's writes are counted:
            the engine refuses at commit what the whole transaction wrote
            past its limits. See :mod:`centidb.records.limits`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        """
        return self._txns.run(txn, True, self._put_many, list(recs), blind)

    def _put_many(self, txn: Transaction, etxn: EngineTransaction, recs: list[Any],
                  blind: bool) -> list[Key]:
        return self.calls.records.put_many(txn, etxn, recs, blind)

    def delete_many(self, keys: Iterable[object], *,
                    txn: Transaction | None = None) -> list[Record | None]:
        """Delete the records under `keys` in one transaction, as :meth:`delete` each.

        The call is atomic: every record is read, decoded and its index
        entries found before the first delete, so if that fails for any key
        nothing is deleted; a transaction passed as `txn` is left as it was.

        :param keys: an iterable of key tuples (a bare value means a
            1-tuple) or stored :class:`Record` objects.
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: see the module doc).
        :returns: a ``list`` mirroring `keys`: the deleted :class:`Record`
            for each, or ``None`` where there was no such record (also for
            a key that came earlier in `keys`).
        :raises ValueError: for a :class:`Record` that was never stored.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key element
            the key codec cannot encode.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        """
        tuples: list[Key] = []
        for key in keys:
            if type(key) is Record:
                if key.key is None:
                    raise ValueError('a Record in keys was never stored, so it has no '
                                     'key to delete')
                key = key.key
            tuples.append(as_key(key))
        return self._txns.run(txn, True, self._delete_many, tuples)

    def _delete_many(self, txn: Transaction, etxn: EngineTransaction,
                     keys: list[Key]) -> list[Record | None]:
        return self.calls.records.delete_many(txn, etxn, keys)

    def batch(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, max_recs: int | None = None,
              max_bytes: int | None = None, packer: Encoder = encodings.ZLIB_PACKER,
              txn: Transaction | None = None) -> tuple[int, int, Key | None]:
        """Store runs of adjacent records in the range as compressed batches.

        Every record in the range is rewritten into batches, each compressed
        with `packer` as one value. Batches that straddle the range ends are
        rewritten whole. Reads and writes keep working on batched records;
        index entries are unchanged. The whole range is held in memory while
        it is rewritten.

        :param lo: the lowest key included, as for :meth:`items`.
        :param hi: the key at which to stop (excluded), as for :meth:`items`.
        :param prefix: only keys whose first elements equal this tuple's,
            as for :meth:`items`.
        :param startswith: as `prefix`, but the last element matches every
            string starting with it, as for :meth:`items`.
        :param max_recs: the most records in one batch (default and maximum
            :data:`~centidb.batches.MAX_MEMBERS`).
        :param max_bytes: the most bytes of keys and encoded values in one
            batch (default: no limit); a record larger than this makes a
            batch by itself.
        :param packer: the :class:`~centidb.encodings.Encoder` that
            compresses each batch.
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: see the module doc).
        :returns: ``(records found, batches made, last key)``, where `last
            key` is the key of the last record rewritten (or ``None``), so a
            long range can be batched in pieces.
        :raises TypeError: if `max_recs` or `max_bytes` is not an ``int``,
            `packer` not an ``Encoder``, or `txn` not a transaction of this
            store.
        :raises ValueError: if `max_recs` or `max_bytes` is outside what the
            batch format holds.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        :raises ~centidb.errors.UnknownEncoderError: if `packer` is new to
            the store while this thread has a write transaction open, or a
            record in the range was stored with an unregistered packer.
        """
        batches.check_limits(max_recs, max_bytes)
        packer_id = self._catalog.encoder_id(packer)
        packer = self._catalog.packer_for(packer)
        lo_bytes, hi_bytes = self._space.bounds(lo, hi, prefix, startswith, False)
        return self._txns.run(txn, True, self._batch, lo_bytes, hi_bytes,
                              max_recs or batches.MAX_MEMBERS, max_bytes, packer_id, packer)

    def _batch(self, txn: Transaction, etxn: EngineTransaction, lo_bytes: bytes,
               hi_bytes: bytes, max_recs: int, max_bytes: int | None, packer_id: int,
               packer: Encoder) -> tuple[int, int, Key | None]:
        self.calls.records.check_writable()
        new = self._meta.new_packer(packer)
        found, made, last = self._view.batch(etxn, lo_bytes, hi_bytes, max_recs, max_bytes,
                                             packer_id, packer)
        if made:
            if new:
                self._meta.use_packer(txn, packer)
            self._meta.mark_batched(txn)
            self._rebuild()
        return found, made, (None if last is None else keylib.unpacks(last))

    # --- the mapping protocol ----------------------------------------------------

    def __len__(self) -> int:
        return self.count()

    def __bool__(self) -> bool:
        for _ in self.keys(max=1):
            return True
        return False

    def __contains__(self, key: object) -> bool:
        return self._txns.run(None, False, self._has, as_key(key))

    def _has(self, txn: Transaction, etxn: EngineTransaction, key: Key) -> bool:
        return self.calls.records.stored(etxn, keylib.packs(key, self._prefix)) is not None

    def __getitem__(self, key: object) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: object, value: Any) -> None:
        self.put(value, key=key)

    def __delitem__(self, key: object) -> None:
        if self.delete(key) is None:
            raise KeyError(key)

    def __iter__(self) -> Iterator[Key]:
        return self.keys()

    # --- hooks and indexes ------------------------------------------------------

    def before_write(self, hook: _Check) -> _Check:
        """Call ``hook(key, value)`` before each record of this collection is written.

        For validation: the hook runs in the write transaction, for every
        ``put()``, ``put_many()``, ``delete()``, ``delete_many()``,
        ``coll[key] = value`` and ``del coll[key]``, after the key, the
        index entries and every other check have been made and just before
        the record is written (``value`` is ``None`` for a delete, and a
        delete of a missing key calls nothing). If it raises, that write
        writes nothing, and for ``put_many()`` and ``delete_many()`` the
        whole call writes nothing, and the exception propagates. ``batch()``
        and ``Store.drop_collection()`` call no hook. Hooks run in the
        order added and last for this session only; while a collection has
        one, its writes take the general (slower) path.

        Returns `hook`, so it works as a decorator.

        :param hook: ``hook(key tuple, value)``; what it returns is ignored.
        :returns: `hook`.
        :raises TypeError: if `hook` is not callable.
        """
        return self._hooks.add(hook)

    def remove_hook(self, hook: Callable[[Key, Any], object]) -> None:
        """Stop calling a hook added with :meth:`before_write`.

        A hook added twice is called twice, and removed once by each call.

        :param hook: the hook, as given to :meth:`before_write`.
        :raises ValueError: if `hook` is not one of this collection's hooks.
        """
        self._hooks.remove(hook)

    def add_index(self, name: str, func: Callable[[Any], Any] | None = None, *,
                  fields: str | tuple[str, ...] | list[str] | None = None, unique: bool = False,
                  progress: Callable[[int], object] | None = None) -> Index:
        """Add (or, after a reopen, re-add) the index `name`; return it.

        An index is made by a function (`func`) or by the record's fields
        (`fields`, a field path such as ``'city'`` or ``'address.city'``, or
        a tuple of them; see :mod:`centidb.fieldpaths`). A **field index**'s
        definition is stored with the store: every later session and every
        other process has it without calling ``add_index``, the command
        line needs no ``--app`` for it, and ``add_index`` with the same
        definition returns the index as it is.

        A **unique** index refuses a write that would give a second record
        an index tuple some record has: the write raises
        :class:`~centidb.errors.UniqueError` and writes nothing. The check
        runs inside the write transaction, so two writers (threads or
        processes) cannot both win. A record put again with the same
        tuple is fine, and changing its tuple frees the old one.

        Functions are not stored: after reopening a store, call
        ``add_index`` again for every function index, or writes raise
        :class:`~centidb.errors.IndexNotAddedError`. A new index on a
        collection that already holds records is filled in for them, in
        this thread's open write transaction (the index is undone if that
        aborts) or in one of its own; if `func` raises meanwhile, the
        exception propagates and the index is not created. A transaction of
        its own is run again if it conflicts with another client's (see
        :meth:`~centidb.txn.TxnManager.retry_conflicts`). The fill reads
        the records in key order and writes their entries every 1,000
        records, so its own memory does not grow with the collection
        (LevelDB and the in-memory engine hold a transaction's writes in
        memory until it commits; LMDB does not).

        :param name: the index's name, a non-empty ``str``.
        :param func: ``func(record)`` returns ``None`` (no entry), a value or
            tuple (one entry), or a list (one entry per element).
        :param fields: instead of `func`: the field path or paths whose
            values make each entry's tuple. A record lacking one has no entry;
            a ``list`` field gives one entry per element.
        :param unique: no two records may have the same index tuple. Must
            agree with what is stored for an index that exists.
        :param progress: called as ``progress(n)`` while existing records
            are indexed, ``n`` being how many records were indexed since the
            last call (every 1,000, then the rest); the calls add up to the
            number of records. A ``tqdm`` bar's ``update`` fits
            (``tqdm(total=coll.count())``). Not called when nothing is
            filled in (an index that exists, or an empty collection).
        :returns: the :class:`Index`.
        :raises TypeError: for an empty or non-``str`` `name`, a `func`
            that is not callable, both `func` and `fields` or neither, or a
            field path that is not a ``str``.
        :raises ValueError: if a function index was already added in this
            session; if the index exists with the other `unique` setting or
            another definition (the message names both); for an empty field
            path or path part.
        :raises ~centidb.errors.UniqueError: if `unique` and two records
            already stored have the same index tuple (no index is made).
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f'index name must be a non-empty str, not {name!r}')
        if func is not None and not callable(func):
            raise TypeError(f'index function for {name!r} must be callable')
        if progress is not None and not callable(progress):
            raise TypeError(f'progress must be callable or None, not {progress!r}')
        index_set = self._index_set
        return index_set.txns.retry_conflicts(index_set.add, name, func, bool(unique), progress,
                                              fields)

    def drop_index(self, name: str) -> None:
        """Delete the index `name` and all its entries from the store.

        Like ``add_index``, this runs in this thread's open write
        transaction (undone if that aborts) or in one of its own, run again
        if it conflicts with another client's. The index need not have been
        added in this session.

        :param name: the index's name.
        :raises ~centidb.errors.UnknownIndexError: (a ``KeyError``) if the
            collection has no stored index `name`.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        index_set = self._index_set
        index_set.txns.retry_conflicts(index_set.drop, name)

    def reindex(self, name: str, *, progress: Callable[[int], object] | None = None) -> None:
        """Rebuild the index `name`: make its entries again from the records.

        Repairs an index that :meth:`~centidb.store.Store.verify` reports as
        inconsistent (after a broken ``blind=True`` promise, or an index
        function that changed). Runs in this thread's open write transaction
        or in one of its own. The new entries are written aside first, in
        chunks as for :meth:`add_index`, then take the old ones' place: if
        the index function raises, or a unique index finds a duplicate, the
        exception propagates with the old entries untouched (and the
        transaction usable).

        :param name: the name of an index added in this session.
        :param progress: called as ``progress(n)`` while the records are
            indexed, as for :meth:`add_index`.
        :raises ~centidb.errors.UnknownIndexError: (a ``KeyError``) if no
            index `name` was added in this session.
        :raises ~centidb.errors.UniqueError: (a unique index) if two records
            have the same index tuple.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        if progress is not None and not callable(progress):
            raise TypeError(f'progress must be callable or None, not {progress!r}')
        self._index_set.rebuild(name, progress)

    def _entry_keys(self, etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                    reverse: bool) -> Iterator[bytes]:
        # Through the batch view even when no batch is known: another
        # process may have batched records since the metadata was read.
        return (key_bytes for key_bytes, _ in self.calls.records.items(etxn, lo, hi, reverse))

    def _entry_chunks(self, etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                      reverse: bool) -> Iterator[list[bytes]]:
        keys = self._entry_keys(etxn, lo, hi, reverse)
        return iter(lambda: list(itertools.islice(keys, _CHUNK)), [])

    def _group_of(self, key_bytes: bytes, size: int) -> Key:
        try:
            return keylib.unpacks(key_bytes, self._prefix)[:size]
        except CorruptKeyError as exc:
            raise self.calls.records.corrupt_key_error(key_bytes, exc) from None


class _Detached:
    """Stands in for the record paths of a collection that no longer exists."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __getattr__(self, name: str) -> NoReturn:
        raise StoreError(self.why)
