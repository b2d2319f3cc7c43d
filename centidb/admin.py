"""Collection administration: list, drop and rename a store's collections.

:class:`CollectionAdmin` is a mixin giving the store ``collections()``,
``drop_collection()``, ``rename_collection()`` and ``remove_record()``
(a record deleted without decoding it), and keeping the
:class:`~centidb.collection.Collection` objects of this session in step with
the catalog: a collection dropped or renamed (here, or by another store
object or process, seen at the next write transaction) is **detached**, so
using its object raises :class:`~centidb.errors.StoreError` and the store
stops handing it out; if the transaction that dropped or renamed it here
aborts, it is attached again. The catalog records the metadata
(:mod:`centidb.catalog`); the store is the layer above, and what the mixin
uses of it is declared below for the type checker, never imported.
"""

from __future__ import annotations

from typing import Any, Callable

from centidb import keylib
from centidb.catalog import Catalog
from centidb.metarecords import CollectionInfo
from centidb.collection import Collection
from centidb.engines import EngineTransaction
from centidb.errors import (CollectionExistsError, CorruptKeyError, StoreFormatError,
                            UnknownCollectionError)
from centidb.keylib import Key
from centidb.records import as_key
from centidb.txn import Change, Transaction, TxnManager
from centidb.writing import delete_prefix

__all__ = ['CollectionAdmin', 'check_name']


