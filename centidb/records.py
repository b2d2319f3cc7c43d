"""Records: how a collection's values and index entries are written and read.

A stored record is one engine key (the collection prefix and the packed key
tuple) whose value is a header byte (the packer's id) and the packed encoder
bytes, plus one engine key per index entry (the index prefix, the packed index
tuple, ``KEY_SEP``, the packed record key) with an empty value.

:class:`Records` holds everything the write and read paths need for one
collection and does the general case of each. Two twinned classes do the
common case fast: :class:`RecordWriter` (a put of a plain value) and
:class:`RecordReader` (get by key or by index). They, :class:`Record` and
:func:`index_entries` have compiled twins in ``centidb._speedups``, chosen by
:mod:`centidb.impl`; everything they use is passed to their constructors.

This layer calls :mod:`centidb.batches`, the transaction layer and engines;
never the collection layer above.
"""

import types

from centidb import impl, keylib
from centidb.errors import (
    CentiError, CorruptKeyError, CorruptRecordError, IndexInconsistentError,
    IndexNotAddedError, KeyKindMismatchError,
)
from centidb.keyformat import KEY_SEP

__all__ = ['Record', 'Records', 'RecordWriter', 'RecordReader', 'index_entries',
           'as_key', 'split_entries', 'first_entry', 'delete_index_entries']

ENTRY_SEP = bytes([KEY_SEP])
_EMPTY = b''


def as_key(value):
    """A key tuple from a tuple (or namedtuple) or a bare value.

    :param value: a tuple, or one key element.
    """
    if type(value) is tuple:
        return value
    return tuple(value) if isinstance(value, tuple) else (value,)


class Record:
    """A record as stored: its key, its value (``data``), and update state.

    A Record returned by ``put()`` or by ``get(..., rec=True)`` also
    remembers the stored bytes and index entries, so that a later ``put()``
    of it can skip decoding the old version when the store still holds
    exactly what was read. The arguments are kept as attributes of the same
    names; the ones starting with ``_`` are that private state.

    :param coll: the collection the record belongs to.
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


def index_entries(specs, data, tail):
    """Return the index entry keys of one record.

    An exception raised by an index function propagates.

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


def delete_stale(etxn, old_entries, entries):
    """Delete the index entries of a record's old version it no longer has.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param old_entries: the old version's entries (or None).
    :param entries: the new version's entries.
    """
    if old_entries:
        keep = set(entries)
        for entry in old_entries:
            if entry not in keep:
                etxn.delete(entry)


def checked_engine_txn(txns, txn_class, txn, write):
    """The engine transaction of the store transaction `txn`, checked.

    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param txn_class: :class:`~centidb.txn.Transaction`.
    :param txn: what the caller passed as ``txn=``.
    :param write: True if the caller writes.
    :raises TypeError: if `txn` is not a transaction of `txns`.
    :raises ~centidb.errors.TransactionError: if it has ended, or is
        read-only and `write` is true.
    """
    if type(txn) is txn_class and txn.manager is txns and (txn.write or not write):
        etxn = txn.engine_txn
        if etxn is not None:
            return etxn
    return txns.engine_txn(txn, write)   # raises the right error


def put_many(etxn, writes):
    """Write the ``(key, value)`` list `writes` through the engine's fastest path.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param writes: a ``list`` of ``(key, value)`` pairs of checked bytes.
    """
    fast_put_many = etxn._fast_put_many
    if fast_put_many is None:
        etxn._put_many(writes)
    else:
        etxn.writes += len(writes)
        try:
            fast_put_many(writes)
        except Exception as exc:
            etxn._put_many_failed(exc, writes)


