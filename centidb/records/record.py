"""Records: one record and its index entries, and the fast paths that write and read them.

A stored record is one engine key (the collection prefix and the packed key
tuple) whose value is a header byte (the packer's id), the packed encoder
bytes and, in a collection that keeps checksums, a CRC-32 trailer; plus one
engine key per index entry (the index prefix, the packed index tuple,
``KEY_SEP``, the packed record key) with an empty value.

Two classes do the common cases fast: :class:`RecordWriter` (a put of a
plain value, or a ``put_many`` of plain values) and :class:`RecordReader`
(get by key or by index, and index scans); everything they use is passed to
their constructors. The general cases are
:class:`centidb.records.access.Records`. This module is written once and,
when centidb is built, compiled by Cython as it is (``record.pxd`` holds its
types; :data:`centidb.impl.PURE_MODE`); compiled, it calls the key codec's
compiled functions and the fast paths without a Python call.

This layer calls engine transactions, through :mod:`centidb.records.fastpath`
where it can (and reads the fields of the store transactions it is handed);
never a layer above.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Tuple

try:
    import cython
except ImportError:     # not built: the names below are the pure-Python ones
    from centidb import _nocython as cython

from centidb import keylib
from centidb.engines import EngineTransaction
from centidb.records.fastpath import (
    checked_engine_txn, delete_one, first_key, put_many, put_one, replace_one,
)
from centidb.engines.base import Item
from centidb.engines.fastcalls import FastCallsLike
from centidb.errors import CentiError, CorruptKeyError
from centidb.keyformat import KEY_SEP
from centidb.keylib import Key
from centidb.txn import Transaction, TxnManager

if not cython.compiled:
    # Compiled, record.pxd cimports the key codec's own functions of these
    # names, and the class FastCalls.
    from centidb.checksums import intact, seal
    from centidb.keylib import first_key_end, pack_entry, split_first
    from centidb.engines.fastcalls import FastCalls
    from centidb.msgpackcodec import MsgpackDecode, MsgpackEncode

    def rejoined(head: bytes, data: bytes, start: int) -> bytes:
        """`head` followed by the bytes of `data` from `start` on."""
        return head + data[start:]

    def body_of(stored: bytes, trailer: int) -> bytes:
        """The bytes of a stored value between its header byte and its
        `trailer` bytes of checksum (its length is at least ``1 + trailer``)."""
        return stored[1:len(stored) - trailer]

__all__ = ['Record', 'RecordWriter', 'RecordReader', 'index_entries', 'as_key', 'IndexSpec',
           'collection_get', 'collection_put', 'index_get']

ENTRY_SEP = bytes([KEY_SEP])
_SEP = ENTRY_SEP    # the same, as a C variable once compiled
# keylib.after_key's bound: ENTRY_SEP's successor.
_AFTER_KEY_SEP = bytes([KEY_SEP + 1])
# What a scan yields: records' values, (key, value) or keys; or, walking an
# index's entries, the values or (index tuple, value) of the records they name.
_VALUES, _ITEMS, _KEYS, _INDEX_VALUES, _INDEX_ITEMS = 0, 1, 2, 3, 4
_EMPTY = b''

#: One index as :func:`index_entries` takes it: ``(index function, index
#: prefix)``.
IndexSpec = Tuple[Callable[[Any], Any], bytes]


def as_key(value: object) -> Key:
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
    names; the ones starting with ``_`` are that private state. So are
    ``_key_bytes``, the engine key ``_stored`` was read or written under;
    ``_read_in``, the ``fast`` of the engine transaction it was read or
    written in; and ``_read_at``, that transaction's ``fast.writes`` then:
    while the three still hold, ``put()`` takes ``_stored`` for the stored
    version without reading it again (nothing was written in the
    transaction since).

    :param coll: the collection the record belongs to.
    :param data: the record's value.
    :param key: the record's key tuple, or ``None`` for a record not yet
        stored.
    """

    __slots__ = ('coll', 'data', 'key', '_stored', '_entries', '_indexes', '_key_bytes',
                 '_read_in', '_read_at')

    def __init__(self, coll: Any, data: Any, key: Key | None = None,
                 _stored: bytes | None = None, _entries: list[bytes] | None = None,
                 _indexes: tuple[object, ...] | None = None) -> None:
        self.coll = coll    # Any: this layer cannot name the collection's class
        self.data = data
        self.key = key
        self._stored = _stored
        self._entries = _entries      # index entries of the stored version
        self._indexes = _indexes      # the index set _entries was made for
        self._key_bytes: bytes | None = None
        self._read_in: object = None
        self._read_at = -1

    def __repr__(self) -> str:
        name = self.coll.name if self.coll is not None else None
        return f'<Record {name}:{self.key!r} {self.data!r}>'

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (self.coll is other.coll and self.key == other.key
                and self.data == other.data)

    __hash__ = None     # type: ignore[assignment]  # compared by value: unhashable


