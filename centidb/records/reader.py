"""The common reads of one collection's records: :class:`RecordReader`.

Get by key or by index tuple, and scans of records and of an index's
entries, reading through the engine transaction's unchecked getter when it
has one and decoding plain records inline; everything it uses is passed to
its constructor. Compiled as it is when centidb is built (``reader.pxd``;
:data:`centidb.impl.PURE_MODE`), it calls the key codec, the kernel and
:mod:`centidb.records.record` without a Python call.

This layer calls engine transactions; never a layer above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from centidb import _nocython as cython
else:
    try:
        import cython
    except ImportError:     # not built: the names below are the pure-Python ones
        from centidb import _nocython as cython

from centidb import keylib
from centidb.engines import EngineTransaction
from centidb.engines.base import Item
from centidb.errors import CentiError, CorruptKeyError
from centidb.keylib import Key
from centidb.records.fastpath import checked_engine_txn, first_key
from centidb.records.record import ENTRY_SEP, IndexSpec, as_key
from centidb.txn import Transaction, TxnManager

if not cython.compiled:
    # Compiled, reader.pxd cimports the C functions and classes of these names.
    from centidb.engines.fastcalls import FastCalls
    from centidb.keylib import first_key_end, pack_entry, split_first
    from centidb.records.kernel import rejoined
    from centidb.records.record import decoded_body, index_entries, new_record, plain_body

__all__ = ['RecordReader']

_SEP = ENTRY_SEP    # the same, as a C variable once compiled
# keylib.after_key's bound: ENTRY_SEP's successor.
_AFTER_KEY_SEP = keylib.after_key(b'')
# What a scan yields: records' values, (key, value) or keys; or, walking an
# index's entries, the values or (index tuple, value) of the records they name.
_VALUES, _ITEMS, _KEYS, _INDEX_VALUES, _INDEX_ITEMS = range(5)
_EMPTY = b''


def _past(last: bytes, lo: bytes | None, hi: bytes | None,
          reverse: bool) -> tuple[bytes | None, bytes | None]:
    """The bounds ``(lo, hi)`` of what a scan has left once it has yielded `last`."""
    return (lo, last) if reverse else (last + b'\x00', hi)


class RecordReader:
    """The common case of ``Collection.get`` and ``Index.get``, and index scans.

    Prepared for one collection: it reads through the engine transaction's
    unchecked getter when it has one, and decodes plain records inline.

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
                 batch_flag: int, end: bytes | None, coll: Any,
                 specs: tuple[IndexSpec, ...], indexes: tuple[object, ...],
                 checksum: bool) -> None:
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
        try:
            body = plain_body(stored, self.plain_id, self.checksum)
            if body is not None:
                return decoded_body(self.decode_plain, body)
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
