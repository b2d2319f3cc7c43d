"""The store: :func:`open`, and :class:`Store`, which ties the layers together.

``centidb.open('lmdb', path=...)`` or ``Store(engine)`` gives a
:class:`Store` on one engine. It holds the store's
:class:`~centidb.txn.TxnManager` (transactions) and
:class:`~centidb.catalog.Catalog` (metadata: format, collections, indexes,
encoders, counters; layout in :mod:`centidb.catalog`), and makes each
:class:`~centidb.collection.Collection`, handing it those two.

Metadata is read when a collection is opened and cached in this process: a
collection's indexes, encoders and whether it holds batches. Each write
transaction first checks the store's metadata generation and, if another
store object or process changed the metadata, reloads it; a collection
dropped or renamed elsewhere is then detached here (see
:meth:`Store.drop_collection`). Plain reads and writes from several
processes are what the engine allows (LMDB: yes; LevelDB: one process).

Transactions: every read/write method of collections and indexes takes
``txn=`` (from :meth:`Store.begin`). Without it, a call runs in a
transaction of its own, except in a thread that has a write transaction open
on this store: there the call **joins** that transaction, so it sees and
commits (or aborts) with the rest. Opening a second write transaction in
that thread raises :class:`~centidb.errors.TransactionError`.

Hooks: :meth:`Store.on_commit` registers a function called with the
:class:`~centidb.txn.Change` list of each committed write transaction that
changed records; :meth:`Collection.before_write
<centidb.collection.Collection.before_write>` one called before each record
of a collection is written.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Callable, Dict, Literal, Tuple, TypeVar

from centidb import encodings
from centidb.admin import CollectionAdmin, check_name
from centidb.catalog import Catalog
from centidb.metarecords import CollectionInfo
from centidb.collection import Collection
from centidb.encodings import Encoder
from centidb.engines import Engine, EngineTransaction, get_engine_class
from centidb.errors import CentiError, ConflictError, EncoderMismatchError, KeyKindMismatchError
from centidb.hooks import StoreHooks
from centidb.txn import Change, Transaction, TxnManager
from centidb.verify import Problem, check_collection, check_metadata, check_storage, find_orphans

__all__ = ['open', 'Store', 'Transaction']

_Self = TypeVar('_Self', bound='Store')
_R = TypeVar('_R')

# The names the store keeps its own built-in encoders and packers under.

# A collection's stored metadata and its index ids (name -> prefix id).
_Stored = Tuple[CollectionInfo, Dict[str, int]]


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


def open(engine: str | type[Engine], *,  # noqa: A001 - the API name
         max_unpacked_size: int = encodings.MAX_UNPACKED_SIZE, checksums: bool = False,
         **engine_kwargs: Any) -> Store:
    """Open (or create) a store on a new engine and return the :class:`Store`.

    For example ``open('lmdb', path='x.lmdb')`` or ``open('leveldb',
    path='x.ldb', create_if_missing=True)``. Closing the store closes the
    engine; if the store cannot be opened, the engine is closed before the
    error propagates.

    :param engine: an :class:`~centidb.engines.Engine` subclass, its short
        name in :data:`~centidb.engines.ENGINE_ALIASES` (``'memory'``,
        ``'leveldb'``, ``'lmdb'``, ``'etcd'``, as the command line's
        ``--engine``; any case), or its class name in
        :data:`~centidb.engines.ENGINES` (``'MemoryEngine'``,
        ``'PlyvelEngine'``, ``'LmdbEngine'``) or
        :data:`~centidb.engines.OPTIONAL_ENGINES` (``'EtcdEngine'``).
    :param max_unpacked_size: as for :class:`Store`.
    :param checksums: as for :class:`Store`: ``open(..., checksums=True)`` is
        the recommended setup.
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
        return Store(instance, max_unpacked_size=max_unpacked_size, checksums=checksums)
    except BaseException:
        instance.close()
        raise


