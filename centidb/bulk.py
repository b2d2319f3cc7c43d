"""Bulk writes: a collection's calls that write many records at once.

:class:`BulkWrites` is a mixin giving a collection ``put_many()`` and
``delete_many()`` (many records, one transaction, all or nothing; the work
is :class:`~centidb.access.Records`') and ``batch()``, which rewrites a
range of records as compressed batches (the work is
:meth:`centidb.batches.BatchView.batch`, and the collection's metadata then
records that it holds batches).

The collection is the layer above; what the mixin uses of it is declared
below for the type checker, never imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from centidb import batches, encodings, keylib
from centidb.access import Records
from centidb.batches import BatchView
from centidb.catalog import Catalog
from centidb.metarecords import CollectionInfo
from centidb.encodings import Encoder
from centidb.engines import EngineTransaction
from centidb.keylib import Key
from centidb.records import Record, as_key
from centidb.txn import Transaction, TxnManager

__all__ = ['BulkWrites']


class BulkWrites:
    """The bulk write methods of a collection: ``put_many``, ``delete_many``, ``batch``."""

    _txns: TxnManager
    _catalog: Catalog
    _records: Records
    _view: BatchView
    _info: CollectionInfo
    _batched: bool

    if TYPE_CHECKING:   # what the collection provides, declared for the type checker
        @property
        def name(self) -> str: ...

        def _rebuild(self) -> None: ...

        def _new_packer(self, packer: Encoder) -> bool: ...

        def _use_packer(self, txn: Transaction, packer: Encoder) -> None: ...

        def _bounds(self, lo: object, hi: object, prefix: object, startswith: object,
                    include: bool) -> tuple[bytes, bytes | None]: ...

    def put_many(self, recs: Iterable[Any], *, blind: bool = False,
                 txn: Transaction | None = None) -> list[Key]:
        """Store every record of `recs` in one transaction; return their keys.

        Each gets its key and index entries as :meth:`put` gives them, in
        order (a key that comes twice ends with the later record). The call
        is atomic: if anything fails for any record (a key or index
        function raises, a value cannot be encoded, a key is too long),
        nothing of the call is written and the exception propagates; a
        transaction passed as `txn` is left as it was, including what a
        ``txn_key_func`` wrote through it. For a collection with a
        ``key_func`` or counter keys and plain values, every record is
        encoded and checked before the first write, and the writes go to the
        engine in one call; the stored bytes of the whole call are held in
        memory until then, so split a very large import into calls of some
        thousands of records (in one transaction, if it must be atomic).

        :param recs: an iterable of record values (or :class:`Record`
            objects, whose ``data`` is stored and ``key``, if not ``None``,
            reused).
        :param blind: as for :meth:`put`: True skips reading the records
            already under the keys, promising there are none.
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: see the module doc).
        :returns: a ``list`` of key tuples, in the order of `recs`.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key or index
            tuple element the key codec cannot encode.
        :raises ValueError: if a packed key or index entry is longer than
            the engine's ``max_key_size``.
        :raises ~centidb.errors.LimitExceededError: (a ``ValueError``) if a
            stored value is longer than the engine's ``max_value_size``, or
            the call writes more keys or bytes than one commit of the engine
            holds (``max_txn_ops``, ``max_txn_bytes``); the message says how
            many of the records fit. Only this call's writes are counted:
            the engine refuses at commit what the whole transaction wrote
            past its limits. See :mod:`centidb.limits`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        """
        return self._txns.run(txn, True, self._put_many, list(recs), blind)

    def _put_many(self, txn: Transaction, etxn: EngineTransaction, recs: list[Any],
                  blind: bool) -> list[Key]:
        return self._records.put_many(txn, etxn, recs, blind)

    def delete_many(self, keys: Iterable[object], *,
                    txn: Transaction | None = None) -> list[Record | None]:
        """Delete the records under `keys` in one transaction, as :meth:`delete` each.

        The call is atomic: every record is read, decoded and its index
        entries found before the first delete, so if that fails for any key
        nothing is deleted; a transaction passed as `txn` is left as it was.

        :param keys: an iterable of key tuples (a bare value means a
            1-tuple) or stored :class:`Record` objects.
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: see the module doc).
        :returns: a ``list`` mirroring `keys`: the deleted :class:`Record`
            for each, or ``None`` where there was no such record (also for
            a key that came earlier in `keys`).
        :raises ValueError: for a :class:`Record` that was never stored.
        :raises ~centidb.errors.IndexNotAddedError: if a stored index was not
            added in this session.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key element
            the key codec cannot encode.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended or is
            read-only.
        """
        tuples: list[Key] = []
        for key in keys:
            if type(key) is Record:
                if key.key is None:
                    raise ValueError('a Record in keys was never stored, so it has no '
                                     'key to delete')
                key = key.key
            tuples.append(as_key(key))
        return self._txns.run(txn, True, self._delete_many, tuples)

    def _delete_many(self, txn: Transaction, etxn: EngineTransaction,
                     keys: list[Key]) -> list[Record | None]:
        return self._records.delete_many(txn, etxn, keys)

    def batch(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, max_recs: int | None = None,
              max_bytes: int | None = None, packer: Encoder = encodings.ZLIB_PACKER,
              txn: Transaction | None = None) -> tuple[int, int, Key | None]:
        """Store runs of adjacent records in the range as compressed batches.

        Every record in the range is rewritten into batches, each compressed
        with `packer` as one value. Batches that straddle the range ends are
        rewritten whole. Reads and writes keep working on batched records;
        index entries are unchanged. The whole range is held in memory while
        it is rewritten.

        :param lo: the lowest key included, as for :meth:`items`.
        :param hi: the key at which to stop (excluded), as for :meth:`items`.
        :param prefix: only keys whose first elements equal this tuple's,
            as for :meth:`items`.
        :param startswith: as `prefix`, but the last element matches every
            string starting with it, as for :meth:`items`.
        :param max_recs: the most records in one batch (default and maximum
            :data:`~centidb.batches.MAX_MEMBERS`).
        :param max_bytes: the most bytes of keys and encoded values in one
            batch (default: no limit); a record larger than this makes a
            batch by itself.
        :param packer: the :class:`~centidb.encodings.Encoder` that
            compresses each batch.
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
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
        batches.check_limits(max_recs, max_bytes)
        packer_id = self._catalog.encoder_id(packer)
        packer = self._catalog.packer_for(packer)
        lo_bytes, hi_bytes = self._bounds(lo, hi, prefix, startswith, False)
        return self._txns.run(txn, True, self._batch, lo_bytes, hi_bytes,
                              max_recs or batches.MAX_MEMBERS, max_bytes, packer_id, packer)

    def _batch(self, txn: Transaction, etxn: EngineTransaction, lo_bytes: bytes,
               hi_bytes: bytes, max_recs: int, max_bytes: int | None, packer_id: int,
               packer: Encoder) -> tuple[int, int, Key | None]:
        self._records.check_writable()
        new = self._new_packer(packer)
        found, made, last = self._view.batch(etxn, lo_bytes, hi_bytes, max_recs, max_bytes,
                                             packer_id, packer)
        if made:
            if new:
                self._use_packer(txn, packer)
            # Written every time: an earlier batch() may have been rolled back.
            self._info = dict(self._info, batched=True)
            self._catalog.save_collection_info(txn, self.name, self._info)
            self._batched = True
            self._rebuild()
        return found, made, (None if last is None else keylib.unpacks(last))
