"""The store: :func:`open`, and :class:`Store`, which ties the layers together.

``centidb.open('LmdbEngine', path=...)`` or ``Store(engine)`` gives a
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
from typing import Any, Callable, Dict, List, Literal, Tuple, TypeVar

from centidb import encodings, keylib
from centidb.catalog import FORMAT_NAME, FORMAT_VERSION, Catalog, CollectionInfo
from centidb.catalog import check as check_catalog
from centidb.collection import Collection
from centidb.encodings import Encoder
from centidb.engines import Engine, EngineTransaction, get_engine_class
from centidb.errors import (
    CentiError, CollectionExistsError, EncoderMismatchError, KeyKindMismatchError,
    StoreFormatError, UnknownCollectionError,
)
from centidb.txn import Change, Transaction, TxnManager
from centidb.verify import Problem, check_collection, find_orphans

__all__ = ['open', 'Store', 'Transaction']

_Self = TypeVar('_Self', bound='Store')
_Hook = TypeVar('_Hook', bound=Callable[[List[Change]], object])

# A collection's stored metadata and its index ids (name -> prefix id).
_Stored = Tuple[CollectionInfo, Dict[str, int]]


def _packer_mismatch(coll_name: str, packer_name: str, given_name: str) -> EncoderMismatchError:
    return EncoderMismatchError(
        f'collection {coll_name!r} was created with packer {packer_name!r}, not '
        f'{given_name!r}; pass packer= to put() or batch() to pack some '
        f'records differently')


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f'collection name must be a non-empty str, not {name!r}')


def _dropped_then(name: str, remade: bool) -> str:
    if remade:
        return f'store.collection({name!r}) opens the new collection made since'
    return f'store.collection({name!r}) makes a new, empty one'


def _delete_prefix(etxn: EngineTransaction, prefix: bytes) -> None:
    """Delete every engine key that starts with `prefix` (iterators survive writes)."""
    for key_bytes in etxn.keys(prefix, keylib.next_prefix(prefix)):
        etxn.delete(bytes(key_bytes))


def open(engine: str | type[Engine], **engine_kwargs: Any) -> Store:  # noqa: A001 - the API name
    """Open (or create) a store on a new engine and return the :class:`Store`.

    For example ``open('PlyvelEngine', name='x.ldb', create_if_missing=True)``.
    Closing the store closes the engine; if the store cannot be opened, the
    engine is closed before the error propagates.

    :param engine: an :class:`~centidb.engines.Engine` subclass or its name
        in :data:`~centidb.engines.ENGINES` (``'MemoryEngine'``,
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

    def __init__(self, engine: Engine) -> None:
        if not isinstance(engine, Engine):
            raise TypeError(f'Store needs an Engine instance, not {type(engine).__name__!r}')
        self.engine = engine
        self._txns = TxnManager(engine, self, on_write=self._refresh)
        self._catalog = Catalog(self._txns)
        self._collections: dict[str, Collection] = {}
        self._commit_hooks: list[Callable[[list[Change]], object]] = []
        self._hooks_lock = threading.Lock()     # serializes registering and removing
        self.default_encoder: Encoder = self._catalog.encoder(
            'msgpack')  # type: ignore[assignment]  # built in, so always registered

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
        :raises ValueError: if the store already has the most encoders and
            packers it can number (127).
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        return self._catalog.add_encoder(encoder)

    # --- collections --------------------------------------------------------------

    def collection(self, name: str, key_func: Callable[[Any], Any] | None = None,
                   txn_key_func: Callable[[Transaction, Any], Any] | None = None,
                   encoder: Encoder | None = None, packer: Encoder | None = None,
                   counter_name: str | None = None) -> Collection:
        """Create or reopen the collection `name` and return it.

        A new collection is recorded in this thread's open write transaction
        (and forgotten if that aborts) or in one of its own. Calling this
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
        :returns: the :class:`~centidb.collection.Collection`.
        :raises TypeError: for an empty or non-``str`` `name`, or a key
            function that is not callable.
        :raises ValueError: if both key functions are given, or, for a
            collection already open in this session, a different key
            function or counter name.
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
        _check_name(name)
        if key_func is not None and txn_key_func is not None:
            raise ValueError('pass key_func or txn_key_func, not both')
        for label, func in (('key_func', key_func), ('txn_key_func', txn_key_func)):
            if func is not None and not callable(func):
                raise TypeError(f'{label} must be callable')
        with self._catalog.lock:
            coll = self._collections.get(name)
            if coll is not None:
                self._check_reopen_args(coll, key_func, txn_key_func, encoder, packer,
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
                info, created = catalog.create_collection(txn, name, encoder, packer,
                                                          counter_name, key_kind or 'auto')
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
                self._check_reopen_args(coll, key_func, txn_key_func, encoder, packer,
                                        counter_name)
            return coll

    def _check_reopen_args(self, coll: Collection, key_func: Callable[[Any], Any] | None,
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
        return Collection(self, self._txns, self._catalog, name, info, key_func,
                          txn_key_func, encoder, packer, index_ids)

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
        collection object works again. Like every write transaction on
        LevelDB, the deletions are held in memory until the commit.

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
        _check_name(name)
        self._txns.run(txn, True, self._drop_in, name)

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
            _delete_prefix(etxn, keylib.packs(prefix_id))
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
        ``collection(new)``.

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
        _check_name(old)
        _check_name(new)
        self._txns.run(txn, True, self._rename_in, old, new)

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

    # --- checking --------------------------------------------------------------------

    def verify(self) -> list[Problem]:
        """Check the whole store and return the problems found (empty: sound).

        In one read transaction (or this thread's open write transaction):
        the format record and every metadata record (readable, ids unique
        and below their counters, every index's collection exists); every
        record of every collection (its key and value decode; batches are
        well formed); every index entry (it splits into an index tuple and a
        record key, and the record exists); for the indexes added in this
        session, every record's entries exist and no entry is stale; for
        auto-increment collections, the counter is above every ``(n,)``
        key; and no engine key lies under a prefix nothing owns. A
        collection whose encoder is not registered in this session (or is
        pickle, not allowed) is reported as not checked. Records are held in
        memory one collection at a time.

        :returns: a ``list`` of :class:`~centidb.verify.Problem`, each naming
            the collection and key where it can.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self._txns.check_open()
        return self._txns.run(None, False, self._verify_in)

    def _verify_in(self, txn: Transaction, etxn: EngineTransaction) -> list[Problem]:
        meta_problems, collections, indexes, counters = check_catalog(self._catalog, etxn)
        problems = [Problem(*problem) for problem in meta_problems]
        owned = {0}
        for name, info in sorted(collections.items()):
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

    # --- hooks ---------------------------------------------------------------------------

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
        if not callable(hook):
            raise TypeError(f'an on_commit hook must be callable, not {hook!r}')
        with self._hooks_lock:
            self._commit_hooks.append(hook)
            if len(self._commit_hooks) == 1:
                self._record_changes(True)
        return hook

    def remove_hook(self, hook: Callable[[list[Change]], object]) -> None:
        """Stop calling a hook registered with :meth:`on_commit`.

        A hook registered twice is called twice, and removed once by each
        call. Without hooks left, writes take the fast paths again.

        :param hook: the hook, as given to :meth:`on_commit`.
        :raises ValueError: if `hook` is not registered.
        """
        with self._hooks_lock:
            try:
                self._commit_hooks.remove(hook)
            except ValueError:
                raise ValueError(f'{hook!r} is not an on_commit hook of this store') from None
            if not self._commit_hooks:
                self._record_changes(False)

    def _record_changes(self, on: bool) -> None:
        """Start or stop recording changes, and rebuild every collection's write paths."""
        with self._catalog.lock:    # collections are made under it, seeing the switch
            self._txns.after_commit = self._run_hooks if on else None
            colls = list(self._collections.values())
        for coll in colls:
            coll.rebuild()

    def _run_hooks(self, changes: list[Change]) -> None:
        """Call every :meth:`on_commit` hook; raise the first exception after."""
        first: Exception | None = None
        for hook in tuple(self._commit_hooks):
            try:
                hook(list(changes))
            except Exception as exc:
                if first is None:
                    first = exc
                elif hasattr(first, 'add_note'):
                    first.add_note(f'another on_commit hook, {hook!r}, also raised '
                                   f'{type(exc).__name__}: {exc}')
        if first is not None:
            raise first

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