class RecordWriter:
    """The common case of ``Collection.put``, prepared for one collection.

    :meth:`write` handles a put of a plain value (not a :class:`Record`)
    with a key or a ``key_func``, an exact encoder, the collection's own
    packer, every stored index added and no batches. The compiled twin
    behaves identically.

    :param coll: the collection, kept in each :class:`Record`.
    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param txn_class: :class:`~centidb.txn.Transaction`.
    :param usable: False when the collection's puts are never the common
        case; :meth:`write` then returns None at once.
    :param prefix: the collection's key prefix.
    :param encode: the encoder's ``encode``.
    :param compress: the packer's ``encode``, or None for the plain packer.
    :param header: the packer id byte that starts each stored value.
    :param key_func: the collection's ``key_func``, or None.
    :param specs: ``(index function, index prefix)`` of each index.
    :param indexes: the index set, kept in each :class:`Record`.
    :param limit: the engine's longest key, or None.
    :param old_entries: ``old_entries(stored, entry tail)`` returns the index
        entries of a stored record.
    :param too_long: ``too_long(key, key bytes, entries)`` raises the
        ``ValueError`` for a key or entry longer than `limit`.
    :param record_class: the :class:`Record` class in use: a value of this
        type is not the common case.
    """

    def __init__(self, coll, txns, txn_class, usable, prefix, encode, compress, header,
                 key_func, specs, indexes, limit, old_entries, too_long, record_class):
        self.coll = coll
        self.txns = txns
        self.txn_class = txn_class
        self.usable = usable
        self.prefix = prefix
        self.encode = encode
        self.compress = compress
        self.header = header
        self.key_func = key_func
        self.specs = specs
        self.indexes = indexes
        self.limit = limit
        self.old_entries = old_entries
        self.too_long = too_long
        self.record_class = record_class

    def write(self, txn, data, key, blind):
        """Store `data` in the store transaction `txn`; return its Record.

        Raises what the key function, index functions, encoder or engine
        raise, having written nothing.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param data: the record value.
        :param key: the key, or ``None`` to use the collection's ``key_func``.
        :param blind: as for ``Collection.put``.
        :returns: the stored :class:`Record`, or ``None``, having called no
            user code and written nothing, when the put is not the common
            case.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        """
        etxn = checked_engine_txn(self.txns, self.txn_class, txn, True)
        if not self.usable or type(data) is Record or type(data) is self.record_class:
            return None
        if key is None:
            if self.key_func is None:
                return None
            encoded = self.encode(data)
            key = self.key_func(data)
        else:
            encoded = self.encode(data)
        value = self.header + (encoded if self.compress is None else self.compress(encoded))
        key = as_key(key)
        key_bytes = keylib.packs(key, self.prefix)
        entry_tail = ENTRY_SEP + key_bytes[len(self.prefix):]
        entries = index_entries(self.specs, data, entry_tail)
        limit = self.limit
        if limit is not None and (len(key_bytes) > limit
                                  or any(len(entry) > limit for entry in entries)):
            self.too_long(key, key_bytes, entries)
        if not blind and self.indexes:
            old = etxn.get(key_bytes)
            if old is not None:
                delete_stale(etxn, self.old_entries(old, entry_tail), entries)
        writes = [(key_bytes, value)]
        writes += [(entry, _EMPTY) for entry in entries]
        put_many(etxn, writes)
        return Record(self.coll, data, key, value, entries, self.indexes)


