"""The LevelDB engine, :class:`PlyvelEngine`, through plyvel."""

from __future__ import annotations

import errno
import os
import re
from typing import TYPE_CHECKING, Any, Generator, Iterator

from centidb.engines.base import (
    _OPEN,
    Engine,
    EngineTransaction,
    Item,
    ItemIterator,
    _bad_key,
    chunked,
    _check_bounds,
)
from centidb.engines.fastcalls import guarded
from centidb.engines.leveldbfiles import check_manifest as _check_manifest
from centidb.engines.leveldbfiles import check_table as _check_table
from centidb.engines.paths import StoreLock, lock_path
from centidb.engines.paths import prepare_directory as _prepare_directory
from centidb.engines.writelog import _CompactWriteLog
from centidb.errors import (
    DatabaseCorruptError,
    DatabaseLockedError,
    DatabaseNotFoundError,
    DatabasePathError,
    DatabasePermissionError,
    EngineError,
    EngineFailedError,
    StorageIOError,
)

try:
    import plyvel
except ImportError:  # pragma: no cover - depends on the installation
    plyvel = None

__all__ = ['PlyvelEngine']

if TYPE_CHECKING:
    from typing import Protocol

    # The part of plyvel's API used here (plyvel has no type information).

    class _PlyvelIterator(Protocol):
        def __iter__(self) -> Iterator[Item]: ...
        def __next__(self) -> Item: ...
        def prev(self) -> Item: ...
        def seek(self, target: bytes) -> None: ...
        def seek_to_start(self) -> None: ...
        def seek_to_stop(self) -> None: ...
        def close(self) -> None: ...

    class _PlyvelRawIterator(Protocol):
        def valid(self) -> bool: ...
        def seek(self, target: bytes) -> None: ...
        def seek_to_first(self) -> None: ...
        def seek_to_last(self) -> None: ...
        def next(self) -> None: ...
        def prev(self) -> None: ...
        def close(self) -> None: ...

    class _PlyvelSnapshot(Protocol):
        def get(self, key: bytes) -> bytes | None: ...
        # (With include_value=False the iterator yields keys, not pairs.)
        def iterator(self, *, start: bytes | None = None, stop: bytes | None = None,
                     reverse: bool = False, include_value: bool = True,
                     verify_checksums: bool = False) -> _PlyvelIterator: ...
        def raw_iterator(self, *, verify_checksums: bool = False,
                         fill_cache: bool = True) -> _PlyvelRawIterator: ...
        def close(self) -> None: ...

    class _PlyvelWriteBatch(Protocol):
        def put(self, key: bytes, value: bytes) -> None: ...
        def delete(self, key: bytes) -> None: ...
        def write(self) -> None: ...

    class _PlyvelDB(Protocol):
        def get(self, key: bytes) -> bytes | None: ...
        def snapshot(self) -> _PlyvelSnapshot: ...
        def write_batch(self, *, sync: bool = False) -> _PlyvelWriteBatch: ...
        def compact_range(self, *, start: bytes | None = None,
                          stop: bytes | None = None) -> None: ...
        def get_property(self, name: bytes) -> bytes | None: ...
        def close(self) -> None: ...


# The files LevelDB keeps in a database directory, and what marks another
# kind of database in a directory given to PlyvelEngine.
_LEVELDB_FILE = re.compile(
    r'(CURRENT|LOCK|LOG|LOG\.old|MANIFEST-\d+|\d+\.(log|ldb|sst|dbtmp))\Z')
_NOT_LEVELDB = {'data.mdb': ('an LMDB database (data.mdb)', 'LmdbEngine')}


def _plyvel_message(exc: BaseException) -> str:
    arg = exc.args[0] if exc.args else ''
    if isinstance(arg, bytes):
        return arg.decode('utf-8', 'replace')
    return str(arg)