def seen(record: Record, key_bytes: bytes, etxn: Any = None) -> Record:
    """Note on `record` the engine key of its ``_stored``; return it.

    :param record: a :class:`Record` with ``_stored`` and ``_entries``.
    :param key_bytes: the engine key ``_stored`` was read or written under.
    :param etxn: None, or the engine transaction that holds ``_stored``
        under `key_bytes` now: a ``put()`` of the Record in it, with nothing
        written since, need not read the key again.
    """
    record._key_bytes = key_bytes
    if etxn is not None:
        fast = etxn.fast
        record._read_in = fast
        record._read_at = fast.writes
    return record


def new_record(coll: Any, data: Any, key: Key, stored: bytes, entries: list[bytes],
               indexes: tuple[object, ...], key_bytes: bytes, fast: FastCallsLike) -> Record:
    """``seen(Record(coll, data, key, stored, entries, indexes), key_bytes, etxn)``,
    `fast` being etxn's ``fast``, made without calling the class."""
    record = Record.__new__(Record)
    record.coll = coll
    record.data = data
    record.key = key
    record._stored = stored
    record._entries = entries
    record._indexes = indexes
    record._key_bytes = key_bytes
    record._read_in = fast
    record._read_at = fast.writes
    return record


def index_entries(specs: tuple[IndexSpec, ...], data: Any, tail: bytes) -> list[bytes]:
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
    entries: list[bytes] = []
    for func, prefix in specs:
        result = func(data)
        if result is None:
            continue
        if type(result) is list:
            for item in result:
                entries.append(pack_entry(item, prefix, tail))
        else:
            entries.append(pack_entry(result, prefix, tail))
    return entries


def _encoded(encode: Callable[[Any], bytes], data: Any) -> bytes:
    """``encode(data)``; compiled, msgpack's encoder is called in C."""
    if type(encode) is MsgpackEncode:
        msgpack_encode = encode
        return msgpack_encode.run(data)
    return encode(data)


def _decoded_body(decode: Callable[[bytes], Any], body: bytes) -> Any:
    """``decode(body)``; compiled, msgpack's decoder is called in C."""
    if type(decode) is MsgpackDecode:
        msgpack_decode = decode
        return msgpack_decode.run(body)
    return decode(body)


def _any_longer(entries: list[bytes], limit: int) -> bool:
    """True if an entry of `entries` is longer than `limit` bytes."""
    for entry in entries:
        if len(entry) > limit:
            return True
    return False


def _past(last: bytes, lo: bytes | None, hi: bytes | None,
          reverse: bool) -> tuple[bytes | None, bytes | None]:
    """The bounds ``(lo, hi)`` of what a scan has left once it has yielded `last`."""
    return (lo, last) if reverse else (last + b'\x00', hi)


#: Up to this many index entries, membership tests scan a list.
_FEW = 8