class RecordReader:
    """The common case of ``Collection.get`` and ``Index.get``, and index scans.

    Prepared for one collection: it reads through the engine transaction's
    unchecked getter when it has one, and decodes plain records inline. The
    compiled twin behaves identically.

    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param txn_class: :class:`~centidb.txn.Transaction`.
    :param prefix: the collection's key prefix.
    :param plain_id: the id of the plain packer (no compression).
    :param decode_plain: the encoder's ``decode``; with `plain_id`, the
        compiled twin decodes plain records inline.
    :param decode: ``decode(stored)`` for any stored value (the pure
        version uses only this).
    :param limit: the engine's longest key, or None.
    :param batched: True if the collection holds batches.
    :param batch_get: ``batch_get(engine txn, key bytes)`` reads a record
        in a batch or not; reads try it when the plain read misses, for a
        record a ``batch()`` moved, in this transaction or another process.
    :param missing: ``missing(index name, key)`` returns the error for an
        entry pointing at a missing record.
    :param corrupt_entry: ``corrupt_entry(entry)`` returns the error for an
        entry that does not hold an index tuple and a record key.
    :param corrupt_record: ``corrupt_record(key bytes, exception)`` returns
        the error for a stored value that cannot be decoded.
    """

    def __init__(self, txns, txn_class, prefix, plain_id, decode_plain, decode, limit,
                 batched, batch_get, missing, corrupt_entry, corrupt_record):
        self.txns = txns
        self.txn_class = txn_class
        self.prefix = prefix
        self.plain_id = plain_id
        self.decode_plain = decode_plain
        self.decode = decode
        self.limit = limit
        self.batched = batched
        self.batch_get = batch_get
        self.missing = missing
        self.corrupt_entry = corrupt_entry
        self.corrupt_record = corrupt_record

    def _stored(self, etxn, key_bytes):
        if self.batched:
            return self.batch_get(etxn, key_bytes)
        fast_get = etxn._fast_get
        if fast_get is None or (self.limit is not None and len(key_bytes) > self.limit):
            return etxn.get(key_bytes)
        return fast_get(key_bytes)

    def get(self, txn, key, default):
        """Return the value stored under `key`, or `default`.

        :param txn: a :class:`~centidb.txn.Transaction` of the store.
        :param key: the key tuple (a bare value means a 1-tuple).
        :param default: returned when nothing is stored under `key`.
        :returns: the decoded record value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        """
        key_bytes = keylib.packs(as_key(key), self.prefix)
        etxn = checked_engine_txn(self.txns, self.txn_class, txn, False)
        stored = self._stored(etxn, key_bytes)
        if stored is None and not self.batched:
            # Another process may have batched the collection since it was opened.
            stored = self.batch_get(etxn, key_bytes)
        if stored is None:
            return default
        return self._decoded(key_bytes, stored)

    def _decoded(self, key_bytes, stored):
        try:
            return self.decode(stored)
        except CentiError:
            raise
        except Exception as exc:
            raise self.corrupt_record(key_bytes, exc) from exc

    def index_get(self, txn, index_prefix, index_name, x, default):
        """Return the value of the first record whose index tuple is `x`.

        :param txn: a :class:`~centidb.txn.Transaction` of the store.
        :param index_prefix: the index's prefix.
        :param index_name: the index's name, for errors.
        :param x: the index tuple (a bare value means a 1-tuple).
        :param default: returned when no record has that index tuple.
        :returns: the decoded record value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.IndexInconsistentError: if the entry points
            at a missing record.
        """
        packed = keylib.packs(as_key(x), index_prefix)
        etxn = checked_engine_txn(self.txns, self.txn_class, txn, False)
        found = etxn.first(packed + ENTRY_SEP, keylib.after_key(packed))
        if found is None:
            return default
        key_bytes = self.prefix + found[0][len(packed) + 1:]
        stored = self._stored(etxn, key_bytes)
        if stored is None and not self.batched:
            stored = self.batch_get(etxn, key_bytes)
        if stored is None:
            raise self.missing(index_name, keylib.unpacks(key_bytes, self.prefix))
        return self._decoded(key_bytes, stored)

    def index_records(self, index_prefix, index_name, items, etxn, lo, hi, reverse):
        """Iterate the records the entries of an index in ``[lo, hi)`` point at.

        :param index_prefix: the index's prefix.
        :param index_name: the index's name, for errors.
        :param items: yield ``(index tuple, value)`` pairs instead of values.
        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param lo: the lowest entry key, or ``None``.
        :param hi: the entry key at which to stop, or ``None``.
        :param reverse: iterate from `hi` down.
        :returns: an iterator of record values, or of pairs.
        :raises ~centidb.errors.CorruptKeyError: (while iterating) for an
            entry that does not hold an index tuple and a record key.
        :raises ~centidb.errors.IndexInconsistentError: (while iterating)
            for an entry that points at a missing record.
        """
        for entry in etxn.keys(lo, hi, reverse):
            parts = keylib.unpacks_list(entry, index_prefix)
            if len(parts) != 2:
                raise self.corrupt_entry(entry)
            key_bytes = keylib.packs(parts[1], self.prefix)
            stored = self._stored(etxn, key_bytes)
            if stored is None and not self.batched:
                # A batch() (in this transaction or another process) may have moved it.
                stored = self.batch_get(etxn, key_bytes)
            if stored is None:
                raise self.missing(index_name, parts[1])
            if items:
                yield parts[0], self._decoded(key_bytes, stored)
            else:
                yield self._decoded(key_bytes, stored)