def _open_error(path: str, exc: BaseException, existed: bool) -> EngineError:
    """The error to raise for ``exc``, raised by ``plyvel.DB(path)``.

    ``existed``: the directory held a database (a ``CURRENT`` file).
    """
    message = _plyvel_message(exc)
    # LevelDB's LockFile() reports "lock <path>: why"; a failure to open
    # the LOCK file names the file alone.
    if message.startswith('IO error: lock '):
        return DatabaseLockedError(
            f'LevelDB database {path!r} is locked: another process or '
            f'another open handle in this process is using it ({message})')
    if 'Permission denied' in message:
        return DatabasePermissionError(
            f'cannot open the LevelDB database at {path!r}: permission '
            f'denied ({message}); LevelDB reads and writes the files in its '
            f'directory')
    if 'does not exist' in message:
        return DatabaseNotFoundError(
            f'no LevelDB database at {path!r}; pass create_if_missing=True '
            f'to create one')
    if 'Is a directory' in message or 'Not a directory' in message:
        return DatabasePathError(
            f'cannot open the LevelDB database at {path!r}: {message}')
    failed_io = _engine_error(path, exc, 'opening')
    if isinstance(failed_io, StorageIOError) and failed_io.errno in _WRITE_ERRNOS:
        return failed_io
    if existed or isinstance(exc, plyvel.CorruptionError):
        return DatabaseCorruptError(
            f'{path!r} does not hold a LevelDB database that LevelDB can '
            f'read (it is damaged, or not LevelDB\'s): {message}; restore it '
            f'from a backup or a dump')
    return failed_io


# The strerror texts LevelDB's status messages carry, and their errno codes.
_ERRNO_TEXTS = {os.strerror(code): code for code in (
    errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EDQUOT, errno.EROFS,
    errno.EACCES, errno.ENOENT)}
#: The codes of a full disk or a failing device (not of damage).
_WRITE_ERRNOS = frozenset([errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EDQUOT, errno.EROFS])


def _engine_error(path: str, exc: BaseException, doing: str) -> EngineError:
    """The centidb error for ``exc``, a ``plyvel.Error`` raised while `doing` something.

    The one place that maps plyvel's errors: damage is
    :class:`~centidb.errors.DatabaseCorruptError`, a failed read or write
    :class:`~centidb.errors.StorageIOError` (with ``errno`` when LevelDB's
    message names one).
    """
    message = _plyvel_message(exc)
    code = next((number for text, number in _ERRNO_TEXTS.items()
                 if text in message), None)
    # A file cut short reads as "Invalid argument" (EINVAL).
    if (isinstance(exc, plyvel.CorruptionError) or message.startswith('Corruption')
            or (doing == 'reading' and code not in _WRITE_ERRNOS)):
        return DatabaseCorruptError(
            f'LevelDB database {path!r} is damaged ({doing}: {message}); '
            f'restore it from a backup or a dump')
    return StorageIOError(
        code, f'LevelDB {doing} failed in {path!r}: {message}; free disk '
              f'space or fix the device, then retry')


def _plyvel_items(path: str, snapshot: _PlyvelSnapshot, lo: bytes | None,
                  hi: bytes | None, reverse: bool) -> ItemIterator:
    """Iterate a plyvel snapshot over ``[lo, hi)``, closing the iterator.

    plyvel's errors become centidb's (see ``_engine_error``; `path` is the
    database's).
    """
    try:
        yield from _plyvel_pairs(snapshot, lo, hi, reverse)
    except plyvel.Error as exc:
        raise _engine_error(path, exc, 'reading') from exc


def _plyvel_pairs(snapshot: _PlyvelSnapshot, lo: bytes | None, hi: bytes | None,
                  reverse: bool) -> ItemIterator:
    """Iterate a plyvel snapshot over ``[lo, hi)``, closing the iterator.

    In reverse, ``lo`` is checked here: plyvel 1.5 drops the only key of a
    range when that key equals ``start`` and ``reverse=True``. At the end,
    :func:`_check_skipped` raises what LevelDB skipped.
    """
    last: Item | None = None
    if not reverse:
        it = snapshot.iterator(start=lo, stop=hi)
        try:
            for last in it:
                yield last
            _check_skipped(snapshot, it, None if last is None else last[0], lo, hi, reverse)
        finally:
            it.close()
        return
    it = snapshot.iterator(stop=hi, reverse=True)
    try:
        for last in it:
            if lo is not None and last[0] < lo:
                return
            yield last
        _check_skipped(snapshot, it, None if last is None else last[0], lo, hi, reverse)
    finally:
        it.close()


