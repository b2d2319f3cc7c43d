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
:class:`~centidb.encodings.Encoder`). It calls the transaction and engine
layers only.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple, TypeVar

from centidb import encodings, keylib
from centidb.encodings import Encoder
from centidb.engines import Engine, EngineTransaction
from centidb.errors import (
    CorruptKeyError, PickleNotAllowedError, StoreFormatError, UnknownEncoderError,
)
from centidb.keylib import Key
from centidb.txn import Transaction, TxnManager

__all__ = ['Catalog', 'EncoderRegistry', 'check', 'CollectionInfo', 'MetaProblem', 'FORMAT_NAME',
           'FORMAT_VERSION', 'MAX_ENCODER_ID', 'KEY_KINDS']

_T = TypeVar('_T')

#: A collection's metadata ``dict``, as stored (JSON): ``'id'`` (its prefix
#: id, an ``int``), ``'encoder'``, ``'packer'`` and ``'counter'`` (names),
#: ``'key'`` (its key kind, one of :data:`KEY_KINDS`; absent in stores from
#: before kinds were recorded) and ``'batched'`` (true once it held a batch).
CollectionInfo = Dict[str, Any]

#: A problem :func:`check` found: ``(collection name or None, key or None,
#: message)``, the fields of a :class:`~centidb.verify.Problem`.
MetaProblem = Tuple[Optional[str], Optional[Key], str]

#: Written to ``(0, 'format')`` when a store is created.
FORMAT_NAME = 'centidb'
#: The store format version this code reads and writes.
FORMAT_VERSION = 1
#: Encoder ids fit in the one-byte record header; 0x80 and up are reserved.
MAX_ENCODER_ID = 0x7F

_META = 0
_FORMAT_KEY = keylib.packs((_META, 'format'))
_GENERATION_KEY = keylib.packs((_META, 'sys', 'generation'))
_PREFIX_COUNTER = (_META, 'sys', 'prefix')
_ENCODER_COUNTER = (_META, 'sys', 'encoder')


def _meta_key(*parts: Any) -> bytes:
    return keylib.packs((_META,) + parts)


def _dump(info: Mapping[str, Any]) -> bytes:
    return json.dumps(info, sort_keys=True).encode('utf-8')


def _load(data: bytes, what: str) -> dict[str, Any]:
    """The JSON object stored for metadata `what`; StoreFormatError if unreadable."""
    try:
        info = json.loads(bytes(data).decode('utf-8'))
    except ValueError as exc:
        raise StoreFormatError(f'the metadata of {what} is unreadable ({exc}): '
                               f'{bytes(data)[:80]!r}') from None
    if not isinstance(info, dict):
        raise StoreFormatError(f'the metadata of {what} is not an object: {info!r:.80}')
    return info


def _field(info: Mapping[str, Any], name: str, kind: type[_T], what: str) -> _T:
    value = info.get(name)
    if type(value) is not kind:
        raise StoreFormatError(f'the metadata of {what} has no valid {name!r} '
                               f'(a {kind.__name__}): {info!r:.120}')
    return value


def _collection_info(stored: bytes, name: str) -> CollectionInfo:
    """Collection `name`'s metadata ``dict`` from its stored bytes, checked."""
    what = f'collection {name!r}'
    info = _load(stored, what)
    _field(info, 'id', int, what)
    for field in ('encoder', 'packer', 'counter'):
        _field(info, field, str, what)
    if info.get('key', 'auto') not in KEY_KINDS:
        raise StoreFormatError(f'the metadata of {what} names an unknown key kind '
                               f'{info["key"]!r}')
    return info


def _int_at(etxn: EngineTransaction, key: bytes, what: str) -> int | None:
    """The int stored under `key` (packed as a key), None if absent."""
    stored = etxn.get(key)
    return None if stored is None else _int_of(stored, what)


def _int_of(stored: bytes, what: str) -> int:
    """The int in `stored`, a 1-tuple packed as a key."""
    try:
        value = keylib.unpacks(stored)
    except CorruptKeyError as exc:
        raise StoreFormatError(f'{what} is unreadable ({exc})') from None
    if len(value) != 1 or type(value[0]) is not int:
        raise StoreFormatError(f'{what} holds {value!r:.80}, not an int')
    return value[0]


def _bump(etxn: EngineTransaction, key: bytes, n: int, init: int, what: str) -> int:
    """Return the int stored under `key` (or `init`), then add `n` to it."""
    value = _int_at(etxn, key, what)
    if value is None:
        value = init
    if n:
        etxn.put(key, keylib.packs(value + n))
    return value


