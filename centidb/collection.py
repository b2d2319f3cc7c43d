"""Collections of records, their secondary indexes, and query parameters.

A :class:`Collection` stores records (any value its encoder supports) under
tuple keys; an :class:`Index` maps each record to zero, one or many index
tuples through a plain Python function. Both are prefix views of the
store's engine; the byte layout is in ``docs/format.rst``.

Every read and write method takes ``txn=``, a transaction from
:meth:`centidb.store.Store.begin`. Without it, a call runs in a transaction of its
own, or joins the write transaction this thread has open on the store.

Query parameters, shared by every iterating method and by ``count()``:

``lo``
    Lowest key (or index tuple) included. A bare value means a 1-tuple.
``hi``
    Key at which to stop, excluded unless ``include=True``.
``prefix``
    Only keys that start with this tuple. A ``str`` or ``bytes`` as the last
    element also matches longer strings (``prefix='ab'`` matches
    ``('abc', 1)``). Combined with ``lo``/``hi``, all bounds apply.
``reverse``
    Iterate from the highest key down.
``max``
    Stop after this many results.

Only ``None`` means "no bound": ``0``, ``''`` and ``False`` are real bounds.
"""

from centidb import batches, encodings, keylib
from centidb.errors import CorruptKeyError, IndexInconsistentError, IndexNotAddedError
from centidb.keyformat import KEY_SEP

__all__ = ['Collection', 'Index', 'Record']

_ENTRY_SEP = bytes([KEY_SEP])
_EMPTY = b''


class Record:
    """A record as stored: its key, its value (``data``), and update state.

    A Record returned by ``put()`` or by ``get(..., rec=True)`` also
    remembers the stored bytes and index entries, so that a later ``put()``
    of it can skip decoding the old version when the store still holds
    exactly what was read. The arguments are kept as attributes of the same
    names; the ones starting with ``_`` are that private state.

    :param coll: the :class:`Collection` the record belongs to.
    :param data: the record's value.
    :param key: the record's key tuple, or ``None`` for a record not yet
        stored.
    """

    __slots__ = ('coll', 'data', 'key', '_stored', '_entries', '_indexes')

    def __init__(self, coll, data, key=None, _stored=None, _entries=None,
                 _indexes=None):
        self.coll = coll
        self.data = data
        self.key = key
        self._stored = _stored
        self._entries = _entries      # index entries of the stored version
        self._indexes = _indexes      # the index set _entries was made for

    def __repr__(self):
        name = self.coll.name if self.coll is not None else None
        return f'<Record {name}:{self.key!r} {self.data!r}>'

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return (self.coll is other.coll and self.key == other.key
                and self.data == other.data)

    __hash__ = None


#: The pure-Python version, whichever is active (for parity tests).
Record_python = Record
if keylib.SPEEDUPS is not None:
    Record = keylib.SPEEDUPS.Record


def _as_key(value):
    """A key tuple from a tuple (or namedtuple) or a bare value."""
    if type(value) is tuple:
        return value
    return tuple(value) if isinstance(value, tuple) else (value,)


def index_entries(specs, data, tail):
    """Return the index entry keys of one record.

    The compiled twin ``_speedups.index_entries`` is used when active and
    gives identical results. An exception raised by an index function
    propagates.

    :param specs: a ``tuple`` of ``(index function, index prefix)`` pairs.
        Each function's result (``None``: nothing; a list: one tuple per
        element; a tuple or bare value: one tuple) is packed under its
        prefix and followed by `tail`.
    :param data: the record value passed to each index function.
    :param tail: ``bytes`` after each packed index tuple: the separator and
        packed record key; ``b''`` gives just the packed index tuples.
    :returns: a ``list`` of entry keys (``bytes``), in `specs` order.
    :raises ~centidb.errors.UnsupportedKeyTypeError: as
        :func:`~centidb.keylib.packs`, for an index tuple it cannot encode.
    :raises ~centidb.errors.KeyEncodingError: as
        :func:`~centidb.keylib.packs`.
    """
    entries = []
    packs = keylib.packs
    for func, prefix in specs:
        result = func(data)
        if result is None:
            continue
        if type(result) is list:
            for item in result:
                entries.append(packs(item if isinstance(item, tuple) else (item,), prefix)
                               + tail)
        else:
            entries.append(packs(result if isinstance(result, tuple) else (result,), prefix)
                           + tail)
    return entries


#: The pure-Python version, whichever is active (for parity tests).
index_entries_python = index_entries
if keylib.SPEEDUPS is not None:
    index_entries = keylib.SPEEDUPS.index_entries
    index_entries.__doc__ = index_entries_python.__doc__


def _delete_stale(raw, old_entries, entries):
    """Delete the index entries of a record's old version it no longer has."""
    if old_entries:
        keep = set(entries)
        for entry in old_entries:
            if entry not in keep:
                raw.delete(entry)


def _engine_txn(store, txn_class, txn, write):
    """The engine transaction of the store transaction `txn`, checked."""
    if type(txn) is txn_class and txn.store is store and (txn.write or not write):
        raw = txn.raw
        if raw is not None:
            return raw
    return store._raw_txn(txn, write)   # raises the right error


