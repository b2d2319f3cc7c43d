"""The entry points of ``Collection.get``, ``Collection.put`` and ``Index.get``.

The collection and index classes take these functions as their methods, so
that a get or put starts in compiled code (``entry.pxd``;
:data:`centidb.impl.PURE_MODE`) and calls the record reader and writer
without a Python call. They read the collection's public ``calls`` (a
:class:`centidb.records.access.CollectionCalls`) and the index's public
``get_args`` and ``get_many``.
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

from centidb.records.record import Record, as_key
from centidb.txn import Transaction

if not cython.compiled:
    # Compiled, entry.pxd cimports the classes.
    from centidb.records.reader import RecordReader
    from centidb.records.record import RecordWriter

__all__ = ['collection_get', 'collection_put', 'index_get']


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
    :raises ~centidb.errors.UnknownEncoderError: for a record stored
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
                return _put_in(calls, own, rec, key, blind, packer)
    return _put_in(calls, txn, rec, key, blind, packer)



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
    :raises ~centidb.errors.UnknownEncoderError: for a record stored
        with a packer not registered in this session.
    """
    if rec or txn is None:
        (found,) = self.get_many((tup,), default, rec=rec, txn=txn)
        return found
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


def _put_in(calls: Any, txn: Transaction, rec: Any, key: object, blind: bool,
            packer: Any) -> Record:
    # The writer's common case, else the general put.
    if packer is None:
        writer = calls.writer
        # It may be wrapped (limits, reports): only a bare one is called in C.
        if type(writer) is RecordWriter:
            record = _bare_write(writer, txn, rec, key, blind)
        else:
            record = writer.write(txn, rec, key, blind)
        if record is not None:
            return record
    general: Record = calls.put_general(txn, rec, key, blind, packer)
    return general


def _bare_write(writer: RecordWriter, txn: Transaction, data: Any, key: object,
                blind: bool) -> Record | None:
    written: Record | None = writer.write(txn, data, key, blind)
    return written
