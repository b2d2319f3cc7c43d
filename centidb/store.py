"""The store: collections, counters, encoders and transactions on one engine.

``centidb.open('LmdbEngine', path=...)`` or ``Store(engine)`` gives a
:class:`Store`. The store keeps its metadata in the engine itself, under
keys starting with the element ``0`` (layout in ``docs/format.rst``):

* ``(0, 'format')``: format name and version, written on create and checked
  on open;
* ``(0, 'collection', name)``: a collection's prefix id, encoder, packer and
  counter name;
* ``(0, 'index', collection id, name)``: an index's prefix id;
* ``(0, 'encoder', name)``: the persistent id of an encoder or packer;
* ``(0, 'counter', name)``: a counter's value; ``(0, 'sys', ...)``: the
  store's own id counters.

Metadata is read when a collection is opened and cached in this process: a
collection's indexes, encoders and whether it holds batches. Changing them
from another process while a store is open is not supported (reopen the
store to see the change); plain reads and writes from several processes are
what the engine allows (LMDB: yes; LevelDB: one process).

Transactions: every read/write method of collections and indexes takes
``txn=`` (from :meth:`Store.begin`). Without it, a call runs in a
transaction of its own, except in a thread that has a write transaction open
on this store: there the call **joins** that transaction, so it sees and
commits (or aborts) with the rest. Opening a second write transaction in
that thread raises :class:`~centidb.errors.TransactionError`.
"""

import itertools
import json
import threading
import weakref

from centidb import encodings, keylib
from centidb.collection import Collection, Index, index_entries
from centidb.engines import Engine, get_engine_class
from centidb.errors import (
    EncoderMismatchError, EngineClosedError,
    StoreFormatError, TransactionError, UnknownEncoderError, UnknownIndexError,
)

__all__ = ['open', 'Store', 'Transaction', 'FORMAT_NAME', 'FORMAT_VERSION']

#: Written to ``(0, 'format')`` when a store is created.
FORMAT_NAME = 'centidb'
#: The store format version this code reads and writes.
FORMAT_VERSION = 1

_META = 0
_FORMAT_KEY = keylib.packs((_META, 'format'))
_PREFIX_COUNTER = 'prefix'
_ENCODER_COUNTER = 'encoder'
#: Encoder ids fit in the one-byte record header; 0x80 and up are reserved.
_MAX_ENCODER_ID = 0x7F


def _meta_key(*parts):
    return keylib.packs((_META,) + parts)


def _dump(info):
    return json.dumps(info, sort_keys=True).encode('utf-8')


def _load(data):
    return json.loads(data.decode('utf-8'))


def _packer_mismatch(coll_name, packer_name, given_name):
    return EncoderMismatchError(
        f'collection {coll_name!r} was created with packer {packer_name!r}, not '
        f'{given_name!r}; pass packer= to put() or batch() to pack some '
        f'records differently')


def open(engine, **engine_kwargs):  # noqa: A001 - the documented API name
    """Open (or create) a store on a new engine and return the :class:`Store`.

    For example ``open('PlyvelEngine', name='x.ldb', create_if_missing=True)``.
    Closing the store closes the engine; if the store cannot be opened, the
    engine is closed before the error propagates.

    :param engine: an :class:`~centidb.engines.Engine` subclass or its name
        in :data:`~centidb.engines.ENGINES` (``'ListEngine'``,
        ``'PlyvelEngine'``, ``'LmdbEngine'``).
    :param engine_kwargs: keyword arguments for the engine's constructor.
    :returns: the :class:`Store`.
    :raises ValueError: for an unknown engine name.
    :raises TypeError: if `engine` is neither a name nor an ``Engine``
        subclass.
    :raises ~centidb.errors.StoreFormatError: as :class:`Store`.
    :raises ~centidb.errors.EngineError: from the engine's constructor (for
        example :class:`~centidb.errors.DatabaseNotFoundError` or
        :class:`~centidb.errors.DatabaseLockedError`).
    """
    engine_class = get_engine_class(engine)
    instance = engine_class(**engine_kwargs)
    try:
        return Store(instance)
    except BaseException:
        instance.close()
        raise