class RecordWriter:
    """The common case of ``Collection.put``, prepared for one collection.

    :meth:`write` handles a put of a plain value (not a :class:`Record`)
    with a key or a ``key_func``, an exact encoder, the collection's own
    packer, every stored index added and no batches; :meth:`write_many`
    the same for a list of values, keyed by the ``key_func`` or the
    counter. The compiled twin behaves identically.

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
    :param counted: True if the collection's keys come from its counter:
        :meth:`write` then declines (a given key must raise the counter),
        while :meth:`write_many` takes the counter's value from its caller.
    :param plain_id: the id of the plain packer, and `decode_plain` the
        encoder's ``decode``: with them an old version packed plainly is
        decoded inline (others go to `old_entries`).
    :param decode_plain: see `plain_id`.
    :param checksum: end each stored value with its CRC-32 trailer (:mod:`centidb.checksums`).
    """

    def __init__(self, coll: Any, txns: TxnManager, txn_class: type[Transaction],
                 usable: bool, prefix: bytes, encode: Callable[[Any], bytes],
                 compress: Callable[[bytes], bytes] | None, header: bytes,
                 key_func: Callable[[Any], Any] | None, specs: tuple[IndexSpec, ...],
                 indexes: tuple[object, ...], limit: int | None,
                 old_entries: Callable[[bytes, bytes], list[bytes]],
                 too_long: Callable[[Key, bytes, list[bytes]], object],
                 counted: bool = False, plain_id: int = -1,
                 decode_plain: Callable[[bytes], Any] | None = None,
                 checksum: bool = False) -> None:
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
        self.counted = counted
        self.plain_id = plain_id
        self.decode_plain = decode_plain
        self.checksum = checksum

    def _old_entries(self, old: bytes, entry_tail: bytes) -> list[bytes]:
        # old_entries(old, entry_tail), decoding a plain record inline.
        trailer = 4 if self.checksum else 0
        if type(old) is not bytes or self.decode_plain is None:
            return self.old_entries(old, entry_tail)
        body = old
        if len(body) > trailer and body[0] == self.plain_id and (not trailer or intact(body)):
            try:
                data = _decoded_body(self.decode_plain, body_of(body, trailer))
            except Exception:
                return self.old_entries(old, entry_tail)   # raises the right error
            return index_entries(self.specs, data, entry_tail)
        return self.old_entries(old, entry_tail)

    def write(self, txn: Transaction, data: Any, key: object, blind: bool) -> Record | None:
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
        if not self.usable or self.counted:
            return None
        read = None
        if type(data) is Record:
            # A Record read from this collection knows its stored version's entries.
            read = data
            if read.coll is not self.coll or read._indexes is not self.indexes:
                return None
            data = read.data
            if key is None:
                key = read.key
        if key is None:
            if self.key_func is None:
                return None
            encoded = _encoded(self.encode, data)
            key = self.key_func(data)
        else:
            encoded = _encoded(self.encode, data)
        if self.compress is not None:
            encoded = self.compress(encoded)
        value = self.header + encoded
        if self.checksum:
            value = seal(value)
        key = as_key(key)
        key_bytes = pack_entry(key, self.prefix, _EMPTY)
        if self.specs:
            entry_tail = rejoined(_SEP, key_bytes, len(self.prefix))
            entries = index_entries(self.specs, data, entry_tail)
        else:
            entry_tail, entries = _EMPTY, []
        limit = self.limit
        if limit is not None and (len(key_bytes) > limit or _any_longer(entries, limit)):
            self.too_long(key, key_bytes, entries)
        old = None
        replaced = False    # the record is written already; old is what it replaced
        fast = etxn.fast
        if not blind and self.indexes:
            if (read is not None and read._read_in is fast
                    and read._read_at == fast.writes and read._key_bytes == key_bytes):
                old = read._stored      # nothing was written in etxn since it was read
            elif fast.replace is not None:
                # Every user function has run: one lookup reads and writes.
                old = replace_one(etxn, fast, key_bytes, value)
                replaced = True
            else:
                # Every key is within the engine's limit now: the unchecked getter is safe.
                get = fast.get
                old = etxn.get(key_bytes) if get is None else get(key_bytes)
        if not entries and old is None:
            if not replaced:
                put_one(etxn, fast, key_bytes, value)
            return new_record(self.coll, data, key, value, entries, self.indexes, key_bytes,
                              fast)
        writes = [] if replaced else [(key_bytes, value)]
        if old is None:
            for entry in entries:
                writes.append((entry, _EMPTY))
        else:
            if read is not None and read._key_bytes == key_bytes and read._stored == old:
                old_entries = read._entries
            else:
                try:
                    old_entries = self._old_entries(old, entry_tail)
                except BaseException:
                    if replaced:
                        put_one(etxn, fast, key_bytes, old)  # the old version back: nothing written
                    raise
            # Most records have a few entries: a list is then cheaper than a set.
            had = old_entries if len(old_entries) <= _FEW else set(old_entries)
            has = entries if len(entries) <= _FEW else set(entries)
            for entry in old_entries:
                if entry not in has:
                    delete_one(etxn, fast, entry)
            # Entries the old version has too are stored already.
            for entry in entries:
                if entry not in had:
                    writes.append((entry, _EMPTY))
        if writes:
            put_many(etxn, fast, writes)
        return new_record(self.coll, data, key, value, entries, self.indexes, key_bytes, fast)

    def write_many(self, etxn: EngineTransaction, datas: list[Any], blind: bool,
                   first_id: int | None) -> list[Key] | None:
        """Store each value of the list `datas`; return their keys, in order.

        Every key, stored value and index entry is made, and (unless
        `blind`) every old version's entries are found, before the first
        write: whatever the key function, an index function, the encoder,
        the key codec or the size check raises propagates having written
        nothing; then the writes go to the engine in one call. The effect is
        that of :meth:`write` for each value in turn (a key given twice ends
        with the later value and its entries; with `blind`, the earlier
        one's entries the later lacks stay, as after two blind writes).

        :param etxn: the write :class:`~centidb.engines.EngineTransaction`
            to write in, already checked by the caller.
        :param datas: a ``list`` of record values.
        :param blind: as for ``Collection.put``.
        :param first_id: ``None`` to key each value with ``key_func``; an
            ``int`` to give them ``(first_id,)``, ``(first_id + 1,)``, ...
            (a counted collection's counter, read and raised by the caller).
        :returns: a ``list`` of key tuples, or ``None``, having called no
            user code and written nothing, when the write is not the common
            case (a :class:`Record` in `datas`, or no key function).
        """
        if not self.usable or (first_id is None and self.key_func is None):
            return None
        for data in datas:
            if type(data) is Record:
                return None
        encode, compress, header = self.encode, self.compress, self.header
        checksum = self.checksum
        key_func, prefix, specs, limit = self.key_func, self.prefix, self.specs, self.limit
        start = len(prefix)
        reads = not blind and bool(self.indexes)
        writes: list[Item] = []
        keys: list[Key] = []
        # With reads: how many entries follow each record's pair in writes.
        counts: list[int] = []
        distinct: set[bytes] = set()   # the keys, each once
        lo = hi = _EMPTY
        next_id = first_id
        for data in datas:
            encoded = _encoded(encode, data)
            if next_id is None:
                key = as_key(key_func(data))  # type: ignore[misc]  # checked above: not None
            else:
                key = (next_id,)
                next_id += 1
            if compress is not None:
                encoded = compress(encoded)
            value = header + encoded
            if checksum:
                value = seal(value)
            key_bytes = pack_entry(key, prefix, _EMPTY)
            entry_tail = rejoined(_SEP, key_bytes, start)
            entries = index_entries(specs, data, entry_tail)
            if limit is not None and (len(key_bytes) > limit or _any_longer(entries, limit)):
                self.too_long(key, key_bytes, entries)
            keys.append(key)
            writes.append((key_bytes, value))
            for entry in entries:
                writes.append((entry, _EMPTY))
            if reads:
                counts.append(len(entries))
                distinct.add(key_bytes)
                if not lo or key_bytes < lo:
                    lo = key_bytes
                if key_bytes > hi:
                    hi = key_bytes
        stale: list[bytes] = []
        if reads and keys:
            # Nothing to read unless a record is stored between lo and hi.
            stored = etxn.first(lo, hi + b'\x00') is not None
            if stored or len(distinct) < len(keys):
                writes, stale = self.merge_stored(etxn, writes, counts, start, stored)
        # Everything that can fail has run: from here on, writes.
        for entry in stale:
            etxn.delete(entry)
        if writes:
            etxn._put_many(writes)   # once per list: the engine's bulk path (LMDB may append)
        return keys

    def merge_stored(self, etxn: EngineTransaction, writes: list[Item], counts: list[int],
                     start: int, stored: bool) -> tuple[list[Item], list[bytes]]:
        """Return `writes` with each key once, as its last record, and the stale stored entries.

        :param etxn: the write transaction, read for the stored versions.
        :param writes: each record's ``(key bytes, value)`` followed by its
            index entries' pairs, as :meth:`write_many` makes them.
        :param counts: how many entries follow each record's pair.
        :param start: the length of the collection's prefix.
        :param stored: False if no record is stored under any of the keys:
            then none is read.
        :returns: ``(writes, stale)``: the pairs to write, and the entries of
            the stored versions that the new ones lack, to delete.
        """
        # Key bytes -> (value, entries); a key given twice keeps its first place.
        latest: dict[bytes, tuple[bytes, tuple[bytes, ...]]] = {}
        at = 0
        for count in counts:
            key_bytes, value = writes[at]
            # A tuple of bytes, unlike a list, leaves the garbage collector's watch.
            latest[key_bytes] = (value, tuple([entry for entry, _ in writes[at + 1:at + 1 + count]]))
            at += 1 + count
        merged: list[Item] = []
        stale: list[bytes] = []
        # Every key is within the engine's limit now: the unchecked getter is safe.
        get = etxn.fast.get
        # Without a fast getter (a networked engine), one call reads them all.
        olds = iter(etxn.get_many(list(latest))) if stored and get is None else None
        for key_bytes, (value, held) in latest.items():
            if not stored:
                old = None
            else:
                old = next(olds) if olds is not None else get(key_bytes)  # type: ignore[misc]
            if old is not None:
                old_entries = self._old_entries(old, rejoined(_SEP, key_bytes, start))
                if old_entries:
                    keep = set(held)
                    stale += [entry for entry in old_entries if entry not in keep]
            merged.append((key_bytes, value))
            merged += [(entry, _EMPTY) for entry in held]
        return merged, stale