#: The key kinds a collection records: how its records get their keys.
KEY_KINDS = ('key_func', 'txn_key_func', 'auto')


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
        key = _meta_key('encoder', name)
        stored = etxn.get(key)
        if stored is not None:
            encoder_id = _field(_load(stored, f'encoder {name!r}'), 'id', int,
                                f'encoder {name!r}')
        else:
            encoder_id = _bump(etxn, keylib.packs(_ENCODER_COUNTER), 1, 1,
                               'the encoder id counter')
            if encoder_id > MAX_ENCODER_ID:
                raise ValueError(f'too many encoders and packers: at most {MAX_ENCODER_ID}')
            etxn.put(key, _dump({'id': encoder_id}))
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
            f'a record in collection {coll_name!r} was packed with {name!r}, '
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
                    etxn.put(_FORMAT_KEY, _dump({'format': FORMAT_NAME,
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
        stored = etxn.get(_FORMAT_KEY)
        if stored is None:
            for _ in etxn.keys():
                raise StoreFormatError(
                    f'{self.engine!r} holds data but no centidb format '
                    f'record: it is not a centidb store')
            return True
        info = _load(stored, 'the store format')
        if 'format' not in info or 'version' not in info:
            raise StoreFormatError(f'unreadable centidb format record: {bytes(stored)!r:.100}')
        name, version = info['format'], info['version']
        if name != FORMAT_NAME:
            raise StoreFormatError(f'the engine holds a {name!r} store, not {FORMAT_NAME!r}')
        if version != FORMAT_VERSION:
            raise StoreFormatError(
                f'the store has format version {version!r}; this centidb reads '
                f'version {FORMAT_VERSION}')
        return False

    def _has_builtin_ids(self, etxn: EngineTransaction) -> bool:
        return all(etxn.get(_meta_key('encoder', enc.name)) is not None
                   for enc in encodings.BUILTIN_ENCODERS)

    def refresh(self, etxn: EngineTransaction) -> bool:
        """Bring the cached encoder ids up to date if the metadata changed.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :returns: True if the stored generation differed from the cached one
            (the store then reloads its collections).
        """
        generation = _int_at(etxn, _GENERATION_KEY, 'the metadata generation') or 0
        if generation == self.generation:
            return False
        with self.lock:
            ids: dict[str, int] = {}
            names: dict[int, str] = {}
            lo, hi = keylib.prefix_range((_META, 'encoder'))
            for key_bytes, value in etxn.items(lo, hi):
                name = keylib.unpacks(key_bytes)[2]
                encoder_id = _field(_load(value, f'encoder {name!r}'), 'id', int,
                                    f'encoder {name!r}')
                ids[name] = encoder_id
                names[encoder_id] = name
            self._encoder_ids, self._encoder_names = ids, names
            self.generation = generation
        return True

    def _changed(self, txn: Transaction) -> None:
        """Bump the generation in `txn`: other processes reload at their next write."""
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        self.generation = _bump(etxn, _GENERATION_KEY, 1, 0, 'the metadata generation') + 1
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
        stored = etxn.get(_meta_key('collection', name))
        return None if stored is None else _collection_info(stored, name)

    def collections(self, etxn: EngineTransaction) -> dict[str, CollectionInfo]:
        """A ``dict`` from name to metadata of every collection stored.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :raises ~centidb.errors.StoreFormatError: if a collection's metadata
            is unreadable.
        """
        lo, hi = keylib.prefix_range((_META, 'collection'))
        infos: dict[str, CollectionInfo] = {}
        for key_bytes, value in etxn.items(lo, hi):
            key = keylib.unpacks(key_bytes)
            if len(key) == 3:
                infos[key[2]] = _collection_info(value, key[2])
        return infos

    def create_collection(self, txn: Transaction, name: str, encoder: Encoder, packer: Encoder,
                          counter_name: str | None,
                          key_kind: str) -> tuple[CollectionInfo, bool]:
        """Store a new collection's metadata, unless it is already stored.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param name: the collection's name.
        :param encoder: its :class:`~centidb.encodings.Encoder`.
        :param packer: its packer.
        :param counter_name: the counter numbering its keys, or None for
            ``'<name>:key'``.
        :param key_kind: one of :data:`KEY_KINDS`.
        :returns: ``(metadata dict, True if created now)``.
        """
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        info = self.collection_info(etxn, name)
        if info is not None:        # another thread or process created it
            return info, False
        info = {
            'id': _bump(etxn, keylib.packs(_PREFIX_COUNTER), 1, 1, 'the prefix counter'),
            'encoder': encoder.name,
            'packer': packer.name,
            'counter': counter_name or f'{name}:key',
            'key': key_kind,
        }
        etxn.put(_meta_key('collection', name), _dump(info))
        self._changed(txn)
        return info, True

    def save_collection_info(self, txn: Transaction, name: str, info: CollectionInfo) -> None:
        """Replace collection `name`'s metadata with `info`.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param name: the collection's name.
        :param info: its metadata ``dict``.
        """
        txn.engine_txn.put(  # type: ignore[union-attr]  # txn is open
            _meta_key('collection', name), _dump(info))
        self._changed(txn)

    def drop_collection(self, txn: Transaction, name: str, info: CollectionInfo) -> None:
        """Remove collection `name` from the metadata (not its records or entries).

        Deletes its metadata, its indexes' metadata, and its counter if the
        counter has the collection's own default name (``'<name>:key'``) and
        no other collection counts with it; a counter named with
        ``counter_name=`` may be shared, so it is kept.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param name: the collection's name.
        :param info: its metadata ``dict``, as :meth:`collection_info` read it.
        """
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        coll_id = info['id']
        for index_name in self.index_ids(etxn, coll_id):
            etxn.delete(_meta_key('index', coll_id, index_name))
        etxn.delete(_meta_key('collection', name))
        counter = info['counter']
        if counter == f'{name}:key' and not self._counted_by_another(etxn, name, counter):
            etxn.delete(_meta_key('counter', counter))
        self._changed(txn)

    def rename_collection(self, txn: Transaction, old: str, new: str,
                          info: CollectionInfo) -> CollectionInfo:
        """Store collection `old`'s metadata under the name `new` instead.

        Its prefix id, and so its records and indexes, stay as they are. A
        counter with the default name ``'<old>:key'`` that no other
        collection counts with moves to ``'<new>:key'``, unless a counter of
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
                and not self._counted_by_another(etxn, old, counter)
                and not self._counted_by_another(etxn, old, target)
                and etxn.get(_meta_key('counter', target)) is None):
            value = etxn.get(_meta_key('counter', counter))
            if value is not None:
                etxn.put(_meta_key('counter', target), value)
                etxn.delete(_meta_key('counter', counter))
            info = dict(info, counter=target)
        etxn.delete(_meta_key('collection', old))
        etxn.put(_meta_key('collection', new), _dump(info))
        self._changed(txn)
        return info

    def _counted_by_another(self, etxn: EngineTransaction, name: str, counter: str) -> bool:
        """True if a collection other than `name` numbers its keys with `counter`."""
        return any(info['counter'] == counter
                   for other, info in self.collections(etxn).items() if other != name)

    def index_ids(self, etxn: EngineTransaction, coll_id: int) -> dict[str, int]:
        """A ``dict`` from name to prefix id of every index stored for a collection.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :param coll_id: the collection's prefix id.
        """
        lo, hi = keylib.prefix_range((_META, 'index', coll_id))
        ids: dict[str, int] = {}
        for key_bytes, value in etxn.items(lo, hi):
            name = keylib.unpacks(key_bytes)[3]
            what = f'index {name!r} of collection id {coll_id}'
            ids[name] = _field(_load(value, what), 'id', int, what)
        return ids

    def next_prefix_id(self, etxn: EngineTransaction) -> int:
        """The prefix id the next collection or index will get (nothing is written).

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        """
        return _bump(etxn, keylib.packs(_PREFIX_COUNTER), 0, 1, 'the prefix counter')

    def index_unique(self, etxn: EngineTransaction, coll_id: int, name: str) -> bool:
        """Whether the stored index `name` of collection `coll_id` is unique.

        Indexes stored before unique indexes existed are not.

        :param etxn: an :class:`~centidb.engines.EngineTransaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        :raises ~centidb.errors.StoreFormatError: if the flag is not a bool.
        """
        value = etxn.get(_meta_key('index', coll_id, name))
        if value is None:
            return False
        what = f'index {name!r} of collection id {coll_id}'
        unique = _load(value, what).get('unique', False)
        if type(unique) is not bool:
            raise StoreFormatError(f'{what}: its unique flag is {unique!r}, not a bool')
        return unique

    def create_index(self, txn: Transaction, coll_id: int, name: str,
                     unique: bool = False) -> int:
        """Number and store a new index of collection `coll_id`; return its id.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        :param unique: whether no two records may share an index tuple.
        """
        etxn: EngineTransaction = txn.engine_txn  # type: ignore[assignment]  # txn is open
        index_id = _bump(etxn, keylib.packs(_PREFIX_COUNTER), 1, 1, 'the prefix counter')
        meta: dict[str, Any] = {'id': index_id}
        if unique:      # absent when false: stores from before read the same
            meta['unique'] = True
        etxn.put(_meta_key('index', coll_id, name), _dump(meta))
        self._changed(txn)
        return index_id

    def delete_index(self, txn: Transaction, coll_id: int, name: str) -> None:
        """Remove index `name` of collection `coll_id` from the metadata.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        """
        txn.engine_txn.delete(  # type: ignore[union-attr]  # txn is open
            _meta_key('index', coll_id, name))
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
        return _bump(etxn, _meta_key('counter', name), n, init, f'counter {name!r}')

    def raise_counter(self, etxn: EngineTransaction, name: str, at_least: int) -> None:
        """Make counter `name` at least `at_least` (a counter not stored counts as 1).

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param name: the counter's name.
        :param at_least: the lowest value it may have afterwards.
        """
        key = _meta_key('counter', name)
        value = _int_at(etxn, key, f'counter {name!r}')
        if (1 if value is None else value) < at_least:
            etxn.put(key, keylib.packs(at_least))


def check(catalog: Catalog, etxn: EngineTransaction) -> tuple[
        list[MetaProblem], dict[str, CollectionInfo], dict[int, dict[str, int]],
        dict[str, int]]:
    """Read and check every metadata record of `catalog`; see ``Store.verify()``.

    :param catalog: the store's :class:`Catalog`.
    :param etxn: an :class:`~centidb.engines.EngineTransaction`.
    :returns: ``(problems, collections, indexes, counters)``: a list of
        :data:`MetaProblem`, a ``dict``
        from name to metadata of every readable collection, a ``dict``
        from collection id to its index ids, and a ``dict`` from name to
        value of every readable counter.
    """
    problems: list[MetaProblem] = []
    collections: dict[str, CollectionInfo] = {}
    indexes: dict[int, dict[str, int]] = {}
    encoder_ids: dict[str, int] = {}
    counters: dict[Key, int] = {}

    def bad(message: str, coll: str | None = None, key: Key | None = None) -> None:
        problems.append((coll, key, message))

    lo, hi = keylib.prefix_range((_META,))
    for key_bytes, value in etxn.items(lo, hi):
        try:
            key = keylib.unpacks(key_bytes)[1:]
        except CorruptKeyError as exc:
            bad(f'metadata key {bytes(key_bytes)!r} is corrupt ({exc})')
            continue
        try:
            _check_record(catalog, key, etxn, value, collections, indexes, encoder_ids,
                          counters)
        except StoreFormatError as exc:
            bad(str(exc), key[1] if key[:1] == ('collection',) else None)
    by_id = {info['id']: name for name, info in collections.items()}
    used = sorted(by_id) + sorted(i for ids in indexes.values() for i in ids.values())
    if len(set(used)) != len(used):
        bad(f'prefix ids are used twice: {sorted(i for i in set(used) if used.count(i) > 1)}')
    if used and max(used) >= counters.get(_PREFIX_COUNTER, 1):
        bad(f'prefix id {max(used)} is not below the prefix counter '
            f'{counters.get(_PREFIX_COUNTER, 1)}')
    for coll_id in indexes:
        if coll_id not in by_id:
            bad(f'indexes {sorted(indexes[coll_id])} belong to collection id '
                f'{coll_id}, which does not exist')
    ids = list(encoder_ids.values())
    if len(set(ids)) != len(ids):
        bad(f'encoder ids are used twice: {encoder_ids}')
    if ids and max(ids) >= counters.get(_ENCODER_COUNTER, 1):
        bad(f'encoder id {max(ids)} is not below the encoder counter')
    for name, info in collections.items():
        for field in ('encoder', 'packer'):
            if info[field] not in encoder_ids:
                bad(f'its {field} {info[field]!r} has no encoder id', name)
    user_counters = {key[1]: value for key, value in counters.items()
                     if key[0] == 'counter'}
    return problems, collections, indexes, user_counters


def _check_record(catalog: Catalog, key: Key, etxn: EngineTransaction, value: bytes,
                  collections: dict[str, CollectionInfo], indexes: dict[int, dict[str, int]],
                  encoder_ids: dict[str, int], counters: dict[Key, int]) -> None:
    """Check one metadata record (`key` without the element 0), filing what it holds."""
    kind = key[0] if key else None
    if key == ('format',):
        catalog.check_format(etxn)
    elif kind == 'sys' and key[1:] in (('prefix',), ('encoder',), ('generation',)):
        counters[(_META,) + key] = _int_of(value, f'the {key[1]} counter')
    elif kind == 'collection' and len(key) == 2:
        collections[key[1]] = _collection_info(value, key[1])
    elif kind == 'index' and len(key) == 3:
        what = f'index {key[2]!r} of collection id {key[1]}'
        indexes.setdefault(key[1], {})[key[2]] = _field(_load(value, what), 'id', int, what)
    elif kind == 'encoder' and len(key) == 2:
        what = f'encoder {key[1]!r}'
        encoder_ids[key[1]] = _field(_load(value, what), 'id', int, what)
    elif kind == 'counter' and len(key) == 2:
        counters[key] = _int_of(value, f'counter {key[1]!r}')
    else:
        raise StoreFormatError(f'unknown metadata record {key!r}')