class Transaction:
    """A store transaction, from :meth:`Store.begin`.

    Pass it as ``txn=`` to collection and index methods. As a context
    manager it commits when the block succeeds and aborts when it raises.
    Made by :meth:`Store.begin`, not directly; the arguments are kept as
    attributes of the same names.

    :param store: the :class:`Store` that began it.
    :param write: True for a write transaction.
    :param raw: the :class:`~centidb.engines.Transaction` underneath;
        ``None`` once this transaction has ended.
    """

    __slots__ = ('store', 'write', 'raw', '__weakref__')

    def __init__(self, store, write, raw):
        self.store = store
        self.write = write
        self.raw = raw

    def __repr__(self):
        state = 'open' if self.raw is not None else 'ended'
        return f"<Transaction {'write' if self.write else 'read'} {state}>"

    def _end(self):
        self.raw = None
        if self.write:
            ref = getattr(self.store._local, 'txn', None)
            if ref is not None and ref() is self:
                self.store._local.txn = None

    def commit(self):
        """Make the writes permanent and end the transaction.

        The transaction ends even if committing fails.

        :raises ~centidb.errors.TransactionError: if it already ended.
        :raises ~centidb.errors.EngineError: if the engine fails to commit
            (for example :class:`~centidb.errors.MapFullError`); the writes
            are lost.
        """
        if self.raw is None:
            raise TransactionError('this transaction has already ended')
        try:
            self.raw.commit()
        finally:
            self._end()

    def abort(self):
        """Discard the writes and end the transaction (no-op if ended)."""
        if self.raw is None:
            return
        try:
            self.raw.abort()
        finally:
            self._end()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.raw is None:     # committed or aborted inside the block
            return False
        if exc_type is None:
            self.commit()
        else:
            self.abort()
        return False