def _check_skipped(snapshot: _PlyvelSnapshot, it: _PlyvelIterator, last: bytes | None,
                   lo: bytes | None, hi: bytes | None, reverse: bool) -> None:
    """Raise the error LevelDB met in damaged blocks that an exhausted scan skipped.

    LevelDB's iterator skips a table block it cannot read and keeps the
    error in its status; plyvel checks that status while the iterator is
    on a key, but not when the skip left it past the last key, so a scan
    ending in damaged blocks ends early, silently. The status lasts for
    the iterator's life: going forward, seeking `it` back to the `last` key
    it yielded makes plyvel check it. A scan that yielded nothing (`last` is
    None) is done again from its start by a raw iterator, which checks its
    status after every move. In reverse, plyvel checks it after every step,
    so only an empty scan needs that.

    :param it: the exhausted plyvel iterator.
    :param last: the last key `it` yielded, or None.
    :raises plyvel.Error: what LevelDB recorded.
    """
    if last is not None:
        if not reverse:
            it.seek(last)
        return
    raw = snapshot.raw_iterator()
    try:
        if not reverse:
            raw.seek(lo or b'')
        elif hi is None:
            raw.seek_to_last()
        else:
            raw.seek(hi)
            if raw.valid():
                raw.prev()
            else:
                raw.seek_to_last()
    finally:
        raw.close()


