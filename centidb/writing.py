"""Writing: the general write paths of one collection's records.

:class:`RecordWrites` holds the write paths of
:class:`~centidb.access.Records` that the twinned
:class:`~centidb.records.RecordWriter` declines: records given as a
:class:`~centidb.records.Record`, other packers, ``txn_key_func`` and counter
keys, batches, unique indexes, deletes and index builds. :class:`Writer` is
the common-case writer a collection calls first, and a
:class:`ReportingWriter` one that records its changes for commit hooks.
:class:`KeySource` and :class:`BoundIndex` are what the collection hands
these paths.

This layer calls :mod:`centidb.records`, :mod:`centidb.savepoint`,
:mod:`centidb.batches` (through the view it is given) and engine
transactions; never a layer above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

from centidb import fastpath, keylib, records
from centidb.batches import BatchView
from centidb.encodings import Encoder
from centidb.engines import EngineTransaction
from centidb.engines.base import ItemIterator
from centidb.errors import (
    CorruptRecordError, IndexNotAddedError, KeyKindMismatchError, UniqueError,
)
from centidb.keylib import Key
from centidb.limits import check_value_size
from centidb.records import ENTRY_SEP, IndexSpec, Record, as_key
from centidb.savepoint import Savepoint
from centidb.txn import Change, Transaction

__all__ = ['BoundIndex', 'KeySource', 'Writer', 'ReportingWriter', 'RecordWrites',
           'delete_prefix', 'read_doomed']

_EMPTY = b''


class BoundIndex(Protocol):
    """What the record paths read of an index added in this session.

    :class:`~centidb.index.Index` is one; this layer, below it, names only
    what it reads.
    """

    @property
    def name(self) -> str:
        """The index's name."""

    @property
    def func(self) -> Callable[[Any], Any]:
        """The index function."""

    @property
    def prefix(self) -> bytes:
        """The bytes every entry of the index starts with."""

    @property
    def unique(self) -> bool:
        """True if no two records may have the same index tuple."""


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

    def __init__(self, kind: str, key_func: Callable[[Any], Any] | None,
                 txn_key_func: Callable[[Transaction, Any], Any] | None,
                 next_key: Callable[[EngineTransaction], int],
                 at_least: Callable[[EngineTransaction, int], object]) -> None:
        self.kind = kind
        self.key_func = key_func
        self.txn_key_func = txn_key_func
        self.next_key = next_key
        self.at_least = at_least



class Writer(Protocol):
    """The common-case writer of a collection: a RecordWriter, or one reporting changes.

    :class:`~centidb.records.RecordWriter` is one, and so is
    :class:`ReportingWriter`.
    """

    @property
    def usable(self) -> bool:
        """False when the collection's puts are never the common case."""

    def write(self, txn: Transaction, data: Any, key: object, blind: bool) -> Record | None:
        """As :meth:`~centidb.records.RecordWriter.write`.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param data: the record value.
        :param key: the key, or ``None``.
        :param blind: as for ``Collection.put``.
        """

    def write_many(self, etxn: EngineTransaction, datas: list[Any], blind: bool,
                   first_id: int | None) -> list[Key] | None:
        """As :meth:`~centidb.records.RecordWriter.write_many`.

        :param etxn: the write engine transaction.
        :param datas: a ``list`` of record values.
        :param blind: as for ``Collection.put``.
        :param first_id: ``None``, or the first counter key.
        """


def delete_stale(etxn: EngineTransaction, old_entries: list[bytes] | None,
                 entries: list[bytes]) -> None:
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