class RecordWriter:
    """The common case of :meth:`Collection.put`, prepared for one collection.

    It holds what a put needs from the collection; the collection makes a
    new one whenever its indexes or batching change. :meth:`write` handles
    a put of a plain value (not a :class:`Record`) with a key or a
    ``key_func``, an exact encoder, the collection's own packer, no unbound
    indexes and no batches. The compiled twin ``_speedups.RecordWriter`` is
    used when active and behaves identically.

    :param coll: the :class:`Collection`.
    """

    def __init__(self, coll):
        self.coll = coll
        self.usable = coll._exact and not coll._unbound and not coll._batched
        self.encode = coll._pack
        # The plain packer is the identity: skip the call.
        packer = coll.packer
        self.compress = None if packer is encodings.PLAIN_PACKER else packer.pack
        self.header = coll._packer_header
        self.key_func = coll.key_func
        self.prefix = coll.prefix
        self.specs = coll._index_specs
        self.indexes = coll._indexes
        self.limit = coll.store.engine.max_key_size
        from centidb.store import Transaction  # centidb.store imports this module
        self.store = coll.store
        self.txn_class = Transaction

    def write(self, txn, data, key, blind):
        """Store `data` in the store transaction `txn`; return its Record.

        Raises what the key function, index functions, encoder or engine
        raise, having written nothing.

        :param txn: a write :class:`~centidb.store.Transaction` of the
            store.
        :param data: the record value.
        :param key: the key, or ``None`` to use the collection's ``key_func``.
        :param blind: as for :meth:`Collection.put`.
        :returns: the stored :class:`Record`, or ``None``, having called no
            user code and written nothing, when the put is not the common
            case.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        """
        raw = _engine_txn(self.store, self.txn_class, txn, True)
        if not self.usable or type(data) is Record or type(data) is Record_python:
            return None
        if key is None:
            if self.key_func is None:
                return None
            encoded = self.encode(data)
            key = self.key_func(data)
        else:
            encoded = self.encode(data)
        value = self.header + (encoded if self.compress is None else self.compress(encoded))
        key = _as_key(key)
        key_bytes = keylib.packs(key, self.prefix)
        entry_tail = _ENTRY_SEP + key_bytes[len(self.prefix):]
        entries = index_entries(self.specs, data, entry_tail)
        if self.limit is not None:
            self.coll._check_key_sizes(key, key_bytes, entries, self.limit)
        if not blind and self.indexes:
            old = raw.get(key_bytes)
            if old is not None:
                coll = self.coll
                _delete_stale(raw, coll._entries(coll._decode(old), entry_tail), entries)
        writes = [(key_bytes, value)]
        writes += [(entry, _EMPTY) for entry in entries]
        fast_put_many = raw._fast_put_many
        if fast_put_many is None:
            raw._put_many(writes)
        else:
            raw.writes += len(writes)
            try:
                fast_put_many(writes)
            except Exception as exc:
                raw._put_many_failed(exc, writes)
        return Record(self.coll, data, key, value, entries, self.indexes)


#: The pure-Python version, whichever is active (for parity tests).
RecordWriter_python = RecordWriter
if keylib.SPEEDUPS is not None:
    RecordWriter = keylib.SPEEDUPS.RecordWriter


class RecordReader:
    """The common case of :meth:`Collection.get` and :meth:`Index.get`.

    Prepared for one collection that holds no batches, like
    :class:`RecordWriter`: it reads through the engine transaction's
    unchecked getter when it has one, and decodes plain records inline. The
    compiled twin ``_speedups.RecordReader`` is used when active and
    behaves identically.

    :param coll: the :class:`Collection`.
    """

    def __init__(self, coll):
        from centidb.store import Transaction  # centidb.store imports this module
        self.coll = coll
        self.store = coll.store
        self.txn_class = Transaction
        self.prefix = coll.prefix
        self._decode = coll._decode   # the twin inlines its plain-record case
        self.limit = coll.store.engine.max_key_size

    def _stored(self, raw, key_bytes):
        fast_get = raw._fast_get
        if fast_get is None or (self.limit is not None and len(key_bytes) > self.limit):
            return raw.get(key_bytes)
        return fast_get(key_bytes)

    def get(self, txn, key, default):
        """Return the value stored under `key`, or `default`.

        :param txn: a :class:`~centidb.store.Transaction` of the store.
        :param key: the key tuple (a bare value means a 1-tuple).
        :param default: returned when nothing is stored under `key`.
        :returns: the decoded record value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        """
        key_bytes = keylib.packs(_as_key(key), self.prefix)
        stored = self._stored(_engine_txn(self.store, self.txn_class, txn, False), key_bytes)
        return default if stored is None else self._decode(stored)

    def index_get(self, txn, index, x, default):
        """Return the value of the first record whose `index` tuple is `x`.

        :param txn: a :class:`~centidb.store.Transaction` of the store.
        :param index: an :class:`Index` of the collection.
        :param x: the index tuple (a bare value means a 1-tuple).
        :param default: returned when no record has that index tuple.
        :returns: the decoded record value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.IndexInconsistentError: if the entry points
            at a missing record.
        """
        packed = keylib.packs(_as_key(x), index._prefix)   # not the property: hot
        raw = _engine_txn(self.store, self.txn_class, txn, False)
        found = raw.first(packed + _ENTRY_SEP, keylib.after_key(packed))
        if found is None:
            return default
        key_bytes = self.prefix + found[0][len(packed) + 1:]
        stored = self._stored(raw, key_bytes)
        if stored is None:
            raise index._missing_record_error(keylib.unpacks(key_bytes, self.prefix))
        return self._decode(stored)

    def index_records(self, index, items, raw, lo, hi, reverse):
        """Iterate the records the entries of `index` in ``[lo, hi)`` point at.

        :param index: an :class:`Index` of the collection.
        :param items: yield ``(index tuple, value)`` pairs instead of values.
        :param raw: the engine :class:`~centidb.engines.Transaction`.
        :param lo: the lowest entry key, or ``None``.
        :param hi: the entry key at which to stop, or ``None``.
        :param reverse: iterate from `hi` down.
        :returns: an iterator of record values, or of pairs.
        :raises ~centidb.errors.CorruptKeyError: (while iterating) for an
            entry that does not hold an index tuple and a record key.
        :raises ~centidb.errors.IndexInconsistentError: (while iterating)
            for an entry that points at a missing record.
        """
        coll = self.coll
        for entry in raw.keys(lo, hi, reverse):
            parts = keylib.unpacks_list(entry, index.prefix)
            if len(parts) != 2:
                raise index._corrupt_entry_error(entry)
            key_bytes = keylib.packs(parts[1], self.prefix)
            # A batch() in this transaction may have moved the record.
            stored = (coll._get_stored(raw, key_bytes) if coll._batched
                      else self._stored(raw, key_bytes))
            if stored is None:
                raise index._missing_record_error(parts[1])
            if items:
                yield parts[0], self._decode(stored)
            else:
                yield self._decode(stored)


#: The pure-Python version, whichever is active (for parity tests).
RecordReader_python = RecordReader
if keylib.SPEEDUPS is not None:
    RecordReader = keylib.SPEEDUPS.RecordReader


def _check_query(reverse, max):
    if max is not None:
        if type(max) is not int:
            raise TypeError(f'max must be an int or None, not {type(max).__name__!r}')
        if max < 0:
            raise ValueError(f'max must not be negative, got {max}')


