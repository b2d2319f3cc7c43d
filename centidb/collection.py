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

from centidb import encodings, impl, keylib
from centidb.batches import BatchView, PackerNotAllowed
from centidb.bulk import BulkWrites
from centidb.catalog import Catalog
from centidb.metarecords import CollectionInfo
from centidb.encodings import Encoder
from centidb.engines import EngineTransaction
from centidb.hooks import CollectionHooks
from centidb.index import Index, Indexed, IndexSet  # Index: also the older import path
from centidb.keylib import Key
from centidb.mapping import MappingMethods
from centidb.query import Queryable, check_query, query_doc, readonly
from centidb.errors import CorruptKeyError, StoreError
from centidb.access import Records
from centidb.records import Record, RecordReader, as_key
from centidb.txn import Transaction, TxnManager
from centidb.writing import KeySource, Writer

_T = TypeVar('_T')
#: Pairs a collection's group count takes from its scan at a time.
_CHUNK = 256
#: Packers any collection's records may use: they only decompress bytes.
_BUILTIN_PACKERS = frozenset({'plain', 'zlib', 'lz4', 'zstd', 'snappy'})
#: Encoders: never a packer of a collection that was not given one as such.
_BUILTIN_ENCODERS = frozenset({'msgpack', 'json', 'pickle'})

__all__ = ['Collection']


def _collection_get(self: Collection, key: object, default: Any = None, *,
                    txn: Transaction | None = None, rec: bool = False, encoded: bool = False,
                    raw: bool = False) -> Any:
    """Return the value stored under `key`, or `default`.

    :param key: the key tuple (a bare value means a 1-tuple).
    :param default: returned when there is no record under `key`.
    :param txn: a :class:`~centidb.txn.Transaction` of the store to
        read in (default: see the module doc).
    :param raw: the older name of `encoded`.
    :param rec: return a :class:`Record` (ignored with `encoded`).
    :param encoded: return the encoder's bytes (the packer undone)
        instead of decoding them.
    :returns: the value, its bytes or a :class:`Record`, or `default`.
    :raises ~centidb.errors.UnsupportedKeyTypeError: for a key element
        the key codec cannot encode (see :func:`~centidb.keylib.packs`).
    :raises TypeError: if `txn` is not a transaction of this store.
    :raises ~centidb.errors.TransactionError: if `txn` has ended.
    :raises ~centidb.errors.UnknownEncoderError: for a record packed
        with a packer not registered in this session.
    """
    if txn is not None and not (encoded or raw):
        if rec:
            return self._reader.get_record(txn, key, default)
        return self._reader.get(txn, key, default)
    encoded = encoded or raw
    return self._txns.run(txn, False, self._records.read, as_key(key), default,
                          encoded, rec)


