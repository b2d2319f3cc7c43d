"""Access: one collection's record paths, and how its records are read.

:class:`Records` holds everything the write and read paths need for one
collection, in its current state (indexes, batching, key kind): it makes the
collection's twinned :class:`~centidb.records.RecordWriter` and
:class:`~centidb.records.RecordReader` for the common cases, decodes stored
values, and does the general case of each read, naming a corrupt record. It
inherits the general write paths from
:class:`~centidb.writing.RecordWrites`. The functions below read and delete
index entries.

This layer calls :mod:`centidb.writing`, :mod:`centidb.records`,
:mod:`centidb.batches` (through the view it is given) and engine
transactions; never a layer above.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from centidb import checksums, fastpath, keylib, limits, records
from centidb.batches import BATCH_FLAG, BatchView, PackerNotAllowed
from centidb.encodings import Encoder, Packer
from centidb.engines import EngineTransaction
from centidb.engines.base import ItemIterator
from centidb.errors import (
    CentiError, ChecksumError, CorruptKeyError, CorruptRecordError, IndexInconsistentError,
)
from centidb.keylib import Key
from centidb.records import ENTRY_SEP, IndexSpec, Record
from centidb.txn import Transaction, TxnManager
from centidb.writing import BoundIndex, KeySource, RecordWrites, ReportingWriter, Writer

__all__ = ['Records', 'split_entries', 'first_entry']


class Records(RecordWrites):
    """One collection's write and read paths, prepared for its current state.

    The collection makes a new one whenever its indexes or batching change.
    The common cases are :attr:`writer` and :attr:`reader`; the methods here
    do the general reads, and those inherited from
    :class:`~centidb.writing.RecordWrites` the general writes (records given
    as :class:`~centidb.records.Record`, other packers, ``txn_key_func`` and
    counter keys, batches, deletes, index builds).

    :param coll: the collection, kept in each :class:`~centidb.records.Record`.
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
    :param keys: the collection's :class:`~centidb.writing.KeySource`.
    :param indexes: the indexes added in this session (each a
        :class:`~centidb.writing.BoundIndex`), in the order added.
    :param unbound: the names of stored indexes not added in this session.
    :param view: the collection's :class:`~centidb.batches.BatchView`.
    :param batched: True if the collection holds batches.
    :param limit: the engine's longest key, or None.
    :param before_write: the collection's before-write hooks: each is
        called as ``hook(key, value)`` before a record is written (``value``
        None for a delete), after everything else that can fail.
    :param report: record a :class:`~centidb.txn.Change` on the store
        transaction for each record written or deleted (:attr:`writer` is
        then a :class:`~centidb.writing.ReportingWriter`).
    :param checksum: True if the collection keeps checksums: every stored
        value ends with a CRC-32 trailer (see :mod:`centidb.checksums`),
        written by every write and checked by every read.
    """

    def __init__(self, coll: Any, txns: TxnManager, txn_class: type[Transaction], name: str,
                 prefix: bytes, encoder: Encoder, packer: Encoder, header: bytes,
                 plain_id: int, packer_of: Callable[[int], Packer], keys: KeySource,
                 indexes: tuple[BoundIndex, ...], unbound: frozenset[str], view: BatchView,
                 batched: bool, limit: int | None,
                 before_write: tuple[Callable[[Key, Any], object], ...] = (),
                 report: bool = False, checksum: bool = False) -> None:
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
        self.specs: tuple[IndexSpec, ...] = tuple((index.func, index.prefix)
                                                  for index in indexes)
        #: The unique indexes among `indexes`: their puts take the general path.
        self.unique = tuple(index for index in indexes if index.unique)
        self.unbound = unbound
        self.view = view
        self.batched = batched
        self.limit = limit
        self.before_write = before_write
        self.report = report
        self.checksum = checksum
        self._decode_plain = encoder.decode
        compress = None if packer.name == 'plain' else packer.encode
        self.writer: Writer = records.RecordWriter(
            coll, txns, txn_class,
            encoder.exact and not unbound and not batched and not self.unique
            and not before_write,       # before-write hooks: the general paths
            prefix, encoder.encode, compress, header, keys.key_func, self.specs, indexes,
            limit, self.old_entries, self.check_key_sizes, records.PYTHON.Record,
            keys.kind == 'auto', plain_id, encoder.decode, checksum)
        self.writer = limits.limited_writer(self.writer, txns.engine, name, prefix)
        if report:
            self.writer = ReportingWriter(self.writer, name)
        self.reader = records.RecordReader(
            txns, txn_class, prefix, plain_id, encoder.decode, self.decode, limit,
            batched, view.get, self.missing_record_error,
            corrupt_entry_error, self.corrupt_record_error, self.corrupt_key_error,
            view.items, BATCH_FLAG, view.end, coll, self.specs, indexes, checksum)

    # --- decoding --------------------------------------------------------------

    def decode(self, stored: bytes) -> Any:
        """The record value of a stored record.

        :param stored: the stored value (header byte, packed bytes and, in
            a collection that keeps checksums, the trailer).
        :raises ~centidb.checksums.Mismatch: for a damaged value of a
            collection that keeps checksums (:meth:`decoded` names the
            record).
        """
        if self.checksum:
            stored = checksums.opened(stored)
        try:
            header = stored[0]
        except IndexError:
            raise ValueError('the stored value is empty') from None
        if header == self.plain_id:      # the common case, without a call
            return self._decode_plain(stored[1:])
        return self._decode_plain(self.packer_of(header).decode(stored[1:]))

    def encoded(self, stored: bytes) -> bytes:
        """The encoder's bytes of a stored record (its packer undone).

        :param stored: the stored value (header byte, packed bytes and, in
            a collection that keeps checksums, the trailer).
        """
        if self.checksum:
            stored = checksums.opened(stored)
        return self.packer_of(stored[0]).decode(stored[1:])

    def seal(self, value: bytes) -> bytes:
        """`value` as this collection stores it: with its trailer if it keeps checksums.

        :param value: a header byte and packed bytes.
        """
        return checksums.seal(value) if self.checksum else value

    def decoded(self, key_bytes: bytes, stored: bytes, encoded: bool = False) -> Any:
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

    def corrupt_record_error(self, key_bytes: bytes, exc: Exception) -> CorruptRecordError:
        """The error for the record under `key_bytes`, whose value cannot be decoded.

        :param key_bytes: the record's engine key.
        :param exc: the exception decoding raised.
        """
        try:
            key = repr(keylib.unpacks(key_bytes, self.prefix))
        except CorruptKeyError:
            key = f'bytes {key_bytes!r}'
        if isinstance(exc, checksums.Mismatch):
            return ChecksumError(f'collection {self.name!r}: the record under key {key} '
                                 f'is damaged: {exc}')
        if isinstance(exc, PackerNotAllowed):
            return CorruptRecordError(f'collection {self.name!r}: the record under key '
                                      f'{key} cannot be read: {exc}')
        return CorruptRecordError(
            f'collection {self.name!r}: the record under key {key} cannot be '
            f'decoded ({type(exc).__name__}: {exc})')

    def corrupt_key_error(self, key_bytes: bytes, exc: CorruptKeyError) -> CorruptKeyError:
        """The error for a record key that cannot be decoded.

        :param key_bytes: the record's engine key.
        :param exc: the error decoding raised.
        """
        return CorruptKeyError(f'collection {self.name!r}: a record key is corrupt ({exc}): '
                               f'{bytes(key_bytes)!r}')

    def entries(self, data: Any, entry_tail: bytes) -> list[bytes]:
        """Return the index entry keys of a record (a list of bytes).

        :param data: the record value.
        :param entry_tail: see :meth:`entry_tail`.
        """
        return records.index_entries(self.specs, data, entry_tail)

    def old_entries(self, stored: bytes, entry_tail: bytes) -> list[bytes]:
        """Return the index entry keys of a stored record.

        :param stored: the stored value.
        :param entry_tail: see :meth:`entry_tail`.
        """
        data = self.decoded(self.prefix + entry_tail[1:], stored)
        return records.index_entries(self.specs, data, entry_tail)

    def entry_tail(self, key_bytes: bytes) -> bytes:
        """What follows an index tuple in an entry: separator and record key.

        :param key_bytes: the record's engine key.
        """
        return ENTRY_SEP + key_bytes[len(self.prefix):]

    def missing_record_error(self, index_name: str, key: Key) -> IndexInconsistentError:
        """The error for an entry of `index_name` pointing at a missing record.

        :param index_name: the index's name.
        :param key: the record key the entry names.
        """
        return IndexInconsistentError(
            f'index {index_name!r} of collection {self.name!r} points at '
            f'missing record {key!r}: the index is inconsistent (was a blind put '
            f'used on an existing key, or an index function changed?)')

    # --- reading -----------------------------------------------------------------

    def stored(self, etxn: EngineTransaction, key_bytes: bytes) -> bytes | None:
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

    def read(self, txn: Transaction, etxn: EngineTransaction, key: Key, default: Any,
             encoded: bool, rec: bool) -> Any:
        """Read the record under `key`; see ``Collection.get``.

        :param txn: the store transaction (unused: the signature
            :meth:`~centidb.txn.TxnManager.run` calls).
        :param etxn: its :class:`~centidb.engines.EngineTransaction`.
        :param key: the key tuple.
        :param default: returned when there is no record under `key`.
        :param encoded: return the encoder's bytes.
        :param rec: return a :class:`~centidb.records.Record`.
        """
        key_bytes = keylib.packs(key, self.prefix)
        stored = self.stored(etxn, key_bytes)
        if stored is None:
            return default
        if encoded:
            return self.decoded(key_bytes, stored, encoded=True)
        if rec:
            return self.record(key, key_bytes, stored)
        return self.decoded(key_bytes, stored)

    def record(self, key: Key, key_bytes: bytes, stored: bytes) -> Record:
        """The :class:`~centidb.records.Record` of a stored record, ready for a later put.

        :param key: the record's key tuple.
        :param key_bytes: its engine key.
        :param stored: its stored value.
        """
        data = self.decoded(key_bytes, stored)
        entries = self.entries(data, self.entry_tail(key_bytes))
        return records.seen(records.Record(self.coll, data, key, stored, entries, self.indexes),
                            key_bytes)

    def index_record(self, etxn: EngineTransaction, index_prefix: bytes, index_name: str,
                     tup: Key, default: Any) -> Any:
        """The :class:`~centidb.records.Record` of the first record whose index tuple is `tup`.

        "First" is in record key order; see ``Index.get``.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param index_prefix: the index's prefix.
        :param index_name: the index's name, for errors.
        :param tup: the index tuple.
        :param default: returned when no record has that index tuple.
        :raises ~centidb.errors.IndexInconsistentError: if the entry points
            at a missing record.
        """
        entry = first_entry(etxn, index_prefix, tup)
        if entry is None:
            return default
        parts = keylib.unpacks_list(entry, index_prefix)
        if len(parts) != 2:
            raise corrupt_entry_error(entry)
        key = parts[1]
        key_bytes = keylib.packs(key, self.prefix)
        stored = self.stored(etxn, key_bytes)
        if stored is None:
            raise self.missing_record_error(index_name, key)
        return self.record(key, key_bytes, stored)

    def read_many(self, txn: Transaction, etxn: EngineTransaction, packed: list[bytes],
                  default: Any) -> list[Any]:
        """Read the records under the engine keys `packed`; see ``Collection.get_many``.

        :param txn: the store transaction (unused, as for :meth:`read`).
        :param etxn: its :class:`~centidb.engines.EngineTransaction`.
        :param packed: a list of engine keys.
        :param default: the item for a key with no record.
        :returns: a ``list`` of values.
        """
        values: list[Any] = []
        # One call: a networked engine reads them in a round trip or a few.
        found = [None] * len(packed) if self.batched else etxn.get_many(packed)
        for key_bytes, stored in zip(packed, found):
            if stored is None:
                # In a batch (another process may have batched the collection).
                stored = self.view.get(etxn, key_bytes)
            values.append(default if stored is None else self.decoded(key_bytes, stored))
        return values

    def items(self, etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
              reverse: bool) -> ItemIterator:
        """Iterate ``(key bytes, stored)`` in ``[lo, hi)``, batches expanded.

        Batches are looked for even in a collection that holds none, because
        a ``batch()`` in the same transaction may make some mid-scan.

        :param etxn: the :class:`~centidb.engines.EngineTransaction`.
        :param lo: the lowest engine key.
        :param hi: the engine key at which to stop.
        :param reverse: iterate from `hi` down.
        """
        # Never None here: a collection's ranges are bounded both ways.
        return self.view.items(etxn, lo, hi, reverse)  # type: ignore[arg-type]


def corrupt_entry_error(entry: bytes) -> CorruptKeyError:
    """The error for an index entry without an index tuple and a record key.

    :param entry: the entry's engine key.
    """
    return CorruptKeyError(f'index entry {entry!r} does not hold an '
                           f'index tuple and a record key')


def split_entries(etxn: EngineTransaction, index_prefix: bytes, lo: bytes | None,
                  hi: bytes | None, reverse: bool) -> Iterator[tuple[Key, Key]]:
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


def first_entry(etxn: EngineTransaction, index_prefix: bytes, x: Key) -> bytes | None:
    """The first entry key of an index for the index tuple `x`, or None.

    :param etxn: the :class:`~centidb.engines.EngineTransaction`.
    :param index_prefix: the index's prefix.
    :param x: the index tuple.
    """
    # Entries for exactly x are packs(x), KEY_SEP, packed record key.
    packed = keylib.packs(x, index_prefix)
    return fastpath.first_key(etxn, packed + ENTRY_SEP, keylib.after_key(packed))