def _key_range(prefix_bytes, lo, hi, prefix, include):
    """Byte bounds for a query under `prefix_bytes`; see the module doc."""
    if prefix is None:
        lo_bytes, hi_bytes = keylib.prefix_range((), prefix_bytes)
    else:
        lo_bytes, hi_bytes = keylib.prefix_range(_as_key(prefix), prefix_bytes)
    if lo is not None:
        lo_bytes = max(lo_bytes, keylib.packs(_as_key(lo), prefix_bytes))
    if hi is not None:
        bound = keylib.upper_bound(_as_key(hi), prefix_bytes, include)
        hi_bytes = bound if hi_bytes is None else min(hi_bytes, bound)
    return lo_bytes, hi_bytes


_QUERY_FIELDS = """\
:param lo: the lowest {what} included; a bare value means a 1-tuple.
:param hi: the {what} at which to stop, excluded unless `include`.
:param prefix: only {what}s that start with this tuple (see the module doc).
:param reverse: start from the highest {what}, going down.
:param max: stop after this many results (``None``: no limit).
:param include: include `hi` itself.
:param txn: a :class:`~centidb.store.Transaction` of the store to read in
    (default: see the module doc).
:raises TypeError: if `max` is not an ``int``, or `txn` is not a
    transaction of this store.
:raises ValueError: if `max` is negative.
:raises ~centidb.errors.TransactionError: if `txn` has ended."""


def _query_doc(what):
    """Put the query parameters' fields, written once, where ``{query}`` stands."""
    def fill(method):
        if method.__doc__:   # None under python -OO
            fields = _QUERY_FIELDS.format(what=what).replace('\n', '\n' + ' ' * 8)
            method.__doc__ = method.__doc__.replace('{query}', fields)
        return method
    return fill


class _Queryable:
    """``find()`` and ``count()`` for a class with ``values()`` and ``_matches()``.

    ``_matches(...)`` iterates whatever counts as one result (records of a
    collection, entries of an index) for the query parameters.
    """

    def find(self, lo=None, hi=None, prefix=None, reverse=False, include=False,
             txn=None, default=None):
        """Return the value of the first matching record, or `default`.

        For an index: the value of the record the first matching entry
        points to.

        :param lo: the lowest key (index tuple, for an index) included; a
            bare value means a 1-tuple.
        :param hi: the key at which to stop, excluded unless `include`.
        :param prefix: only keys that start with this tuple (see the module
            doc).
        :param reverse: start from the highest key, going down.
        :param include: include `hi` itself.
        :param txn: a :class:`~centidb.store.Transaction` of the store to
            read in (default: see the module doc).
        :param default: returned when nothing matches.
        :returns: the record's value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.UnknownEncoderError: for a record packed
            with a packer not registered in this session.
        :raises ~centidb.errors.IndexInconsistentError: (an index) if the
            entry points at a missing record.
        """
        for value in self.values(lo, hi, prefix, reverse, 1, include, txn):
            return value
        return default

    @_query_doc('key')
    def count(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
              include=False, txn=None):
        """Return how many records (or index entries) match the query.

        For an index, the keys below are index tuples.

        {query}
        :returns: the count, at most `max`.
        """
        return sum(1 for _ in self._matches(txn, lo, hi, prefix, reverse, max, include))


