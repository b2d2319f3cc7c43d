"""The catalog: a store's metadata, kept in its engine under the element ``0``.

Layout (also in ``docs/format.rst``):

* ``(0, 'format')``: format name and version, written on create and checked
  on open;
* ``(0, 'collection', name)``: a collection's prefix id, encoder, packer and
  counter name;
* ``(0, 'index', collection id, name)``: an index's prefix id;
* ``(0, 'encoder', name)``: the persistent id of an encoder or packer;
* ``(0, 'counter', name)``: a counter's value; ``(0, 'sys', ...)``: the
  store's own id counters and the metadata generation.

The :class:`Catalog` reads and writes these records, and keeps this
process's registry of encoders and packers (persistent id <-> name <->
:class:`~centidb.encodings.Encoder`). :func:`read_metadata` reads them all
at once, without a store: the command line's ``info`` and ``dump`` use it.
The catalog calls the transaction and engine layers only.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, NamedTuple

from centidb import encodings, keylib
from centidb.encodings import Encoder
from centidb.engines import Engine, EngineTransaction
from centidb.errors import (
    PickleNotAllowedError, StoreFormatError, TooManyEncodersError,
    UnknownEncoderError,
)
from centidb.keylib import Key
from centidb.metarecords import (
    CHECKSUM, ENCODER_COUNTER, FORMAT_KEY, FORMAT_NAME, FORMAT_VERSION, GENERATION,
    GENERATION_KEY, KEY_KINDS, MAX_ENCODER_ID, MAX_GENERATION, MAX_META_BYTES, MAX_PREFIX_ID,
    PREFIX_COUNTER, CollectionInfo, bad_record, brief_repr, check_format_info, describe,
    dump_json, int_value, meta_key, parse_key, parse_value, read_record, scan,
)
from centidb.txn import Transaction, TxnManager

__all__ = ['Catalog', 'EncoderRegistry', 'CollectionMeta', 'StoreMetadata', 'StoredIndex',
           'read_metadata']


def _holds_data(etxn: EngineTransaction, prefix_id: int) -> bool:
    """True if some engine key starts with prefix id `prefix_id`."""
    lo, hi = keylib.prefix_range((prefix_id,))
    return etxn.first(lo, hi) is not None


def _bump(etxn: EngineTransaction, key: Key, n: int, init: int) -> int:
    """Return the counter `key` holds (or `init`), then add `n` to it."""
    value = read_record(etxn, *key)
    if value is None:
        value = init
    if n:
        etxn.put(meta_key(*key), keylib.packs(value + n))
    return value  # type: ignore[no-any-return]  # counters parse to int


class EncoderRegistry:
    """The encoders and packers a store knows, by name and persistent id.

    The part of :class:`Catalog` that numbers encoders (a mixin: the state
    lives in the catalog, under its lock).
    """

    if TYPE_CHECKING:   # set by Catalog.__init__, declared for the type checker
        lock: threading.RLock
        _txns: TxnManager
        _encoders: dict[str, Encoder]
        _builtin_names: frozenset[str]
        _encoder_ids: dict[str, int]
        _encoder_names: dict[int, str]

        def _changed(self, txn: Transaction) -> None: ...

    def _persist_encoder_id(self, etxn: EngineTransaction, name: str) -> int:
        """The id stored for encoder `name`, numbering it first if it has none."""
        info = read_record(etxn, 'encoder', name)
        if info is not None:
            encoder_id: int = info['id']
        else:
            encoder_id = _bump(etxn, ENCODER_COUNTER, 1, 1)
            if encoder_id > MAX_ENCODER_ID:
                raise TooManyEncodersError(
                    f'cannot number encoder {name!r}: the store has numbered '
                    f'{MAX_ENCODER_ID} encoders and packers, as many as its records '
                    f'can name')
            etxn.put(meta_key('encoder', name), dump_json({'id': encoder_id}))
        with self.lock:
            self._encoder_ids[name] = encoder_id
            self._encoder_names[encoder_id] = name
        return encoder_id

    def add_encoder(self, encoder: Encoder) -> Encoder:
        """Register `encoder`; see :meth:`centidb.store.Store.add_encoder`.

        :param encoder: an :class:`~centidb.encodings.Encoder`.
        """
        self._txns.check_open()
        if not isinstance(encoder, encodings.Encoder):
            raise TypeError(f'add_encoder needs an Encoder, not {type(encoder).__name__!r}')
        name = encoder.name
        if name not in self._encoder_ids:
            # Numbered in a write transaction, where the stored ids are current.
            with self._txns.writing() as txn:
                if name not in self._encoder_ids:
                    self._persist_encoder_id(
                        txn.engine_txn, name)  # type: ignore[arg-type]  # txn is open
                    self._changed(txn)
                    txn.undo.append(lambda: self._forget_encoder(name))
        with self.lock:
            if name == encodings.PICKLE_ENCODER.name:
                encoder = encodings.PICKLE_ENCODER       # the program opted in
            if name not in self._encoders or name not in self._builtin_names:
                self._encoders[name] = encoder
            return self._encoders[name]

    def _forget_encoder(self, name: str) -> None:
        with self.lock:
            encoder_id = self._encoder_ids.pop(name, None)
            self._encoder_names.pop(encoder_id, None)  # type: ignore[arg-type]  # None: no-op

    def encoder_id(self, encoder: Encoder) -> int:
        """The persistent id of `encoder`'s name, registering it if needed.

        :param encoder: an :class:`~centidb.encodings.Encoder`.
        :raises TypeError: if `encoder` is not an ``Encoder``.
        """
        if not isinstance(encoder, encodings.Encoder):
            raise TypeError(f'expected an Encoder, not {type(encoder).__name__!r}')
        if encoder.name not in self._encoders or encoder.name not in self._encoder_ids:
            self.add_encoder(encoder)
        return self._encoder_ids[encoder.name]

    def packer_for(self, packer: Encoder) -> Encoder:
        """The ``Encoder`` that packs and unpacks records named by `packer`'s name.

        For a built-in name, the store's own packer (bounded by its
        ``max_unpacked_size``), as records with that name in their header
        are read with it; else `packer`. Call :meth:`encoder_id` first.

        :param packer: an :class:`~centidb.encodings.Encoder`.
        """
        if packer.name in self._builtin_names:
            return self._encoders.get(packer.name, packer)
        return packer

    def encoder(self, name: str) -> Encoder | None:
        """The :class:`~centidb.encodings.Encoder` registered as `name`, or None.

        :param name: the encoder's name.
        """
        return self._encoders.get(name)

    def registered(self, encoder_name: str, coll_name: str) -> Encoder:
        """The encoder a collection was created with, which must be registered.

        :param encoder_name: the name stored for the collection.
        :param coll_name: the collection's name, for the error.
        :raises ~centidb.errors.PickleNotAllowedError: for pickle, unless
            this program opted in.
        :raises ~centidb.errors.UnknownEncoderError: for another encoder not
            registered in this session.
        """
        encoder = self._encoders.get(encoder_name)
        if encoder is not None:
            return encoder
        if encoder_name == encodings.PICKLE_ENCODER.name:
            raise PickleNotAllowedError(
                f'collection {coll_name!r} is stored with pickle, which can run '
                f'code from the store when it decodes; centidb decodes pickle only '
                f'when the program opts in: if you trust this store, pass '
                f'encoder=centidb.encodings.PICKLE_ENCODER to collection(), or call '
                f'store.add_encoder(centidb.encodings.PICKLE_ENCODER)')
        raise UnknownEncoderError(
            f'collection {coll_name!r} uses {encoder_name!r}, which is not '
            f'registered in this session; call store.add_encoder() with '
            f'it, or pass it to collection()')

    def encoder_name(self, encoder_id: int) -> str | None:
        """The name the store numbered `encoder_id`, or None if it numbered none.

        :param encoder_id: a persistent id, such as a record header's packer id.
        """
        return self._encoder_names.get(encoder_id)

    def packer(self, packer_id: int, coll_name: str) -> Encoder:
        """The registered packer with persistent id `packer_id`.

        :param packer_id: the id byte of a stored record.
        :param coll_name: names the collection in the error.
        :raises ~centidb.errors.UnknownEncoderError: if the store never
            numbered `packer_id`, or its packer is not registered in this
            session.
        """
        name = self._encoder_names.get(packer_id)
        packer = self._encoders.get(name)  # type: ignore[arg-type]  # None finds nothing
        if packer is not None:
            return packer
        if name is None:
            raise UnknownEncoderError(
                f'a record in collection {coll_name!r} names packer id '
                f'{packer_id}, which this store never registered (corrupt data?)')
        raise UnknownEncoderError(
            f'a record in collection {coll_name!r} was stored with {name!r}, '
            f'which is not registered in this session; call '
            f'store.add_encoder() with the {name!r} Encoder first')


class Catalog(EncoderRegistry):
    """A store's metadata and this process's cached view of it.

    The cache (encoder ids, and the collections the store keeps) is checked
    against the stored *generation*, a number every metadata change bumps,
    when each write transaction begins (:meth:`refresh`), so ids are always
    assigned inside the write transaction that records them and several
    processes end with the same ids. On an empty engine the format record
    and the built-in encoders' ids are written in one write transaction.

    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param max_unpacked_size: the limit of the built-in packers that read
        (see :func:`centidb.encodings.make_packers`).
    :raises ~centidb.errors.StoreFormatError: if the engine holds data that
        is not a centidb store, or a store of another format or version, or
        unreadable metadata.
    """

    def __init__(self, txns: TxnManager,
                 max_unpacked_size: int = encodings.MAX_UNPACKED_SIZE) -> None:
        self._txns = txns
        self.engine: Engine = txns.engine
        #: Guards the cache; taken after the engine's writer lock.
        self.lock = threading.RLock()
        #: The metadata generation as last read; None: reload at the next refresh.
        self.generation: int | None = None
        # (generation, prefix counter) at which the counter was last seen
        # above every prefix id in use (see next_prefix_id).
        self._prefix_checked: tuple[int, int] | None = None
        self._encoders = {enc.name: enc for enc in encodings.builtin_encoders(max_unpacked_size)
                          if enc is not encodings.PICKLE_ENCODER}
        self._builtin_names = frozenset(enc.name for enc in encodings.BUILTIN_ENCODERS)
        self._encoder_ids: dict[str, int] = {}     # name -> persistent id
        self._encoder_names: dict[int, str] = {}   # persistent id -> name
        with self.engine.begin() as etxn:
            complete = not self.check_format(etxn) and self._has_builtin_ids(etxn)
            if complete:
                self.refresh(etxn)
        if not complete:
            with self.engine.begin(write=True) as etxn:
                if self.check_format(etxn):
                    etxn.put(FORMAT_KEY, dump_json({'format': FORMAT_NAME,
                                                 'version': FORMAT_VERSION}))
                self.refresh(etxn)
                for enc in encodings.BUILTIN_ENCODERS:
                    self._persist_encoder_id(etxn, enc.name)

    # --- format and generation --------------------------------------------------

    def check_format(self, etxn: EngineTransaction) -> bool:
        """Check the format record; return True if the engine is empty.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :raises ~centidb.errors.StoreFormatError: for another format or
            version, or data without a format record.
        """
        info = read_record(etxn, 'format')
        if info is None:
            for _ in etxn.keys():
                raise StoreFormatError(
                    f'{self.engine!r} holds data but no centidb format '
                    f'record: it is not a centidb store')
            return True
        check_format_info(info)
        return False

    def _has_builtin_ids(self, etxn: EngineTransaction) -> bool:
        return all(etxn.get(meta_key('encoder', enc.name)) is not None
                   for enc in encodings.BUILTIN_ENCODERS)

    def refresh(self, etxn: EngineTransaction) -> bool:
        """Bring the cached encoder ids up to date if the metadata changed.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :returns: True if the stored generation differed from the cached one
            (the store then reloads its collections).
        """
        stored = etxn.get(GENERATION_KEY)
        generation = 0 if stored is None else int_value(GENERATION, stored)
        if generation == self.generation:
            return False
        with self.lock:
            ids: dict[str, int] = {}
            names: dict[int, str] = {}
            for key, info in scan(etxn, 'encoder'):
                encoder_id = info['id']
                if encoder_id in names:     # records would decode with either packer
                    raise bad_record(key, f'its id {encoder_id} is also the id of encoder '
                                    f'{names[encoder_id]!r}')
                ids[key[1]] = encoder_id
                names[encoder_id] = key[1]
            self._encoder_ids, self._encoder_names = ids, names
            self.generation = generation
        return True

    def _changed(self, txn: Transaction) -> None:
        """Bump the generation in `txn`: other processes reload at their next write."""
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        self.generation = _bump(etxn, GENERATION, 1, 0) + 1
        txn.undo.append(self._forget_generation)

    def _forget_generation(self) -> None:
        self.generation = None

    # --- collections and indexes ---------------------------------------------------------

    def collection_info(self, etxn: EngineTransaction, name: str) -> CollectionInfo | None:
        """The stored metadata ``dict`` of collection `name`, or None.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :param name: the collection's name.
        :raises ~centidb.errors.StoreFormatError: if it is unreadable.
        """
        info: CollectionInfo | None = read_record(etxn, 'collection', name)
        return info

    def collections(self, etxn: EngineTransaction) -> dict[str, CollectionInfo]:
        """A ``dict`` from name to metadata of every collection stored.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :raises ~centidb.errors.StoreFormatError: if a collection's metadata
            is unreadable.
        """
        return {key[1]: info for key, info in scan(etxn, 'collection')}

    def create_collection(self, txn: Transaction, name: str, encoder: Encoder, packer: Encoder,
                          counter_name: str | None, key_kind: str,
                          checksum: bool = False) -> tuple[CollectionInfo, bool]:
        """Store a new collection's metadata, unless it is already stored.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param name: the collection's name.
        :param encoder: its :class:`~centidb.encodings.Encoder`.
        :param packer: its packer.
        :param counter_name: the counter numbering its keys, or None for
            ``'<name>:key'``.
        :param key_kind: one of :data:`KEY_KINDS`.
        :param checksum: give its stored values a CRC-32 trailer.
        :returns: ``(metadata dict, True if created now)``.
        """
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        info = self.collection_info(etxn, name)
        if info is not None:        # another thread or process created it
            return info, False
        prefix_id = self.next_prefix_id(etxn)
        info = {
            'id': prefix_id,
            'encoder': encoder.name,
            'packer': packer.name,
            'counter': counter_name or f'{name}:key',
            'key': key_kind,
            'packers': [],
        }
        if checksum:
            info['checksum'] = CHECKSUM
        etxn.put(meta_key('collection', name), dump_json(info))
        self._took_prefix_id(txn, prefix_id)
        return info, True

    def save_collection_info(self, txn: Transaction, name: str, info: CollectionInfo) -> None:
        """Replace collection `name`'s metadata with `info`.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param name: the collection's name.
        :param info: its metadata ``dict``.
        """
        txn.engine_txn.put(  # type: ignore[union-attr]  # txn is open
            meta_key('collection', name), dump_json(info))
        self._changed(txn)

    def drop_collection(self, txn: Transaction, name: str, info: CollectionInfo) -> None:
        """Remove collection `name` from the metadata (not its records or entries).

        Deletes its metadata, its indexes' metadata, and its counter if the
        counter has the collection's own default name (``'<name>:key'``) and
        no other collection numbers its keys with it; a counter named with
        ``counter_name=`` may be shared, so it is kept.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param name: the collection's name.
        :param info: its metadata ``dict``, as :meth:`collection_info` read it.
        """
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        coll_id = info['id']
        for index_name in self.index_ids(etxn, coll_id):
            etxn.delete(meta_key('index', coll_id, index_name))
        etxn.delete(meta_key('collection', name))
        counter = info['counter']
        if counter == f'{name}:key' and not self._numbered_by_another(etxn, name, counter):
            etxn.delete(meta_key('counter', counter))
        self._changed(txn)

    def rename_collection(self, txn: Transaction, old: str, new: str,
                          info: CollectionInfo) -> CollectionInfo:
        """Store collection `old`'s metadata under the name `new` instead.

        Its prefix id, and so its records and indexes, stay as they are. A
        counter with the default name ``'<old>:key'`` that no other
        collection numbers its keys with moves to ``'<new>:key'``, unless a counter of
        that name exists; otherwise the metadata keeps naming the old
        counter.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param old: the collection's name.
        :param new: its new name; no collection may have it.
        :param info: its metadata ``dict``, as :meth:`collection_info` read it.
        :returns: the metadata ``dict`` stored under `new`.
        """
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        counter, target = info['counter'], f'{new}:key'
        if (counter == f'{old}:key'
                and not self._numbered_by_another(etxn, old, counter)
                and not self._numbered_by_another(etxn, old, target)
                and etxn.get(meta_key('counter', target)) is None):
            value = etxn.get(meta_key('counter', counter))
            if value is not None:
                etxn.put(meta_key('counter', target), value)
                etxn.delete(meta_key('counter', counter))
            info = dict(info, counter=target)
        etxn.delete(meta_key('collection', old))
        etxn.put(meta_key('collection', new), dump_json(info))
        self._changed(txn)
        return info

    def _numbered_by_another(self, etxn: EngineTransaction, name: str, counter: str) -> bool:
        """True if a collection other than `name` numbers its keys with `counter`."""
        return any(info['counter'] == counter
                   for other, info in self.collections(etxn).items() if other != name)

    def stored_indexes(self, etxn: EngineTransaction, coll_id: int) -> dict[str, StoredIndex]:
        """A ``dict`` from name to :class:`StoredIndex` of every index stored for a collection.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :param coll_id: the collection's prefix id.
        :raises ~centidb.errors.StoreFormatError: naming a malformed index record.
        """
        return {key[2]: StoredIndex.of(info) for key, info in scan(etxn, 'index', coll_id)}

    def stored_index(self, etxn: EngineTransaction, coll_id: int,
                     name: str) -> StoredIndex | None:
        """The :class:`StoredIndex` of index `name` of collection `coll_id`, or None.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        :raises ~centidb.errors.StoreFormatError: if its record is malformed.
        """
        info = read_record(etxn, 'index', coll_id, name)
        return None if info is None else StoredIndex.of(info)

    def index_ids(self, etxn: EngineTransaction, coll_id: int) -> dict[str, int]:
        """A ``dict`` from name to prefix id of every index stored for a collection.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :param coll_id: the collection's prefix id.
        """
        return {key[2]: info['id'] for key, info in scan(etxn, 'index', coll_id)}

    def next_prefix_id(self, etxn: EngineTransaction) -> int:
        """The prefix id the next collection or index will get.

        The prefix counter is above every id in use unless the store was
        damaged or edited by hand. When it is not, it is first moved past
        every id a collection or index uses and every id data lies under,
        in `etxn` (which must then be a write transaction): a new
        collection or index never shares its prefix with anything stored,
        so nothing is overwritten, whatever the counter held.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :raises ~centidb.errors.StoreFormatError: if the counter or the
            metadata of a collection or index is malformed (then no id can
            be shown to be free), or every prefix id is taken.
        """
        state = self._prefix_state(etxn)
        counter = prefix_id = state[1]
        if state != self._prefix_checked:
            # Metadata changed since the counter was last checked: check it.
            prefix_id = max(counter, max(self._used_prefix_ids(etxn), default=0) + 1)
        while _holds_data(etxn, prefix_id):
            prefix_id += 1
        if prefix_id > MAX_PREFIX_ID:
            raise bad_record(PREFIX_COUNTER, f'no prefix id is left above {counter - 1}')
        if prefix_id != counter:
            etxn.put(meta_key(*PREFIX_COUNTER), keylib.packs(prefix_id))
        self._prefix_checked = (state[0], prefix_id)
        return prefix_id

    def _prefix_state(self, etxn: EngineTransaction) -> tuple[int, int]:
        """``(metadata generation, prefix counter)`` as stored."""
        return (read_record(etxn, *GENERATION) or 0,
                read_record(etxn, *PREFIX_COUNTER) or 1)

    def _took_prefix_id(self, txn: Transaction, prefix_id: int) -> None:
        """Move the prefix counter past `prefix_id`, just recorded as used."""
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        etxn.put(meta_key(*PREFIX_COUNTER), keylib.packs(prefix_id + 1))
        self._changed(txn)
        # Still checked: if txn aborts, the stored state differs again.
        self._prefix_checked = (self.generation, prefix_id + 1)  # type: ignore[assignment]

    def _used_prefix_ids(self, etxn: EngineTransaction) -> dict[int, str]:
        """Every prefix id the stored collections and indexes use -> which record."""
        used = {info['id']: describe(key) for key, info in scan(etxn, 'index')}
        used.update((info['id'], describe(key)) for key, info in scan(etxn, 'collection'))
        return used

    def index_unique(self, etxn: EngineTransaction, coll_id: int, name: str) -> bool:
        """Whether the stored index `name` of collection `coll_id` is unique.

        Indexes stored before unique indexes existed are not.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        :raises ~centidb.errors.StoreFormatError: if the flag is not a bool.
        """
        info = read_record(etxn, 'index', coll_id, name)
        return False if info is None else info.get('unique', False) is True

    def create_index(self, txn: Transaction, coll_id: int, name: str,
                     unique: bool = False, fields: tuple[str, ...] | None = None) -> int:
        """Number and store a new index of collection `coll_id`; return its id.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        :param unique: whether no two records may share an index tuple.
        :param fields: a field index's field paths; None for a function index.
        :returns: the id, the one :meth:`next_prefix_id` returned in `txn`
            (which its entries were written under).
        :raises ~centidb.errors.StoreFormatError: if a collection or index
            uses that id (:meth:`next_prefix_id` was not called first).
        """
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        state = self._prefix_state(etxn)
        index_id = state[1]
        owner = (None if state == self._prefix_checked
                 else self._used_prefix_ids(etxn).get(index_id))
        if owner is not None:
            raise bad_record(PREFIX_COUNTER, f'it gives prefix id {index_id}, which {owner} '
                                        f'uses; call next_prefix_id() first')
        meta: dict[str, Any] = {'id': index_id}
        if unique:      # absent when false: stores from before read the same
            meta['unique'] = True
        if fields is not None:
            meta['fields'] = list(fields)
        etxn.put(meta_key('index', coll_id, name), dump_json(meta))
        self._took_prefix_id(txn, index_id)
        return index_id

    def delete_index(self, txn: Transaction, coll_id: int, name: str) -> None:
        """Remove index `name` of collection `coll_id` from the metadata.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        """
        txn.engine_txn.delete(  # type: ignore[union-attr]  # txn is open
            meta_key('index', coll_id, name))
        self._changed(txn)

    # --- counters ----------------------------------------------------------------------

    def counter(self, etxn: EngineTransaction, name: str, n: int, init: int) -> int:
        """Return counter `name`'s value (or `init`), then add `n` to it.

        :param etxn: an :class:`~centidb.engines.EngineTransaction` (a
            write one unless `n` is 0).
        :param name: the counter's name.
        :param n: the ``int`` to add.
        :param init: the value of a counter not stored yet.
        :raises ~centidb.errors.StoreFormatError: if the stored value is not
            an int.
        """
        return _bump(etxn, ('counter', name), n, init)

    def raise_counter(self, etxn: EngineTransaction, name: str, at_least: int) -> None:
        """Make counter `name` at least `at_least` (a counter not stored counts as 1).

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param name: the counter's name.
        :param at_least: the lowest value it may have afterwards.
        """
        value = read_record(etxn, 'counter', name)
        if (1 if value is None else value) < at_least:
            etxn.put(meta_key('counter', name), keylib.packs(at_least))


# --- reading the whole catalog -----------------------------------------------------------

class StoredIndex(NamedTuple):
    """What the catalog stores of one index."""

    #: The index's prefix id.
    id: int
    #: True if no two records may share an index tuple.
    unique: bool
    #: A field index's field paths (see :mod:`centidb.fieldpaths`); None
    #: for a function index, whose function each session gives again.
    fields: tuple[str, ...] | None

    @classmethod
    def of(cls, info: dict[str, Any]) -> StoredIndex:
        """The :class:`StoredIndex` of an index record.

        :param info: the record's JSON object, checked by
            :func:`~centidb.metarecords.parse_value`.
        """
        fields = info.get('fields')
        return cls(info['id'], info.get('unique', False) is True,
                   None if fields is None else tuple(fields))

    def describe(self) -> str:
        """The definition in words, for messages and ``centidb info``."""
        kind = 'a function index' if self.fields is None else f'fields {self.fields!r}'
        return f'{kind}, unique' if self.unique else kind


class CollectionMeta(NamedTuple):
    """One collection's stored metadata, as :func:`read_metadata` finds it."""

    #: The collection's name.
    name: str
    #: Its stored metadata (``'id'``, ``'encoder'``, ``'packer'``,
    #: ``'counter'``, ``'key'``, ...; see :data:`centidb.metarecords.CollectionInfo`).
    info: CollectionInfo
    #: Index name -> whether the index is unique, for every index stored.
    indexes: dict[str, bool]
    #: Index name -> what is stored of it, for every index stored.
    stored_indexes: dict[str, StoredIndex] = {}


