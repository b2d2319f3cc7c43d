"""The collections a store has open in this session, and removing one record.

:class:`OpenCollections` makes the :class:`~centidb.collection.Collection`
objects of one store (``Store.collection()``), hands out the same object for
the same name, and keeps them in step with the catalog: a collection dropped
or renamed (here, or by another store object or process, seen at the next
write transaction) is **detached**, so using its object raises
:class:`~centidb.errors.StoreError` and the store stops handing it out; if
the transaction that dropped or renamed it here aborts, it is attached
again. It also lists, drops and renames collections (``Store.collections()``,
``drop_collection()``, ``rename_collection()``) and switches every open
collection's write paths when the store starts or stops recording changes
for its hooks.

:func:`remove_record` deletes a record without decoding it
(``Store.remove_record()``). The catalog records the metadata
(:mod:`centidb.catalog`); :class:`~centidb.store.Store`, in this package,
holds one :class:`OpenCollections` and calls it.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

from centidb import encodings, keylib
from centidb.catalog import Catalog, StoredIndex
from centidb.collection import Collection
from centidb.encodings import Encoder
from centidb.engines import EngineTransaction
from centidb.errors import (CollectionExistsError, CorruptKeyError, EncoderMismatchError,
                            KeyKindMismatchError, StoreFormatError, UnknownCollectionError)
from centidb.keylib import Key
from centidb.metarecords import CollectionInfo
from centidb.records import as_key
from centidb.txn import Change, Transaction, TxnManager
from centidb.records.entries import delete_prefix

__all__ = ['OpenCollections', 'check_name', 'remove_record', 'stored_info']

#: A collection's stored metadata and its stored indexes (name -> what is stored).
StoredMeta = Tuple[CollectionInfo, Dict[str, StoredIndex]]


def check_name(name: str) -> None:
    """Check a collection name given to the store.

    :param name: the name.
    :raises TypeError: unless `name` is a non-empty ``str``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f'collection name must be a non-empty str, not {name!r}')


def stored_info(catalog: Catalog, etxn: EngineTransaction, name: str) -> CollectionInfo:
    """The stored metadata of collection `name`.

    :param catalog: the store's :class:`~centidb.catalog.Catalog`.
    :param etxn: the engine transaction to read in.
    :param name: the collection's name.
    :returns: its metadata ``dict``.
    :raises ~centidb.errors.UnknownCollectionError: if the store has no
        collection `name`.
    """
    info = catalog.collection_info(etxn, name)
    if info is None:
        raise UnknownCollectionError(
            f'the store has no collection {name!r}; store.collections() lists '
            f'the ones it has')
    return info


def _dropped_then(name: str, remade: bool) -> str:
    if remade:
        return f'store.collection({name!r}) opens the new collection made since'
    return f'store.collection({name!r}) makes a new, empty one'


def _packer_mismatch(coll_name: str, packer_name: str, given_name: str) -> EncoderMismatchError:
    return EncoderMismatchError(
        f'collection {coll_name!r} was created with packer {packer_name!r}, not '
        f'{given_name!r}; pass packer= to put() or batch() to pack some '
        f'records differently')


def _check_reopen_args(coll: Collection, key_func: Callable[[Any], Any] | None,
                       txn_key_func: Callable[[Transaction, Any], Any] | None,
                       encoder: Encoder | None, packer: Encoder | None,
                       counter_name: str | None) -> None:
    if encoder is not None and encoder.name != coll.encoder.name:
        raise EncoderMismatchError(
            f'collection {coll.name!r} uses encoder {coll.encoder.name!r}, '
            f'not {encoder.name!r}')
    if packer is not None and packer.name != coll.packer.name:
        raise _packer_mismatch(coll.name, coll.packer.name, packer.name)
    if counter_name is not None and counter_name != coll.counter_name:
        raise ValueError(f'collection {coll.name!r} uses counter '
                         f'{coll.counter_name!r}, not {counter_name!r}')
    if (key_func is not None and key_func is not coll.key_func) or (
            txn_key_func is not None and txn_key_func is not coll.txn_key_func):
        raise ValueError(f'collection {coll.name!r} is already open in this '
                         f'store with another key function')