class KeySource:
    """How a collection's records get their keys.

    :param kind: ``'key_func'``, ``'txn_key_func'`` or ``'auto'``, as
        recorded for the collection.
    :param key_func: ``key_func(record)``, or None.
    :param txn_key_func: ``txn_key_func(txn, record)``, or None.
    :param next_key: ``next_key(engine txn)`` reads the counter's value,
        the next auto-increment key (``at_least`` then moves it on).
    :param at_least: ``at_least(engine txn, n)`` raises the counter to `n`.
    """

    __slots__ = ('kind', 'key_func', 'txn_key_func', 'next_key', 'at_least')

    def __init__(self, kind, key_func, txn_key_func, next_key, at_least):
        self.kind = kind
        self.key_func = key_func
        self.txn_key_func = txn_key_func
        self.next_key = next_key
        self.at_least = at_least


class Records:
    """One collection's write and read paths, prepared for its current state.

    The collection makes a new one whenever its indexes or batching change.
    The common cases are :attr:`writer` and :attr:`reader`; the methods here
    do everything else (records given as :class:`Record`, other packers,
    ``txn_key_func`` and counter keys, batches, deletes, index builds).

    :param coll: the collection, kept in each :class:`Record`.
    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param txn_class: :class:`~centidb.txn.Transaction`.
    :param name: the collection's name, for errors.
    :param prefix: the collection's key prefix.
    :param encoder: the record :class:`~centidb.encodings.Encoder`.
    :param packer: the collection's packer and `header`, its id byte.
    :param header: see `packer`.
    :param plain_id: the id of the plain packer.
    :param packer_of: ``packer_of(id)`` returns a registered packer or
        raises :class:`~centidb.errors.UnknownEncoderError`.
    :param keys: the collection's :class:`KeySource`.
    :param indexes: the indexes added in this session (objects with
        ``name``, ``func`` and ``prefix``), in the order added.
    :param unbound: the names of stored indexes not added in this session.
    :param view: the collection's :class:`~centidb.batches.BatchView`.
    :param batched: True if the collection holds batches.
    :param limit: the engine's longest key, or None.
    """

    def __init__(self, coll, txns, txn_class, name, prefix, encoder, packer, header,
                 plain_id, packer_of, keys, indexes,
                 unbound, view, batched, limit):
        self.coll = coll
        self.name = name
        self.prefix = prefix
        self.encoder = encoder
        self.packer = packer
        self.header = header
        self.plain_id = plain_id
        self.packer_of = packer_of
        self.keys = keys
        self.indexes = indexes
        self.specs = tuple((index.func, index.prefix) for index in indexes)
        self.unbound = unbound
        self.view = view
        self.batched = batched
        self.limit = limit
        self._decode_plain = encoder.decode
        compress = None if packer.name == 'plain' else packer.encode
        self.writer = RecordWriter(
            coll, txns, txn_class, encoder.exact and not unbound and not batched and keys.kind != 'auto',
            prefix, encoder.encode, compress, header, keys.key_func, self.specs, indexes,
            limit, self.old_entries, self.check_key_sizes, Record)
        self.reader = RecordReader(
            txns, txn_class, prefix, plain_id, encoder.decode, self.decode, limit,
            batched, view.get, self.missing_record_error,
            corrupt_entry_error, self.corrupt_record_error)

    # --- decoding --------------------------------------------------------------

    def decode(self, stored):
        """The record value of a stored record.

        :param stored: the stored value (header byte and packed bytes).
        """
        try:
            header = stored[0]
        except IndexError:
            raise ValueError('the stored value is empty') from None
        if header == self.plain_id:      # the common case, without a call
            return self._decode_plain(stored[1:])
        return self._decode_plain(self.encoded(stored))

    def encoded(self, stored):
        """The encoder's bytes of a stored record (its packer undone).

        :param stored: the stored value (header byte and packed bytes).
        """
        return self.packer_of(stored[0]).decode(stored[1:])

    def decoded(self, key_bytes, stored, encoded=False):
        """:meth:`decode` (or :meth:`encoded`), naming the record if that fails.

        :param key_bytes: the record's engine key, for the error.
        :param stored: the stored value.
        :param encoded: undo only the packer.
        :raises ~centidb.errors.CorruptRecordError: if the stored value
            cannot be decoded (an error of centidb's own, such as
            :class:`~centidb.errors.UnknownEncoderError`, propagates).
        """
        try:
            return self.encoded(stored) if encoded else self.decode(stored)
        except CentiError:
            raise
        except Exception as exc:
            raise self.corrupt_record_error(key_bytes, exc) from exc

    def corrupt_record_error(self, key_bytes, exc):
        """The error for the record under `key_bytes`, whose value cannot be decoded.

        :param key_bytes: the record's engine key.
        :param exc: the exception decoding raised.
        """
        try:
            key = repr(keylib.unpacks(key_bytes, self.prefix))
        except CorruptKeyError:
            key = f'bytes {key_bytes!r}'
        return CorruptRecordError(
            f'collection {self.name!r}: the record under key {key} cannot be '
            f'decoded ({type(exc).__name__}: {exc})')

    def entries(self, data, entry_tail):
        """Return the index entry keys of a record (a list of bytes).

        :param data: the record value.
        :param entry_tail: see :meth:`entry_tail`.
        """
        return index_entries(self.specs, data, entry_tail)

    def old_entries(self, stored, entry_tail):
        """Return the index entry keys of a stored record.

        :param stored: the stored value.
        :param entry_tail: see :meth:`entry_tail`.
        """
        data = self.decoded(self.prefix + entry_tail[1:], stored)
        return index_entries(self.specs, data, entry_tail)

    def entry_tail(self, key_bytes):
        """What follows an index tuple in an entry: separator and record key.

        :param key_bytes: the record's engine key.
        """
        return ENTRY_SEP + key_bytes[len(self.prefix):]

    def missing_record_error(self, index_name, key):
        """The error for an entry of `index_name` pointing at a missing record.

        :param index_name: the index's name.
        :param key: the record key the entry names.
        """
        return IndexInconsistentError(
            f'index {index_name!r} of collection {self.name!r} points at '
            f'missing record {key!r}: the index is inconsistent (was a blind put '
            f'used on an existing key, or an index function changed?)')

    # --- reading -----------------------------------------------------------------

    def stored(self, etxn, key_bytes):
        """The stored value under `key_bytes` (in a batch or not), or None.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param key_bytes: the record's engine key.
        """
        if self.batched:
            return self.view.get(etxn, key_bytes)
        stored = etxn.get(key_bytes)
        if stored is None:
            # Another process may have batched the collection since it was opened.
            return self.view.get(etxn, key_bytes)
        return stored

    def read(self, txn, etxn, key, default, encoded, rec):
        """Read the record under `key`; see ``Collection.get``.

        :param txn: the store transaction (unused: the signature
            :meth:`~centidb.txn.TxnManager.run` calls).
        :param etxn: its :class:`~centidb.engines.EngineTransaction`.
        :param key: the key tuple.
        :param default: returned when there is no record under `key`.
        :param encoded: return the encoder's bytes.
        :param rec: return a :class:`Record`.
        """
        key_bytes = keylib.packs(key, self.prefix)
        stored = self.stored(etxn, key_bytes)
        if stored is None:
            return default
        if encoded:
            return self.decoded(key_bytes, stored, encoded=True)
        data = self.decoded(key_bytes, stored)
        if rec:
            entries = self.entries(data, self.entry_tail(key_bytes))
            return Record(self.coll, data, key, stored, entries, self.indexes)
        return data

    def read_many(self, txn, etxn, packed, default):
        """Read the records under the engine keys `packed`; see ``Collection.get_many``.

        :param txn: the store transaction (unused, as for :meth:`read`).
        :param etxn: its :class:`~centidb.engines.EngineTransaction`.
        :param packed: a list of engine keys.
        :param default: the item for a key with no record.
        :returns: a ``list`` of values.
        """
        values = []
        for key_bytes in packed:
            stored = self.stored(etxn, key_bytes)
            values.append(default if stored is None else self.decoded(key_bytes, stored))
        return values

    def items(self, etxn, lo, hi, reverse):
        """Iterate ``(key bytes, stored)`` in ``[lo, hi)``, batches expanded.

        Batches are looked for even in a collection that holds none, because
        a ``batch()`` in the same transaction may make some mid-scan.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param lo: the lowest engine key.
        :param hi: the engine key at which to stop.
        :param reverse: iterate from `hi` down.
        """
        return self.view.items(etxn, lo, hi, reverse)

    # --- writing -------------------------------------------------------------------

    def check_writable(self):
        """Refuse writes while a stored index is not added in this session."""
        if self.unbound:
            names = ', '.join(map(repr, sorted(self.unbound)))
            raise IndexNotAddedError(
                f'collection {self.name!r} has stored index(es) {names} that '
                f'this program has not added (since it opened the store, or '
                f'since another process created them); call add_index() for '
                f'each (or drop_index()) before writing, so no index goes stale')

    def check_key_sizes(self, key, key_bytes, entries):
        """Refuse, before writing anything, keys the engine cannot store.

        :param key: the record's key tuple, for the message.
        :param key_bytes: its engine key.
        :param entries: its index entries.
        :raises ValueError: naming the key or index entry that is too long.
        """
        limit = self.limit
        if limit is None:
            return
        if len(key_bytes) > limit:
            raise ValueError(f'key {key!r} of collection {self.name!r} packs to '
                             f'{len(key_bytes)} bytes; the engine stores at most {limit}')
        for entry in entries:
            if len(entry) > limit:
                index = next(index for index in self.indexes
                             if entry.startswith(index.prefix))
                raise ValueError(
                    f'index {index.name!r} entry for key {key!r} packs to '
                    f'{len(entry)} bytes; the engine stores at most {limit}')

    def put(self, txn, etxn, rec, key, blind, packer=None, header=None):
        """Store `rec` (a value or a :class:`Record`); see ``Collection.put``.

        :param txn: the store transaction (for ``txn_key_func``).
        :param etxn: its engine transaction.
        :param rec: the record value, or a :class:`Record`.
        :param key: the key, or None.
        :param blind: skip reading the old record.
        :param packer: the packer to use, or None for the collection's own.
        :param header: `packer`'s id byte, when `packer` is given.
        :returns: the stored :class:`Record`.
        """
        self.check_writable()
        old_record = None
        if type(rec) is Record or type(rec) is PYTHON.Record:
            old_record = rec
            if key is None:
                key = rec.key
            rec = rec.data
        data = rec
        # Everything user code can fail on runs before the first write.
        encoded = self.encoder.encode(data)
        if packer is None:
            packer, header = self.packer, self.header
        value = header + packer.encode(encoded)
        indexed = data if self.encoder.exact else self._decode_plain(encoded)
        heads = None
        keys = self.keys
        if key is not None:
            key = as_key(key)
        elif keys.key_func is not None:
            key = as_key(keys.key_func(data))
        elif keys.txn_key_func is not None:
            key = as_key(keys.txn_key_func(txn, data))
        elif keys.kind != 'auto':
            raise KeyKindMismatchError(
                f'collection {self.name!r} makes its keys with a {keys.kind}, which '
                f'this program did not pass to collection(); pass {keys.kind}=, or '
                f'give put() the key')
        else:
            # The counter moves only once all user code has succeeded.
            heads = index_entries(self.specs, indexed, _EMPTY)
            key = (keys.next_key(etxn),)       # read now, moved on below
        key_bytes = keylib.packs(key, self.prefix)
        entry_tail = self.entry_tail(key_bytes)
        if heads is None:
            entries = index_entries(self.specs, indexed, entry_tail)
        else:
            entries = [head + entry_tail for head in heads]
        self.check_key_sizes(key, key_bytes, entries)
        old_entries = None
        # Without indexes there are no stale entries to find: skip the read.
        if not blind and self.indexes:
            old = self.stored(etxn, key_bytes)
            if old is not None:
                if (old_record is not None and old_record.coll is self.coll
                        and old_record._indexes is self.indexes
                        and old_record.key == key and old_record._stored == old):
                    old_entries = old_record._entries
                else:
                    old_entries = self.old_entries(old, entry_tail)
        # Everything that can fail has run: from here on, writes.
        if keys.kind == 'auto' and len(key) == 1 and type(key[0]) is int:
            # The counter stays above every (n,) key, so it never hands out a used one.
            keys.at_least(etxn, key[0] + 1)
        if self.batched:
            self.view.split(etxn, key_bytes)
        delete_stale(etxn, old_entries, entries)
        writes = [(key_bytes, value)]
        writes += [(entry, _EMPTY) for entry in entries]
        etxn._put_many(writes)
        return Record(self.coll, data, key, value, entries, self.indexes)

    def delete(self, etxn, key):
        """Delete the record under the key tuple `key` and its index entries.

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param key: the key tuple.
        :returns: the deleted :class:`Record`, or None if there was none.
        """
        self.check_writable()
        key_bytes = keylib.packs(key, self.prefix)
        plain = etxn.get(key_bytes)
        old = plain if plain is not None or not self.batched else self.view.get(etxn, key_bytes)
        if old is None:
            return None
        data = self.decoded(key_bytes, old)
        entries = self.entries(data, self.entry_tail(key_bytes))
        # Everything that can fail has run: from here on, writes.
        if plain is None:
            self.view.split(etxn, key_bytes, rejoin=True)
        for entry in entries:
            etxn.delete(entry)
        etxn.delete(key_bytes)
        return Record(self.coll, data, key)

    def fill_index(self, etxn, func, index_prefix):
        """Write the entries of a new index for every record of the collection.

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param func: the index function.
        :param index_prefix: the index's prefix.
        """
        lo, hi = keylib.prefix_range((), self.prefix)
        specs = ((func, index_prefix),)
        entries = []
        for key_bytes, stored in self.items(etxn, lo, hi, False):
            data = self.decoded(key_bytes, stored)
            entries += index_entries(specs, data, self.entry_tail(key_bytes))
        # Every call of `func` has succeeded: only now write.
        for entry in entries:
            etxn.put(entry, _EMPTY)