class Store(CollectionAdmin, StoreHooks):
    """A centidb store on an open :class:`~centidb.engines.Engine`.

    Creates the store format record on an empty engine. A context manager:
    ``close()`` on exit. ``default_encoder`` is the encoder new collections
    get when :meth:`collection` is not given one (msgpack).

    :param engine: an open :class:`~centidb.engines.Engine` (available as
        ``engine``); closing the store closes it.
    :param max_unpacked_size: the most bytes a built-in packer (zlib, lz4,
        zstd, snappy) unpacks one stored record or batch to; reading one
        that claims more raises :class:`~centidb.errors.CorruptRecordError`
        without unpacking it, and writing one that encodes to more raises
        :class:`~centidb.errors.ValueTooLargeError`, writing nothing (default
        :data:`~centidb.encodings.MAX_UNPACKED_SIZE`, 64 MiB).
    :param checksums: the first value of :attr:`checksums`: whether new
        collections keep a CRC-32 checksum with each stored value (default
        off; on is the recommended setup).
    :raises TypeError: if `engine` is not an ``Engine``, or
        `max_unpacked_size` not an ``int``.
    :raises ValueError: if `max_unpacked_size` is below 1.
    :raises ~centidb.errors.StoreFormatError: if the engine holds data that
        is not a centidb store, or a store of another format or version.
    """

    def __init__(self, engine: Engine, *,
                 max_unpacked_size: int = encodings.MAX_UNPACKED_SIZE,
                 checksums: bool = False) -> None:
        if not isinstance(engine, Engine):
            raise TypeError(f'Store needs an Engine instance, not {type(engine).__name__!r}')
        encodings.make_packers(max_unpacked_size)       # checks it before anything opens
        self.engine = engine
        self._txns = TxnManager(engine, self, on_write=self._refresh)
        # Clients creating one store at once may conflict: run it again.
        self._catalog = self._txns.retry_conflicts(Catalog, self._txns, max_unpacked_size)
        self._collections: dict[str, Collection] = {}
        self._commit_hooks: list[Callable[[list[Change]], object]] = []
        self._hooks_lock = threading.Lock()     # serializes registering and removing
        self.default_encoder: Encoder = self._catalog.encoder(
            'msgpack')  # type: ignore[assignment]  # built in, so always registered
        #: Whether a new collection keeps checksums when ``collection()``
        #: is not told (see its `checksum`); set by the `checksums` argument,
        #: and may be changed at any time. Off by default: checking costs
        #: each read and write a CRC-32 of the value (see ``docs/perf.rst``).
        self.checksums = bool(checksums)

    def __repr__(self) -> str:
        return f"<Store on {self.engine!r}{' closed' if self._txns.closed else ''}>"

    def add_encoder(self, encoder: Encoder) -> Encoder:
        """Register a custom encoder or packer.

        Its name gets a persistent id the first time, kept across reopens,
        written in this thread's open write transaction or in one of its
        own. After reopening a store, register custom encoders again before
        reading records written with them. Registering the built-in
        ``PICKLE_ENCODER`` (or any encoder named ``'pickle'``) is how a
        program allows collections stored with pickle to be decoded.

        :param encoder: an :class:`~centidb.encodings.Encoder`.
        :returns: the encoder now registered under its name: `encoder`, or
            the built-in one if the name is reserved (the names of the
            built-in encoders and packers are: adding an encoder with one of
            them keeps the built-in).
        :raises TypeError: if `encoder` is not an ``Encoder``.
        :raises ~centidb.errors.TooManyEncodersError: (a ``ValueError``) if
            the store already has the most encoders and packers it can
            number (127).
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        return self._txns.retry_conflicts(self._catalog.add_encoder, encoder)

    # --- collections --------------------------------------------------------------

    def collection(self, name: str, key_func: Callable[[Any], Any] | None = None,
                   txn_key_func: Callable[[Transaction, Any], Any] | None = None,
                   encoder: Encoder | None = None, packer: Encoder | None = None,
                   counter_name: str | None = None, checksum: bool | None = None) -> Collection:
        """Create or reopen the collection `name` and return it.

        A new collection is recorded in this thread's open write transaction
        (and forgotten if that aborts) or in one of its own, which is run
        again if it conflicts with another client's (see
        :meth:`~centidb.txn.TxnManager.retry_conflicts`). Calling this
        again in the same session returns the same object; the arguments
        must then agree with the first call (or be omitted).

        The store records the collection's *key kind*: a ``key_func``, a
        ``txn_key_func``, or auto-increment (neither). Reopening it with the
        other function, or with either when it is auto-increment, raises
        :class:`~centidb.errors.KeyKindMismatchError`; reopening a keyed
        collection with no function is allowed (to read it, or to put with
        explicit keys), but a put that needs the function raises.

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
        :param checksum: a new collection keeps a CRC-32 checksum with each
            stored value, checked on every read and by :meth:`verify`
            (default :attr:`checksums`); an existing one keeps what it was
            created with, which a value given here must match.
        :returns: the :class:`~centidb.collection.Collection`.
        :raises TypeError: for an empty or non-``str`` `name`, or a key
            function that is not callable.
        :raises ValueError: if both key functions are given, or, for a
            collection already open in this session, a different key
            function or counter name, or `checksum` disagrees with an
            existing collection.
        :raises ~centidb.errors.EncoderMismatchError: (a ``ValueError``) if
            the collection was created with another encoder or packer.
        :raises ~centidb.errors.KeyKindMismatchError: (a ``ValueError``) if
            it was created with another kind of key.
        :raises ~centidb.errors.PickleNotAllowedError: if it is stored with
            pickle and this program did not opt in (see :meth:`add_encoder`).
        :raises ~centidb.errors.UnknownEncoderError: if the collection's
            encoder or packer is not registered in this session (see
            :meth:`add_encoder`).
        :raises ~centidb.errors.StoreFormatError: if its metadata is
            unreadable.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._txns.check_open()
        check_name(name)
        if key_func is not None and txn_key_func is not None:
            raise ValueError('pass key_func or txn_key_func, not both')
        for label, func in (('key_func', key_func), ('txn_key_func', txn_key_func)):
            if func is not None and not callable(func):
                raise TypeError(f'{label} must be callable')
        coll = self._txns.retry_conflicts(self._open_collection_once, name, key_func,
                                          txn_key_func, encoder, packer, counter_name, checksum)
        if checksum is not None and bool(checksum) != coll.checksum:
            raise ValueError(f'collection {name!r} was created '
                             f'{"with" if coll.checksum else "without"} checksums')
        return coll

    def _open_collection_once(self, name: str, key_func: Callable[[Any], Any] | None,
                              txn_key_func: Callable[[Transaction, Any], Any] | None,
                              encoder: Encoder | None, packer: Encoder | None,
                              counter_name: str | None, checksum: bool | None) -> Collection:
        with self._catalog.lock:
            coll = self._collections.get(name)
            if coll is not None:
                _check_reopen_args(coll, key_func, txn_key_func, encoder, packer,
                                   counter_name)
                return coll
        catalog = self._catalog
        key_kind = ('key_func' if key_func is not None else
                    'txn_key_func' if txn_key_func is not None else None)
        stored = self._txns.run(None, False, self._stored_meta, name)
        if stored is None:
            encoder = encoder or self.default_encoder
            packer = packer or encodings.PLAIN_PACKER
            catalog.encoder_id(encoder)
            catalog.encoder_id(packer)
            with self._txns.writing() as txn:
                info, created = catalog.create_collection(
                    txn, name, encoder, packer, counter_name, key_kind or 'auto',
                    self.checksums if checksum is None else bool(checksum))
                index_ids = {} if created else catalog.index_ids(
                    txn.engine_txn, info['id'])  # type: ignore[arg-type]  # txn is open
                coll = self._add_collection(name, (info, index_ids), key_func, txn_key_func,
                                            encoder, packer, counter_name)
                if created:
                    txn.undo.append(lambda: self._forget_collection(
                        coll, 'the transaction that created it was aborted'))
            return coll
        return self._add_collection(name, stored, key_func, txn_key_func, encoder, packer,
                                    counter_name)

    def _stored_meta(self, txn: Transaction, etxn: EngineTransaction,
                     name: str) -> _Stored | None:
        """``(metadata, index ids)`` of collection `name`, or None."""
        info = self._catalog.collection_info(etxn, name)
        return None if info is None else (info, self._catalog.index_ids(etxn, info['id']))

    def _add_collection(self, name: str, stored: _Stored,
                        key_func: Callable[[Any], Any] | None,
                        txn_key_func: Callable[[Transaction, Any], Any] | None,
                        encoder: Encoder | None, packer: Encoder | None,
                        counter_name: str | None) -> Collection:
        with self._catalog.lock:
            coll = self._collections.get(name)
            if coll is None:
                coll = self._open_collection(name, stored, key_func, txn_key_func,
                                             encoder, packer)
                self._collections[name] = coll
            else:
                _check_reopen_args(coll, key_func, txn_key_func, encoder, packer,
                                   counter_name)
            return coll

    def _open_collection(self, name: str, stored: _Stored,
                         key_func: Callable[[Any], Any] | None,
                         txn_key_func: Callable[[Transaction, Any], Any] | None,
                         encoder: Encoder | None, packer: Encoder | None) -> Collection:
        info, index_ids = stored
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
        return Collection(self, self._txns, self._catalog, name, info, key_func,
                          txn_key_func, encoder, packer, index_ids)

    # --- checking --------------------------------------------------------------------

    def verify(self, *, progress: Callable[[str], object] | None = None) -> list[Problem]:
        """Check the whole store and return the problems found (empty: sound).

        In one read transaction (or this thread's open write transaction): the engine's
        files (LevelDB: each table block's checksum; damage there is all that is
        reported); the format record and every metadata record (each well formed, as
        ``docs/format.rst`` lists; no two collections or indexes share a prefix id, no
        two encoders an id; ids below their counters; every index's collection exists);
        every record of every collection (its key and value decode; batches are well
        formed, and only in a collection whose metadata says it is batched; for a
        collection opened with a ``key_func`` in this session, each record is stored
        under ``key_func(value)``); every index entry (it splits into an index tuple and
        a record key, holds no value, and the record exists); for the indexes added in
        this session, every record's entries exist and no entry is stale; for
        auto-increment collections, the counter is above every ``(n,)`` key; and no
        engine key lies under a prefix nothing owns. A collection whose encoder is not
        registered (or is pickle) is reported as not checked. Records are held in memory
        one collection at a time.

        :param progress: called as ``progress(name)`` before each collection
            is checked, in name order (for a progress bar).
        :returns: a ``list`` of :class:`~centidb.verify.Problem`, each naming
            the collection and key where it can.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._txns.check_open()
        return self._txns.run(None, False, self._verify_in, progress)

    def _verify_in(self, txn: Transaction, etxn: EngineTransaction,
                   progress: Callable[[str], object] | None) -> list[Problem]:
        if damaged := check_storage(etxn):      # the checks below would stop at it
            return damaged
        problems, collections, indexes, counters = check_metadata(etxn)
        owned = {0}
        for name, info in sorted(collections.items()):
            if progress is not None:
                progress(name)
            index_ids = indexes.get(info['id'], {})
            owned.add(info['id'])
            owned.update(index_ids.values())
            coll = self._collections.get(name)
            if coll is None or coll.coll_id != info['id']:
                try:
                    coll = self._open_collection(name, (info, index_ids), None, None, None,
                                                 None)
                except CentiError as exc:
                    problems.append(Problem(name, None, f'not checked: {exc}'))
                    continue
            problems += check_collection(etxn, coll, index_ids, counters.get(info['counter']))
        problems += find_orphans(etxn, owned)
        return problems

    # --- counters -------------------------------------------------------------------

    def counter(self, name: str, n: int = 1, init: int = 1,
                txn: Transaction | None = None) -> int:
        """Return counter `name`'s value, then add `n` to it (persistently).

        Also available under its older name, ``count``.

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
        return self._txns.run(txn, n != 0, self._counter_in, name, n, init)

    def _counter_in(self, txn: Transaction, etxn: EngineTransaction, name: str, n: int,
                    init: int) -> int:
        return self._catalog.counter(etxn, name, n, init)

    #: The older name of :meth:`counter`.
    count = counter

    # --- transactions ------------------------------------------------------------------

    def begin(self, write: bool = False) -> Transaction:
        """Start a :class:`Transaction` (read-only unless ``write=True``).

        Use it as a context manager, or call ``commit()``/``abort()``. A
        write transaction waits while another thread holds one.

        :param write: True for a write transaction.
        :returns: the :class:`Transaction`.
        :raises ~centidb.errors.TransactionError: if `write` and this thread
            already has a write transaction open on this store.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        return self._txns.begin(write)

    def transact(self, fn: Callable[[Transaction], _R], *, retries: int = 3) -> _R:
        """Run ``fn(txn)`` in a write transaction and commit, again on a conflict.

        On an engine with optimistic transactions
        (:class:`~centidb.engines.etcd.EtcdEngine`), a commit fails with
        :class:`~centidb.errors.ConflictError` when another client changed
        what the transaction read; `fn` is then run again in a new
        transaction, up to `retries` more times (so does a
        ``ConflictError`` raised by `fn` itself). Other engines never
        conflict. Since `fn` may run more than once, it should act only
        through `txn` (or join it, by calling without ``txn=``).

        :param fn: ``fn(txn)``, given the :class:`Transaction`.
        :param retries: how many times to run `fn` again after a conflict.
        :returns: what the successful run of `fn` returned.
        :raises ~centidb.errors.ConflictError: the last conflict, when every
            run conflicted.
        :raises TypeError: if `fn` is not callable or `retries` is not an
            ``int``.
        :raises ValueError: if `retries` is negative.
        """
        if not callable(fn):
            raise TypeError(f'fn must be callable, not {type(fn).__name__}')
        if type(retries) is not int:
            raise TypeError(f'retries must be an int, not {type(retries).__name__}')
        if retries < 0:
            raise ValueError(f'retries must be 0 or more, not {retries}')
        for attempt in range(retries + 1):
            try:
                with self.begin(write=True) as txn:
                    return fn(txn)
            except ConflictError:
                if attempt == retries:
                    raise
        raise AssertionError('unreachable')   # pragma: no cover

    # --- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store and its engine. Closing twice is fine."""
        if not self._txns.closed:
            self._txns.close()
            self.engine.close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        self.close()
        return False