class Store:
    """A centidb store on an open :class:`~centidb.engines.Engine`.

    Creates the store format record on an empty engine. A context manager:
    ``close()`` on exit. ``default_encoder`` is the encoder new collections
    get when :meth:`collection` is not given one (msgpack).

    :param engine: an open :class:`~centidb.engines.Engine` (available as
        ``engine``); closing the store closes it.
    :raises TypeError: if `engine` is not an ``Engine``.
    :raises ~centidb.errors.StoreFormatError: if the engine holds data that
        is not a centidb store, or a store of another format or version.
    """

    def __init__(self, engine):
        if not isinstance(engine, Engine):
            raise TypeError(f'Store needs an Engine instance, not {type(engine).__name__!r}')
        self.engine = engine
        self._closed = False
        self._local = threading.local()
        self._lock = threading.RLock()
        self._collections = {}
        self._encoders = {}        # name -> Encoder registered in this session
        self._encoder_ids = {}     # name -> persistent id (all in metadata)
        self._encoder_names = {}   # persistent id -> name
        self._packers_by_id = {}   # persistent id -> registered Encoder
        with engine.begin() as raw:
            created = self._check_format(raw)
            self._load_encoder_ids(raw)
        missing = [enc for enc in encodings.BUILTIN_ENCODERS
                   if enc.name not in self._encoder_ids]
        if created or missing:
            with engine.begin(write=True) as raw:
                if created:
                    raw.put(_FORMAT_KEY, _dump({'format': FORMAT_NAME,
                                                'version': FORMAT_VERSION}))
                for enc in missing:
                    self._persist_encoder_id(raw, enc.name)
        self._builtin_names = frozenset(enc.name for enc in encodings.BUILTIN_ENCODERS)
        for enc in encodings.BUILTIN_ENCODERS:
            self._encoders[enc.name] = enc
            self._packers_by_id[self._encoder_ids[enc.name]] = enc
        self.default_encoder = self._encoders['msgpack']

    def __repr__(self):
        return f"<Store on {self.engine!r}{' closed' if self._closed else ''}>"

    # --- format and metadata ---------------------------------------------------

    def _check_format(self, raw):
        """Check the format record; return True if the engine is empty."""
        stored = raw.get(_FORMAT_KEY)
        if stored is None:
            for _ in raw.keys():
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

    def _load_encoder_ids(self, raw):
        lo, hi = keylib.prefix_range((_META, 'encoder'))
        for key_bytes, value in raw.items(lo, hi):
            name = keylib.unpacks(key_bytes)[2]
            encoder_id = _load(value)['id']
            self._encoder_ids[name] = encoder_id
            self._encoder_names[encoder_id] = name

    def _persist_encoder_id(self, raw, name):
        encoder_id = self._count(raw, (_META, 'sys', _ENCODER_COUNTER), 1, 1, meta=True)
        if encoder_id > _MAX_ENCODER_ID:
            raise ValueError(f'too many encoders and packers: at most {_MAX_ENCODER_ID}')
        raw.put(_meta_key('encoder', name), _dump({'id': encoder_id}))
        self._encoder_ids[name] = encoder_id
        self._encoder_names[encoder_id] = name
        return encoder_id

    def add_encoder(self, encoder):
        """Register a custom encoder or packer.

        Its name gets a persistent id the first time, kept across reopens;
        that first time commits in a write transaction of its own. After
        reopening a store, register custom encoders again before reading
        records written with them.

        :param encoder: an :class:`~centidb.encodings.Encoder`.
        :returns: the encoder now registered under its name: `encoder`, or
            the built-in one if the name is reserved (the names of the
            built-in encoders and packers are: adding an encoder with one of
            them keeps the built-in).
        :raises TypeError: if `encoder` is not an ``Encoder``.
        :raises ~centidb.errors.TransactionError: for a new name while this
            thread has a write transaction open on the store.
        :raises ValueError: if the store already has the most encoders and
            packers it can number (127).
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._check_open()
        if not isinstance(encoder, encodings.Encoder):
            raise TypeError(f'add_encoder needs an Encoder, not {type(encoder).__name__!r}')
        name = encoder.name
        if name not in self._encoder_ids:
            # A new name needs its id written; the writer lock comes first.
            with self._own_write_txn('add_encoder()') as raw:
                with self._lock:
                    if name not in self._encoder_ids:
                        self._persist_encoder_id(raw, name)
        with self._lock:
            if name not in self._builtin_names:
                self._encoders[name] = encoder
                self._packers_by_id[self._encoder_ids[name]] = encoder
        return self._encoders[name]

    def _encoder_id(self, encoder):
        """The persistent id of `encoder`'s name, registering it if needed.

        A name the store already knows is registered on the spot. A new name
        needs a metadata write in a transaction of its own, impossible while
        this thread has a write transaction open: then UnknownEncoderError.
        """
        if not isinstance(encoder, encodings.Encoder):
            raise TypeError(f'expected an Encoder, not {type(encoder).__name__!r}')
        encoder_id = self._encoder_ids.get(encoder.name)
        if encoder_id is not None:
            if encoder.name not in self._encoders:
                self.add_encoder(encoder)
            return encoder_id
        if self._current_write_txn() is not None:
            raise UnknownEncoderError(
                f'{encoder.name!r} is new to this store; call store.add_encoder() '
                f'with it before the write transaction')
        self.add_encoder(encoder)
        return self._encoder_ids[encoder.name]

    def _unknown_packer(self, encoder_id, coll_name):
        name = self._encoder_names.get(encoder_id)
        if name is None:
            return UnknownEncoderError(
                f'a record in collection {coll_name!r} names packer id '
                f'{encoder_id}, which this store never registered (corrupt data?)')
        return UnknownEncoderError(
            f'a record in collection {coll_name!r} was packed with {name!r}, '
            f'which is not registered in this session; call '
            f'store.add_encoder() with the {name!r} Encoder first')

    # --- collections --------------------------------------------------------------

    def collection(self, name, key_func=None, txn_key_func=None, encoder=None,
                   packer=None, counter_name=None):
        """Create or reopen the collection `name` and return it.

        Creating a collection commits in a write transaction of its own.
        Calling this again in the same session returns the same object; the
        arguments must then agree with the first call (or be omitted).

        :param name: the collection's name, a non-empty ``str``.
        :param key_func: ``key_func(record)`` makes each record's key (a
            tuple; a bare value is wrapped).
        :param txn_key_func: ``txn_key_func(txn, record)``, the same with the
            :class:`Transaction`; give at most one of the two. With neither,
            keys count up from 1.
        :param encoder: the record :class:`~centidb.encodings.Encoder`
            (default ``default_encoder``), stored by name.
        :param packer: the :class:`~centidb.encodings.Encoder` that
            compresses new records, stored by name like `encoder`: for an
            existing collection it may only name the packer the collection
            was created with (default: that one; for a new collection the
            ``'plain'`` packer, no compression). ``put(packer=)`` and
            ``batch(packer=)`` choose another for some records.
        :param counter_name: the counter (see :meth:`count`) that numbers
            keys when there is no key function (default ``'<name>:key'``).
        :returns: the :class:`~centidb.collection.Collection`.
        :raises TypeError: for an empty or non-``str`` `name`, or a key
            function that is not callable.
        :raises ValueError: if both key functions are given, or, for a
            collection already open in this session, a different key
            function or counter name.
        :raises ~centidb.errors.EncoderMismatchError: (a ``ValueError``) if
            the collection was created with another encoder or packer.
        :raises ~centidb.errors.UnknownEncoderError: if the collection's
            encoder or packer is not registered in this session (see
            :meth:`add_encoder`), or a new encoder would need registering
            while this thread has a write transaction open.
        :raises ~centidb.errors.TransactionError: when creating a collection
            while this thread has a write transaction open on the store.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._check_open()
        if not isinstance(name, str) or not name:
            raise TypeError(f'collection name must be a non-empty str, not {name!r}')
        if key_func is not None and txn_key_func is not None:
            raise ValueError('pass key_func or txn_key_func, not both')
        for label, func in (('key_func', key_func), ('txn_key_func', txn_key_func)):
            if func is not None and not callable(func):
                raise TypeError(f'{label} must be callable')
        with self._lock:
            coll = self._collections.get(name)
            if coll is not None:
                self._check_reopen_args(coll, key_func, txn_key_func, encoder, packer,
                                        counter_name)
                return coll
        with self.engine.begin() as raw:
            stored = raw.get(_meta_key('collection', name))
        if stored is None:
            info = self._create_collection(name, encoder, packer, counter_name)
        else:
            info = _load(stored)
        with self._lock:
            coll = self._collections.get(name)
            if coll is None:
                coll = self._open_collection(name, info, key_func, txn_key_func,
                                             encoder, packer)
                self._collections[name] = coll
            else:
                self._check_reopen_args(coll, key_func, txn_key_func, encoder, packer,
                                        counter_name)
            return coll

    def _check_reopen_args(self, coll, key_func, txn_key_func, encoder, packer,
                           counter_name):
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

    def _create_collection(self, name, encoder, packer, counter_name):
        encoder = encoder or self.default_encoder
        packer = packer or encodings.PLAIN_PACKER
        self._encoder_id(encoder)
        self._encoder_id(packer)
        with self._own_write_txn('creating a collection') as raw:
            stored = raw.get(_meta_key('collection', name))
            if stored is not None:      # another thread created it meanwhile
                return _load(stored)
            info = {
                'id': self._count(raw, (_META, 'sys', _PREFIX_COUNTER), 1, 1, meta=True),
                'encoder': encoder.name,
                'packer': packer.name,
                'counter': counter_name or f'{name}:key',
            }
            raw.put(_meta_key('collection', name), _dump(info))
        return info

    def _open_collection(self, name, info, key_func, txn_key_func, encoder, packer):
        if encoder is None:
            encoder = self._registered(info['encoder'], name)
        elif encoder.name != info['encoder']:
            raise EncoderMismatchError(
                f'collection {name!r} was created with encoder '
                f'{info["encoder"]!r}; reopening it with {encoder.name!r} would '
                f'mis-decode its records')
        if packer is None:
            packer = self._registered(info['packer'], name)
        elif packer.name != info['packer']:
            raise _packer_mismatch(name, info['packer'], packer.name)
        self._encoder_id(encoder)
        self._encoder_id(packer)
        with self.engine.begin() as raw:
            lo, hi = keylib.prefix_range((_META, 'index', info['id']))
            stored_indexes = {keylib.unpacks(key_bytes)[3]: _load(value)['id']
                              for key_bytes, value in raw.items(lo, hi)}
        return Collection(self, name, info, key_func, txn_key_func, encoder,
                          packer, stored_indexes)

    def _registered(self, encoder_name, coll_name):
        encoder = self._encoders.get(encoder_name)
        if encoder is None:
            raise UnknownEncoderError(
                f'collection {coll_name!r} uses {encoder_name!r}, which is not '
                f'registered in this session; call store.add_encoder() with '
                f'it, or pass it to collection()')
        return encoder

    def _save_collection_info(self, raw, name, info):
        raw.put(_meta_key('collection', name), _dump(info))

    def _add_index(self, coll, name, func):
        """Bind a stored index, or create and fill a new one; see add_index()."""
        self._check_open()
        with self._lock:
            if name in coll.indices:
                raise ValueError(f'index {name!r} was already added to collection '
                                 f'{coll.name!r} in this session')
            if name in coll._stored_indexes:
                index = Index(coll, name, coll._stored_indexes[name], func)
                coll._bind(index)
                return index
        # Lock order: the engine's writer lock, then self._lock.
        index = None
        try:
            with self._own_write_txn('add_index()') as raw, self._lock:
                if name in coll.indices:
                    raise ValueError(f'index {name!r} was just added to collection '
                                     f'{coll.name!r} by another thread')
                index_id = self._count(raw, (_META, 'sys', _PREFIX_COUNTER), 1, 1, meta=True)
                raw.put(_meta_key('index', coll.coll_id, name), _dump({'id': index_id}))
                index = Index(coll, name, index_id, func)
                lo, hi = keylib.prefix_range((), coll.prefix)
                for key_bytes, stored in list(coll._logical_items(raw, lo, hi, False)):
                    for entry in index_entries(((func, index.prefix),), coll._decode(stored),
                                               coll._entry_tail(key_bytes)):
                        raw.put(entry, b'')
                # Bound before the commit, so no writer slips in between.
                coll._bind(index)
        except BaseException:
            # The commit failed: the index and its id were not stored.
            if index is not None and coll.indices.get(name) is index:
                coll._unbind(name)
            raise
        return index

    def _drop_index(self, coll, name):
        self._check_open()
        if name not in coll._stored_indexes:
            raise UnknownIndexError(f'collection {coll.name!r} has no index {name!r} '
                                    f'to drop')
        index_id = coll._stored_indexes[name]
        with self._own_write_txn('drop_index()') as raw, self._lock:
            lo, hi = keylib.prefix_range((), keylib.packs(index_id))
            for key_bytes in list(raw.keys(lo, hi)):
                raw.delete(key_bytes)
            raw.delete(_meta_key('index', coll.coll_id, name))
        coll._unbind(name)

    # --- counters -------------------------------------------------------------------

    def count(self, name, n=1, init=1, txn=None):
        """Return counter `name`'s value, then add `n` to it (persistently).

        :param name: the counter's name, a ``str``.
        :param n: the ``int`` to add; ``0`` only reads the counter.
        :param init: the ``int`` value of a counter that does not exist yet.
        :param txn: a :class:`Transaction` of this store to run in, so the
            change commits or aborts with it (default: see the module doc).
        :returns: the value before adding `n`.
        :raises TypeError: if `name` is not a ``str``, `n` or `init` not an
            ``int``, or `txn` not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended, or is
            read-only and `n` is not 0.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        if not isinstance(name, str):
            raise TypeError(f'counter name must be a str, not {type(name).__name__!r}')
        if type(n) is not int or type(init) is not int:
            raise TypeError('counter n and init must be ints')
        return self._run(txn, n != 0, self._count_in_txn, name, n, init)

    def _count_in_txn(self, txn, raw, name, n, init):
        return self._count(raw, name, n, init)

    def _count(self, raw, name, n, init, meta=False):
        key = keylib.packs(name) if meta else _meta_key('counter', name)
        stored = raw.get(key)
        value = init if stored is None else keylib.unpacks(stored)[0]
        if n:
            raw.put(key, keylib.packs(value + n))
        return value

    # --- transactions ------------------------------------------------------------------

    def begin(self, write=False):
        """Start a :class:`Transaction` (read-only unless ``write=True``).

        Use it as a context manager, or call ``commit()``/``abort()``. A
        write transaction waits while another thread holds one.

        :param write: True for a write transaction.
        :returns: the :class:`Transaction`.
        :raises ~centidb.errors.TransactionError: if `write` and this thread
            already has a write transaction open on this store.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._check_open()
        if write:
            current = self._current_write_txn()
            if current is not None:
                raise TransactionError(
                    'this thread already has a write transaction open on this '
                    'store; nested transactions are not supported: pass '
                    'txn= or call without txn to join the open one')
        txn = Transaction(self, bool(write), self.engine.begin(write=bool(write)))
        if write:
            # Weak, so a transaction the caller dropped is aborted by the
            # garbage collector instead of holding the writer lock forever.
            self._local.txn = weakref.ref(txn)
        return txn

    def _current_write_txn(self):
        """The write transaction this thread has open on the store, or None."""
        if self._closed:
            self._check_open()
        ref = getattr(self._local, 'txn', None)
        if ref is None:
            return None
        txn = ref()
        if txn is None or txn.raw is None:
            self._local.txn = None
            return None
        return txn

    def _own_write_txn(self, what):
        """A write transaction for metadata changes, which must commit alone."""
        if self._current_write_txn() is not None:
            raise TransactionError(
                f'{what} commits on its own and cannot run while this thread '
                f'has a write transaction open on the store; do it before '
                f'begin(write=True) or after the commit')
        return self.engine.begin(write=True)

    def _raw_txn(self, txn, write):
        """Return the engine transaction of `txn`, checking it fits."""
        if type(txn) is not Transaction or txn.store is not self:
            raise TypeError(f'txn must be a transaction from this store\'s begin(), '
                            f'not {txn!r}')
        raw = txn.raw
        if raw is None:
            raise TransactionError('this transaction has already ended')
        if write and not txn.write:
            raise TransactionError(
                'cannot write in a read-only transaction; use begin(write=True)')
        return raw

    def _run(self, txn, write, func, *args):
        """Call ``func(txn, raw_txn, *args)`` in the right transaction."""
        if txn is None:
            txn = self._current_write_txn()
            if txn is None:
                own = self.begin(write)
                try:
                    result = func(own, own.raw, *args)
                except BaseException:
                    own.abort()
                    raise
                own.commit()
                return result
        return func(txn, self._raw_txn(txn, write), *args)

    def _iteration_txn(self, txn):
        """(raw txn, own txn or None) for an iterator, chosen when it is made."""
        if txn is not None:
            return self._raw_txn(txn, False), None
        current = self._current_write_txn()
        if current is not None:
            return current.raw, None
        own = self.engine.begin()
        return own, own

    def _iterate(self, txn, lo, hi, reverse, max, source):
        """Iterate ``source(raw txn, lo, hi, reverse)`` within a transaction.

        The transaction is chosen now; a read transaction begun for this
        iterator ends with it.
        """
        raw, own = self._iteration_txn(txn)
        return self._iterate_raw(raw, own, lo, hi, reverse, max, source)

    def _iterate_raw(self, raw, own, lo, hi, reverse, max, source):
        try:
            items = source(raw, lo, hi, reverse)
            if max is not None:
                items = itertools.islice(items, max)
            yield from items
        finally:
            if own is not None:
                own.abort()

    # --- lifecycle ------------------------------------------------------------------------

    def _check_open(self):
        if self._closed:
            raise EngineClosedError('this store is closed; open it again to use it')

    def close(self):
        """Close the store and its engine. Closing twice is fine."""
        if not self._closed:
            self._closed = True
            self.engine.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False