def check_name(name: str) -> None:
    """Check a collection name given to the store.

    :param name: the name.
    :raises TypeError: unless `name` is a non-empty ``str``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f'collection name must be a non-empty str, not {name!r}')


def _dropped_then(name: str, remade: bool) -> str:
    if remade:
        return f'store.collection({name!r}) opens the new collection made since'
    return f'store.collection({name!r}) makes a new, empty one'


class CollectionAdmin:
    """The store's methods that list, drop and rename collections, and detach gone ones.

    The store keeps ``_collections``, its open collections by name (changed
    under the catalog's lock), its ``_txns`` and its ``_catalog``.
    """

    _txns: TxnManager
    _catalog: Catalog
    _collections: dict[str, Collection]

    # --- detaching the collections gone ----------------------------------------------

    def _refresh(self, etxn: EngineTransaction) -> None:
        """Reload the open collections' metadata if another process changed it."""
        catalog = self._catalog
        if not catalog.refresh(etxn):
            return
        with catalog.lock:
            colls = list(self._collections.values())
        for coll in colls:
            info = catalog.collection_info(etxn, coll.name)
            if info is not None and info['id'] == coll.coll_id:
                coll.reload(info, catalog.index_ids(etxn, coll.coll_id))
            else:
                self._forget_collection(coll, *self._gone(etxn, coll, info is not None))

    def _gone(self, etxn: EngineTransaction, coll: Collection,
              remade: bool) -> tuple[str, str]:
        """``(why, what to do)`` for `coll`, whose metadata another process removed."""
        stored: dict[str, CollectionInfo]
        try:
            stored = self._catalog.collections(etxn)
        except StoreFormatError:        # another collection's; verify() reports it
            stored = {}
        for name, info in stored.items():
            if info['id'] == coll.coll_id:
                return f'it was renamed to {name!r}', f'open it as store.collection({name!r})'
        return 'it was dropped from the store', _dropped_then(coll.name, remade)

    def _forget_collection(self, coll: Collection, why: str,
                           then: str = 'open it again with store.collection()',
                           ) -> Callable[[], object]:
        """Detach `coll` and stop handing it out; return the detaching's undo."""
        with self._catalog.lock:
            if self._collections.get(coll.name) is coll:
                del self._collections[coll.name]
        attach: Callable[[], object] = coll.detach(
            f'collection {coll.name!r} cannot be used: {why}; {then}')
        return attach

    def _forget_in(self, txn: Transaction, name: str, why: str, then: str) -> None:
        """Detach collection `name` of this session, until `txn` aborts."""
        coll = self._collections.get(name)
        if coll is not None:
            attach = self._forget_collection(coll, why, then)
            txn.undo.append(lambda: self._remember(coll, attach))

    def _remember(self, coll: Collection, attach: Callable[[], object]) -> None:
        """Undo :meth:`_forget_in`: its transaction aborted."""
        with self._catalog.lock:
            self._collections.setdefault(coll.name, coll)
        attach()

    # --- listing, dropping, renaming --------------------------------------------------

    def collections(self, txn: Transaction | None = None) -> list[str]:
        """The sorted names of every collection in the store.

        Read from the store's metadata, so collections other processes
        created (and not opened in this session) are listed too.

        :param txn: a :class:`Transaction` of this store to read in
            (default: see the module doc).
        :returns: a ``list`` of ``str``.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.StoreFormatError: if a collection's metadata
            is unreadable.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._txns.check_open()
        return self._txns.run(txn, False, self._names_in)

    def _names_in(self, txn: Transaction, etxn: EngineTransaction) -> list[str]:
        return sorted(self._catalog.collections(etxn))

    def drop_collection(self, name: str, txn: Transaction | None = None) -> None:
        """Delete the collection `name`: its records, indexes and metadata.

        In one write transaction, deletes every record (batches too), every
        entry of every index stored for it (added in this session or not),
        the metadata of its indexes and its own, and its key counter when
        that has the default name (``'<name>:key'``; a counter named with
        ``counter_name=`` may be shared, so it is kept). The collection
        object of this session, and its indexes, are detached: using them
        raises :class:`~centidb.errors.StoreError`. Other store objects and
        processes detach theirs at their next write transaction.
        ``collection(name)`` afterwards makes a new, empty collection, with
        new prefix ids. If the transaction aborts, nothing changes, and the
        collection object works again. A transaction of its own is run again
        if it conflicts with another client's (see
        :meth:`~centidb.txn.TxnManager.retry_conflicts`). Like every write
        transaction on LevelDB, the deletions are held in memory until the
        commit.

        :param name: the collection's name.
        :param txn: a write :class:`Transaction` of this store to run in, so
            the drop commits or aborts with it (default: see the module
            doc).
        :raises ~centidb.errors.UnknownCollectionError: (a ``KeyError``) if
            the store has no collection `name`.
        :raises TypeError: for an empty or non-``str`` `name`, or a `txn`
            that is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._txns.check_open()
        check_name(name)
        self._run_metadata_write(txn, self._drop_in, name)

    def _run_metadata_write(self, txn: Transaction | None,
                            func: Callable[..., None], *args: Any) -> None:
        """``func(txn, engine txn, *args)`` in `txn`, or in one of its own, run again on conflicts.

        Without `txn`, as :meth:`~centidb.txn.TxnManager.retry_conflicts`
        says: joining this thread's open write transaction runs it once.
        """
        if txn is None:
            self._txns.retry_conflicts(self._txns.run, None, True, func, *args)
        else:
            self._txns.run(txn, True, func, *args)

    def _stored_info(self, etxn: EngineTransaction, name: str) -> CollectionInfo:
        info = self._catalog.collection_info(etxn, name)
        if info is None:
            raise UnknownCollectionError(
                f'the store has no collection {name!r}; store.collections() lists '
                f'the ones it has')
        return info

    def _drop_in(self, txn: Transaction, etxn: EngineTransaction, name: str) -> None:
        catalog = self._catalog
        info = self._stored_info(etxn, name)
        index_ids = catalog.index_ids(etxn, info['id'])
        for prefix_id in (info['id'], *index_ids.values()):
            delete_prefix(etxn, keylib.packs(prefix_id))
        with catalog.lock:      # after the engine's writer lock, as elsewhere
            catalog.drop_collection(txn, name, info)
            self._forget_in(txn, name, 'it was dropped from the store',
                            _dropped_then(name, False))

    def rename_collection(self, old: str, new: str, txn: Transaction | None = None) -> None:
        """Give the collection `old` the name `new`.

        Only its metadata moves (records and index entries are stored under
        its prefix id, which stays), so this is quick whatever the size. Its
        key counter moves too when it has the default name
        (``'<old>:key'``). The collection object of this session is
        detached, as by :meth:`drop_collection`: open it again with
        ``collection(new)``. A transaction of its own is run again if it
        conflicts with another client's, as for :meth:`drop_collection`.

        :param old: the collection's name.
        :param new: its new name, a non-empty ``str``.
        :param txn: a write :class:`Transaction` of this store to run in
            (default: see the module doc).
        :raises ~centidb.errors.UnknownCollectionError: (a ``KeyError``) if
            the store has no collection `old`.
        :raises ~centidb.errors.CollectionExistsError: (a ``ValueError``) if
            a collection `new` exists (`new` equal to `old` included).
        :raises TypeError: for an empty or non-``str`` name, or a `txn`
            that is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._txns.check_open()
        check_name(old)
        check_name(new)
        self._run_metadata_write(txn, self._rename_in, old, new)

    def _rename_in(self, txn: Transaction, etxn: EngineTransaction, old: str,
                   new: str) -> None:
        catalog = self._catalog
        info = self._stored_info(etxn, old)
        if catalog.collection_info(etxn, new) is not None:
            raise CollectionExistsError(
                f'cannot rename collection {old!r} to {new!r}: a collection '
                f'{new!r} exists; drop it first, or choose another name')
        with catalog.lock:
            catalog.rename_collection(txn, old, new, info)
            self._forget_in(txn, old, f'it was renamed to {new!r}',
                            f'open it as store.collection({new!r})')

    # --- removing a record that cannot be decoded ------------------------------------

    def remove_record(self, name: str, key: object, txn: Transaction | None = None, *,
                      whole_batch: bool = False) -> bool:
        """Delete the record under `key` of collection `name` without reading its value.

        For a record whose stored bytes cannot be decoded (``get()`` and
        ``verify()`` report it): ``delete()`` decodes the old value to find
        its index entries, so it raises
        :class:`~centidb.errors.CorruptRecordError` for such a record. This
        deletes the stored value as it is, and finds the entries by reading
        every entry of every index stored for the collection (added in this
        session or not), removing those that point at `key`: it costs a
        scan of the collection's indexes, so it is not a replacement for
        ``delete()``. The collection's before-write hooks are not called;
        :meth:`~centidb.store.Store.on_commit` hooks get
        ``Change(name, key, None)`` if a value was deleted (for a batch, for
        `key` only: the other records' keys are not read).

        A record inside a batch (see ``Collection.batch()``) is stored in
        one value with the other records of the batch: with `whole_batch`
        that value is deleted, every record of the batch with it, and the
        entries pointing at any of them; without it, this raises.

        :param name: the collection's name.
        :param key: the record's key tuple (a bare value means a 1-tuple).
        :param txn: a write :class:`Transaction` of this store to run in
            (default: see the module doc).
        :param whole_batch: delete the whole batch when `key` is in one.
        :returns: True if a value was deleted; False if nothing was stored
            under `key` (index entries pointing at it are deleted all the
            same).
        :raises ~centidb.errors.UnknownCollectionError: (a ``KeyError``) if
            the store has no collection `name`.
        :raises ValueError: if `key` is in a batch and `whole_batch` is
            false; the message names the batch's first and last keys.
        :raises TypeError: for an empty or non-``str`` `name`, a `key` that
            is not a key, or a `txn` that is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._txns.check_open()
        check_name(name)
        return self._txns.run(txn, True, self._remove_in, name, as_key(key), whole_batch)

    def _remove_in(self, txn: Transaction, etxn: EngineTransaction, name: str, key: Key,
                   whole_batch: bool) -> bool:
        info = self._stored_info(etxn, name)
        prefix = keylib.packs(info['id'])
        packed = keylib.packs(key)
        lo = hi = packed            # the packed record keys whose entries go
        physical: bytes | None = prefix + packed
        if etxn.get(prefix + packed) is None:
            physical, lo, hi = self._batch_holding(etxn, name, prefix, key, whole_batch)
        doomed = []
        for index_id in self._catalog.index_ids(etxn, info['id']).values():
            index_prefix = keylib.packs(index_id)
            for entry, _ in etxn.items(*keylib.prefix_range((), index_prefix)):
                try:
                    parts = keylib.unpacks_list(entry, index_prefix)
                except CorruptKeyError:     # verify() reports it
                    continue
                if len(parts) == 2 and lo <= keylib.packs(parts[1]) <= hi:
                    doomed.append(bytes(entry))
        for entry in doomed:
            etxn.delete(entry)
        if physical is None:
            return False
        etxn.delete(physical)
        txn.changes.append(Change(name, key, None))
        return True

    def _batch_holding(self, etxn: EngineTransaction, name: str, prefix: bytes, key: Key,
                       whole_batch: bool) -> tuple[bytes | None, bytes, bytes]:
        """``(physical key, first, last)`` of the batch holding `key`, or ``(None, key, key)``."""
        packed = keylib.packs(key)
        found = etxn.first(prefix + packed, keylib.prefix_range((), prefix)[1])
        if found is not None:
            try:
                parts = keylib.unpacks_list(found[0], prefix)
            except CorruptKeyError:
                parts = []
            if len(parts) == 2:
                last, first = keylib.packs(parts[0]), keylib.packs(parts[1])
                if first <= packed <= last:
                    if not whole_batch:
                        raise ValueError(
                            f'collection {name!r}: the record under key {key!r} is in a '
                            f'batch with every record from {parts[1]!r} to {parts[0]!r}, '
                            f'stored as one value; pass whole_batch=True to remove them all')
                    return bytes(found[0]), first, last
        return None, packed, packed