class StoreMetadata(NamedTuple):
    """A store's whole catalog, as :func:`read_metadata` finds it."""

    #: The format record (``{'format': 'centidb', 'version': 1}``); ``{}``
    #: in an engine that holds no store yet.
    format_record: dict[str, Any]
    #: Every collection stored, in name order.
    collections: list[CollectionMeta]
    #: Counter name -> value, for every counter stored (a counter is stored
    #: once it has been used).
    counters: dict[str, int]


def read_metadata(etxn: EngineTransaction) -> StoreMetadata:
    """Every collection, index and counter a store's catalog holds, and its format record.

    Reads through an engine transaction, so a tool can look at a store
    without opening it as a :class:`~centidb.store.Store` (which needs the
    encoders its collections use), and, in the transaction a store's
    ``txn.engine_txn`` gives, at the same snapshot as that store's reads.
    Indexes that no session has added are listed too. Every record is read
    through the one checking parser (:mod:`centidb.metarecords`).

    :param etxn: an :class:`~centidb.engines.EngineTransaction` on the store's engine.
    :returns: a :class:`StoreMetadata`, a named tuple ``(format_record,
        collections, counters)``.
    :raises ~centidb.errors.StoreFormatError: naming the first malformed
        record read.
    """
    format_record = read_record(etxn, 'format') or {}
    collections = []
    for key, info in scan(etxn, 'collection'):
        stored = {index_key[2]: StoredIndex.of(index_info)
                  for index_key, index_info in scan(etxn, 'index', info['id'])}
        collections.append(CollectionMeta(
            key[1], info, {name: index.unique for name, index in stored.items()}, stored))
    counters = {key[1]: value for key, value in scan(etxn, 'counter')}
    return StoreMetadata(format_record, collections, counters)
