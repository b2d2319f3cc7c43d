"""Access: one collection's record paths.

:class:`Records` holds everything the read and write paths need for one
collection, in its current state (indexes, batching, key kind): it makes the
collection's :class:`~centidb.records.RecordWriter` and
:class:`~centidb.records.RecordReader` for the common cases, decodes stored
values, and does the general case of each read and write, naming a corrupt
record: records given as a :class:`~centidb.records.Record`, other packers,
``txn_key_func`` and counter keys, batches, unique indexes, deletes and
index builds. Each write checks, encodes, makes keys and index entries and
calls the before-write hooks before its first write, so a failure writes
nothing. :class:`CollectionCalls` is what a collection's ``get()`` and
``put()`` read.

This layer calls :mod:`centidb.records.writing`, :mod:`centidb.records.entries`,
:mod:`centidb.records`, :mod:`centidb.records.savepoint`, :mod:`centidb.batches`
(through the view it is given) and engine transactions; never a layer above.
"""

from __future__ import annotations

from typing import Any, Callable

from centidb import checksums, keylib
from centidb.records import record as records
from centidb.records.reader import RecordReader
from centidb.records import fastpath, limits
from centidb.batches import BATCH_FLAG, BatchView, PackerNotAllowed
from centidb.encodings import Encoder, Packer
from centidb.engines import EngineTransaction
from centidb.engines.base import ItemIterator
from centidb.records.entries import (
    ASIDE, corrupt_entry_error, delete_prefix, delete_stale, first_entry, replace_entries,
)
from centidb.errors import (
    CentiError, ChecksumError, CorruptKeyError, CorruptRecordError, IndexInconsistentError,
    IndexNotAddedError, KeyKindMismatchError, UniqueError,
)
from centidb.keylib import Key
from centidb.records.limits import check_value_size
from centidb.records.record import ENTRY_SEP, IndexSpec, Record, as_key
from centidb.records.savepoint import Savepoint
from centidb.txn import Change, Transaction, TxnManager
from centidb.records.writing import BoundIndex, KeySource, ReportingWriter, Writer

__all__ = ['CollectionCalls', 'Records', 'FILL_CHUNK']

_EMPTY = b''