def corrupt_entry_error(entry):
    """The error for an index entry without an index tuple and a record key.

    :param entry: the entry's engine key.
    """
    return CorruptKeyError(f'index entry {entry!r} does not hold an '
                           f'index tuple and a record key')


def split_entries(etxn, index_prefix, lo, hi, reverse):
    """Iterate the entries of an index in ``[lo, hi)`` as ``(index tuple, record key)``.

    :param etxn: the :class:`~centidb.engines.EngineTransaction`.
    :param index_prefix: the index's prefix.
    :param lo: the lowest entry key.
    :param hi: the entry key at which to stop.
    :param reverse: iterate from `hi` down.
    :raises ~centidb.errors.CorruptKeyError: (while iterating) for an entry
        that does not hold an index tuple and a record key.
    """
    unpacks_list = keylib.unpacks_list
    for entry in etxn.keys(lo, hi, reverse):
        parts = unpacks_list(entry, index_prefix)
        if len(parts) != 2:
            raise corrupt_entry_error(entry)
        yield parts[0], parts[1]


def first_entry(etxn, index_prefix, x):
    """The first entry key of an index for the index tuple `x`, or None.

    :param etxn: the :class:`~centidb.engines.EngineTransaction`.
    :param index_prefix: the index's prefix.
    :param x: the index tuple.
    """
    # Entries for exactly x are packs(x), KEY_SEP, packed record key.
    packed = keylib.packs(x, index_prefix)
    found = etxn.first(packed + ENTRY_SEP, keylib.after_key(packed))
    return None if found is None else found[0]


def delete_index_entries(etxn, index_prefix):
    """Delete every entry of the index whose prefix is `index_prefix`.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param index_prefix: the index's prefix.
    """
    lo, hi = keylib.prefix_range((), index_prefix)
    for key_bytes in list(etxn.keys(lo, hi)):
        etxn.delete(key_bytes)


#: The pure-Python versions, whichever implementation is active (for parity
#: tests and the docs).
PYTHON = types.SimpleNamespace(Record=Record, RecordWriter=RecordWriter,
                               RecordReader=RecordReader, index_entries=index_entries)
Record = impl.choose(Record)
RecordWriter = impl.choose(RecordWriter)
RecordReader = impl.choose(RecordReader)
index_entries = impl.choose(index_entries)
