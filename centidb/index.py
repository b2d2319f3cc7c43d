"""Secondary indexes: :class:`Index`, a prefix view over a collection's index entries.

An index maps each record of its collection to zero, one or many index tuples
through a plain Python function, or through the record's fields (a field
index, whose definition the store keeps: :mod:`centidb.fieldpaths`); each
tuple is stored as one entry (layout in :mod:`centidb.records`). Query methods take the parameters described in
:mod:`centidb.query`.
"""

from __future__ import annotations

from typing import Any, Callable, Final, Iterable, Iterator, Optional

from centidb import keylib
from centidb.catalog import Catalog, StoredIndex
from centidb.engines import EngineTransaction
from centidb.errors import UnknownIndexError
from centidb.fieldpaths import FieldIndexFunc, check_fields
from centidb.keylib import Key
from centidb.query import KeySpace, check_query, doc_of, query_doc, readonly
from centidb.records.access import CollectionCalls
from centidb.records.entries import corrupt_entry_error, first_entry, split_entries
from centidb.records import as_key
from centidb.records.entry import index_get
from centidb.records.entries import delete_prefix
from centidb.txn import Transaction, TxnManager

__all__ = ['Index', 'IndexSet']


class Index:
    """A secondary index of a :class:`~centidb.collection.Collection`; made by ``add_index()``.

    Query methods range over index tuples with the collection's query
    parameters. Values are read in the same transaction (snapshot) as the
    index entries. ``tup in index`` is ``index.has(tup)``. Made by
    :meth:`~centidb.collection.Collection.add_index`,
    not directly; the arguments but `txns` are kept as read-only attributes
    of the same names.

    :param coll: the :class:`~centidb.collection.Collection` indexed.
    :param name: the index's name.
    :param index_id: the index's prefix id in the store.
    :param func: the index function (see
        :meth:`~centidb.collection.Collection.add_index`).
    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param unique: True if no two records may have the same index tuple.
    """

    def __init__(self, coll: Any, name: str, index_id: int, func: Callable[[Any], Any],
                 txns: TxnManager, unique: bool = False) -> None:
        self._coll = coll
        self._txns = txns
        self._name = name
        self._index_id = index_id
        self._func = func
        self._prefix = keylib.packs(index_id)
        self._unique = unique
        #: What :meth:`get` reads, in one attribute (each costs a lookup per
        #: call): the collection's :class:`~centidb.records.access.CollectionCalls`,
        #: the index's prefix and its name.
        self.get_args: tuple[CollectionCalls, bytes, str] = (coll.calls, self._prefix, name)
        self._space = KeySpace(self._prefix, txns, self.values, self._entry_keys,
                               self._entry_chunks, self._group_of, 2, _always)

    @property
    def fields(self) -> tuple[str, ...] | None:
        """A field index's field paths; None for a function index."""
        func = self._func
        return func.fields if type(func) is FieldIndexFunc else None

    # Read-only: the collection's put() is prepared from these.

    # (Any: this layer cannot name the Collection class.)
    coll: Final[Any] = readonly('_coll', 'The :class:`~centidb.collection.Collection` indexed.')
    name: Final[str] = readonly('_name', "The index's name (``str``).")
    index_id: Final[int] = readonly(
        '_index_id', "The index's number in the store; its entries start with it.")
    func: Final[Callable[[Any], Any]] = readonly('_func', 'The index function.')
    prefix: Final[bytes] = readonly('_prefix', 'The bytes every entry of the index starts with.')
    unique: Final[bool] = readonly(
        '_unique', 'True if no two records may have the same index tuple (``bool``).')

    def __repr__(self) -> str:
        return f'<Index {self.coll.name}.{self.name}>'

    def _scan(self, txn: Transaction | None, lo: object, hi: object, prefix: object,
              startswith: object, reverse: bool, max: int | None,
              include: bool) -> Iterator[tuple[Key, Key]]:
        """Iterate ``(index tuple, record key)`` for the query."""
        check_query(reverse, max)
        lo_bytes, hi_bytes = self._space.bounds(lo, hi, prefix, startswith, include)
        return self._txns.iterate(txn, lo_bytes, hi_bytes, reverse, max,
                                  self._split_entries)

    def _split_entries(self, etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                       reverse: bool) -> Iterator[tuple[Key, Key]]:
        return split_entries(etxn, self._prefix, lo, hi, reverse)

    def _matches(self, txn: Transaction | None, lo: object, hi: object, prefix: object,
                 startswith: object, reverse: bool, max: int | None, include: bool,
                 items: bool) -> Iterator[Any]:
        """Iterate the records (or index tuple and record pairs) of a query."""
        check_query(reverse, max)
        lo_bytes, hi_bytes = self._space.bounds(lo, hi, prefix, startswith, include)
        calls, index_prefix, name = self.get_args
        reader = calls.reader

        def source(etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                   reverse: bool) -> Iterator[Any]:
            return reader.index_records(index_prefix, name, items, etxn, lo, hi, reverse)
        return self._txns.iterate(txn, lo_bytes, hi_bytes, reverse, max, source)

    @query_doc('index tuple')
    def pairs(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, reverse: bool = False, max: int | None = None,
              include: bool = False,
              txn: Transaction | None = None) -> Iterator[tuple[Key, Key]]:
        """Iterate ``(index tuple, record key)`` pairs, one per matching entry.

        {query}
        :returns: an iterator of ``(index tuple, key tuple)``.
        """
        return self._scan(txn, lo, hi, prefix, startswith, reverse, max, include)

    @query_doc('index tuple')
    def tups(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, max: int | None = None,
             include: bool = False, txn: Transaction | None = None) -> Iterator[Key]:
        """Iterate index tuples (one per matching entry).

        {query}
        :returns: an iterator of index tuples.
        """
        entries = self._scan(txn, lo, hi, prefix, startswith, reverse, max, include)
        return (tup for tup, _ in entries)

    @query_doc('index tuple')
    def keys(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, max: int | None = None,
             include: bool = False, txn: Transaction | None = None) -> Iterator[Key]:
        """Iterate the keys of the records the matching entries point to.

        No record is read: the keys are taken from the entries.

        {query}
        :returns: an iterator of key tuples, one per entry.
        """
        entries = self._scan(txn, lo, hi, prefix, startswith, reverse, max, include)
        return (key for _, key in entries)

    @query_doc('index tuple')
    def items(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, reverse: bool = False, max: int | None = None,
              include: bool = False,
              txn: Transaction | None = None) -> Iterator[tuple[Key, Any]]:
        """Iterate ``(index tuple, record value)`` pairs, one per matching entry.

        {query}
        :returns: an iterator of ``(index tuple, value)``.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record stored with a packer not registered in this session.
        :raises ~centidb.errors.IndexInconsistentError: (while iterating)
            for an entry that points at a missing record.
        """
        return self._matches(txn, lo, hi, prefix, startswith, reverse, max, include, True)

    @query_doc('index tuple')
    def values(self, lo: object = None, hi: object = None, *, prefix: object = None,
               startswith: object = None, reverse: bool = False, max: int | None = None,
               include: bool = False, txn: Transaction | None = None) -> Iterator[Any]:
        """Iterate the values of the records the matching entries point to.

        {query}
        :returns: an iterator of record values, one per entry.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record stored with a packer not registered in this session.
        :raises ~centidb.errors.IndexInconsistentError: (while iterating)
            for an entry that points at a missing record.
        """
        return self._matches(txn, lo, hi, prefix, startswith, reverse, max, include, False)

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

    def _entry_keys(self, etxn: EngineTransaction, lo: bytes, hi: bytes | None,
                    reverse: bool) -> Iterator[bytes]:
        return etxn.keys(lo, hi, reverse)

    def _entry_chunks(self, etxn: EngineTransaction, lo: bytes, hi: bytes | None,
                      reverse: bool) -> Iterator[list[bytes]]:
        return etxn.key_chunks(lo, hi, reverse)

    def _group_of(self, entry: bytes, size: int) -> Key:
        parts = keylib.unpacks_list(entry, self._prefix)
        if len(parts) != 2:
            raise corrupt_entry_error(entry)
        return parts[0][:size]

    def __contains__(self, tup: object) -> bool:
        return self.has(tup)

    get = index_get

    def get_many(self, tups: Iterable[object], default: Any = None, *, rec: bool = False,
                 txn: Transaction | None = None) -> list[Any]:
        """Return a list with, for each index tuple of `tups`, what :meth:`get` returns.

        All are read in one transaction.

        :param tups: an iterable of index tuples (a bare value means a
            1-tuple).
        :param default: the item for an index tuple no record has.
        :param rec: give each record as a :class:`~centidb.records.Record`.
        :param txn: a :class:`~centidb.txn.Transaction` of the store to
            read in (default: see the module doc).
        :returns: a ``list``, in the order of `tups`: the value (or
            :class:`~centidb.records.Record`) of the first record, in record
            key order, with each index tuple, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.IndexInconsistentError: if an entry points
            at a missing record.
        :raises ~centidb.errors.UnknownEncoderError: for a record stored
            with a packer not registered in this session.
        """
        tuples = [as_key(tup) for tup in tups]
        return self._txns.run(txn, False, self._get_many_in, tuples, default, rec)

    def _get_many_in(self, txn: Transaction, etxn: EngineTransaction, tups: list[Key],
                     default: Any, rec: bool) -> list[Any]:
        calls, prefix, name = self.get_args
        records = calls.records
        if rec:
            return [records.index_record(etxn, prefix, name, tup, default) for tup in tups]
        index_get = records.reader.index_get
        return [index_get(txn, prefix, name, tup, default) for tup in tups]

    def has(self, tup: object, *, txn: Transaction | None = None) -> bool:
        """Return True if some record has the index tuple `tup`.

        :param tup: the index tuple (a bare value means a 1-tuple).
        :param txn: a :class:`~centidb.txn.Transaction` of the store to
            read in (default: see the module doc).
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        """
        return self._txns.run(txn, False, self._has_in, as_key(tup))

    def _has_in(self, txn: Transaction, etxn: EngineTransaction, tup: Key) -> bool:
        return first_entry(etxn, self._prefix, tup) is not None