def _collection_put(self: Collection, rec: Any, key: object = None, blind: bool = False,
                    txn: Transaction | None = None, packer: Encoder | None = None) -> Record:
    """Store `rec` and update its index entries; return a :class:`Record`.

    The key is `key` if given, else ``key_func(rec)``, else
    ``txn_key_func(txn, rec)``, else the next value of the collection's
    counter. If the key function, an index function or the encoder
    raises, nothing is written and the exception propagates.

    :param rec: the record value, or a :class:`Record`, whose ``data``
        is stored and whose ``key`` (if not ``None``) is reused.
    :param key: the key tuple (a bare value means a 1-tuple).
    :param blind: false: any record already under the key is read so
        its stale index entries are removed. True skips that read: the
        caller promises the key is new (if it is not, the old record's
        index entries that differ are left behind, pointing at the new
        record).
    :param txn: a write :class:`~centidb.txn.Transaction` of the store
        (default: see the module doc).
    :param packer: the :class:`~centidb.encodings.Encoder` that
        compresses this record (default: the collection's packer).
    :returns: the stored :class:`Record`.
    :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
        added in this session.
    :raises ~centidb.errors.UnsupportedKeyTypeError: for a key or index
        tuple element the key codec cannot encode (also
        :class:`~centidb.errors.KeyEncodingError`, as
        :func:`~centidb.keylib.packs`).
    :raises ValueError: if the packed key or an index entry is longer
        than the engine's ``max_key_size``.
    :raises TypeError: if `txn` is not a transaction of this store, or
        `packer` not an ``Encoder``.
    :raises ~centidb.errors.TransactionError: if `txn` has ended or is
        read-only.
    :raises ~centidb.errors.UnknownEncoderError: if `packer` is new to
        the store while this thread has a write transaction open.
    :raises ~centidb.errors.LimitExceededError: if the stored value is
        larger than the engine's ``max_value_size`` (nothing is written).
    """
    if txn is None:
        txn = self._txns.current_write()
        if txn is None:
            if packer is not None:
                self._catalog.encoder_id(packer)   # registers it before begin()
            with self._txns.begin(True) as own:
                if packer is None:
                    record = self._writer.write(own, rec, key, blind)
                    if record is not None:
                        return record
                return self._put_general(own, rec, key, blind, packer)
    if packer is None:      # inline: the common case costs no further call
        record = self._writer.write(txn, rec, key, blind)
        if record is not None:
            return record
    return self._put_general(txn, rec, key, blind, packer)


