"""The catalog: a store's metadata, kept in its engine under the element ``0``.

Layout (also in ``docs/format.rst``):

* ``(0, 'format')``: format name and version, written on create and checked
  on open;
* ``(0, 'collection', name)``: a collection's prefix id, encoder, packer and
  counter name;
* ``(0, 'index', collection id, name)``: an index's prefix id;
* ``(0, 'encoder', name)``: the persistent id of an encoder or packer;
* ``(0, 'counter', name)``: a counter's value; ``(0, 'sys', ...)``: the
  store's own id counters.

The :class:`Catalog` reads and writes these records, and keeps this
process's registry of encoders and packers (persistent id <-> name <->
:class:`~centidb.encodings.Encoder`). It calls the transaction and engine
layers only.
"""

import json
import threading

from centidb import encodings, keylib
from centidb.errors import StoreFormatError, UnknownEncoderError

__all__ = ['Catalog', 'FORMAT_NAME', 'FORMAT_VERSION', 'MAX_ENCODER_ID']

#: Written to ``(0, 'format')`` when a store is created.
FORMAT_NAME = 'centidb'
#: The store format version this code reads and writes.
FORMAT_VERSION = 1
#: Encoder ids fit in the one-byte record header; 0x80 and up are reserved.
MAX_ENCODER_ID = 0x7F

_META = 0
_FORMAT_KEY = keylib.packs((_META, 'format'))
_PREFIX_COUNTER = (_META, 'sys', 'prefix')
_ENCODER_COUNTER = (_META, 'sys', 'encoder')


def _meta_key(*parts):
    return keylib.packs((_META,) + parts)


def _dump(info):
    return json.dumps(info, sort_keys=True).encode('utf-8')


def _load(data):
    return json.loads(data.decode('utf-8'))


def _bump(etxn, key, n, init):
    """Return the int stored under `key` (or `init`), then add `n` to it."""
    stored = etxn.get(key)
    value = init if stored is None else keylib.unpacks(stored)[0]
    if n:
        etxn.put(key, keylib.packs(value + n))
    return value