class Collection(_Queryable):
    """A named set of records in a store, with its indexes.

    Made by :meth:`centidb.store.Store.collection`, not directly; see there
    for the arguments users give. ``indices`` maps index names to the
    :class:`Index` objects added in this session. ``len(coll)`` is
    ``coll.count()``.

    :param store: the :class:`~centidb.store.Store`.
    :param name: the collection's name.
    :param info: its metadata ``dict`` (``'id'``, ``'encoder'``,
        ``'packer'``, ``'counter'``, ``'batched'``).
    :param key_func: ``key_func(record)``, or ``None``.
    :param txn_key_func: ``txn_key_func(txn, record)``, or ``None``.
    :param encoder: the record :class:`~centidb.encodings.Encoder`.
    :param packer: the default packer (an ``Encoder``).
    :param stored_indexes: a ``dict`` from the name to the prefix id of
        each index stored for the collection.
    """

    def __init__(self, store, name, info, key_func, txn_key_func, encoder,
                 packer, stored_indexes):
        self._store = store
        self._name = name
        self._coll_id = info['id']
        self._prefix = keylib.packs(self._coll_id)
        self._encoder = encoder
        self._packer = packer
        self._key_func = key_func
        self._txn_key_func = txn_key_func
        self._counter_name = info['counter']
        #: Index name -> :class:`Index`, for the indexes added in this session.
        self.indices = {}
        self._indexes = ()  # bound Index objects, in the order added
        self._index_specs = ()  # (func, prefix) of each, for index_entries()
        self._stored_indexes = dict(stored_indexes)  # name -> id
        self._unbound = set(stored_indexes)
        self._pack = encoder.pack
        self._unpack = encoder.unpack
        # Index functions must see what readers will see: with an inexact
        # encoder, put() indexes the decoded form of what it stores.
        self._exact = encoder.exact
        self._packer_header = bytes([store._encoder_id(packer)])
        self._plain_id = store._encoder_id(encodings.PLAIN_PACKER)
        self._plain_header = bytes([self._plain_id])
        self._end = keylib.next_prefix(self.prefix)
        self._info = info
        # Once a collection holds batches, reads that miss and every write
        # look for a batch covering the key (see centidb.batches).
        self._batched = bool(info.get('batched'))
        self._prepare_fast_paths()

    def __repr__(self):
        return f'<Collection {self.name!r} of {self.store!r}>'

    # Read-only: put() and get() are prepared from these.

    @property
    def store(self):
        """The :class:`~centidb.store.Store` holding the collection."""
        return self._store

    @property
    def name(self):
        """The collection's name (``str``)."""
        return self._name

    @property
    def coll_id(self):
        """The collection's number in the store; its keys start with it."""
        return self._coll_id

    @property
    def prefix(self):
        """The bytes every record key of the collection starts with."""
        return self._prefix

    @property
    def encoder(self):
        """The :class:`~centidb.encodings.Encoder` of the records."""
        return self._encoder

    @property
    def packer(self):
        """The default packer (an ``Encoder``) of new records."""
        return self._packer

    @property
    def key_func(self):
        """``key_func(record)`` making each record's key, or ``None``."""
        return self._key_func

    @property
    def txn_key_func(self):
        """``txn_key_func(txn, record)`` making each key, or ``None``."""
        return self._txn_key_func

    @property
    def counter_name(self):
        """The name of the counter that numbers keyless records."""
        return self._counter_name

    # --- indexes -------------------------------------------------------------

    def add_index(self, name, func):
        """Add (or, after a reopen, re-add) the index `name`; return it.

        Functions are not stored: after reopening a store, call
        ``add_index`` again for every index, or writes raise
        :class:`~centidb.errors.IndexNotAddedError`. A new index on a
        collection that already holds records is filled in for them, in a
        write transaction of its own; if `func` raises meanwhile, the
        exception propagates and the index is not created.

        :param name: the index's name, a non-empty ``str``.
        :param func: ``func(record)`` returns ``None`` (no entry), a value or
            tuple (one entry), or a list (one entry per element).
        :returns: the :class:`Index`.
        :raises TypeError: for an empty or non-``str`` `name`, or a `func`
            that is not callable.
        :raises ValueError: if the index was already added in this session.
        :raises ~centidb.errors.TransactionError: when creating a new index
            while this thread has a write transaction open on the store.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f'index name must be a non-empty str, not {name!r}')
        if not callable(func):
            raise TypeError(f'index function for {name!r} must be callable')
        return self.store._add_index(self, name, func)

    def _bind(self, index):
        self.indices[index.name] = index
        self._stored_indexes[index.name] = index.index_id
        self._unbound.discard(index.name)
        self._set_indexes(self._indexes + (index,))

    def _unbind(self, name):
        """Forget the index `name` in this session (dropped, or never committed)."""
        self.indices.pop(name, None)
        self._stored_indexes.pop(name, None)
        self._unbound.discard(name)
        self._set_indexes(tuple(index for index in self._indexes if index.name != name))

    def drop_index(self, name):
        """Delete the index `name` and all its entries from the store.

        Like ``add_index``, this commits in a transaction of its own. The
        index need not have been added in this session.

        :param name: the index's name.
        :raises ~centidb.errors.UnknownIndexError: (a ``KeyError``) if the
            collection has no stored index `name`.
        :raises ~centidb.errors.TransactionError: while this thread has a
            write transaction open on the store.
        :raises ~centidb.errors.EngineClosedError: if the store is closed.
        """
        self.store._drop_index(self, name)

    def _set_indexes(self, indexes):
        """Use `indexes` from now on (call after the rest of the index state)."""
        self._indexes = indexes
        self._index_specs = tuple((index.func, index.prefix) for index in indexes)
        self._prepare_fast_paths()

    def _prepare_fast_paths(self):
        """Prepare put() and get() again after the indexes or batching changed."""
        self._writer = RecordWriter(self)
        self._reader = RecordReader(self)

    def _check_writable(self):
        if self._unbound:
            names = ', '.join(sorted(self._unbound))
            raise IndexNotAddedError(
                f'collection {self.name!r} has stored index(es) {names} that '
                f'were not added since the store was opened; call '
                f'add_index() for each (or drop_index()) before writing, so '
                f'the index does not go stale')

    def _entry_tail(self, key_bytes):
        """What follows an index tuple in an entry: separator and record key."""
        return _ENTRY_SEP + key_bytes[len(self.prefix):]

    def _entries(self, data, entry_tail):
        """Return the index entry keys of a record (a list of bytes)."""
        return index_entries(self._index_specs, data, entry_tail)

    # --- encoding ----------------------------------------------------------------

    def _decode(self, stored):
        """The record value of a stored record."""
        if stored[0] == self._plain_id:      # the common case, without a call
            return self._unpack(stored[1:])
        return self._unpack(self._decode_raw(stored))

    def _decode_raw(self, stored):
        """The encoder's bytes of a stored record (its packer undone)."""
        packer = self.store._packers_by_id.get(stored[0])
        if packer is None:
            raise self.store._unknown_packer(stored[0], self.name)
        return packer.unpack(stored[1:])

    # --- writing -------------------------------------------------------------

    def put(self, rec, key=None, blind=False, txn=None, packer=None):
        """Store `rec` and update its index entries; return a :class:`Record`.

        The key is `key` if given, else ``key_func(rec)``, else
        ``txn_key_func(txn, rec)``, else the next value of the collection's
        counter. If the key function, an index function or the encoder
        raises, nothing is written and the exception propagates.

        :param rec: the record value, or a :class:`Record`, whose ``data``
            is stored and whose ``key`` (if not ``None``) is reused.
        :param key: the key tuple (a bare value means a 1-tuple).
        :param blind: false: any record already under the key is read so
            its stale index entries are removed. True skips that read: the
            caller promises the key is new (if it is not, the old record's
            index entries that differ are left behind, pointing at the new
            record).
        :param txn: a write :class:`~centidb.store.Transaction` of the store
            (default: see the module doc).
        :param packer: the :class:`~centidb.encodings.Encoder` that
            compresses this record (default: the collection's packer).
        :returns: the stored :class:`Record`.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key or index
            tuple element the key codec cannot encode (also
            :class:`~centidb.errors.KeyEncodingError`, as
            :func:`~centidb.keylib.packs`).
        :raises ValueError: if the packed key or an index entry is longer
            than the engine's ``max_key_size``.
        :raises TypeError: if `txn` is not a transaction of this store, or
            `packer` not an ``Encoder``.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        :raises ~centidb.errors.UnknownEncoderError: if `packer` is new to
            the store while this thread has a write transaction open.
        """
        store = self.store
        if txn is None:
            txn = store._current_write_txn()
            if txn is None:
                if packer is not None:
                    store._encoder_id(packer)   # registers it before begin()
                with store.begin(True) as own:
                    return self.put(rec, key, blind, own, packer)
        if packer is None:
            record = self._writer.write(txn, rec, key, blind)
            if record is not None:
                return record
            header = self._packer_header
        else:
            header = bytes([store._encoder_id(packer)])
        return self._put(txn, store._raw_txn(txn, True), rec, key, blind, packer, header)

    def _put(self, txn, raw, rec, key, blind, packer, header):
        if self._unbound:
            self._check_writable()
        old_record = None
        if type(rec) is Record:
            old_record = rec
            if key is None:
                key = rec.key
            rec = rec.data
        data = rec
        # Everything user code can fail on runs before the first write.
        encoded = self._pack(data)
        value = header + (packer or self.packer).pack(encoded)
        indexed = data if self._exact else self._unpack(encoded)
        heads = None
        if key is not None:
            key = _as_key(key)
        elif self.key_func is not None:
            key = _as_key(self.key_func(data))
        elif self.txn_key_func is not None:
            key = _as_key(self.txn_key_func(txn, data))
        else:
            # The counter moves only once all user code has succeeded.
            heads = index_entries(self._index_specs, indexed, _EMPTY)
            key = (self.store._count(raw, self.counter_name, 1, 1),)
        key_bytes = keylib.packs(key, self.prefix)
        entry_tail = self._entry_tail(key_bytes)
        if heads is None:
            entries = index_entries(self._index_specs, indexed, entry_tail)
        else:
            entries = [head + entry_tail for head in heads]
        limit = self.store.engine.max_key_size
        if limit is not None:
            self._check_key_sizes(key, key_bytes, entries, limit)
        batched_old = self._split_batch(raw, key_bytes) if self._batched else None
        # Without indexes there are no stale entries to find: skip the read.
        if not blind and self._indexes:
            old = raw.get(key_bytes) if batched_old is None else batched_old
            if old is not None:
                if (old_record is not None and old_record.coll is self
                        and old_record._indexes is self._indexes
                        and old_record.key == key and old_record._stored == old):
                    old_entries = old_record._entries
                else:
                    old_entries = self._entries(self._decode(old), entry_tail)
                _delete_stale(raw, old_entries, entries)
        writes = [(key_bytes, value)]
        writes += [(entry, _EMPTY) for entry in entries]
        raw._put_many(writes)
        return Record(self, data, key, value, entries, self._indexes)

    def _check_key_sizes(self, key, key_bytes, entries, limit):
        """Refuse, before writing anything, keys the engine cannot store."""
        if len(key_bytes) > limit:
            raise ValueError(f'key {key!r} of collection {self.name!r} packs to '
                             f'{len(key_bytes)} bytes; the engine stores at most {limit}')
        for entry in entries:
            if len(entry) > limit:
                index = next(index for index in self._indexes
                             if entry.startswith(index.prefix))
                raise ValueError(
                    f'index {index.name!r} entry for key {key!r} packs to '
                    f'{len(entry)} bytes; the engine stores at most {limit}')

    def delete(self, key, txn=None):
        """Delete the record under `key` (or a :class:`Record`'s key).

        Removes its index entries too.

        :param key: the key tuple (a bare value means a 1-tuple), or a
            stored :class:`Record`.
        :param txn: a write :class:`~centidb.store.Transaction` of the store
            (default: see the module doc).
        :returns: the deleted :class:`Record`, or ``None`` if there was no
            such record.
        :raises ValueError: for a :class:`Record` that was never stored.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        """
        if type(key) is Record:
            if key.key is None:
                raise ValueError('this Record was never stored, so it has no key to delete')
            key = key.key
        return self.store._run(txn, True, self._delete, _as_key(key))

    def _delete(self, txn, raw, key):
        if self._unbound:
            self._check_writable()
        key_bytes = keylib.packs(key, self.prefix)
        old = raw.get(key_bytes)
        if old is None:
            if not self._batched:
                return None
            old = self._split_batch(raw, key_bytes, rejoin=True)
            if old is None:
                return None
        data = self._decode(old)
        entries = self._entries(data, self._entry_tail(key_bytes))
        for entry in entries:
            raw.delete(entry)
        raw.delete(key_bytes)
        return Record(self, data, key)

    # --- batches -------------------------------------------------------------

    def batch(self, lo=None, hi=None, prefix=None, max_recs=None, max_bytes=None,
              packer=encodings.ZLIB_PACKER, txn=None):
        """Store runs of adjacent records in the range as compressed batches.

        Every record in the range is rewritten into batches, each compressed
        with `packer` as one value. Batches that straddle the range ends are
        rewritten whole. Reads and writes keep working on batched records;
        index entries are unchanged. The whole range is held in memory while
        it is rewritten.

        :param lo: the lowest key included, as for :meth:`items`.
        :param hi: the key at which to stop (excluded), as for :meth:`items`.
        :param prefix: only keys that start with this tuple, as for
            :meth:`items`.
        :param max_recs: the most records in one batch (default and maximum
            :data:`~centidb.batches.MAX_MEMBERS`).
        :param max_bytes: the most bytes of keys and encoded values in one
            batch (default: no limit); a record larger than this makes a
            batch by itself.
        :param packer: the :class:`~centidb.encodings.Encoder` that
            compresses each batch.
        :param txn: a write :class:`~centidb.store.Transaction` of the store
            (default: see the module doc).
        :returns: ``(records found, batches made, last key)``, where `last
            key` is the key of the last record rewritten (or ``None``), so a
            long range can be batched in pieces.
        :raises TypeError: if `max_recs` or `max_bytes` is not an ``int``,
            `packer` not an ``Encoder``, or `txn` not a transaction of this
            store.
        :raises ValueError: if `max_recs` or `max_bytes` is outside what the
            batch format holds.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        :raises ~centidb.errors.UnknownEncoderError: if `packer` is new to
            the store while this thread has a write transaction open, or a
            record in the range was packed with an unregistered packer.
        """
        limits = {'max_recs': (max_recs, batches.MAX_MEMBERS),
                  'max_bytes': (max_bytes, batches.MAX_VALUE_BYTES)}
        for name, (value, limit) in limits.items():
            if value is None:
                continue
            if type(value) is not int:
                raise TypeError(f'{name} must be an int or None, not {type(value).__name__!r}')
            if not 1 <= value <= limit:
                raise ValueError(f'{name}={value} is outside what the batch format '
                                 f'can hold: 1 to {limit}')
        packer_id = self.store._encoder_id(packer)
        lo_bytes, hi_bytes = _key_range(self.prefix, lo, hi, prefix, False)
        return self.store._run(txn, True, self._batch, lo_bytes, hi_bytes,
                               max_recs or batches.MAX_MEMBERS, max_bytes, packer_id, packer)

    def _batch(self, txn, raw, lo_bytes, hi_bytes, max_recs, max_bytes, packer_id, packer):
        if self._unbound:
            self._check_writable()
        records, physical = self._collect_for_batching(raw, lo_bytes, hi_bytes)
        # Build every new physical record before changing anything, so a
        # failure leaves the transaction as it was.
        writes, made = [], 0
        run, run_bytes = [], 0
        for member in records:
            size = len(member[0]) + len(member[1])
            if len(member[0]) > batches.MAX_KEY_BYTES:
                made += self._add_run(writes, run, packer_id, packer)
                run, run_bytes = [], 0
                # Too long to batch: stays plain.
                writes.append((self.prefix + member[0], self._plain_header + member[1]))
                continue
            if run and (len(run) >= max_recs
                        or (max_bytes is not None and run_bytes + size > max_bytes)):
                made += self._add_run(writes, run, packer_id, packer)
                run, run_bytes = [], 0
            run.append(member)
            run_bytes += size
        made += self._add_run(writes, run, packer_id, packer)
        for key_bytes in physical:
            raw.delete(key_bytes)
        for key_bytes, value in writes:
            raw.put(key_bytes, value)
        if made:
            # Written every time: an earlier batch() may have been rolled back.
            self._info = dict(self._info, batched=True)
            self.store._save_collection_info(raw, self.name, self._info)
            self._batched = True
            self._prepare_fast_paths()
        last = keylib.unpacks(records[-1][0]) if records else None
        return len(records), made, last

    def _collect_for_batching(self, raw, lo_bytes, hi_bytes):
        """Records in range (whole batches at the ends) and their physical keys.

        Records are ``(packed key without prefix, encoded value)`` pairs.
        """
        records, physical = [], []
        start = len(self.prefix)
        for key_bytes, stored in raw.items(lo_bytes, self._end):
            if stored[0] & batches.BATCH_FLAG:
                members = self._raw_members(stored)
                if self.prefix + members[0][0] >= hi_bytes:
                    break
                records.extend(members)
                physical.append(key_bytes)
                if key_bytes >= hi_bytes:
                    break
            else:
                if key_bytes >= hi_bytes:
                    break
                records.append((key_bytes[start:], self._decode_raw(stored)))
                physical.append(key_bytes)
        return records, physical

    def _add_run(self, writes, run, packer_id, packer, plain_single=False):
        """Append the physical records of `run` to `writes`; 1 if a batch."""
        if not run:
            return 0
        if not (plain_single and len(run) == 1):
            key_bytes = batches.batch_key(self.prefix, run)
            limit = self.store.engine.max_key_size
            if limit is None or len(key_bytes) <= limit:
                writes.append((key_bytes, batches.encode_batch(packer_id, packer, run)))
                return 1
        # A lone member, or a batch key longer than the engine stores.
        writes.extend((self.prefix + key, self._plain_header + value) for key, value in run)
        return 0

    def _raw_members(self, stored):
        """A stored batch's members: ``(packed key without prefix, encoded value)``."""
        packer_id = batches.batch_packer_id(stored)
        packer = self.store._packers_by_id.get(packer_id)
        if packer is None:
            raise self.store._unknown_packer(packer_id, self.name)
        return batches.decode_batch(stored, packer, self.name)

    def _members(self, stored):
        """A stored batch's members as ``(key bytes, stored value)``, like plain records."""
        prefix, header = self.prefix, self._plain_header
        return [(prefix + key, header + value) for key, value in self._raw_members(stored)]

    def _covering_batch(self, raw, key_bytes):
        """The batch whose key range holds `key_bytes`: (physical key, stored) or None."""
        found = raw.first(key_bytes, self._end)
        if found is not None and found[1][0] & batches.BATCH_FLAG:
            last, first = keylib.unpacks_list(found[0], self.prefix)
            if keylib.packs(first, self.prefix) <= key_bytes:
                return found
        return None

    def _split_batch(self, raw, key_bytes, rejoin=False):
        """Take `key_bytes` out of the batch covering it; return its stored value.

        The members below and above the key are written back as two batches
        (so a new record can go between them), or as one with `rejoin`; a
        lone member becomes a plain record. Returns None if no batch covers
        the key or the key is not a member.
        """
        found = self._covering_batch(raw, key_bytes)
        if found is None:
            return None
        physical_key, stored = found
        members = self._raw_members(stored)      # names a missing packer clearly
        packer_id = batches.batch_packer_id(stored)
        packer = self.store._packers_by_id[packer_id]
        key = key_bytes[len(self.prefix):]
        below, above, old = [], [], None
        for member in members:
            if member[0] < key:
                below.append(member)
            elif member[0] > key:
                above.append(member)
            else:
                old = self._plain_header + member[1]
        writes = []
        if rejoin:
            self._add_run(writes, below + above, packer_id, packer, plain_single=True)
        else:
            self._add_run(writes, below, packer_id, packer, plain_single=True)
            self._add_run(writes, above, packer_id, packer, plain_single=True)
        raw.delete(physical_key)
        for write_key, value in writes:
            raw.put(write_key, value)
        return old

    def _get_stored(self, raw, key_bytes):
        """The stored value of a record, plain or inside a batch, or None."""
        if not self._batched:
            return raw.get(key_bytes)
        # One seek finds either the record itself or the batch that may hold it.
        found = raw.first(key_bytes, self._end)
        if found is None:
            return None
        physical_key, stored = found
        if physical_key == key_bytes:
            return stored
        if stored[0] & batches.BATCH_FLAG:
            for member_key, member_stored in self._members(stored):
                if member_key == key_bytes:
                    return member_stored
        return None

    def _get_stored_in(self, txn, raw, key_bytes):
        return self._get_stored(raw, key_bytes)

    def _get_stored_many(self, txn, raw, packed):
        return [self._get_stored(raw, key_bytes) for key_bytes in packed]

    def _logical_items(self, raw, lo, hi, reverse):
        """Iterate ``(key bytes, stored)`` in [lo, hi), batch members expanded.

        A batch's members are decoded once; if the transaction writes while
        they are being yielded (which may split or rewrite that batch), the
        scan starts again right after the last key it yielded.
        """
        if reverse:
            return self._logical_reverse(raw, lo, hi)
        return self._logical_forward(raw, lo, hi)

    def _logical_forward(self, raw, lo, hi):
        start = lo
        while True:
            writes = raw.writes
            restart = False
            # A batch sits at its highest member, so the first one at or past
            # hi may still hold members below hi: scan to the collection end.
            items = raw.items(start, self._end)
            try:
                for key_bytes, stored in items:
                    if not stored[0] & batches.BATCH_FLAG:
                        if key_bytes >= hi:
                            return
                        yield key_bytes, stored
                        continue
                    for member_key, member_stored in self._members(stored):
                        if member_key >= hi:
                            return
                        if member_key >= start:
                            yield member_key, member_stored
                            if raw.writes != writes:
                                start = member_key + b'\x00'
                                restart = True
                                break
                    if restart:
                        break
            finally:
                items.close()
            if not restart:
                return

    def _logical_reverse(self, raw, lo, hi):
        while True:
            writes = raw.writes
            restart = False
            for member_key, member_stored in self._straddling_members(raw, lo, hi):
                yield member_key, member_stored
                if raw.writes != writes:
                    hi, restart = member_key, True
                    break
            if restart:
                continue
            items = raw.items(lo, hi, True)
            try:
                for key_bytes, stored in items:
                    if not stored[0] & batches.BATCH_FLAG:
                        yield key_bytes, stored
                        continue
                    for member_key, member_stored in reversed(self._members(stored)):
                        if member_key < lo:
                            return
                        if member_key < hi:
                            yield member_key, member_stored
                            if raw.writes != writes:
                                hi, restart = member_key, True
                                break
                    if restart:
                        break
            finally:
                items.close()
            if not restart:
                return

    def _straddling_members(self, raw, lo, hi):
        """Members below `hi` (and from `lo`) of the batch sitting at or after hi."""
        found = raw.first(hi, self._end)
        if found is not None and found[1][0] & batches.BATCH_FLAG:
            return [m for m in self._members(found[1]) if lo <= m[0] < hi][::-1]
        return []

    # --- reading -------------------------------------------------------------

    def get(self, key, default=None, txn=None, raw=False, rec=False):
        """Return the value stored under `key`, or `default`.

        :param key: the key tuple (a bare value means a 1-tuple).
        :param default: returned when there is no record under `key`.
        :param txn: a :class:`~centidb.store.Transaction` of the store to
            read in (default: see the module doc).
        :param raw: return the encoder's bytes (the packer undone) instead
            of decoding them.
        :param rec: return a :class:`Record` (ignored with `raw`).
        :returns: the value, its bytes or a :class:`Record`, or `default`.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key element
            the key codec cannot encode (see :func:`~centidb.keylib.packs`).
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.UnknownEncoderError: for a record packed
            with a packer not registered in this session.
        """
        if txn is not None and not (raw or rec or self._batched):
            return self._reader.get(txn, key, default)
        key = _as_key(key)
        key_bytes = keylib.packs(key, self.prefix)
        store = self.store
        if self._batched:
            stored = store._run(txn, False, self._get_stored_in, key_bytes)
        elif txn is None:
            txn = store._current_write_txn()
            if txn is None:
                stored = store.engine.get(key_bytes)
            else:
                stored = txn.raw.get(key_bytes)
        else:
            stored = store._raw_txn(txn, False).get(key_bytes)
        if stored is None:
            return default
        if raw:
            return self._decode_raw(stored)
        data = self._decode(stored)
        if rec:
            entries = self._entries(data, self._entry_tail(key_bytes))
            return Record(self, data, key, stored, entries, self._indexes)
        return data

    def get_many(self, keys, default=None, txn=None):
        """Return a list with the value of each key in `keys` (or `default`).

        All are read in one transaction.

        :param keys: an iterable of key tuples (a bare value means a
            1-tuple).
        :param default: the item for a key with no record.
        :param txn: a :class:`~centidb.store.Transaction` of the store to
            read in (default: see the module doc).
        :returns: a ``list``, in the order of `keys`.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key element
            the key codec cannot encode (see :func:`~centidb.keylib.packs`).
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.UnknownEncoderError: for a record packed
            with a packer not registered in this session.
        """
        packed = [keylib.packs(_as_key(key), self.prefix) for key in keys]
        stored = self.store._run(txn, False, self._get_stored_many, packed)
        decode = self._decode
        return [default if value is None else decode(value) for value in stored]

    def _iter(self, txn, lo, hi, prefix, reverse, max, include):
        _check_query(reverse, max)
        lo_bytes, hi_bytes = _key_range(self.prefix, lo, hi, prefix, include)
        return self.store._iterate(txn, lo_bytes, hi_bytes, reverse, max,
                                   self._logical_items)

    @_query_doc('key')
    def items(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
              include=False, txn=None):
        """Iterate ``(key, value)`` pairs in key order.

        {query}
        :returns: an iterator of ``(key tuple, value)``.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record packed with a packer not registered in this session.
        """
        pairs = self._iter(txn, lo, hi, prefix, reverse, max, include)
        return _decoded_items(pairs, len(self.prefix), self._decode)

    @_query_doc('key')
    def keys(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
             include=False, txn=None):
        """Iterate keys in key order.

        {query}
        :returns: an iterator of key tuples.
        """
        pairs = self._iter(txn, lo, hi, prefix, reverse, max, include)
        return _decoded_keys(pairs, len(self.prefix))

    @_query_doc('key')
    def values(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
               include=False, txn=None):
        """Iterate values in key order.

        {query}
        :returns: an iterator of record values.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record packed with a packer not registered in this session.
        """
        pairs = self._iter(txn, lo, hi, prefix, reverse, max, include)
        return _decoded_values(pairs, self._decode)

    def _matches(self, txn, lo, hi, prefix, reverse, max, include):
        return self._iter(txn, lo, hi, prefix, reverse, max, include)

    def __len__(self):
        return self.count()


