"""Records: one record and its index entries, and the fast paths that write and read them.

A stored record is one engine key (the collection prefix and the packed key
tuple) whose value is a header byte (the packer's id), the packer's output
of the encoded bytes and, in a collection that keeps checksums, a CRC-32 trailer; plus one
engine key per index entry (the index prefix, the packed index tuple,
``KEY_SEP``, the packed record key) with an empty value.

:class:`RecordWriter` does the common cases of writes fast (a put of a
plain value, or a ``put_many`` of plain values); everything it uses is
passed to its constructor. :mod:`centidb.records.reader` does the common
reads, :mod:`centidb.records.entry` starts them, and
:class:`centidb.records.access.Records` does the general cases. This module is written once and,
when centidb is built, compiled by Cython as it is (``record.pxd`` holds its
types; :data:`centidb.impl.PURE_MODE`); compiled, it calls the key codec's
compiled functions and the fast paths without a Python call.

This layer calls engine transactions, through :mod:`centidb.records.fastpath`
where it can (and reads the fields of the store transactions it is handed);
never a layer above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Tuple

if TYPE_CHECKING:
    from centidb import _nocython as cython
else:
    try:
        import cython
    except ImportError:     # not built: the names below are the pure-Python ones
        from centidb import _nocython as cython

from centidb.engines import EngineTransaction
from centidb.records.fastpath import (
    checked_engine_txn, delete_one, put_many, put_one, replace_one,
)
from centidb.engines.base import Item
from centidb.engines.fastcalls import FastCallsLike
from centidb.keyformat import KEY_SEP
from centidb.keylib import Key
from centidb.txn import Transaction, TxnManager

if not cython.compiled:
    # Compiled, record.pxd cimports the C functions and classes of these names.
    from centidb.checksums import intact, seal
    from centidb.keylib import pack_entry
    from centidb.msgpackcodec import MsgpackDecode, MsgpackEncode
    from centidb.records.kernel import body_of, rejoined


__all__ = ['Record', 'RecordWriter', 'index_entries', 'as_key', 'IndexSpec', 'seen',
           'new_record', 'plain_body', 'decoded_body']

ENTRY_SEP = bytes([KEY_SEP])
_SEP = ENTRY_SEP    # the same, as a C variable once compiled
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
        # Set with _read_in (seen, new_record); read only while _read_in is
        # an engine transaction's fast.
        self._read_at: int

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
    """Return a :class:`Record` as read or written, made without calling the class.

    It is ``seen(Record(coll, data, key, stored, entries, indexes),
    key_bytes, etxn)``, `fast` being etxn's ``fast``.

    :param coll: the collection.
    :param data: the record's value.
    :param key: its key tuple.
    :param stored: the stored bytes.
    :param entries: the index entries of that version.
    :param indexes: the index set `entries` was made for.
    :param key_bytes: the engine key `stored` is under.
    :param fast: the ``fast`` of the engine transaction that holds it.
    """
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


def plain_body(stored: Any, plain_id: int, checksum: bool) -> bytes | None:
    """Return the body of `stored` if the plain packer stored it intact, else None.

    None also for a value that is not ``bytes``, or (with `checksum`) whose
    trailer does not match: those go to the collection's full decode, which
    raises the right error.

    :param stored: a stored value.
    :param plain_id: the plain packer's id, the header byte to match.
    :param checksum: the value ends with a CRC-32 trailer.
    """
    if type(stored) is not bytes:
        return None
    value = stored
    trailer = 4 if checksum else 0
    if len(value) > trailer and value[0] == plain_id and (not checksum or intact(value)):
        return body_of(value, trailer)
    return None


def decoded_body(decode: Callable[[bytes], Any], body: bytes) -> Any:
    """Return ``decode(body)``; compiled, msgpack's decoder is called in C.

    :param decode: an encoder's ``decode``.
    :param body: a stored value's body (see :func:`body_of`).
    """
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


#: Up to this many index entries, membership tests scan a list.
_FEW = 8


class RecordWriter:
    """The common case of ``Collection.put``, prepared for one collection.

    :meth:`write` handles a put of a plain value (not a :class:`Record`)
    with a key or a ``key_func``, an exact encoder, the collection's own
    packer, every stored index added and no batches; :meth:`write_many`
    the same for a list of values, keyed by the ``key_func`` or the
    counter.

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
    :param auto_key: True if the collection's keys come from its counter:
        :meth:`write` then declines (a given key must raise the counter),
        while :meth:`write_many` takes the counter's value from its caller.
    :param plain_id: the id of the plain packer, and `decode_plain` the
        encoder's ``decode``: with them an old version stored plainly is
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
                 auto_key: bool, plain_id: int, decode_plain: Callable[[bytes], Any] | None,
                 checksum: bool) -> None:
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
        self.auto_key = auto_key
        self.plain_id = plain_id
        self.decode_plain = decode_plain
        self.checksum = checksum

    def _old_entries(self, old: bytes, entry_tail: bytes) -> list[bytes]:
        # old_entries(old, entry_tail), decoding a plain record inline.
        body = plain_body(old, self.plain_id, self.checksum)
        if body is not None and self.decode_plain is not None:
            try:
                data = decoded_body(self.decode_plain, body)
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
        if not self.usable or self.auto_key:
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
        pairs = [] if replaced else [(key_bytes, value)]
        if old is None:
            for entry in entries:
                pairs.append((entry, _EMPTY))
        else:
            if read is not None and read._key_bytes == key_bytes and read._stored == old:
                old_entries: list[bytes] = read._entries  # type: ignore[assignment]  # set with _stored
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
                    pairs.append((entry, _EMPTY))
        if pairs:
            put_many(etxn, fast, pairs)
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
            (an auto-keyed collection's counter, read and raised by the caller).
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
        pairs: list[Item] = []
        keys: list[Key] = []
        # With reads: how many entries follow each record's pair in pairs.
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
            pairs.append((key_bytes, value))
            for entry in entries:
                pairs.append((entry, _EMPTY))
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
            found_old = etxn.first(lo, hi + b'\x00') is not None
            if found_old or len(distinct) != len(keys):
                pairs, stale = self.merge_stored(etxn, pairs, counts, start, found_old)
        # Everything that can fail has run: from here on, writes.
        for entry in stale:
            etxn.delete(entry)
        if pairs:
            etxn._put_many(pairs)   # once per list: the engine's bulk path (LMDB may append)
        return keys

    def merge_stored(self, etxn: EngineTransaction, pairs: list[Item], counts: list[int],
                     start: int, found_old: bool) -> tuple[list[Item], list[bytes]]:
        """Return `pairs` with each key once, as its last record, and the stale stored entries.

        :param etxn: the write transaction, read for the stored versions.
        :param pairs: each record's ``(key bytes, value)`` followed by its
            index entries' pairs, as :meth:`write_many` makes them.
        :param counts: how many entries follow each record's pair.
        :param start: the length of the collection's prefix.
        :param found_old: False if no record is stored under any of the keys:
            then none is read.
        :returns: ``(pairs, stale)``: the pairs to write, and the entries of
            the stored versions that the new ones lack, to delete.
        """
        # Key bytes -> (value, entries); a key given twice keeps its first place.
        latest: dict[bytes, tuple[bytes, tuple[bytes, ...]]] = {}
        at = 0
        for count in counts:
            key_bytes, value = pairs[at]
            # A tuple of bytes, unlike a list, leaves the garbage collector's watch.
            latest[key_bytes] = (value, tuple([entry for entry, _ in pairs[at + 1:at + 1 + count]]))
            at += 1 + count
        merged: list[Item] = []
        stale: list[bytes] = []
        # Every key is within the engine's limit now: the unchecked getter is safe.
        get = etxn.fast.get
        # Without a fast getter (a networked engine), one call reads them all.
        olds = iter(etxn.get_many(list(latest))) if found_old and get is None else None
        for key_bytes, (value, held) in latest.items():
            if not found_old:
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