class Catalog:
    """A store's metadata and this process's encoder registry.

    Checks the format record of the engine, or writes one on an empty
    engine, and makes sure every built-in encoder has its id.

    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :raises ~centidb.errors.StoreFormatError: if the engine holds data that
        is not a centidb store, or a store of another format or version.
    """

    def __init__(self, txns):
        self._txns = txns
        self.engine = txns.engine
        #: Guards the registry; taken after the engine's writer lock.
        self.lock = threading.RLock()
        self._encoders = {}        # name -> Encoder registered in this session
        self._encoder_ids = {}     # name -> persistent id (all in metadata)
        self._encoder_names = {}   # persistent id -> name
        self._packers_by_id = {}   # persistent id -> registered Encoder
        with self.engine.begin() as etxn:
            created = self._check_format(etxn)
            self._load_encoder_ids(etxn)
        missing = [enc for enc in encodings.BUILTIN_ENCODERS
                   if enc.name not in self._encoder_ids]
        if created or missing:
            with self.engine.begin(write=True) as etxn:
                if created:
                    etxn.put(_FORMAT_KEY, _dump({'format': FORMAT_NAME,
                                                 'version': FORMAT_VERSION}))
                for enc in missing:
                    self._persist_encoder_id(etxn, enc.name)
        self._builtin_names = frozenset(enc.name for enc in encodings.BUILTIN_ENCODERS)
        for enc in encodings.BUILTIN_ENCODERS:
            self._encoders[enc.name] = enc
            self._packers_by_id[self._encoder_ids[enc.name]] = enc

    # --- format -----------------------------------------------------------------

    def _check_format(self, etxn):
        """Check the format record; return True if the engine is empty."""
        stored = etxn.get(_FORMAT_KEY)
        if stored is None:
            for _ in etxn.keys():
                raise StoreFormatError(
                    f'{self.engine!r} holds data but no centidb format '
                    f'record: it is not a centidb store')
            return True
        try:
            info = _load(stored)
            name, version = info['format'], info['version']
        except (ValueError, KeyError, TypeError):
            raise StoreFormatError(f'unreadable centidb format record: {stored!r}') from None
        if name != FORMAT_NAME:
            raise StoreFormatError(f'the engine holds a {name!r} store, not {FORMAT_NAME!r}')
        if version != FORMAT_VERSION:
            raise StoreFormatError(
                f'the store has format version {version}; this centidb reads '
                f'version {FORMAT_VERSION}')
        return False

    # --- encoders and packers ------------------------------------------------------

    def _load_encoder_ids(self, etxn):
        lo, hi = keylib.prefix_range((_META, 'encoder'))
        for key_bytes, value in etxn.items(lo, hi):
            name = keylib.unpacks(key_bytes)[2]
            encoder_id = _load(value)['id']
            self._encoder_ids[name] = encoder_id
            self._encoder_names[encoder_id] = name

    def _persist_encoder_id(self, etxn, name):
        encoder_id = _bump(etxn, keylib.packs(_ENCODER_COUNTER), 1, 1)
        if encoder_id > MAX_ENCODER_ID:
            raise ValueError(f'too many encoders and packers: at most {MAX_ENCODER_ID}')
        etxn.put(_meta_key('encoder', name), _dump({'id': encoder_id}))
        self._encoder_ids[name] = encoder_id
        self._encoder_names[encoder_id] = name
        return encoder_id

    def add_encoder(self, encoder):
        """Register `encoder`; see :meth:`centidb.store.Store.add_encoder`.

        :param encoder: an :class:`~centidb.encodings.Encoder`.
        """
        self._txns.check_open()
        if not isinstance(encoder, encodings.Encoder):
            raise TypeError(f'add_encoder needs an Encoder, not {type(encoder).__name__!r}')
        name = encoder.name
        if name not in self._encoder_ids:
            # A new name needs its id written; the writer lock comes first.
            with self._txns.own_write('add_encoder()') as etxn:
                with self.lock:
                    if name not in self._encoder_ids:
                        self._persist_encoder_id(etxn, name)
        with self.lock:
            if name not in self._builtin_names:
                self._encoders[name] = encoder
                self._packers_by_id[self._encoder_ids[name]] = encoder
        return self._encoders[name]

    def encoder_id(self, encoder):
        """The persistent id of `encoder`'s name, registering it if needed.

        A name the store already knows is registered on the spot. A new name
        needs a metadata write in a transaction of its own, impossible while
        this thread has a write transaction open.

        :param encoder: an :class:`~centidb.encodings.Encoder`.

        :raises TypeError: if `encoder` is not an ``Encoder``.
        :raises ~centidb.errors.UnknownEncoderError: for a new name while
            this thread has a write transaction open.
        """
        if not isinstance(encoder, encodings.Encoder):
            raise TypeError(f'expected an Encoder, not {type(encoder).__name__!r}')
        encoder_id = self._encoder_ids.get(encoder.name)
        if encoder_id is not None:
            if encoder.name not in self._encoders:
                self.add_encoder(encoder)
            return encoder_id
        if self._txns.current_write() is not None:
            raise UnknownEncoderError(
                f'{encoder.name!r} is new to this store; call store.add_encoder() '
                f'with it before the write transaction')
        self.add_encoder(encoder)
        return self._encoder_ids[encoder.name]

    def encoder(self, name):
        """The :class:`~centidb.encodings.Encoder` registered as `name`, or None.

        :param name: the encoder's name.
        """
        return self._encoders.get(name)

    def registered(self, encoder_name, coll_name):
        """The encoder a collection was created with, which must be registered.

        :param encoder_name: the name stored for the collection.
        :param coll_name: the collection's name, for the error.

        :raises ~centidb.errors.UnknownEncoderError: if it is not.
        """
        encoder = self._encoders.get(encoder_name)
        if encoder is None:
            raise UnknownEncoderError(
                f'collection {coll_name!r} uses {encoder_name!r}, which is not '
                f'registered in this session; call store.add_encoder() with '
                f'it, or pass it to collection()')
        return encoder

    def packer(self, packer_id, coll_name):
        """The registered packer with persistent id `packer_id`.

        :param packer_id: the id byte of a stored record.
        :param coll_name: names the collection in the error.
        :raises ~centidb.errors.UnknownEncoderError: if the store never
            numbered `packer_id`, or its packer is not registered in this
            session.
        """
        packer = self._packers_by_id.get(packer_id)
        if packer is not None:
            return packer
        name = self._encoder_names.get(packer_id)
        if name is None:
            raise UnknownEncoderError(
                f'a record in collection {coll_name!r} names packer id '
                f'{packer_id}, which this store never registered (corrupt data?)')
        raise UnknownEncoderError(
            f'a record in collection {coll_name!r} was packed with {name!r}, '
            f'which is not registered in this session; call '
            f'store.add_encoder() with the {name!r} Encoder first')

    # --- collections and indexes ---------------------------------------------------------

    def collection_info(self, name):
        """The stored metadata ``dict`` of collection `name`, or None.

        :param name: the collection's name.
        """
        with self.engine.begin() as etxn:
            stored = etxn.get(_meta_key('collection', name))
        return None if stored is None else _load(stored)

    def create_collection(self, name, encoder, packer, counter_name):
        """Store a new collection's metadata (unless another thread just did).

        Commits in a write transaction of its own.

        :param name: the collection's name.
        :param encoder: its :class:`~centidb.encodings.Encoder`.
        :param packer: its packer.
        :param counter_name: the counter numbering its keys, or None for
            ``'<name>:key'``.

        :returns: the collection's metadata ``dict``.
        :raises ~centidb.errors.TransactionError: while this thread has a
            write transaction open.
        """
        with self._txns.own_write('creating a collection') as etxn:
            stored = etxn.get(_meta_key('collection', name))
            if stored is not None:      # another thread created it meanwhile
                return _load(stored)
            info = {
                'id': _bump(etxn, keylib.packs(_PREFIX_COUNTER), 1, 1),
                'encoder': encoder.name,
                'packer': packer.name,
                'counter': counter_name or f'{name}:key',
            }
            etxn.put(_meta_key('collection', name), _dump(info))
        return info

    def save_collection_info(self, etxn, name, info):
        """Replace collection `name`'s metadata with `info` in `etxn`.

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param name: the collection's name.
        :param info: its metadata ``dict``.
        """
        etxn.put(_meta_key('collection', name), _dump(info))

    def index_ids(self, coll_id):
        """A ``dict`` from name to prefix id of every index stored for a collection.

        :param coll_id: the collection's prefix id.
        """
        with self.engine.begin() as etxn:
            lo, hi = keylib.prefix_range((_META, 'index', coll_id))
            return {keylib.unpacks(key_bytes)[3]: _load(value)['id']
                    for key_bytes, value in etxn.items(lo, hi)}

    def create_index(self, etxn, coll_id, name):
        """Number and store a new index of collection `coll_id`; return its id.

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        """
        index_id = _bump(etxn, keylib.packs(_PREFIX_COUNTER), 1, 1)
        etxn.put(_meta_key('index', coll_id, name), _dump({'id': index_id}))
        return index_id

    def delete_index(self, etxn, coll_id, name):
        """Remove index `name` of collection `coll_id` from the metadata.

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param coll_id: the collection's prefix id.
        :param name: the index's name.
        """
        etxn.delete(_meta_key('index', coll_id, name))

    # --- counters ----------------------------------------------------------------------

    def counter(self, etxn, name, n, init):
        """Return counter `name`'s value (or `init`), then add `n` to it.

        :param etxn: an :class:`~centidb.engines.EngineTransaction` (a
            write one unless `n` is 0).
        :param name: the counter's name.
        :param n: the ``int`` to add.
        :param init: the value of a counter not stored yet.
        """
        return _bump(etxn, _meta_key('counter', name), n, init)