class RecordReader:
    """The common case of ``Collection.get`` and ``Index.get``, and index scans.

    Prepared for one collection: it reads through the engine transaction's
    unchecked getter when it has one, and decodes plain records inline. The
    compiled twin behaves identically.

    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param txn_class: :class:`~centidb.txn.Transaction`.
    :param prefix: the collection's key prefix.
    :param plain_id: the id of the plain packer (no compression).
    :param decode_plain: the encoder's ``decode``; with `plain_id`, plain
        records are decoded inline.
    :param decode: ``decode(stored)`` for any other stored value.
    :param limit: the engine's longest key, or None.
    :param batched: True if the collection holds batches.
    :param batch_get: ``batch_get(engine txn, key bytes)`` reads a record
        in a batch or not; reads try it when the plain read misses, for a
        record a ``batch()`` moved, in this transaction or another process.
    :param missing: ``missing(index name, key)``: the error for an entry naming no record.
    :param corrupt_entry: ``corrupt_entry(entry)``: the error for a malformed entry.
    :param corrupt_record: ``corrupt_record(key bytes, exception)`` returns
        the error for a stored value that cannot be decoded.
    :param corrupt_key: ``corrupt_key(key bytes, exception)`` returns the
        error for a record key that cannot be decoded.
    :param batch_items: ``batch_items(engine txn, lo, hi, reverse)``
        iterates ``(key bytes, stored)`` with batches expanded: scans hand
        over to it when they meet a batch.
    :param batch_flag: the header bit that marks a stored batch.
    :param end: the engine key just past the collection's.
    :param coll: the collection, and `specs` and `indexes` as for
        :class:`RecordWriter`: :meth:`get_record` makes the
        :class:`Record` a later ``put()`` updates without a second decode.
    :param specs: see `coll`.
    :param indexes: see `coll`.
    :param checksum: the collection keeps checksums (plain records are checked inline).
    """

    def __init__(self, txns: TxnManager, txn_class: type[Transaction], prefix: bytes,
                 plain_id: int, decode_plain: Callable[[bytes], Any],
                 decode: Callable[[bytes], Any], limit: int | None, batched: bool,
                 batch_get: Callable[[EngineTransaction, bytes], bytes | None],
                 missing: Callable[[str, Key], Exception],
                 corrupt_entry: Callable[[bytes], Exception],
                 corrupt_record: Callable[[bytes, Exception], Exception],
                 corrupt_key: Callable[[bytes, CorruptKeyError], Exception],
                 batch_items: Callable[[EngineTransaction, bytes, bytes, bool], Iterator[Item]],
                 batch_flag: int, end: bytes | None, coll: Any = None,
                 specs: tuple[IndexSpec, ...] = (), indexes: tuple[object, ...] = (),
                 checksum: bool = False) -> None:
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
        self.corrupt_key = corrupt_key
        self.batch_items = batch_items
        self.batch_flag = batch_flag
        self.end = end
        self.coll = coll
        self.specs = specs
        self.indexes = indexes
        self.checksum = checksum

    def _stored(self, etxn: EngineTransaction, key_bytes: bytes) -> bytes | None:
        if self.batched:
            return self.batch_get(etxn, key_bytes)
        fast = etxn.fast
        getter = fast.get
        if getter is None or (self.limit is not None and len(key_bytes) > self.limit):
            return etxn.get(key_bytes)
        return getter(key_bytes)

    def get(self, txn: Transaction, key: object, default: Any) -> Any:
        """Return the value stored under `key`, or `default`.

        :param txn: a :class:`~centidb.txn.Transaction` of the store.
        :param key: the key tuple (a bare value means a 1-tuple).
        :param default: returned when nothing is stored under `key`.
        :returns: the decoded record value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        """
        key_bytes = pack_entry(as_key(key), self.prefix, _EMPTY)
        stored = self._read(checked_engine_txn(self.txns, self.txn_class, txn, False),
                            key_bytes)
        if stored is None:
            return default
        return self._decoded(key_bytes, stored)

    def get_record(self, txn: Transaction, key: object, default: Any) -> Any:
        """Return the :class:`Record` stored under `key`, or `default`.

        The Record keeps the stored bytes and index entries, as
        ``Collection.get(rec=True)`` promises; errors as for :meth:`get`.

        :param txn: a :class:`~centidb.txn.Transaction` of the store.
        :param key: the key tuple (a bare value means a 1-tuple).
        :param default: returned when nothing is stored under `key`.
        """
        key = as_key(key)
        key_bytes = pack_entry(key, self.prefix, _EMPTY)
        etxn = checked_engine_txn(self.txns, self.txn_class, txn, False)
        stored = self._read(etxn, key_bytes)
        if stored is None:
            return default
        data = self._decoded(key_bytes, stored)
        entries = index_entries(self.specs, data, rejoined(_SEP, key_bytes, len(self.prefix)))
        return new_record(self.coll, data, key, stored, entries, self.indexes, key_bytes,
                          etxn.fast)

    def _read(self, etxn: EngineTransaction, key_bytes: bytes) -> bytes | None:
        stored = self._stored(etxn, key_bytes)
        if stored is None and not self.batched:
            # Another process may have batched the collection since it was opened.
            stored = self.batch_get(etxn, key_bytes)
        return stored

    def _decoded(self, key_bytes: bytes, stored: bytes) -> Any:
        # A plain record is decoded inline; with checksums, a damaged value
        # goes to decode(), which raises the error.
        trailer = 4 if self.checksum else 0
        try:
            if type(stored) is bytes:
                body = stored
                if (len(body) > trailer and body[0] == self.plain_id
                        and (not trailer or intact(body))):
                    return _decoded_body(self.decode_plain, body_of(body, trailer))
            return self.decode(stored)
        except CentiError:
            raise
        except Exception as exc:
            raise self.corrupt_record(key_bytes, exc) from exc

    def values(self, etxn: EngineTransaction, lo: bytes, hi: bytes,
               reverse: bool) -> Iterator[Any]:
        """Iterate the values of the records in ``[lo, hi)``, in key order.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param lo: the lowest engine key.
        :param hi: the engine key at which to stop.
        :param reverse: iterate from `hi` down.
        :raises ~centidb.errors.CorruptRecordError: (while iterating) for a
            stored value that cannot be decoded.
        """
        return self._scan(etxn, lo, hi, reverse, _VALUES)

    def items(self, etxn: EngineTransaction, lo: bytes, hi: bytes,
              reverse: bool) -> Iterator[tuple[Key, Any]]:
        """Iterate ``(key tuple, value)`` of the records in ``[lo, hi)``; see :meth:`values`.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param lo: the lowest engine key.
        :param hi: the engine key at which to stop.
        :param reverse: iterate from `hi` down.
        :raises ~centidb.errors.CorruptKeyError: (while iterating) for a
            record key that cannot be decoded.
        """
        return self._scan(etxn, lo, hi, reverse, _ITEMS)

    def keys(self, etxn: EngineTransaction, lo: bytes, hi: bytes,
             reverse: bool) -> Iterator[Key]:
        """Iterate the key tuples of the records in ``[lo, hi)``; see :meth:`values`.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param lo: the lowest engine key.
        :param hi: the engine key at which to stop.
        :param reverse: iterate from `hi` down.
        """
        return self._scan(etxn, lo, hi, reverse, _KEYS)

    @cython.locals(flag=cython.int, records=cython.bint, restart=cython.bint, fast=FastCalls,
                   writes=cython.Py_ssize_t, chunk=list, key_bytes=bytes, stored=bytes)
    def _scan(self, etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
              reverse: bool, what: int, index_prefix: bytes = b'',
              index_name: str = '') -> Iterator[Any]:
        # Records (or index entries) come in chunks from the engine. A record
        # scan hands the rest of its range to batch_items when it meets a
        # batch, which expands batches.
        flag = self.batch_flag
        records = what < _INDEX_VALUES
        if records and reverse:
            # A batch sits under its highest member: one at or past hi may
            # hold members below it.
            found = etxn.first(hi, self.end)
            if found is not None and found[1] and found[1][0] & flag:
                yield from self._expanded(etxn, lo, hi, True, what)  # type: ignore[arg-type]
                return
        last, restart = None, True
        fetched: dict[bytes, bytes | None] | None = None
        while restart:
            restart = False
            if last is not None:
                lo, hi = _past(last, lo, hi, reverse)
            fast = etxn.fast
            writes = fast.writes
            chunks = etxn.item_chunks(lo, hi, reverse)
            try:
                for chunk in chunks:
                    if not records and fast.get is None:
                        # A networked engine: one round trip for the chunk's records.
                        fetched = self._fetched(etxn, chunk, index_prefix)
                    for key_bytes, stored in chunk:
                        if fast.writes != writes:    # it wrote, or ended: start again
                            restart = True
                            break
                        if not records:
                            yield self._entry_output(etxn, key_bytes, index_prefix,
                                                     index_name, what, fetched)
                        elif not stored or stored[0] & flag:
                            if last is not None:
                                lo, hi = _past(last, lo, hi, reverse)
                            yield from self._expanded(etxn, lo, hi, reverse,  # type: ignore[arg-type]
                                                      what)
                            return
                        elif what == _VALUES:
                            yield self._decoded(key_bytes, stored)
                        else:
                            yield self._output(key_bytes, stored, what)
                        last = key_bytes
                    if restart:
                        break
            finally:
                chunks.close()
        if records and not reverse:
            found = etxn.first(hi, self.end)
            if found is not None and found[1] and found[1][0] & flag:
                if last is not None:
                    lo, hi = _past(last, lo, hi, reverse)
                yield from self._expanded(etxn, lo, hi, False, what)  # type: ignore[arg-type]

    def _fetched(self, etxn: EngineTransaction, chunk: list[Item],
                 index_prefix: bytes) -> dict[bytes, bytes | None]:
        """The stored records the entries of `chunk` name, read with one ``get_many``.

        Up to the first corrupt entry, which raises when the scan reaches it.
        """
        keys = []
        for entry, _ in chunk:
            try:
                pos = first_key_end(entry, index_prefix)
            except CorruptKeyError:
                break
            if not pos:
                break
            keys.append(rejoined(self.prefix, entry, pos))
        return dict(zip(keys, etxn.get_many(keys)))

    def _entry_output(self, etxn: EngineTransaction, entry: bytes, index_prefix: bytes,
                      index_name: str, what: int,
                      fetched: dict[bytes, bytes | None] | None) -> Any:
        if what == _INDEX_ITEMS:
            tup, pos = split_first(entry, index_prefix)
        else:
            tup, pos = None, first_key_end(entry, index_prefix)
        if not pos:
            raise self.corrupt_entry(entry)
        key_bytes = rejoined(self.prefix, entry, pos)
        if fetched is not None and key_bytes in fetched and not self.batched:
            stored = fetched[key_bytes]
        else:
            stored = self._stored(etxn, key_bytes)
        if stored is None and not self.batched:
            # A batch() (in this transaction or another process) may have moved it.
            stored = self.batch_get(etxn, key_bytes)
        if stored is None:
            raise self.missing(index_name, keylib.unpacks(key_bytes, self.prefix))
        if what == _INDEX_ITEMS:
            return tup, self._decoded(key_bytes, stored)
        return self._decoded(key_bytes, stored)

    def _expanded(self, etxn: EngineTransaction, lo: bytes, hi: bytes, reverse: bool,
                  what: int) -> Iterator[Any]:
        for key_bytes, stored in self.batch_items(etxn, lo, hi, reverse):
            yield self._output(key_bytes, stored, what)

    def _output(self, key_bytes: bytes, stored: bytes, what: int) -> Any:
        if what == _VALUES:
            return self._decoded(key_bytes, stored)
        try:
            key = keylib.unpacks(key_bytes, self.prefix)
        except CorruptKeyError as exc:
            raise self.corrupt_key(key_bytes, exc) from None
        if what == _KEYS:
            return key
        return key, self._decoded(key_bytes, stored)

    def index_get(self, txn: Transaction, index_prefix: bytes, index_name: str, x: object,
                  default: Any) -> Any:
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
        packed = pack_entry(as_key(x), index_prefix, _EMPTY)
        etxn = checked_engine_txn(self.txns, self.txn_class, txn, False)
        entry = first_key(etxn, packed + _SEP, packed + _AFTER_KEY_SEP)
        if entry is None:
            return default
        key_bytes = rejoined(self.prefix, entry, len(packed) + 1)
        stored = self._stored(etxn, key_bytes)
        if stored is None and not self.batched:
            stored = self.batch_get(etxn, key_bytes)
        if stored is None:
            raise self.missing(index_name, keylib.unpacks(key_bytes, self.prefix))
        return self._decoded(key_bytes, stored)

    def index_records(self, index_prefix: bytes, index_name: str, items: bool,
                      etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                      reverse: bool) -> Iterator[Any]:
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
        return self._scan(etxn, lo, hi, reverse, _INDEX_ITEMS if items else _INDEX_VALUES,
                          index_prefix, index_name)