class ReportingWriter:
    """A :class:`~centidb.records.RecordWriter` whose puts also record their change.

    While the store has :meth:`~centidb.store.Store.on_commit` hooks, the
    collection writes through this: each record :meth:`write` stores adds a
    :class:`~centidb.txn.Change` to the store transaction's ``changes``.
    :meth:`write_many` only passes the call on; :meth:`RecordWrites.put_many`
    records those changes, as it holds the store transaction.

    :param writer: the collection's :class:`~centidb.records.RecordWriter`.
    :param name: the collection's name.
    """

    __slots__ = ('writer', 'name', 'usable')

    def __init__(self, writer: Writer, name: str) -> None:
        self.writer = writer
        self.name = name
        self.usable = writer.usable

    def write(self, txn: Transaction, data: Any, key: object, blind: bool) -> Record | None:
        """As :meth:`~centidb.records.RecordWriter.write`, recording the change.

        :param txn: a write :class:`~centidb.txn.Transaction`.
        :param data: the record value.
        :param key: the key, or ``None``.
        :param blind: as for ``Collection.put``.
        """
        record = self.writer.write(txn, data, key, blind)
        if record is not None:
            # A stored Record's key is never None.
            txn.changes.append(Change(self.name, record.key, record.data))  # type: ignore[arg-type]
        return record

    def write_many(self, etxn: EngineTransaction, datas: list[Any], blind: bool,
                   first_id: int | None) -> list[Key] | None:
        """As :meth:`~centidb.records.RecordWriter.write_many` (recording nothing).

        :param etxn: the write engine transaction.
        :param datas: a ``list`` of record values.
        :param blind: as for ``Collection.put``.
        :param first_id: ``None``, or the first counter key.
        """
        return self.writer.write_many(etxn, datas, blind, first_id)