class PlyvelEngine(Engine):
    """A LevelDB database on disk, through plyvel.

    A read transaction is a LevelDB snapshot. A write transaction reads a
    snapshot plus its pending writes, and ``commit()`` writes them all in one
    atomic write batch.

    :param path: the database directory, kept as ``path``.
    :param name: the same as `path`, its older name; give one of the two.
    :param create_if_missing: create the database (and missing parent
        directories) if it does not exist.
    :param sync: make each commit wait for the disk.
    :param plyvel_options: other keyword options, passed to ``plyvel.DB``.
    :raises ~centidb.errors.DatabaseNotFoundError: if the database does not
        exist and `create_if_missing` is false.
    :raises ~centidb.errors.DatabaseLockedError: if the database is open
        elsewhere (another process or handle), or another process is
        rewriting its files (``centidb compact``; see
        :mod:`centidb.engines.paths`).
    :raises ~centidb.errors.DatabasePathError: if `path` is a file, a parent
        of it is a file, or it holds something other than a LevelDB database
        (:class:`~centidb.errors.DatabasePermissionError`: if this process
        may not use it).
    :raises ~centidb.errors.EngineError: if LevelDB cannot open it for
        another reason.
    :raises ImportError: if plyvel is not installed.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *,
                 name: str | os.PathLike[str] | None = None, create_if_missing: bool = False,
                 sync: bool = False, **plyvel_options: Any) -> None:
        if (path is None) == (name is None):
            raise TypeError('PlyvelEngine needs the database directory as path= '
                            '(or name=, its older name), not both')
        if plyvel is None:
            raise ImportError(
                'PlyvelEngine needs the plyvel package: pip install plyvel')
        super().__init__()
        self.path = os.fspath(path if path is not None else name)  # type: ignore[arg-type]
        self.sync = bool(sync)
        #: Set by the first failed write: every later write raises it.
        self._failed: EngineFailedError | None = None
        existed = _prepare_directory(
            self.path, what='LevelDB', create=create_if_missing,
            marker='CURRENT', own_name=_LEVELDB_FILE.match,
            others=_NOT_LEVELDB)
        #: The shared lock on the store's lock file (see :mod:`centidb.engines.paths`).
        self.store_lock = StoreLock(lock_path(self.path), self.path)
        try:
            if existed:
                _check_manifest(self.path)
            self._db: _PlyvelDB = plyvel.DB(
                self.path, create_if_missing=create_if_missing,
                **plyvel_options)
        except plyvel.Error as exc:
            self.store_lock.release()
            raise _open_error(self.path, exc, existed) from exc
        except BaseException:
            self.store_lock.release()
            raise

    @staticmethod
    def repair(path: str | os.PathLike[str]) -> None:
        """Rebuild a damaged LevelDB database's MANIFEST from its table and log files.

        LevelDB's own repair (``plyvel.repair_db``): it reads every table
        file and write-ahead log in the directory and writes a MANIFEST
        that names them all, so the records in them are readable again.
        Records whose blocks are damaged are dropped, and records that were
        deleted may come back (a deletion kept only in a dropped block); run
        :meth:`~centidb.Store.verify` afterwards, and copy the directory
        first. The store must not be open anywhere.

        :param path: the database directory.
        :raises ~centidb.errors.DatabaseNotFoundError: if `path` holds no
            LevelDB database.
        :raises ~centidb.errors.DatabaseLockedError: if an engine, in this
            process or another, has the store open.
        :raises ~centidb.errors.EngineError: if LevelDB cannot repair it.
        :raises ImportError: if plyvel is not installed.
        """
        if plyvel is None:
            raise ImportError('PlyvelEngine.repair needs the plyvel package: pip install plyvel')
        path = os.fspath(path)
        _prepare_directory(path, what='LevelDB', create=False, marker='CURRENT',
                           own_name=_LEVELDB_FILE.match, others=_NOT_LEVELDB)
        lock = StoreLock(lock_path(path), path)
        try:
            lock.make_exclusive('repair')
            plyvel.repair_db(path)
        except plyvel.Error as exc:
            raise _open_error(path, exc, True) from exc
        finally:
            lock.release()

    def _describe(self) -> str:
        return f'{type(self).__name__}({self.path!r})'

    def _begin(self, write: bool) -> EngineTransaction:
        if write and self._failed is not None:
            raise self._failed
        try:
            return _PlyvelTransaction(self, write)
        except plyvel.Error as exc:
            raise _engine_error(self.path, exc, 'reading') from exc

    def _read_error(self, exc: BaseException) -> EngineError:
        """The centidb error for `exc`, a ``plyvel.Error`` raised by a read."""
        return _engine_error(self.path, exc, 'reading')

    def _write_failed(self, exc: BaseException) -> EngineFailedError:
        """Refuse every later write: `exc` (a ``plyvel.Error``) may have torn LevelDB's log.

        After a failed log write LevelDB goes on appending to the log past
        the torn record, and on reopen it drops what follows the tear: so a
        later commit would be acknowledged and then lost. Reopening reads
        the log up to the tear, which holds every commit acknowledged
        before it.
        """
        cause = _engine_error(self.path, exc, 'writing')
        code = cause.errno if isinstance(cause, OSError) else None
        failed = EngineFailedError(
            code,
            f'a write to LevelDB database {self.path!r} failed ({_plyvel_message(exc)}); '
            f'the engine refuses every write until the store is reopened: '
            f'free disk space or fix the device, then reopen the store (every '
            f'commit acknowledged before the failure is kept)')
        self._failed = failed
        return failed

    def compact(self) -> None:
        """Compact the whole database now, instead of in the background.

        LevelDB merges freshly written data in background threads; reads
        made meanwhile compete with that work. Benchmarks call this to read
        a settled database. Deleted and overwritten data is dropped from the
        files. Keys written by other threads meanwhile may stay as they are.

        :raises ~centidb.errors.EngineClosedError: after :meth:`close`.
        """
        if self._closed:
            raise self._closed_error()
        if self._failed is not None:
            raise self._failed
        try:
            self._compact_all(self._db)
        except plyvel.Error as exc:
            raise self._write_failed(exc) from exc

    @staticmethod
    def _compact_all(db: _PlyvelDB) -> None:
        # plyvel's compact_range() with no bounds passes LevelDB the empty
        # range ['', ''], which writes the memtable to a table file and
        # merges nothing. The range must end at a key after every key in
        # the files: they are listed in the 'leveldb.sstables' property, one
        # file a line with its largest key escaped (which only lengthens
        # it), so a run of 0xff bytes longer than any line is such a key.
        db.compact_range()
        tables = db.get_property(b'leveldb.sstables') or b''
        longest = max(map(len, tables.split(b'\n')))
        db.compact_range(start=b'', stop=b'\xff' * (longest + 1))

    def _close(self) -> None:
        self._db.close()
        self.store_lock.release()
        # A closed plyvel.DB left for exit time prints an error; every method
        # checks _closed before it would use _db.
        self._db = None  # type: ignore[assignment]

    def get(self, key: bytes) -> bytes | None:
        """Return the value stored under `key`, or ``None``.

        :param key: non-empty ``bytes``.
        :returns: the value (``bytes``), or ``None``.
        :raises TypeError: if `key` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        """
        if self._closed:
            raise self._closed_error()
        if type(key) is not bytes or not key:
            _bad_key(key)
        try:
            return self._db.get(key)
        except plyvel.Error as exc:
            raise _engine_error(self.path, exc, 'reading') from exc


class _SeekCursor:
    """A plyvel iterator as a read transaction's ``fast.seek_cursor`` (see ``FastCalls``).

    :param it: an iterator of ``(key, value)`` over a snapshot.
    """

    __slots__ = ('_it', '_key', '_path', '_snapshot')

    def __init__(self, it: _PlyvelIterator, path: str, snapshot: _PlyvelSnapshot) -> None:
        self._it = it
        self._key = b''
        self._path = path
        self._snapshot = snapshot

    def set_range(self, key: bytes) -> bool:
        """Move to the first key ``>= key``; False if there is none."""
        it = self._it
        try:
            it.seek(key)
            found = next(it, None)
            if found is None:
                _check_skipped(self._snapshot, it, None, key, None, False)
        except plyvel.Error as exc:
            raise _engine_error(self._path, exc, 'reading') from exc
        if found is None:
            return False
        self._key = found[0]
        return True

    def key(self) -> bytes:
        """The key at the current position."""
        return self._key


class _PlyvelTransaction(_CompactWriteLog):
    """A plyvel snapshot; if writing, also the pending writes (see ``_CompactWriteLog``).

    ``commit()`` moves them into one atomic WriteBatch. Seeks (``first``)
    reuse one snapshot iterator while there are no pending writes; a read
    transaction's first seek also offers it as ``fast.seek_cursor``.
    """

    engine: PlyvelEngine

    def __init__(self, engine: PlyvelEngine, write: bool) -> None:
        super().__init__(engine, write)
        self._snapshot = engine._db.snapshot()
        # Every read of the snapshot, the unchecked ones too, maps plyvel's errors.
        self._read_committed = guarded(self._snapshot.get, plyvel.Error, engine._read_error)
        self._seeker: _PlyvelIterator | None = None   # made by the first first()
        if write:
            self._start_log()
        else:
            self._pending = None
            self.fast.get = self._read_committed

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """Return the first ``(key, value)`` :meth:`items` would yield, or None."""
        if self._holds_writes() or self._state is not _OPEN or self.engine._closed:
            return super().first(lo, hi, reverse)
        _check_bounds(lo, hi)
        try:
            return self._seek_first(lo, hi, reverse)
        except plyvel.Error as exc:
            raise _engine_error(self.engine.path, exc, 'reading') from exc

    def _seek_first(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> Item | None:
        it = self._seeker
        snapshot = self._snapshot
        if it is None:
            it = self._seeker = snapshot.iterator()
            if self._pending is None:   # a read-only snapshot: seeks need no merge
                self.fast.seek_cursor = _SeekCursor(it, self.engine.path, snapshot)
        if reverse:
            if hi is None:
                it.seek_to_stop()
            else:
                it.seek(hi)
            try:
                item = it.prev()
            except StopIteration:
                _check_skipped(snapshot, it, None, lo, hi, True)
                return None
            if lo is None or item[0] >= lo:
                return item
        else:
            if lo is None:
                it.seek_to_start()
            else:
                it.seek(lo)
            found = next(it, None)
            if found is None:
                _check_skipped(snapshot, it, None, lo, hi, False)
            elif hi is None or found[0] < hi:
                return found
        return None

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        snapshot = self._snapshot
        path = self.engine.path
        if self._pending is None:
            return _plyvel_items(path, snapshot, lo, hi, reverse)
        return self._log_items(
            lambda lo, hi: _plyvel_items(path, snapshot, lo, hi, reverse), lo, hi, reverse)

    def verify_storage(self) -> list[str]:
        """Check the table files the database uses; return what is damaged.

        Each live table's footer and the checksums of its index blocks (see
        :func:`~centidb.engines.leveldbfiles.check_table`), then one pass of
        a raw LevelDB iterator over the whole snapshot with checksums
        verified and the blocks kept out of the cache: every data block is
        read and checked, except those this engine already holds in its
        block cache (read, and by a scan checked, earlier). Called by
        :meth:`~centidb.Store.verify`.

        :returns: one message naming the file or database per problem
            (empty: every block read back intact).
        """
        path = self.engine.path
        repair = 'PlyvelEngine.repair() keeps the records in the intact blocks'
        try:
            listed = self.engine._db.get_property(b'leveldb.sstables') or b''
        except plyvel.Error as exc:
            return [str(_engine_error(path, exc, 'verifying'))]
        problems = []
        for number in re.findall(rb'^ *(\d+):\d+\[', listed, re.M):
            table = os.path.join(path, f'{int(number):06d}.ldb')
            if not os.path.exists(table):
                table = table[:-3] + 'sst'     # the older name
            problem = _check_table(table)
            if problem is not None:
                problems.append(f'LevelDB database {path!r} is damaged: {problem}; {repair}')
        if problems:
            return problems
        try:
            it = self._snapshot.raw_iterator(verify_checksums=True, fill_cache=False)
            try:
                it.seek_to_first()
                while it.valid():
                    it.next()
            finally:
                it.close()
        except plyvel.Error as exc:
            return [f'{_engine_error(path, exc, "reading its table files")}; {repair}']
        return []

    def _item_chunks(self, lo: bytes | None, hi: bytes | None,
                     reverse: bool) -> Generator[list[Item], None, None]:
        if self._pending is not None:
            return super()._item_chunks(lo, hi, reverse)
        return self._snapshot_chunks(lo, hi, reverse, True)

    def _key_chunks(self, lo: bytes | None, hi: bytes | None,
                    reverse: bool) -> Iterator[list[bytes]]:
        if self._pending is not None:
            return super()._key_chunks(lo, hi, reverse)
        return self._snapshot_chunks(lo, hi, reverse, False)

    def _snapshot_chunks(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                         values: bool) -> Generator[list[Any], None, None]:
        """With no pending writes: the lists of item_chunks (key_chunks without
        `values`), filled by plyvel's own iterator with no Python step per pair."""
        snapshot = self._snapshot
        if reverse:
            pairs = snapshot.iterator(stop=hi, reverse=True, include_value=values)
        else:
            pairs = snapshot.iterator(start=lo, stop=hi, include_value=values)
        try:
            chunk: list[Any] = []
            for chunk in chunked(pairs, lo, None, reverse, keys=not values):
                yield chunk
            if self._state is not _OPEN or self.engine._closed:
                return      # read ahead, after the transaction ended: no more reads
            if not chunk:
                # The transaction's seek iterator checks the status for the
                # cost of a seek (it makes a raw iterator if it finds no key).
                self._seek_first(lo, hi, reverse)
            elif not reverse:
                _check_skipped(snapshot, pairs, chunk[-1] if not values else chunk[-1][0],
                               lo, hi, reverse)
        except plyvel.Error as exc:
            raise _engine_error(self.engine.path, exc, 'reading') from exc
        finally:
            pairs.close()

    def _commit(self) -> None:
        try:
            if self._holds_writes():
                engine = self.engine
                if engine._failed is not None:
                    raise engine._failed
                batch = engine._db.write_batch(sync=engine.sync)
                # Each write leaves the log as the batch copies it.
                self._drain_into(batch.put, batch.delete)
                try:
                    batch.write()
                except plyvel.Error as exc:
                    raise engine._write_failed(exc) from exc
        finally:
            self._abort()

    def _abort(self) -> None:
        self.fast.get = self.fast.seek_cursor = None
        self._drop_log()
        if self._seeker is not None:
            self._seeker.close()
            self._seeker = None
        self._snapshot.close()