class Collection(Indexed, Queryable, BulkWrites, CollectionHooks, MappingMethods):
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
    :param index_ids: a ``dict`` from the name to the prefix id of each
        index stored for the collection.
    """

    # Set by _rebuild(); a detached collection's stand-in raises on every use.
    _records: Records
    _writer: Writer
    _reader: RecordReader

    def __init__(self, store: Any, txns: TxnManager, catalog: Catalog, name: str,
                 info: CollectionInfo, key_func: Callable[[Any], Any] | None,
                 txn_key_func: Callable[[Transaction, Any], Any] | None, encoder: Encoder,
                 packer: Encoder, index_ids: dict[str, int]) -> None:
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
        self._info = info
        given = ('key_func' if key_func is not None else
                 'txn_key_func' if txn_key_func is not None else 'auto')
        # Stores from before key kinds were recorded: the functions given decide.
        self._keys = KeySource(info.get('key', given), key_func, txn_key_func,
                               self._next_key, self._at_least)
        self._index_set = IndexSet(self, txns, catalog, name, index_ids, self._fill_index,
                                   self._rebuild)
        #: Index name -> :class:`Index`, for the indexes added in this session.
        self.indices = self._index_set.added
        self._header = bytes([catalog.encoder_id(packer)])
        plain_id = catalog.encoder_id(encodings.PLAIN_PACKER)
        #: True if every stored value carries a CRC-32 trailer (see centidb.checksums).
        self._checksum = info.get('checksum') is not None
        self._view = BatchView(self._prefix, name, bytes([plain_id]), self._packer_of,
                               txns.engine.max_key_size, self._checksum)
        # Once a collection holds batches, reads that miss and every write
        # look for a batch covering the key (see centidb.batches).
        self._batched = bool(info.get('batched'))
        self._plain_id = plain_id
        self._before_write: list[Callable[[Key, Any], object]] = []
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

    records: Final[Records] = readonly(
        '_records', "The collection's write and read paths (:class:`~centidb.access.Records`),"
        ' made again whenever its indexes or batching change.')

    def _packer_allowed(self, name: str) -> bool:
        """True if the collection's records may use the packer `name`.

        Its own packer, the built-in packers and those recorded in its
        metadata; in a collection from before packers were recorded, any
        packer but the built-in encoders and its own encoder.
        """
        if name == self._packer.name or name in _BUILTIN_PACKERS:
            return True
        recorded = self._info.get('packers')
        if recorded is None:
            return name not in _BUILTIN_ENCODERS and name != self._encoder.name
        return name in recorded

    def _packer_of(self, packer_id: int) -> Encoder:
        name = self._catalog.encoder_name(packer_id)
        if name is None:
            raise PackerNotAllowed(f'its header names packer id {packer_id}, which the '
                                   f'store never numbered')
        if not self._packer_allowed(name):
            raise PackerNotAllowed(f'its header names {name!r}, which is not a packer of '
                                   f'this collection')
        return self._catalog.packer(packer_id, self._name)

    def _new_packer(self, packer: Encoder) -> bool:
        """True if `packer` must be recorded (:meth:`_use_packer`) once records use it.

        Called before anything is written.

        :raises ValueError: for a collection from before packers were
            recorded that may not use it (see :meth:`_packer_allowed`).
        """
        if self._packer_allowed(packer.name):
            return False
        if 'packers' not in self._info:
            raise ValueError(f'collection {self._name!r} was created before collections '
                             f'recorded their packers; it cannot take {packer.name!r} '
                             f'as a packer')
        return True

    def _use_packer(self, txn: Transaction, packer: Encoder) -> None:
        """Record in the collection's metadata, in `txn`, that its records may use `packer`.

        :param txn: the write transaction that wrote records with it.
        :param packer: a packer :meth:`_new_packer` accepted.
        """
        name = packer.name
        old = self._info
        self._info = dict(old, packers=sorted(set(old['packers']) | {name}))
        self._catalog.save_collection_info(txn, self._name, self._info)
        txn.undo.append(lambda: setattr(self, '_info', old))

    def _next_key(self, etxn: EngineTransaction) -> int:
        return self._catalog.counter(etxn, self._counter_name, 0, 1)

    def _at_least(self, etxn: EngineTransaction, n: int) -> None:
        self._catalog.raise_counter(etxn, self._counter_name, n)

    def _fill_index(self, etxn: EngineTransaction, func: Callable[[Any], Any],
                    index_prefix: bytes, unique_name: str | None, replace: bool,
                    progress: Callable[[int], object] | None = None) -> None:
        self._records.fill_index(etxn, func, index_prefix, unique_name, replace, progress)

    def reload(self, info: CollectionInfo, index_ids: dict[str, int]) -> None:
        """Take up metadata another process changed (called by the store).

        :param info: the collection's stored metadata ``dict``.
        :param index_ids: name to prefix id of every index stored for it.
        """
        self._info = info
        self._batched = bool(info.get('batched'))
        self._index_set.reload(index_ids)    # rebuilds the record paths

    def detach(self, why: str) -> Callable[[], None]:
        """Make every later use raise :class:`~centidb.errors.StoreError`.

        Called by the store when the collection no longer exists as this
        object knows it (created in an aborted transaction, or removed).

        :param why: the error message.
        :returns: a callable that attaches the collection again as it was
            (the store calls it when a drop's transaction aborts).
        """
        added, ids = dict(self.indices), dict(self._index_set.ids)
        self._records = self._writer = self._reader = _Detached(why)  # type: ignore[assignment]
        self._index_set.reload({})      # forgets every index; stays detached

        def attach() -> None:
            self._records = None  # type: ignore[assignment]  # _rebuild() makes them
            self.indices.update(added)
            self._index_set.reload(ids)     # rebuilds the record paths
        return attach

    def _rebuild(self) -> None:
        """Prepare the write and read paths again after the indexes or batching changed."""
        if type(getattr(self, '_records', None)) is _Detached:
            return      # detached: no index change brings it back
        indexes = tuple(self.indices.values())
        unbound = self._index_set.unbound()
        self._records = Records(
            self, self._txns, Transaction, self._name, self._prefix, self._encoder,
            self._packer, self._header, self._plain_id, self._packer_of, self._keys,
            indexes, unbound, self._view,
            self._batched, self._txns.engine.max_key_size,
            before_write=tuple(self._before_write),
            report=self._txns.after_commit is not None, checksum=self._checksum)
        self._writer, self._reader = self._records.writer, self._records.reader

    def rebuild(self) -> None:
        """Prepare the write and read paths again.

        Called by the store when it starts or stops recording changes for
        its :meth:`~centidb.store.Store.on_commit` hooks.
        """
        self._rebuild()

    # --- writing -------------------------------------------------------------

    put = impl.choose(_collection_put)

    def _put_general(self, txn: Transaction, rec: Any, key: object, blind: bool,
                     packer: Encoder | None) -> Record:
        """put() once the common-case writer declined (or, with `packer`, was skipped)."""
        etxn = self._txns.engine_txn(txn, True)
        if packer is None:
            return self._records.put(txn, etxn, rec, key, blind)
        header = bytes([self._catalog.encoder_id(packer)])
        packer = self._catalog.packer_for(packer)
        new = self._new_packer(packer)
        record = self._records.put(txn, etxn, rec, key, blind, packer, header)
        if new:
            self._use_packer(txn, packer)
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
        return self._records.delete(txn, etxn, key)

    # --- reading -------------------------------------------------------------

    get = impl.choose(_collection_get)

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
        :raises ~centidb.errors.UnknownEncoderError: for a record packed
            with a packer not registered in this session.
        """
        packed = [keylib.packs(as_key(key), self.prefix) for key in keys]
        return self._txns.run(txn, False, self._records.read_many, packed, default)

    def _scan(self, txn: Transaction | None, lo: object, hi: object, prefix: object,
              startswith: object, reverse: bool, max: int | None, include: bool,
              source: Callable[[EngineTransaction, bytes, bytes, bool], Iterator[_T]]
              ) -> Iterator[_T]:
        check_query(reverse, max)
        lo_bytes, hi_bytes = self._bounds(lo, hi, prefix, startswith, include)
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
            record packed with a packer not registered in this session.
        """
        return self._scan(txn, lo, hi, prefix, startswith, reverse, max, include,
                          self._records.reader.items)

    @query_doc('key')
    def keys(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, max: int | None = None,
             include: bool = False, txn: Transaction | None = None) -> Iterator[Key]:
        """Iterate keys in key order, without decoding any value.

        {query}
        :returns: an iterator of key tuples.
        """
        return self._scan(txn, lo, hi, prefix, startswith, reverse, max, include,
                          self._records.reader.keys)

    @query_doc('key')
    def values(self, lo: object = None, hi: object = None, *, prefix: object = None,
               startswith: object = None, reverse: bool = False, max: int | None = None,
               include: bool = False, txn: Transaction | None = None) -> Iterator[Any]:
        """Iterate values in key order.

        {query}
        :returns: an iterator of record values.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record packed with a packer not registered in this session.
        """
        return self._scan(txn, lo, hi, prefix, startswith, reverse, max, include,
                          self._records.reader.values)

    def _entry_keys(self, etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                    reverse: bool) -> Iterator[bytes]:
        # Through the batch view even when no batch is known: another
        # process may have batched records since the metadata was read.
        return (key_bytes for key_bytes, _ in self._records.items(etxn, lo, hi, reverse))

    def _unbatched(self, etxn: EngineTransaction) -> bool:
        if self._batched:
            return False
        # Read in `etxn`: another process may have batched records since.
        info = self._catalog.collection_info(etxn, self._name)
        return info is not None and info['id'] == self.coll_id and not info.get('batched')

    def _entry_chunks(self, etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                      reverse: bool) -> Iterator[list[bytes]]:
        keys = self._entry_keys(etxn, lo, hi, reverse)
        return iter(lambda: list(itertools.islice(keys, _CHUNK)), [])

    def _group_of(self, key_bytes: bytes, size: int) -> Key:
        try:
            return keylib.unpacks(key_bytes, self._prefix)[:size]
        except CorruptKeyError as exc:
            raise self._records.corrupt_key_error(key_bytes, exc) from None


class _Detached:
    """Stands in for the record paths of a collection that no longer exists."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __getattr__(self, name: str) -> NoReturn:
        raise StoreError(self.why)
