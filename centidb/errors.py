"""Exceptions raised by centidb.

Every exception derives from :class:`CentiError` and also from the built-in
exception a caller would naturally catch (``ValueError`` for bad data,
``TypeError`` for a value of the wrong type, ``OSError`` subclasses for
problems opening files), so generic handlers keep working.
"""

from __future__ import annotations

from typing import Any


class CentiError(Exception):
    """Base class of every exception centidb raises on purpose."""


# --- key codec -------------------------------------------------------------

class UnsupportedKeyTypeError(CentiError, TypeError):
    """A key element has a type the key codec cannot encode."""


class KeyEncodingError(CentiError, ValueError):
    """A key element has a supported type but a value that cannot be encoded."""


class CorruptKeyError(CentiError, ValueError):
    """Bytes given to the key decoder are truncated or not a valid encoding."""


# --- engines ---------------------------------------------------------------

class EngineError(CentiError):
    """A storage engine failed or was used incorrectly."""


class DatabaseNotFoundError(EngineError, FileNotFoundError):
    """The database does not exist and ``create_if_missing`` was false."""


class DatabaseLockedError(EngineError, OSError):
    """The database is locked by another process or another open handle."""


class EngineClosedError(EngineError, ValueError):
    """The engine (or store) was used after ``close()``."""


class TransactionError(EngineError, ValueError):
    """A transaction was used wrongly.

    For example: writing in a read-only transaction, using a transaction
    after ``commit()``/``abort()``, or opening a second write transaction in
    the thread that already holds one.
    """


class MapFullError(EngineError, OSError):
    """The LMDB memory map is full; the transaction was aborted."""


class ReadersFullError(EngineError, OSError):
    """Every slot of the LMDB reader table is held by a live read transaction.

    Slots that processes which died still held are reclaimed first; the
    message says how many slots there are and how many this engine holds.
    Close unfinished iterators and transactions, or reopen with a larger
    ``max_readers=``.
    """


class DatabasePathError(EngineError, OSError):
    """The path cannot hold a database of this engine, or holds something else.

    For example: a regular file where the engine keeps a directory, a parent
    that is a file, a directory holding other files or another engine's
    database, or files the engine cannot read as its own. The message names
    the path and what is wrong with it.
    """


class DatabasePermissionError(DatabasePathError, PermissionError):
    """This process may not read, write or create the database's files."""


class ConflictError(EngineError, RuntimeError):
    """Another client changed what an optimistic transaction read; nothing was written.

    Raised by ``commit()`` on engines whose write transactions check, when
    they commit, that nothing they read has changed since their snapshot
    (:class:`~centidb.engines.etcd.EtcdEngine`), and by reads whose snapshot
    the server no longer keeps. Run the transaction again, from its first
    read: :meth:`centidb.store.Store.transact` does that.
    """


class LimitExceededError(EngineError, ValueError):
    """A key, a value or a commit is larger than the engine accepts.

    The message names the limit (the engine's ``max_key_size``,
    ``max_value_size``, ``max_txn_ops`` or ``max_txn_bytes``) and the size
    asked for. Nothing was written: split the work into smaller
    transactions.
    """


class ClusterUnavailableError(EngineError, ConnectionError):
    """No server of a networked engine answered within the engine's timeout.

    For a commit, the message says whether its outcome is unknown: it may
    have been applied.
    """


class OptionalDependencyError(EngineError, ImportError):
    """An engine needs a library that is an optional extra, not installed.

    The message names the ``pip install`` command that installs it.
    """


# --- store, collections and indexes ------------------------------------------

class StoreError(CentiError):
    """The document layer (store, collections, indexes) was used wrongly."""


class StoreFormatError(StoreError, ValueError):
    """The engine does not hold a centidb store of a format this version reads."""


class EncoderMismatchError(StoreError, ValueError):
    """A collection was reopened with an encoder or packer other than its own.

    Its own are the ones it was created with, recorded in the store. To
    pack some records differently, pass ``packer=`` to ``put()`` or
    ``batch()``.
    """


class UnknownEncoderError(StoreError, LookupError):
    """Data needs an encoder or packer that is not registered with the store.

    Register it with ``store.add_encoder()`` (after a reopen, custom encoders
    and packers must be registered again).
    """


class PickleNotAllowedError(UnknownEncoderError):
    """A collection is stored with pickle, and this program did not opt in.

    Decoding pickle runs code chosen by whoever wrote the store. Opt in, for
    stores you trust, by passing ``encoder=encodings.PICKLE_ENCODER`` to
    ``store.collection()`` or calling ``store.add_encoder(PICKLE_ENCODER)``.
    """


class KeyKindMismatchError(StoreError, ValueError):
    """A collection is used with another kind of key than it was created with.

    The kinds are: a ``key_func``, a ``txn_key_func``, or auto-increment
    (neither). The kind is recorded when the collection is created.
    """