# --- the entry points of Collection.get, Collection.put and Index.get ---------------
#
# The collection and index classes take these functions as their methods, so
# that a get or put starts in compiled code. They read the collection's
# public ``calls`` (a centidb.records.access.CollectionCalls) and the index's
# public ``get_args`` and ``get_many``.

def collection_get(self: Any, key: object, default: Any = None, *,
                   txn: Transaction | None = None, rec: bool = False, encoded: bool = False,
                   raw: bool = False) -> Any:
    """Return the value stored under `key`, or `default`.

    :param key: the key tuple (a bare value means a 1-tuple).
    :param default: returned when there is no record under `key`.
    :param txn: a :class:`~centidb.txn.Transaction` of the store to
        read in (default: see the module doc).
    :param raw: the older name of `encoded`.
    :param rec: return a :class:`Record` (ignored with `encoded`).
    :param encoded: return the encoder's bytes (the packer undone)
        instead of decoding them.
    :returns: the value, its bytes or a :class:`Record`, or `default`.
    :raises ~centidb.errors.UnsupportedKeyTypeError: for a key element
        the key codec cannot encode (see :func:`~centidb.keylib.packs`).
    :raises TypeError: if `txn` is not a transaction of this store.
    :raises ~centidb.errors.TransactionError: if `txn` has ended.
    :raises ~centidb.errors.UnknownEncoderError: for a record packed
        with a packer not registered in this session.
    """
    calls = self.calls
    if txn is not None and not (encoded or raw):
        return _reader_get(calls.reader, txn, key, default, rec)
    encoded = encoded or raw
    return calls.txns.run(txn, False, calls.records.read, as_key(key), default,
                          encoded, rec)