class OpenCollections:
    """The collections one store has open in this session, by name, kept in step with the catalog.

    The dictionary of open collections is changed only under the catalog's
    lock.

    :param store: the :class:`~centidb.store.Store`, handed to each
        collection (kept, not called).
    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param catalog: the store's :class:`~centidb.catalog.Catalog`.
    """

    def __init__(self, store: object, txns: TxnManager, catalog: Catalog) -> None:
        self._store = store
        self._txns = txns
        self._catalog = catalog
        self._open: dict[str, Collection] = {}

    def get(self, name: str) -> Collection | None:
        """The collection `name` if it is open in this session, else None.

        :param name: the collection's name.
        """
        return self._open.get(name)

    # --- opening -------------------------------------------------------------------

    def open(self, name: str, key_func: Callable[[Any], Any] | None,
             txn_key_func: Callable[[Transaction, Any], Any] | None,
             encoder: Encoder | None, packer: Encoder | None, counter_name: str | None,
             default_encoder: Encoder, checksum: bool) -> Collection:
        """Open collection `name`, creating it if the store has none (``Store.collection``).

        Runs once, in this thread's write transaction or in transactions of
        its own: the store runs it again on a conflict.

        :param name: the collection's name.
        :param key_func: as for ``Store.collection``.
        :param txn_key_func: as for ``Store.collection``.
        :param encoder: as for ``Store.collection``, or None.
        :param packer: as for ``Store.collection``, or None.
        :param counter_name: as for ``Store.collection``, or None.
        :param default_encoder: the encoder a new collection gets when
            `encoder` is None.
        :param checksum: whether a new collection keeps checksums.
        :returns: the :class:`~centidb.collection.Collection`.
        """
        with self._catalog.lock:
            coll = self._open.get(name)
            if coll is not None:
                _check_reopen_args(coll, key_func, txn_key_func, encoder, packer,
                                   counter_name)
                return coll
        catalog = self._catalog
        key_kind = ('key_func' if key_func is not None else
                    'txn_key_func' if txn_key_func is not None else None)
        stored = self._txns.run(None, False, self._stored_meta, name)
        if stored is None:
            encoder = encoder or default_encoder
            packer = packer or encodings.PLAIN_PACKER
            catalog.encoder_id(encoder)
            catalog.encoder_id(packer)
            with self._txns.writing() as txn:
                info, created = catalog.create_collection(
                    txn, name, encoder, packer, counter_name, key_kind or 'auto', checksum)
                indexes = {} if created else catalog.stored_indexes(
                    txn.engine_txn, info['id'])  # type: ignore[arg-type]  # txn is open
                coll = self._add(name, (info, indexes), key_func, txn_key_func,
                                 encoder, packer, counter_name)
                if created:
                    txn.undo.append(lambda: self._forget(
                        coll, 'the transaction that created it was aborted'))
            return coll
        return self._add(name, stored, key_func, txn_key_func, encoder, packer, counter_name)

    def _stored_meta(self, txn: Transaction, etxn: EngineTransaction,
                     name: str) -> StoredMeta | None:
        """``(metadata, stored indexes)`` of collection `name`, or None."""
        info = self._catalog.collection_info(etxn, name)
        return None if info is None else (info, self._catalog.stored_indexes(etxn, info['id']))

    def _add(self, name: str, stored: StoredMeta, key_func: Callable[[Any], Any] | None,
             txn_key_func: Callable[[Transaction, Any], Any] | None,
             encoder: Encoder | None, packer: Encoder | None,
             counter_name: str | None) -> Collection:
        with self._catalog.lock:
            coll = self._open.get(name)
            if coll is None:
                coll = self.make(name, stored, key_func, txn_key_func, encoder, packer)
                self._open[name] = coll
            else:
                _check_reopen_args(coll, key_func, txn_key_func, encoder, packer,
                                   counter_name)
            return coll

    def make(self, name: str, stored: StoredMeta, key_func: Callable[[Any], Any] | None,
             txn_key_func: Callable[[Transaction, Any], Any] | None,
             encoder: Encoder | None, packer: Encoder | None) -> Collection:
        """A new collection object for stored metadata, not kept as open (``verify()`` uses it).

        :param name: the collection's name.
        :param stored: its ``(metadata, stored indexes)``.
        :param key_func: as for ``Store.collection``.
        :param txn_key_func: as for ``Store.collection``.
        :param encoder: as for ``Store.collection``, or None: the stored one.
        :param packer: as for ``Store.collection``, or None: the stored one.
        :returns: the :class:`~centidb.collection.Collection`.
        :raises ~centidb.errors.KeyKindMismatchError: if the key functions
            given are of another kind than the collection's.
        :raises ~centidb.errors.EncoderMismatchError: if `encoder` or
            `packer` is not the stored one.
        :raises ~centidb.errors.UnknownEncoderError: if the stored encoder
            or packer is not registered.
        """
        info, indexes = stored
        kind = info.get('key')      # None: a store from before kinds were recorded
        given = ('key_func' if key_func is not None else
                 'txn_key_func' if txn_key_func is not None else None)
        if kind is not None and given is not None and given != kind:
            made = 'auto-increment keys' if kind == 'auto' else f'a {kind}'
            raise KeyKindMismatchError(
                f'collection {name!r} was created with {made}; it cannot be '
                f'reopened with a {given}')
        if encoder is None:
            encoder = self._catalog.registered(info['encoder'], name)
        elif encoder.name != info['encoder']:
            raise EncoderMismatchError(
                f'collection {name!r} was created with encoder '
                f'{info["encoder"]!r}; reopening it with {encoder.name!r} would '
                f'mis-decode its records')
        if packer is None:
            packer = self._catalog.registered(info['packer'], name)
        elif packer.name != info['packer']:
            raise _packer_mismatch(name, info['packer'], packer.name)
        self._catalog.encoder_id(encoder)
        self._catalog.encoder_id(packer)
        packer = self._catalog.packer_for(packer)
        return Collection(self._store, self._txns, self._catalog, name, info, key_func,
                          txn_key_func, encoder, packer, indexes)

    def record_changes(self, after_commit: Callable[[list[Change]], object] | None) -> None:
        """Set the manager's ``after_commit`` and rebuild every open collection's write paths.

        :param after_commit: what to call with each committed write
            transaction's changes, or None to stop recording them.
        """
        with self._catalog.lock:    # collections are made under it, seeing the switch
            self._txns.after_commit = after_commit
            colls = list(self._open.values())
        for coll in colls:
            coll.rebuild()

    # --- detaching the collections gone ----------------------------------------------

    def refresh(self, etxn: EngineTransaction) -> None:
        """Reload the open collections' metadata if another process changed it.

        :param etxn: the write transaction starting (the manager's ``on_write``).
        """
        catalog = self._catalog
        if not catalog.refresh(etxn):
            return
        with catalog.lock:
            colls = list(self._open.values())
        for coll in colls:
            info = catalog.collection_info(etxn, coll.name)
            if info is not None and info['id'] == coll.coll_id:
                coll.reload(info, catalog.stored_indexes(etxn, coll.coll_id))
            else:
                self._forget(coll, *self._gone(etxn, coll, info is not None))

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

    def _forget(self, coll: Collection, why: str,
                then: str = 'open it again with store.collection()') -> Callable[[], object]:
        """Detach `coll` and stop handing it out; return the detaching's undo."""
        with self._catalog.lock:
            if self._open.get(coll.name) is coll:
                del self._open[coll.name]
        attach: Callable[[], object] = coll.detach(
            f'collection {coll.name!r} cannot be used: {why}; {then}')
        return attach

    def _forget_in(self, txn: Transaction, name: str, why: str, then: str) -> None:
        """Detach collection `name` of this session, until `txn` aborts."""
        coll = self._open.get(name)
        if coll is not None:
            attach = self._forget(coll, why, then)
            txn.undo.append(lambda: self._remember(coll, attach))

    def _remember(self, coll: Collection, attach: Callable[[], object]) -> None:
        """Undo :meth:`_forget_in`: its transaction aborted."""
        with self._catalog.lock:
            self._open.setdefault(coll.name, coll)
        attach()

    # --- listing, dropping, renaming --------------------------------------------------

    def names(self, txn: Transaction | None) -> list[str]:
        """The sorted names of every collection in the store (``Store.collections``).

        :param txn: a transaction of the store, or None.
        :returns: a ``list`` of ``str``.
        """
        self._txns.check_open()
        return self._txns.run(txn, False, self._names_in)

    def _names_in(self, txn: Transaction, etxn: EngineTransaction) -> list[str]:
        return sorted(self._catalog.collections(etxn))

    def drop(self, name: str, txn: Transaction | None) -> None:
        """Delete collection `name` and detach its object (``Store.drop_collection``).

        :param name: the collection's name.
        :param txn: a write transaction of the store, or None.
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

    def _drop_in(self, txn: Transaction, etxn: EngineTransaction, name: str) -> None:
        catalog = self._catalog
        info = stored_info(catalog, etxn, name)
        index_ids = catalog.index_ids(etxn, info['id'])
        for prefix_id in (info['id'], *index_ids.values()):
            delete_prefix(etxn, keylib.packs(prefix_id))
        with catalog.lock:      # after the engine's writer lock, as elsewhere
            catalog.drop_collection(txn, name, info)
            self._forget_in(txn, name, 'it was dropped from the store',
                            _dropped_then(name, False))

    def rename(self, old: str, new: str, txn: Transaction | None) -> None:
        """Rename collection `old` to `new` and detach its object (``Store.rename_collection``).

        :param old: the collection's name.
        :param new: its new name.
        :param txn: a write transaction of the store, or None.
        """
        self._txns.check_open()
        check_name(old)
        check_name(new)
        self._run_metadata_write(txn, self._rename_in, old, new)

    def _rename_in(self, txn: Transaction, etxn: EngineTransaction, old: str,
                   new: str) -> None:
        catalog = self._catalog
        info = stored_info(catalog, etxn, old)
        if catalog.collection_info(etxn, new) is not None:
            raise CollectionExistsError(
                f'cannot rename collection {old!r} to {new!r}: a collection '
                f'{new!r} exists; drop it first, or choose another name')
        with catalog.lock:
            catalog.rename_collection(txn, old, new, info)
            self._forget_in(txn, old, f'it was renamed to {new!r}',
                            f'open it as store.collection({new!r})')


# --- removing a record that cannot be decoded ------------------------------------

def remove_record(txns: TxnManager, catalog: Catalog, name: str, key: object,
                  txn: Transaction | None, whole_batch: bool) -> bool:
    """Delete the record under `key` of collection `name` without reading its value.

    ``Store.remove_record()`` calls it; its docstring says what is deleted
    and what is raised.

    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param catalog: the store's :class:`~centidb.catalog.Catalog`.
    :param name: the collection's name.
    :param key: the record's key tuple (a bare value means a 1-tuple).
    :param txn: a write transaction of the store to run in, or None.
    :param whole_batch: delete the whole batch when `key` is in one.
    :returns: True if a value was deleted.
    """
    txns.check_open()
    check_name(name)
    return txns.run(txn, True, _remove_in, catalog, name, as_key(key), whole_batch)


def _remove_in(txn: Transaction, etxn: EngineTransaction, catalog: Catalog, name: str,
               key: Key, whole_batch: bool) -> bool:
    info = stored_info(catalog, etxn, name)
    prefix = keylib.packs(info['id'])
    packed = keylib.packs(key)
    lo = hi = packed            # the packed record keys whose entries go
    physical: bytes | None = prefix + packed
    if etxn.get(prefix + packed) is None:
        physical, lo, hi = _batch_holding(etxn, name, prefix, key, whole_batch)
    doomed = []
    for index_id in catalog.index_ids(etxn, info['id']).values():
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


def _batch_holding(etxn: EngineTransaction, name: str, prefix: bytes, key: Key,
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