class Records:
    """One collection's record paths: its reads and writes, prepared for its current state.

    The collection makes a new one whenever its indexes, hooks or batching
    change. The common cases are :attr:`writer` and :attr:`reader`; the
    methods here do the general reads and writes (records given as
    :class:`~centidb.records.Record`, other packers, ``txn_key_func`` and
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
    :param keys: the collection's :class:`~centidb.records.writing.KeySource`.
    :param indexes: the indexes added in this session (each a
        :class:`~centidb.records.writing.BoundIndex`), in the order added.
    :param unbound: the names of stored indexes not added in this session.
    :param view: the collection's :class:`~centidb.batches.BatchView`.
    :param batched: True if the collection holds batches.
    :param limit: the engine's longest key, or None.
    :param before_write: the collection's before-write hooks: each is
        called as ``hook(key, value)`` before a record is written (``value``
        None for a delete), after everything else that can fail.
    :param report: record a :class:`~centidb.txn.Change` on the store
        transaction for each record written or deleted (:attr:`writer` is
        then a :class:`~centidb.records.writing.ReportingWriter`).
    :param checksum: True if the collection keeps checksums: every stored
        value ends with a CRC-32 trailer (see :mod:`centidb.checksums`),
        written by every write and checked by every read.
    """

    def __init__(self, coll: Any, txns: TxnManager, txn_class: type[Transaction], name: str,
                 prefix: bytes, encoder: Encoder, packer: Encoder, header: bytes,
                 plain_id: int, packer_of: Callable[[int], Packer], keys: KeySource,
                 indexes: tuple[BoundIndex, ...], unbound: frozenset[str], view: BatchView,
                 batched: bool, limit: int | None, *,
                 before_write: tuple[Callable[[Key, Any], object], ...],
                 report: bool, checksum: bool) -> None:
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
        compress = None if header == bytes((plain_id,)) else packer.encode
        self.writer: Writer = records.RecordWriter(
            coll, txns, txn_class,
            encoder.exact and not unbound and not batched and not self.unique
            and not before_write,       # before-write hooks: the general paths
            prefix, encoder.encode, compress, header, keys.key_func, self.specs, indexes,
            limit, self.old_entries, self.check_key_sizes,
            keys.kind == 'auto', plain_id, encoder.decode, checksum)
        self.writer = limits.limited_writer(self.writer, txns.engine, name, prefix)
        if report:
            self.writer = ReportingWriter(self.writer, name)
        self.reader = RecordReader(
            txns, txn_class, prefix, plain_id, encoder.decode, self.decode, limit,
            batched, view.get, self.missing_record_error,
            corrupt_entry_error, self.corrupt_record_error, self.corrupt_key_error,
            view.items, BATCH_FLAG, view.end, coll, self.specs, indexes, checksum)

    # --- decoding --------------------------------------------------------------

    def decode(self, stored: bytes) -> Any:
        """The record value of a stored record.

        :param stored: the stored value (header byte, the packer's output and, in
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

        :param stored: the stored value (header byte, the packer's output and, in
            a collection that keeps checksums, the trailer).
        """
        if self.checksum:
            stored = checksums.opened(stored)
        return self.packer_of(stored[0]).decode(stored[1:])

    def seal(self, value: bytes) -> bytes:
        """`value` as this collection stores it: with its trailer if it keeps checksums.

        :param value: a header byte and the packer's output.
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

    # --- writing -----------------------------------------------------------------

    def check_writable(self) -> None:
        """Refuse writes while a stored index is not added in this session."""
        if self.unbound:
            names = ', '.join(map(repr, sorted(self.unbound)))
            raise IndexNotAddedError(
                f'collection {self.name!r} has stored index(es) {names} that '
                f'this program has not added (since it opened the store, or '
                f'since another process created them); call add_index() for '
                f'each (or drop_index()) before writing, so no index goes stale')

    def check_key_sizes(self, key: Key, key_bytes: bytes, entries: list[bytes]) -> None:
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

    def check_unique(self, etxn: EngineTransaction, key_bytes: bytes, entries: list[bytes],
                     tail_size: int) -> None:
        """Refuse, before writing anything, an entry another record has in a unique index.

        :param etxn: the engine transaction the put runs in.
        :param key_bytes: the record's engine key.
        :param entries: its new index entries.
        :param tail_size: the length of each entry's tail (separator and
            packed record key).
        :raises ~centidb.errors.UniqueError: naming the index, the index
            tuple and the key of the record that has it.
        """
        for index in self.unique:
            for entry in entries:
                if not entry.startswith(index.prefix):
                    continue
                head = entry[:-tail_size]
                for other in etxn.keys(head + ENTRY_SEP, keylib.after_key(head)):
                    if other != entry:
                        raise self.unique_error(index.name, index.prefix, other)
                    # Its own entry (a put of the same tuple again): look further.

    def unique_error(self, index_name: str, index_prefix: bytes, other: bytes) -> UniqueError:
        """The error for a second record with the index tuple of the entry `other`.

        :param index_name: the unique index's name.
        :param index_prefix: its prefix.
        :param other: the entry of the record that has the tuple.
        """
        tup, key = keylib.unpacks_list(other, index_prefix)
        return UniqueError(
            f'unique index {index_name!r} of collection {self.name!r} already has '
            f'{tup!r}, for the record {key!r}', index_name, tup, key)

    def put(self, txn: Transaction, etxn: EngineTransaction, rec: Any, key: object,
            blind: bool, packer: Encoder | None = None, header: bytes | None = None) -> Record:
        """Store `rec` (a value or a :class:`~centidb.records.Record`); see ``Collection.put``.

        :param txn: the store transaction (for ``txn_key_func``).
        :param etxn: its engine transaction.
        :param rec: the record value, or a :class:`~centidb.records.Record`.
        :param key: the key, or None.
        :param blind: skip reading the old record.
        :param packer: the packer to use, or None for the collection's own.
        :param header: `packer`'s id byte, when `packer` is given.
        :returns: the stored :class:`~centidb.records.Record`.
        """
        self.check_writable()
        old_record = None
        if type(rec) is records.Record:
            old_record = rec
            if key is None:
                key = rec.key
            rec = rec.data
        data = rec
        # Everything user code can fail on runs before the first write.
        encoded = self.encoder.encode(data)
        if packer is None:
            packer, header = self.packer, self.header
        # header is given with packer.
        value = self.seal(header + packer.encode(encoded))  # type: ignore[operator]
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
            heads = records.index_entries(self.specs, indexed, _EMPTY)
            key = (keys.next_key(etxn),)       # read now, moved on below
        key_bytes = keylib.packs(key, self.prefix)
        entry_tail = self.entry_tail(key_bytes)
        if heads is None:
            entries = records.index_entries(self.specs, indexed, entry_tail)
        else:
            entries = [head + entry_tail for head in heads]
        self.check_key_sizes(key, key_bytes, entries)
        check_value_size(etxn, self.name, key, value)
        if self.unique:
            self.check_unique(etxn, key_bytes, entries, len(entry_tail))
        old_entries = None
        # Without indexes there are no stale entries to find: skip the read.
        if not blind and self.indexes:
            # A write transaction has reloaded the metadata, so `batched` is
            # current: no fallback read for a new key (reads need one).
            old = self.view.get(etxn, key_bytes) if self.batched else etxn.get(key_bytes)
            if old is not None:
                # `indexes` is this collection's own tuple (not empty here): a
                # Record made for it was read or written in this collection.
                if (old_record is not None and old_record._indexes is self.indexes
                        and old_record._key_bytes == key_bytes and old_record._stored == old):
                    old_entries = old_record._entries
                else:
                    old_entries = self.old_entries(old, entry_tail)
        for hook in self.before_write:
            hook(key, data)
        # Everything that can fail has run: from here on, writes.
        (only,) = key if len(key) == 1 else (None,)
        if keys.kind == 'auto' and type(only) is int:
            # The counter stays above every (n,) key, so it never hands out a used one.
            keys.at_least(etxn, only + 1)
        if self.batched:
            self.view.split(etxn, key_bytes)
        delete_stale(etxn, old_entries, entries)
        pairs = [(key_bytes, value)]
        pairs += [(entry, _EMPTY) for entry in entries]
        etxn._put_many(pairs)
        if self.report:
            txn.changes.append(Change(self.name, key, data))
        return records.seen(records.Record(self.coll, data, key, value, entries, self.indexes),
                            key_bytes)

    def put_many(self, txn: Transaction, etxn: EngineTransaction, recs: list[Any],
                 blind: bool) -> list[Key]:
        """Store each of `recs`, writing nothing if any fails; see ``Collection.put_many``.

        The common case is :meth:`~centidb.records.RecordWriter.write_many`,
        which makes everything before it writes; otherwise each record is
        :meth:`put` in turn through a :class:`~centidb.records.savepoint.Savepoint`,
        rolled back if one raises.

        :param txn: the store transaction (for ``txn_key_func``).
        :param etxn: its engine transaction.
        :param recs: a ``list`` of record values or
            :class:`~centidb.records.Record` objects.
        :param blind: skip reading the old records.
        :returns: a ``list`` of the key tuples, in the order of `recs`.
        """
        self.check_writable()
        keys = self.keys
        first_id = None
        if keys.kind == 'auto' and self.writer.usable:
            first_id = keys.next_key(etxn)      # read now, moved on below
        written = self.writer.write_many(etxn, recs, blind, first_id)
        if written is not None:
            if first_id is not None and written:
                # The counter stays above every key handed out, as for put().
                keys.at_least(etxn, first_id + len(written))
            if self.report:
                name = self.name
                txn.changes += [Change(name, key, data) for key, data in zip(written, recs)]
            return written
        savepoint = Savepoint(etxn, f'collection {self.name!r}: put_many() of {len(recs)} records')
        # It has the engine transaction methods the write paths use.
        through: EngineTransaction = savepoint
        # A txn_key_func is handed the store transaction: what it writes
        # through it (say, a counter it moves) goes through the savepoint too.
        txn.engine_txn = through
        reported = len(txn.changes)
        try:
            # A stored Record's key is never None.
            return [self.put(txn, through, rec, None, blind).key  # type: ignore[misc]
                    for rec in recs]
        except BaseException:
            savepoint.roll_back()
            del txn.changes[reported:]      # what was rolled back was not written
            raise
        finally:
            if txn.engine_txn is through:
                txn.engine_txn = etxn

    def delete_many(self, txn: Transaction, etxn: EngineTransaction,
                    keys: list[Key]) -> list[Record | None]:
        """Delete the records under the key tuples `keys`; see ``Collection.delete_many``.

        Every record is read and decoded, and its index entries made (and the
        before-write hooks called), before the first write, so if any of
        that raises nothing is deleted.

        :param txn: the store transaction (its changes are recorded there).
        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param keys: a ``list`` of key tuples.
        :returns: a ``list`` with the deleted :class:`~centidb.records.Record`
            for each key, or None if there was none (or the key came earlier
            in `keys`).
        """
        self.check_writable()
        deleted: list[Record | None] = []
        doomed: list[tuple[bytes, bool, tuple[bytes, ...]]] = []
        seen: set[bytes] = set()
        for key in keys:
            key_bytes = keylib.packs(key, self.prefix)
            if key_bytes in seen:       # deleted by its first mention
                deleted.append(None)
                continue
            seen.add(key_bytes)
            found = self.doomed(etxn, key_bytes, key)
            if found is None:
                deleted.append(None)
                continue
            in_batch, data = found
            entries = self.entries(data, self.entry_tail(key_bytes))
            doomed.append((key_bytes, in_batch, tuple(entries)))   # untracked by gc
            deleted.append(records.Record(self.coll, data, key))
        gone = [key for key, rec in zip(keys, deleted) if rec is not None]
        for hook in self.before_write:
            for key in gone:
                hook(key, None)
        # Everything that can fail has run: from here on, writes.
        for key_bytes, in_batch, held in doomed:
            if in_batch:
                self.view.split(etxn, key_bytes, rejoin=True)
            for entry in held:
                etxn.delete(entry)
            etxn.delete(key_bytes)
        if self.report:
            txn.changes += [Change(self.name, key, None) for key in gone]
        return deleted

    def delete(self, txn: Transaction, etxn: EngineTransaction, key: Key) -> Record | None:
        """Delete the record under the key tuple `key` and its index entries.

        :param txn: the store transaction (its change is recorded there).
        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param key: the key tuple.
        :returns: the deleted :class:`~centidb.records.Record`, or None if there was none.
        """
        self.check_writable()
        key_bytes = keylib.packs(key, self.prefix)
        found = self.doomed(etxn, key_bytes, key)
        if found is None:
            return None
        in_batch, data = found
        entries = self.entries(data, self.entry_tail(key_bytes))
        for hook in self.before_write:
            hook(key, None)
        # Everything that can fail has run: from here on, writes.
        if in_batch:
            self.view.split(etxn, key_bytes, rejoin=True)
        for entry in entries:
            etxn.delete(entry)
        etxn.delete(key_bytes)
        if self.report:
            txn.changes.append(Change(self.name, key, None))
        return records.Record(self.coll, data, key)

    def fill_index(self, etxn: EngineTransaction, func: Callable[[Any], Any],
                   index_prefix: bytes, unique_name: str | None, replace: bool,
                   progress: Callable[[int], object] | None) -> None:
        """Write the entries of an index for every record of the collection.

        Records are read in key order and their entries written every
        ``FILL_CHUNK`` records, so memory does not grow with the
        collection. If `func` raises, or a unique index finds two records
        with the same index tuple, every entry written is deleted again
        before the exception propagates: the transaction is left as it was.
        A rebuild (`replace`) writes the new entries aside (under
        `index_prefix` + ``ASIDE``, where no entry can be), checks
        them, and only then replaces the old entries with them; so a failed
        rebuild leaves the old entries untouched.

        :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
        :param func: the index function.
        :param index_prefix: the index's prefix; without `replace` nothing
            may be stored under it yet (a new index).
        :param unique_name: the index's name if it is unique, else None.
        :param replace: replace the index's existing entries (a rebuild).
        :param progress: called as ``progress(n)`` after each chunk of
            records is indexed, `n` being the number of records since the
            last call (a ``tqdm`` bar's ``update`` fits); the calls add up
            to the number of records.
        :raises ~centidb.errors.UniqueError: (a unique index) if two records
            have the same index tuple; nothing is left written.
        """
        target = index_prefix + ASIDE if replace else index_prefix
        try:
            self._write_index_entries(etxn, func, target, progress)
            if unique_name is not None:
                self._check_entries_unique(etxn, target, unique_name)
        except BaseException:
            # An engine that failed may have ended the transaction already.
            if etxn.state == 'open':
                delete_prefix(etxn, target)
            raise
        if replace:
            replace_entries(etxn, index_prefix, target)

    def _write_index_entries(self, etxn: EngineTransaction, func: Callable[[Any], Any],
                             target: bytes, progress: Callable[[int], object] | None) -> None:
        """Write each record's entries under `target`, a chunk of records at a time."""
        lo, hi = keylib.prefix_range((), self.prefix)
        specs = ((func, target),)
        chunk: list[bytes] = []
        done = 0
        for key_bytes, stored in self.items(etxn, lo, hi, False):
            data = self.decoded(key_bytes, stored)
            chunk += records.index_entries(specs, data, self.entry_tail(key_bytes))
            done += 1
            if done == FILL_CHUNK:
                # The scan survives writes made through its transaction.
                fastpath.put_many(etxn, etxn.fast, [(entry, _EMPTY) for entry in chunk])
                chunk = []
                done = 0
                if progress is not None:
                    progress(FILL_CHUNK)
        if chunk:
            fastpath.put_many(etxn, etxn.fast, [(entry, _EMPTY) for entry in chunk])
        if done and progress is not None:
            progress(done)

    def _check_entries_unique(self, etxn: EngineTransaction, target: bytes,
                              unique_name: str) -> None:
        """Raise UniqueError if two entries under `target` have one index tuple.

        Entries sort by index tuple, then record key: entries sharing a
        tuple are neighbours, and the first of them names the record
        reported as having it.
        """
        packs, unpacks_list = keylib.packs, keylib.unpacks_list
        last: tuple[bytes, bytes] | None = None    # the entry before: (head, entry)
        for entry in etxn.keys(target, keylib.next_prefix(target)):
            head = packs(unpacks_list(entry, target)[0])
            if last is not None and head == last[0]:
                raise self.unique_error(unique_name, target, last[1])
            last = head, entry

    def doomed(self, etxn: EngineTransaction, key_bytes: bytes,
               key: Key) -> tuple[bool, Any] | None:
        """``(in a batch, value)`` of the record a delete reads, or None if there is none.

        :param etxn: the write engine transaction.
        :param key_bytes: the record's engine key.
        :param key: its key tuple.
        :raises ~centidb.errors.CorruptRecordError: if the record (or its batch)
            cannot be decoded; the message names the
            ``store.remove_record()`` call that deletes it as it is stored.
        """
        plain = etxn.get(key_bytes)
        try:
            old = plain if plain is not None else self.view.get(etxn, key_bytes)
            return None if old is None else (plain is None, self.decoded(key_bytes, old))
        except CorruptRecordError as exc:
            call = f'store.remove_record({self.name!r}, {key!r}'
            call += ', whole_batch=True), which deletes its whole batch' if plain is None else ')'
            raise type(exc)(f'{exc}; deleting a record decodes it to find its index '
                            f'entries: to delete it as it is stored, call {call}') from exc


#: Records :meth:`Records.fill_index` indexes between two writes (and
#: two calls of its `progress`).
FILL_CHUNK = 1000


class CollectionCalls:
    """What a collection's ``get()`` and ``put()`` read, in one object.

    The collection makes one and keeps it as its ``calls``; whenever its
    record paths are made again it sets :attr:`records`, :attr:`reader` and
    :attr:`writer` here, so the compiled entry points (and an index's
    ``get()``) read public attributes of one object, whose state the
    collection owns.

    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param put_general: ``put_general(txn, rec, key, blind, packer)``, the
        collection's put once :attr:`writer` declined (or a packer was
        given).
    :param register_packer: ``register_packer(packer)`` gives a packer new
        to the store its id before a transaction of the put's own begins.
    """

    __slots__ = ('txns', 'records', 'reader', 'writer', 'put_general', 'register_packer')

    def __init__(self, txns: TxnManager,
                 put_general: Callable[[Transaction, Any, object, bool, Encoder | None],
                                       Record],
                 register_packer: Callable[[Encoder], object]) -> None:
        self.txns = txns
        self.put_general = put_general
        self.register_packer = register_packer
        #: The collection's current :class:`Records`, and their common-case
        #: reader and writer (set by the collection).
        self.records: Records
        self.reader: RecordReader
        self.writer: Writer