class IndexSet:
    """A collection's indexes: those stored for it, and those added in this session.

    A field index's definition is stored, so it is added as soon as the
    collection is opened (or another process makes it). A function index's
    function is not: one stored by an earlier session is *unbound* until
    ``add_index`` gives it its function again.

    :param coll: the collection, given to each :class:`Index`.
    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param catalog: the store's :class:`~centidb.catalog.Catalog`.
    :param coll_name: the collection's name, for errors.
    :param stored: a ``dict`` from name to
        :class:`~centidb.catalog.StoredIndex` of every stored index.
    :param fill: ``fill(engine txn, func, index prefix, unique name or None,
        replace, progress)`` writes an index's entries for the records stored
        (with `replace`, in place of its old entries), or nothing if any
        fails, calling ``progress(n)`` (if not None) as records are indexed.
    :param changed: called with no arguments after the added indexes change.
    """

    def __init__(self, coll: Any, txns: TxnManager, catalog: Catalog, coll_name: str,
                 stored: dict[str, StoredIndex],
                 fill: Callable[[EngineTransaction, Callable[[Any], Any], bytes, Optional[str],
                                 bool, Optional[Callable[[int], object]]], object],
                 changed: Callable[[], object]) -> None:
        self.coll = coll
        self.txns = txns
        self.catalog = catalog
        self.coll_name = coll_name
        self.coll_id = coll.coll_id
        self.fill = fill
        self.changed = changed
        #: Name -> :class:`Index`, for the indexes added in this session.
        self.added: dict[str, Index] = {}
        #: Name -> what is stored, for every index stored.
        self.stored: dict[str, StoredIndex] = {}
        self._take_up(stored)

    @property
    def ids(self) -> dict[str, int]:
        """Name -> prefix id, for every index stored."""
        return {name: index.id for name, index in self.stored.items()}

    def unbound(self) -> frozenset[str]:
        """The names of the stored indexes not added in this session."""
        return frozenset(self.stored) - frozenset(self.added)

    def add(self, name: str, func: Callable[[Any], Any] | None = None, unique: bool = False,
            progress: Callable[[int], object] | None = None,
            fields: str | tuple[str, ...] | list[str] | None = None) -> Index:
        """Add (or re-add) the index `name`; see ``Collection.add_index``.

        :param name: the index's name.
        :param func: the index function, or None for a field index.
        :param unique: whether no two records may share an index tuple; must
            agree with what is stored for an existing index.
        :param progress: ``progress(n)`` as records are indexed, or None.
        :param fields: a field index's field path or paths, instead of `func`.
        :returns: the :class:`Index`.
        """
        if (func is None) == (fields is None):
            raise TypeError(f'add_index({name!r}) takes an index function or fields=, '
                            f'{"not both" if func is not None else "and was given neither"}')
        if fields is not None:
            func = FieldIndexFunc(check_fields(fields))
        elif not callable(func):
            raise TypeError(f'the index function of {name!r} must be callable, not '
                            f'{type(func).__name__!r}')
        wanted = StoredIndex(0, unique is True, None if fields is None
                             else func.fields)  # type: ignore[union-attr]  # made above
        self.txns.check_open()
        lock = self.catalog.lock
        with lock:
            added = self.added.get(name)
            if added is not None:
                if wanted.fields is not None or added.fields is not None:
                    self._check_same(name, self.stored[name], wanted)
                    return added
                raise ValueError(f'index {name!r} was already added to collection '
                                 f'{self.coll_name!r} in this session')
            if name in self.stored:
                stored = self.txns.run(None, False, self._stored_index, name)
                if stored is not None:
                    return self._add_stored(name, stored, wanted, func)
        # Lock order: the engine's writer lock, then the catalog lock.
        with self.txns.writing() as txn, lock:
            if name in self.added:
                raise ValueError(f'index {name!r} was just added to collection '
                                 f'{self.coll_name!r} by another thread')
            etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # open
            # Read in the write transaction: another process may have made it.
            stored = self.catalog.stored_index(etxn, self.coll_id, name)
            if stored is not None:
                return self._add_stored(name, stored, wanted, func)
            index_id = self.catalog.next_prefix_id(etxn)
            index = Index(self.coll, name, index_id, func, self.txns, unique)
            # Writes nothing unless every record's entries could be made (and,
            # for a unique index, differ), so a failure leaves a transaction
            # the caller owns as it was.
            self.fill(etxn, func, index.prefix, name if unique else None, False, progress)
            self.catalog.create_index(txn, self.coll_id, name, unique, wanted.fields)
            # Bound before the commit, so no writer slips in between.
            self._bind(index, wanted._replace(id=index_id))
            txn.undo.append(lambda: self._unbind(name) if self.added.get(name) is index
                            else None)
        return index

    def _add_stored(self, name: str, stored: StoredIndex, wanted: StoredIndex,
                    func: Callable[[Any], Any]) -> Index:
        """Bind the stored index `name` to `func`, if `wanted` is its definition."""
        self._check_same(name, stored, wanted)
        index = Index(self.coll, name, stored.id, func, self.txns, stored.unique)
        self._bind(index, stored)
        return index

    def _stored_index(self, txn: Transaction, etxn: EngineTransaction,
                      name: str) -> StoredIndex | None:
        return self.catalog.stored_index(etxn, self.coll_id, name)

    def _check_same(self, name: str, stored: StoredIndex, wanted: StoredIndex) -> None:
        if stored.unique != wanted.unique:
            raise ValueError(
                f'index {name!r} of collection {self.coll_name!r} is stored as '
                f'{"unique" if stored.unique else "not unique"}; add it with '
                f'unique={stored.unique}, or drop_index() it and add it again')
        if stored.fields != wanted.fields:
            raise ValueError(
                f'index {name!r} of collection {self.coll_name!r} is stored as '
                f'{stored.describe()}; add_index() was given {wanted.describe()}: give the '
                f'stored definition, or drop_index() it and add it again')

    def reload(self, stored: dict[str, StoredIndex]) -> None:
        """Take up the stored indexes as another process left them.

        An added index that was dropped or made again elsewhere is no longer
        added here; a field index made elsewhere is added.

        :param stored: name to :class:`~centidb.catalog.StoredIndex` of every stored index.
        """
        self._take_up(stored)
        self.changed()

    def _take_up(self, stored: dict[str, StoredIndex]) -> None:
        self.stored = dict(stored)
        for name, index in list(self.added.items()):
            if name not in self.stored or self.stored[name].id != index.index_id:
                del self.added[name]
        for name, info in self.stored.items():
            if info.fields is not None and name not in self.added:
                self.added[name] = Index(self.coll, name, info.id, FieldIndexFunc(info.fields),
                                         self.txns, info.unique)

    def _bind(self, index: Index, stored: StoredIndex) -> None:
        self.added[index.name] = index
        self.stored[index.name] = stored
        self.changed()

    def _unbind(self, name: str) -> None:
        """Forget the index `name` in this session (dropped, or never committed)."""
        self.added.pop(name, None)
        self.stored.pop(name, None)
        self.changed()

    def rebuild(self, name: str, progress: Callable[[int], object] | None = None) -> None:
        """Write the entries of the added index `name` again from the records.

        :param name: the index's name.
        :param progress: ``progress(n)`` as records are indexed, or None.
        :raises ~centidb.errors.UnknownIndexError: if it is not added in this
            session (its function is needed).
        """
        self.txns.check_open()
        index = self.added.get(name)
        if index is None:
            raise UnknownIndexError(f'collection {self.coll_name!r} has no index {name!r} '
                                    f'added in this session; add_index() it first')
        with self.txns.writing() as txn:
            etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # open
            # The old entries stay unless every new entry could be made.
            self.fill(etxn, index.func, index.prefix, index.name if index.unique else None,
                      True, progress)

    def drop(self, name: str) -> None:
        """Delete the index `name` and its entries; see ``Collection.drop_index``.

        :param name: the index's name.
        """
        self.txns.check_open()
        stored = self.stored.get(name)
        if stored is None:
            raise UnknownIndexError(f'collection {self.coll_name!r} has no index {name!r} '
                                    f'to drop')
        index_id = stored.id
        with self.txns.writing() as txn, self.catalog.lock:
            delete_prefix(txn.engine_txn,  # type: ignore[arg-type]  # open
                                 keylib.packs(index_id))
            self.catalog.delete_index(txn, self.coll_id, name)
            index = self.added.get(name)
            self._unbind(name)
            txn.undo.append(lambda: self._rebind(name, stored, index))

    def _rebind(self, name: str, stored: StoredIndex, index: Index | None) -> None:
        """Undo a drop whose transaction aborted."""
        self.stored[name] = stored
        if index is not None:
            self.added[name] = index
        self.changed()


def _always(etxn: EngineTransaction) -> bool:
    return True      # one entry, one result: the engine counts them