def collection_put(self: Any, rec: Any, key: object = None, blind: bool = False,
                   txn: Transaction | None = None, packer: Any = None) -> Record:
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
    :param txn: a write :class:`~centidb.txn.Transaction` of the store
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
    :raises ~centidb.errors.LimitExceededError: if the stored value is
        larger than the engine's ``max_value_size`` (nothing is written).
    """
    calls = self.calls
    if txn is None:
        txn = calls.txns.current_write()
        if txn is None:
            if packer is not None:
                calls.register_packer(packer)   # registers it before begin()
            with calls.txns.begin(True) as own:
                if packer is None:
                    record = _writer_write(calls.writer, own, rec, key, blind)
                    if record is not None:
                        return record
                return calls.put_general(own, rec, key, blind, packer)
    if packer is None:
        record = _writer_write(calls.writer, txn, rec, key, blind)
        if record is not None:
            return record
    return calls.put_general(txn, rec, key, blind, packer)



def index_get(self: Any, tup: object, default: Any = None, *, rec: bool = False,
              txn: Transaction | None = None) -> Any:
    """Return the value of the first record whose index tuple equals `tup`.

    "First" is in record key order among the entries for `tup`.

    :param tup: the index tuple (a bare value means a 1-tuple).
    :param default: returned when no record has that index tuple.
    :param rec: return the record as a :class:`~centidb.records.Record`
        (its key and value), as ``Collection.get(rec=True)`` does.
    :param txn: a :class:`~centidb.txn.Transaction` of the store to
        read in (default: see the module doc).
    :returns: the record's value (or :class:`~centidb.records.Record`),
        or `default`.
    :raises TypeError: if `txn` is not a transaction of this store.
    :raises ~centidb.errors.TransactionError: if `txn` has ended.
    :raises ~centidb.errors.IndexInconsistentError: if the entry points
        at a missing record.
    :raises ~centidb.errors.UnknownEncoderError: for a record packed
        with a packer not registered in this session.
    """
    if rec or txn is None:
        return self.get_many((tup,), default, rec=rec, txn=txn)[0]
    calls, prefix, name = self.get_args
    return _reader_index_get(calls.reader, txn, prefix, name, tup, default)


# The entry points' calls of the reader and writer: compiled, C calls.

def _reader_get(reader: RecordReader, txn: Transaction, key: object, default: Any,
                rec: bool) -> Any:
    if rec:
        return reader.get_record(txn, key, default)
    return reader.get(txn, key, default)


def _reader_index_get(reader: RecordReader, txn: Transaction, index_prefix: bytes,
                      index_name: str, x: object, default: Any) -> Any:
    return reader.index_get(txn, index_prefix, index_name, x, default)


def _writer_write(writer: Any, txn: Transaction, data: Any, key: object,
                  blind: bool) -> Record | None:
    # The writer may be wrapped (limits, reports): only a bare one is called in C.
    if type(writer) is RecordWriter:
        return _bare_write(writer, txn, data, key, blind)
    return writer.write(txn, data, key, blind)


def _bare_write(writer: RecordWriter, txn: Transaction, data: Any, key: object,
                blind: bool) -> Record | None:
    return writer.write(txn, data, key, blind)