def _decoded_items(pairs, start, decode):
    unpacks = keylib.unpacks
    for key_bytes, stored in pairs:
        yield unpacks(key_bytes[start:]), decode(stored)


def _decoded_keys(pairs, start):
    unpacks = keylib.unpacks
    for key_bytes, _ in pairs:
        yield unpacks(key_bytes[start:])


def _decoded_values(pairs, decode):
    for _, stored in pairs:
        yield decode(stored)


class Index(_Queryable):
    """A secondary index of a :class:`Collection`; made by ``add_index()``.

    Query methods range over index tuples with the collection's query
    parameters. Values are read in the same transaction (snapshot) as the
    index entries. Made by :meth:`Collection.add_index`, not directly; the
    arguments are kept as read-only attributes of the same names.

    :param coll: the :class:`Collection` indexed.
    :param name: the index's name.
    :param index_id: the index's prefix id in the store.
    :param func: the index function (see :meth:`Collection.add_index`).
    """

    def __init__(self, coll, name, index_id, func):
        self._coll = coll
        self._name = name
        self._index_id = index_id
        self._func = func
        self._prefix = keylib.packs(index_id)

    # Read-only: the collection's put() is prepared from these.

    @property
    def coll(self):
        """The :class:`Collection` indexed."""
        return self._coll

    @property
    def name(self):
        """The index's name (``str``)."""
        return self._name

    @property
    def index_id(self):
        """The index's number in the store; its entries start with it."""
        return self._index_id

    @property
    def func(self):
        """The index function."""
        return self._func

    @property
    def prefix(self):
        """The bytes every entry of the index starts with."""
        return self._prefix

    def __repr__(self):
        return f'<Index {self.coll.name}.{self.name}>'

    def _scan(self, txn, lo, hi, prefix, reverse, max, include):
        """Iterate ``(index tuple, record key, raw txn)`` for the query."""
        _check_query(reverse, max)
        lo_bytes, hi_bytes = _key_range(self.prefix, lo, hi, prefix, include)
        return self.coll.store._iterate(txn, lo_bytes, hi_bytes, reverse, max,
                                        self._split_entries)

    def _split_entries(self, raw, lo, hi, reverse):
        """Iterate the entries in [lo, hi) as ``(index tuple, record key, raw)``."""
        unpacks_list = keylib.unpacks_list
        for entry in raw.keys(lo, hi, reverse):
            parts = unpacks_list(entry, self.prefix)
            if len(parts) != 2:
                raise self._corrupt_entry_error(entry)
            yield parts[0], parts[1], raw

    def _corrupt_entry_error(self, entry):
        return CorruptKeyError(f'index entry {entry!r} does not hold an '
                               f'index tuple and a record key')

    def _records(self, txn, lo, hi, prefix, reverse, max, include, items):
        """Iterate the records (or index tuple and record pairs) of a query."""
        _check_query(reverse, max)
        lo_bytes, hi_bytes = _key_range(self.prefix, lo, hi, prefix, include)
        reader = self.coll._reader

        def source(raw, lo, hi, reverse):
            return reader.index_records(self, items, raw, lo, hi, reverse)
        return self.coll.store._iterate(txn, lo_bytes, hi_bytes, reverse, max, source)

    @_query_doc('index tuple')
    def pairs(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
              include=False, txn=None):
        """Iterate ``(index tuple, record key)`` pairs, one per matching entry.

        {query}
        :returns: an iterator of ``(index tuple, key tuple)``.
        """
        entries = self._scan(txn, lo, hi, prefix, reverse, max, include)
        return ((tup, key) for tup, key, _ in entries)

    @_query_doc('index tuple')
    def tups(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
             include=False, txn=None):
        """Iterate index tuples (one per matching entry).

        {query}
        :returns: an iterator of index tuples.
        """
        entries = self._scan(txn, lo, hi, prefix, reverse, max, include)
        return (tup for tup, _, _ in entries)

    @_query_doc('index tuple')
    def keys(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
             include=False, txn=None):
        """Iterate the keys of the records the matching entries point to.

        {query}
        :returns: an iterator of key tuples, one per entry.
        """
        entries = self._scan(txn, lo, hi, prefix, reverse, max, include)
        return (key for _, key, _ in entries)

    @_query_doc('index tuple')
    def items(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
              include=False, txn=None):
        """Iterate ``(index tuple, record value)`` pairs, one per matching entry.

        {query}
        :returns: an iterator of ``(index tuple, value)``.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record packed with a packer not registered in this session.
        :raises ~centidb.errors.IndexInconsistentError: (while iterating)
            for an entry that points at a missing record.
        """
        return self._records(txn, lo, hi, prefix, reverse, max, include, True)

    @_query_doc('index tuple')
    def values(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
               include=False, txn=None):
        """Iterate the values of the records the matching entries point to.

        {query}
        :returns: an iterator of record values, one per entry.
        :raises ~centidb.errors.UnknownEncoderError: (while iterating) for a
            record packed with a packer not registered in this session.
        :raises ~centidb.errors.IndexInconsistentError: (while iterating)
            for an entry that points at a missing record.
        """
        return self._records(txn, lo, hi, prefix, reverse, max, include, False)

    def _matches(self, txn, lo, hi, prefix, reverse, max, include):
        return self._scan(txn, lo, hi, prefix, reverse, max, include)

    def get(self, x, default=None, txn=None):
        """Return the value of the first record whose index tuple equals `x`.

        "First" is in record key order among the entries for `x`.

        :param x: the index tuple (a bare value means a 1-tuple).
        :param default: returned when no record has that index tuple.
        :param txn: a :class:`~centidb.store.Transaction` of the store to
            read in (default: see the module doc).
        :returns: the record's value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.IndexInconsistentError: if the entry points
            at a missing record.
        :raises ~centidb.errors.UnknownEncoderError: for a record packed
            with a packer not registered in this session.
        """
        coll = self._coll
        if txn is not None and not coll._batched:
            return coll._reader.index_get(txn, self, x, default)
        stored = coll.store._run(txn, False, self._first_record, _as_key(x))
        return default if stored is None else coll._decode(stored)

    def has(self, x, txn=None):
        """Return True if some record has the index tuple `x`.

        :param x: the index tuple (a bare value means a 1-tuple).
        :param txn: a :class:`~centidb.store.Transaction` of the store to
            read in (default: see the module doc).
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        """
        return self.coll.store._run(txn, False, self._first_entry, _as_key(x)) is not None

    def _first_entry(self, txn, raw, x):
        """The first entry key for index tuple `x`, and its length up to the record key."""
        # Entries for exactly x are packs(x), KEY_SEP, packed record key.
        packed = keylib.packs(x, self.prefix)
        found = raw.first(packed + _ENTRY_SEP, keylib.after_key(packed))
        return None if found is None else (found[0], len(packed) + 1)

    def _first_record(self, txn, raw, x):
        found = self._first_entry(txn, raw, x)
        if found is None:
            return None
        entry, head_length = found
        coll = self.coll
        stored = coll._get_stored(raw, coll.prefix + entry[head_length:])
        if stored is None:
            raise self._missing_record_error(keylib.unpacks(entry[head_length:]))
        return stored

    def _missing_record_error(self, key):
        return IndexInconsistentError(
            f'index {self.name!r} of collection {self.coll.name!r} points at '
            f'missing record {key!r}: the index is inconsistent (was a blind put '
            f'used on an existing key, or an index function changed?)')