class UnknownIndexError(StoreError, KeyError):
    """A collection has no stored index of the given name."""

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument; show the message.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class IndexNotAddedError(StoreError, RuntimeError):
    """A collection's stored index was not re-added with ``add_index()``.

    Writing would leave that index stale, so writes are refused until the
    index is added again (or dropped with ``drop_index()``).
    """


class CorruptRecordError(StoreError, ValueError):
    """A stored record or batch is malformed and cannot be decoded."""


class IndexInconsistentError(StoreError, LookupError):
    """An index entry points at a record that does not exist.

    This happens only after a broken promise: a ``blind=True`` put over an
    existing key, or an index function changed between sessions.
    """


class UnknownCollectionError(StoreError, KeyError):
    """The store holds no collection of the given name.

    :meth:`~centidb.store.Store.collections` lists the names it holds.
    """

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument; show the message.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class CollectionExistsError(StoreError, ValueError):
    """A collection of the given name already exists (renaming onto it)."""


class UniqueError(StoreError, ValueError):
    """A write would give two records the same index tuple in a unique index.

    Nothing of the write is written. The index, the index tuple and the key
    of the record that has it are available as attributes.

    :param message: the message.
    :param index: the unique index's name.
    :param value: the index tuple both records would have.
    :param key: the key of the record that already has it.
    """

    def __init__(self, message: str, index: str | None = None, value: Any = None,
                 key: Any = None) -> None:
        super().__init__(message)
        #: The unique index's name.
        self.index = index
        #: The index tuple both records would have.
        self.value = value
        #: The key of the record that already has it.
        self.key = key


class ModelNotBoundError(StoreError, RuntimeError):
    """A model was used before it was bound to a store.

    Call ``Model.bind(store)`` first (again after reopening the store); it
    opens the model's collection and adds the model's indexes.
    """


# --- dump format ---------------------------------------------------------------

class DumpFormatError(CentiError, ValueError):
    """A line of a dump (see :mod:`centidb.dumpformat`) is not valid.

    The message names the line number, when known, what is wrong, and the
    start of the line.
    """


class DumpTypeError(CentiError, TypeError):
    """A value has a type the dump format cannot write.

    The dump format writes every type the msgpack encoder stores (see
    :doc:`dumpformat`); records of a pickle-encoded collection may hold
    others.
    """


# --- metadata ------------------------------------------------------------------

class TooManyEncodersError(StoreError, ValueError):
    """The store has numbered every encoder id (1 to 127) it can record.

    Every encoder and packer a store has seen keeps its id for good. When
    the ids ran out because the metadata was damaged (the encoder counter
    set too high), ``verify()`` names the records.
    """


class ChecksumError(CorruptRecordError):
    """A stored value's checksum does not match its bytes: the record is damaged.

    Raised on a read of a record (or batch) in a collection that keeps
    checksums, instead of returning whatever the damaged bytes decode to.
    The message names the collection and the record's key.
    """


# --- values ------------------------------------------------------------------

class ValueTooDeepError(CentiError, ValueError):
    """A value to store nests lists, tuples and dicts too deeply.

    The limit is :data:`centidb.encodings.MAX_DEPTH` levels of containers;
    the message names it. Nothing was written.
    """


class ValueTooLargeError(CentiError, ValueError):
    """A value to store encodes to more bytes than its packer may decompress.

    The limit is the store's ``max_unpacked_size`` (see
    :class:`centidb.store.Store`), which reading checks too: a larger value
    could be stored but never read back. The message names the size and the
    limit. Nothing was written.
    """


# --- engine faults: damaged files, failed reads and writes ---------------------
#
# An engine maps every error its library raises for a damaged file or a
# failed read or write to one of these, in one function per engine; the
# message names the database's path, the library's error, and what to do.

class DatabaseCorruptError(DatabasePathError):
    """The database's files are damaged: the engine found data it cannot read.

    Raised when opening, reading, iterating or verifying. The message names
    the path and the engine's own report. Restore the store from a backup
    or a dump; what is still readable can be copied out with
    ``centidb dump``.
    """


class StorageIOError(EngineError, OSError):
    """Reading or writing the database's files failed.

    For example: the disk is full (``ENOSPC``), a file grew past the
    process's size limit (``EFBIG``), or the device reported an I/O error
    (``EIO``); ``errno`` holds the code when the engine reports one. The
    transaction that hit it was aborted and wrote nothing.
    """


class EngineFailedError(StorageIOError):
    """A write failed in a way that leaves the engine unable to write safely.

    The engine refuses every later write and commit with this error until
    the store is closed and opened again; reopening recovers every commit
    that was acknowledged before the failure. Reads keep working. Free disk
    space (or fix the device) before reopening.
    """