class RecordWrites:
    """The general write paths of a collection's :class:`~centidb.access.Records`.

    :class:`~centidb.access.Records` inherits them; they read its state,
    declared here for the type checker, and never set it. Each checks,
    encodes, makes keys and index entries and calls the before-write hooks
    before its first write, so a failure writes nothing.
    """

    if TYPE_CHECKING:   # what Records provides, declared for the type checker
        coll: Any
        name: str
        prefix: bytes
        encoder: Encoder
        packer: Encoder
        header: bytes
        keys: KeySource
        indexes: tuple[BoundIndex, ...]
        specs: tuple[IndexSpec, ...]
        unique: tuple[BoundIndex, ...]
        unbound: frozenset[str]
        view: BatchView
        batched: bool
        limit: int | None
        before_write: tuple[Callable[[Key, Any], object], ...]
        report: bool
        writer: Writer
        _decode_plain: Callable[[bytes], Any]

        def decoded(self, key_bytes: bytes, stored: bytes, encoded: bool = False) -> Any: ...

        def seal(self, value: bytes) -> bytes: ...

        def entries(self, data: Any, entry_tail: bytes) -> list[bytes]: ...

        def old_entries(self, stored: bytes, entry_tail: bytes) -> list[bytes]: ...

        def entry_tail(self, key_bytes: bytes) -> bytes: ...

        def items(self, etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                  reverse: bool) -> ItemIterator: ...

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
        if type(rec) is records.Record or type(rec) is records.PYTHON.Record:
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
                if (old_record is not None and old_record.coll is self.coll
                        and old_record._indexes is self.indexes
                        and old_record._key_bytes == key_bytes and old_record._stored == old):
                    old_entries = old_record._entries
                else:
                    old_entries = self.old_entries(old, entry_tail)
        for hook in self.before_write:
            hook(key, data)
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
        if self.report:
            txn.changes.append(Change(self.name, key, data))
        return records.seen(records.Record(self.coll, data, key, value, entries, self.indexes),
                            key_bytes)

    def put_many(self, txn: Transaction, etxn: EngineTransaction, recs: list[Any],
                 blind: bool) -> list[Key]:
        """Store each of `recs`, writing nothing if any fails; see ``Collection.put_many``.

        The common case is :meth:`~centidb.records.RecordWriter.write_many`,
        which makes everything before it writes; otherwise each record is
        :meth:`put` in turn through a :class:`~centidb.savepoint.Savepoint`,
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
            found = read_doomed(self, etxn, key_bytes, key)
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
        found = read_doomed(self, etxn, key_bytes, key)
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
                   index_prefix: bytes, unique_name: str | None = None,
                   replace: bool = False,
                   progress: Callable[[int], object] | None = None) -> None:
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
            _replace_entries(etxn, index_prefix, target)

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
                fastpath.put_many(etxn, [(entry, _EMPTY) for entry in chunk])
                chunk = []
                done = 0
                if progress is not None:
                    progress(FILL_CHUNK)
        if chunk:
            fastpath.put_many(etxn, [(entry, _EMPTY) for entry in chunk])
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
        last_head = None
        last_entry = b''
        for entry in etxn.keys(target, keylib.next_prefix(target)):
            head = packs(unpacks_list(entry, target)[0])
            if head == last_head:
                raise self.unique_error(unique_name, target, last_entry)
            last_head, last_entry = head, entry


#: Records :meth:`RecordWrites.fill_index` indexes between two writes (and
#: two calls of its `progress`).
FILL_CHUNK = 1000

#: The byte after an index's prefix under which a rebuild writes its new
#: entries aside: no entry has it there (an index tuple starts with a tag
#: byte, or, when empty, with ``ENTRY_SEP``).
ASIDE = b'\x00'


def _replace_entries(etxn: EngineTransaction, prefix: bytes, aside: bytes) -> None:
    """Make the entries under `prefix` those under `aside`, and delete `aside`'s.

    Walks both (sorted alike) side by side: an old entry that is also new
    stays untouched, a stale one is deleted, a new one written; each entry
    under `aside` is deleted once seen.
    """
    skip = len(aside)
    old = etxn.keys(prefix + ENTRY_SEP, keylib.next_prefix(prefix))
    new = etxn.keys(aside, keylib.next_prefix(aside))
    try:
        stale = next(old, None)
        made = next(new, None)
        while made is not None:
            entry = prefix + made[skip:]
            while stale is not None and stale < entry:
                etxn.delete(stale)
                stale = next(old, None)
            if stale == entry:
                stale = next(old, None)
            else:
                etxn.put(entry, _EMPTY)
            etxn.delete(made)
            made = next(new, None)
        while stale is not None:
            etxn.delete(stale)
            stale = next(old, None)
    finally:
        old.close()
        new.close()


def delete_prefix(etxn: EngineTransaction, prefix: bytes) -> None:
    """Delete every engine key that starts with `prefix` (an index's or a collection's).

    One :meth:`~centidb.engines.EngineTransaction.delete_range`: engines
    that delete key by key do it as they iterate, so a large range is not
    held in memory; a networked engine sends one range delete.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param prefix: the prefix.
    """
    etxn.delete_range(prefix, keylib.next_prefix(prefix))


def read_doomed(writes: RecordWrites, etxn: EngineTransaction, key_bytes: bytes,
                key: Key) -> tuple[bool, Any] | None:
    """``(in a batch, value)`` of the record a delete reads, or None if there is none.

    :param writes: the collection's write paths.
    :param etxn: the write engine transaction.
    :param key_bytes: the record's engine key.
    :param key: its key tuple.
    :raises ~centidb.errors.CorruptRecordError: if the record (or its batch)
        cannot be decoded; the message names the
        ``store.remove_record()`` call that deletes it as it is stored.
    """
    plain = etxn.get(key_bytes)
    try:
        old = (plain if plain is not None or not writes.batched
               else writes.view.get(etxn, key_bytes))
        return None if old is None else (plain is None, writes.decoded(key_bytes, old))
    except CorruptRecordError as exc:
        call = f'store.remove_record({writes.name!r}, {key!r}'
        call += ', whole_batch=True), which deletes its whole batch' if plain is None else ')'
        raise type(exc)(f'{exc}; deleting a record decodes it to find its index '
                        f'entries: to delete it as it is stored, call {call}') from exc
