"""The store: :func:`open`, and :class:`Store`, which ties the layers together.

The package holds the store's parts: :mod:`centidb.store.admin` (the
collections open in this session) and :mod:`centidb.store.verify` (the
checks of :meth:`Store.verify`).

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

from types import TracebackType
from typing import Any, Callable, List, Literal, TypeVar

from centidb import encodings
from centidb.store.admin import OpenCollections, check_name, remove_record
from centidb.catalog import Catalog
from centidb.collection import Collection
from centidb.encodings import Encoder
from centidb.engines import Engine, EngineTransaction, get_engine_class
from centidb.errors import CentiError, ConflictError
from centidb.hooks import CommitHooks
from centidb.txn import Change, Transaction, TxnManager
from centidb.store.verify import Problem, check_collection, check_metadata, check_storage, find_orphans

__all__ = ['open', 'Store', 'Transaction']

_Self = TypeVar('_Self', bound='Store')
_R = TypeVar('_R')
_Hook = TypeVar('_Hook', bound=Callable[[List[Change]], object])


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


class Store:
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
        self._collections = OpenCollections(self, self._txns, self._catalog)
        self._hooks = CommitHooks(self._collections.record_changes)
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
        coll = self._txns.retry_conflicts(
            self._collections.open, name, key_func, txn_key_func, encoder, packer, counter_name,
            self.default_encoder, self.checksums if checksum is None else bool(checksum))
        if checksum is not None and bool(checksum) != coll.checksum:
            raise ValueError(f'collection {name!r} was created '
                             f'{"with" if coll.checksum else "without"} checksums')
        return coll

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
        :returns: a ``list`` of :class:`~centidb.store.verify.Problem`, each naming
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
                    coll = self._collections.make(
                        name, (info, self._catalog.stored_indexes(etxn, info['id'])),
                        None, None, None, None)
                except CentiError as exc:
                    problems.append(Problem(name, None, f'not checked: {exc}'))
                    continue
            problems += check_collection(etxn, coll, index_ids, counters.get(info['counter']))
        problems += find_orphans(etxn, owned)
        return problems

    # --- listing, dropping, renaming; removing a record ---------------------------------

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
        return self._collections.names(txn)

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
        self._collections.drop(name, txn)

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
        self._collections.rename(old, new, txn)

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
        return remove_record(self._txns, self._catalog, name, key, txn, whole_batch)

    def _refresh(self, etxn: EngineTransaction) -> None:
        """Reload the open collections' metadata if another process changed it."""
        self._collections.refresh(etxn)

    # --- hooks -------------------------------------------------------------------------

    def on_commit(self, hook: _Hook) -> _Hook:
        """Call ``hook(changes)`` after each write transaction that changed records commits.

        `changes` is a new ``list`` of :class:`~centidb.txn.Change`
        ``(collection, key, value)``, one per record written or deleted, in
        the order of the writes (``value`` is the value given to ``put()``,
        ``None`` for a delete). Every write reports its change:
        ``put()``, ``put_many()``, ``delete()``, ``delete_many()``,
        ``coll[key] = value``, ``del coll[key]``, in a transaction of their
        own or joined to one. A transaction that aborts, or changed no
        record, calls nothing; neither do the records of a ``put_many()`` or
        ``delete_many()`` that failed and wrote nothing. ``batch()``,
        ``drop_collection()``, ``rename_collection()``, counters and index
        changes report nothing: they change no record's value.

        The hook runs in the committing thread once the engine has committed
        and the transaction has ended (a write it makes runs in a
        transaction of its own, whose changes call the hooks again). An
        exception from a hook propagates to the caller of the commit (the
        ``with store.begin(write=True)`` block, ``commit()``, or a ``put()``
        or other call that committed a transaction of its own), but the
        commit stands, as durable as any other. When several hooks are registered, all run, in the
        order registered, even if one raises; the first exception is then
        raised (on Python 3.11 and later, noting the others).

        While a store has hooks, every write also records its change, which
        costs some speed (a bulk load runs at two thirds to three quarters
        of its rate, see :doc:`perf`); without hooks the write paths are
        exactly as before. A hook registered while a write transaction is
        open sees the changes made after it was registered. A
        transaction's changes are held in memory until it ends.

        Returns `hook`, so it works as a decorator.

        :param hook: ``hook(changes)``; what it returns is ignored.
        :returns: `hook`.
        :raises TypeError: if `hook` is not callable.
        """
        return self._hooks.add(hook)

    def remove_hook(self, hook: Callable[[list[Change]], object]) -> None:
        """Stop calling a hook registered with :meth:`on_commit`.

        A hook registered twice is called twice, and removed once by each
        call. Without hooks left, writes take the fast paths again.

        :param hook: the hook, as given to :meth:`on_commit`.
        :raises ValueError: if `hook` is not registered.
        """
        self._hooks.remove(hook)

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
