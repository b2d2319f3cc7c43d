"""The LMDB engine, :class:`LmdbEngine`, through py-lmdb.

``import lmdb`` below is absolute: it gets py-lmdb, never this module.
"""

from __future__ import annotations

import bisect
import collections
import errno
import itertools
import operator
import os
import sys
import threading
import time
from typing import Any, Generator, Iterator, NoReturn

from centidb.engines.base import (
    _OPEN,
    Engine,
    EngineTransaction,
    Item,
    ItemIterator,
    _bad_key,
    _check_bounds,
    chunked,
    _not_bytes,
)
from centidb.engines.lmdbmeta import check_data_file as _check_data_file
from centidb.engines.lmdbmeta import check_pages as _check_pages
from centidb.engines.paths import StoreLock, lock_path
from centidb.engines.paths import file_on_path as _file_on_path
from centidb.engines.paths import make_directories as _make_directories
from centidb.engines.paths import prepare_directory as _prepare_directory
from centidb.errors import (
    DatabaseCorruptError, DatabaseLockedError, DatabaseNotFoundError, DatabasePathError,
    DatabasePermissionError, EngineError, EngineFailedError, MapFullError, ReadersFullError,
    StorageIOError, TransactionError,
)

try:
    import lmdb
except ImportError:  # pragma: no cover - depends on the installation
    lmdb = None  # type: ignore[assignment]

__all__ = ['DEFAULT_MAP_SIZE', 'LmdbEngine']


def _default_map_size(maxsize: int = sys.maxsize, platform: str = sys.platform) -> int:
    """64 GiB where LMDB's map only reserves address space, else 64 MiB.

    That is on 64-bit systems other than Windows (where LMDB makes the data
    file as large as the map) and macOS (whose file systems may not keep it
    sparse); elsewhere the data file grows with the data, not the map.
    """
    sparse = maxsize > 2**32 and not platform.startswith(('win32', 'cygwin', 'darwin'))
    return (64 << 30) if sparse else (64 << 20)


#: Default LMDB map size: 64 GiB on 64-bit Linux and other Unix systems,
#: where a large map costs address space only (the data file grows with the
#: data), so one write transaction may hold that much; 64 MiB elsewhere.
DEFAULT_MAP_SIZE = _default_map_size()

# The files LMDB keeps in a database directory, and what marks another kind
# of database in a directory given to LmdbEngine.
_LMDB_FILES = frozenset(['data.mdb', 'lock.mdb'])
_NOT_LMDB = {'CURRENT': ('a LevelDB database (CURRENT)', 'PlyvelEngine')}


class LmdbEngine(Engine):
    """An LMDB database on disk, through py-lmdb, using its transactions.

    Keys are stored as they are, so they may hold at most
    :attr:`Engine.max_key_size` bytes (511 by default); a longer key raises
    :class:`~centidb.errors.EngineError` on ``put``.

    :param path: a directory (pass ``subdir=False`` for a single file).
    :param map_size: the largest size in bytes the database may reach; a
        write that does not fit raises :class:`~centidb.errors.MapFullError`
        and aborts its transaction. The default,
        :data:`DEFAULT_MAP_SIZE`, is 64 GiB on 64-bit Linux and other Unix
        systems: the map reserves address space, not disk, so the data file
        stays as small as the data. Elsewhere (32-bit, Windows, macOS) it is
        64 MiB, and one transaction can write only about that much.
    :param create_if_missing: create the database if it does not exist.
    :param autogrow: double the map at ``begin(write=True)`` once more than
        half of it is used, and let an engine-level ``put()`` that finds the
        map full grow it and retry once. Growing needs no open transaction in
        this process, so autogrow is meant for single-process use.
    :param sync: false trades durability of the last commits for speed.
    :param check_pages: read every page in use before opening, and refuse
        damage LMDB does not check on reads (see
        :func:`~centidb.engines.lmdbmeta.check_pages`; 0.14 s for 50 MB).
    :param lmdb_options: other keyword options, passed to ``lmdb.open``
        (not ``create``), such as ``max_readers`` (126 by default): how many
        read transactions all processes together may hold open. The first
        process to open the database sets it for every process until none
        has it open.
    :raises ~centidb.errors.DatabaseNotFoundError: if the database does not
        exist and `create_if_missing` is false.
    :raises ~centidb.errors.DatabaseLockedError: if this process already has
        the database open, or another process is rewriting its files
        (``centidb compact``; see :mod:`centidb.engines.paths`).
    :raises ~centidb.errors.DatabasePathError: if `path` is a file (a
        directory with ``subdir=False``), a parent of it is a file, or it
        holds something other than an LMDB database
        (:class:`~centidb.errors.DatabasePermissionError`: if this process
        may not use it).
    :raises ~centidb.errors.EngineError: if LMDB cannot open it for another
        reason.
    :raises ValueError: if `map_size` is not a positive ``int``.
    :raises TypeError: if ``create`` is passed.
    :raises ImportError: if lmdb is not installed.

    A process that dies holding a read transaction leaves its slot in LMDB's
    reader table taken, and the snapshot it read kept. The engine frees such
    slots (``reader_check()``) when it opens, when a read transaction finds
    the table full, and at the first ``begin(write=True)`` after
    :attr:`reader_check_interval` seconds.
    """

    #: Seconds between the checks for reader slots of dead processes made by
    #: ``begin(write=True)``; 0 checks at every write transaction. A check
    #: costs well under a microsecond when no other process reads, and about
    #: one microsecond for each other process that does.
    reader_check_interval = 1.0

    def __init__(self, path: str | os.PathLike[str], *, map_size: int = DEFAULT_MAP_SIZE,
                 create_if_missing: bool = True, autogrow: bool = True, sync: bool = True,
                 check_pages: bool = False, **lmdb_options: Any) -> None:
        if lmdb is None:
            raise ImportError(
                'LmdbEngine needs the lmdb package: pip install lmdb')
        if type(map_size) is not int or map_size <= 0:
            raise ValueError(
                f'map_size must be a positive int, not {map_size!r}')
        if 'create' in lmdb_options:
            raise TypeError(
                'LmdbEngine takes create_if_missing, not create')
        super().__init__()
        self.path = os.fspath(path)
        self.autogrow = bool(autogrow)
        if lmdb_options.setdefault('subdir', True):
            data_file = os.path.join(self.path, 'data.mdb')
            _prepare_directory(
                self.path, what='LMDB', create=create_if_missing,
                marker='data.mdb', own_name=_LMDB_FILES.__contains__,
                others=_NOT_LMDB)
        else:
            data_file = self.path
            self._prepare_file(create_if_missing)
        #: The shared lock on the store's lock file (see :mod:`centidb.engines.paths`).
        self.store_lock = StoreLock(lock_path(self.path, subdir=lmdb_options['subdir']),
                                    self.path)
        self.data_file = data_file    #: LMDB's data file (``data.mdb``, or `path` with subdir=False)
        try:
            _check_data_file(data_file, check_pages)    # under the lock: compact cannot swap it
        except BaseException:
            self.store_lock.release()
            raise
        try:
            self._env = lmdb.open(self.path, map_size=map_size,
                                  create=create_if_missing, sync=sync,
                                  **lmdb_options)
        except (lmdb.Error, OSError) as exc:
            self.store_lock.release()
            raise self._open_error(exc, data_file) from exc
        except BaseException:
            self.store_lock.release()
            raise
        self._last_reader_check = 0.0
        self._check_readers()
        self._page_size = self._env.stat()['psize']
        self.max_key_size = self._env.max_key_size()
        # LMDB can only resize the map while this process has no open
        # transaction: count them, and grow under the same lock.
        self._active = 0
        self._active_lock = threading.Lock()

    def _prepare_file(self, create: bool) -> None:
        """Check the data file's path for ``subdir=False``; make its directory."""
        if os.path.isdir(self.path):
            raise DatabasePathError(
                f'{self.path!r} is a directory, but with subdir=False LMDB '
                f'takes the path of its data file; pass that, or drop '
                f'subdir=False to keep the database in this directory')
        if not os.path.exists(self.path):
            blocker = _file_on_path(os.path.dirname(os.path.abspath(self.path)))
            if blocker is not None:
                raise DatabasePathError(
                    f'{self.path!r} cannot be an LMDB data file: {blocker!r} '
                    f'is a file, not a directory')
            if not create:
                raise DatabaseNotFoundError(
                    f'no LMDB database at {self.path!r}; pass '
                    f'create_if_missing=True to create one')
            _make_directories(os.path.dirname(self.path) or '.', 'LMDB')

    def _open_error(self, exc: BaseException, data_file: str) -> EngineError:
        """The error to raise for ``exc``, raised by ``lmdb.open``."""
        path = self.path
        if 'already open' in str(exc):
            return DatabaseLockedError(
                f'LMDB database {path!r} is already open in this process; '
                f'share that engine instead')
        if (isinstance(exc, (lmdb.ReadonlyError, PermissionError))
                or 'Permission denied' in str(exc)):
            return DatabasePermissionError(
                f'cannot open the LMDB database at {path!r}: permission '
                f'denied ({exc}); LMDB reads and writes its data file and '
                f'its lock file')
        if os.path.isdir(data_file):
            return DatabasePathError(
                f'{data_file!r} is a directory, not the data file of an LMDB '
                f'database')
        if isinstance(exc, lmdb.InvalidError):
            return DatabaseCorruptError(
                f'{data_file!r} is not an LMDB data file, or is damaged: {exc}')
        if isinstance(exc, (FileExistsError, IsADirectoryError,
                            NotADirectoryError)) or any(
                problem in str(exc)
                for problem in ('Is a directory', 'Not a directory')):
            return DatabasePathError(
                f'cannot open the LMDB database at {path!r}: {exc}')
        if isinstance(exc, lmdb.Error):
            return self._error(exc, 'opening')
        return EngineError(f'cannot open LMDB database {path!r}: {exc}')

    def _error(self, exc: BaseException, doing: str) -> EngineError:
        """The centidb error for ``exc``, an ``lmdb.Error`` raised while `doing` something."""
        return _lmdb_error(self, exc, doing)

    def _check_readers(self) -> int:
        """Free the reader slots of dead processes (``reader_check()``)."""
        self._last_reader_check = time.monotonic()
        return self._env.reader_check()

    def _readers_full_error(self) -> ReadersFullError:
        slots = self._env.info()['max_readers']
        with self._open_etxns_lock:
            mine = sum(1 for txn in self._open_etxns
                       if not txn.write and txn.state is _OPEN)
        held = _reader_slots(self._env.readers())
        held.pop(os.getpid(), None)
        others = ''
        if held:
            pids = ', '.join(map(str, sorted(held)[:10]))
            if len(held) > 10:
                pids += ', ...'
            others = (f'; other processes hold {sum(held.values())} '
                      f'(pids {pids})')
        return ReadersFullError(
            f'all {slots} reader slots of LMDB database {self.path!r} are '
            f'held by live read transactions of this or other processes '
            f'(slots of dead processes were freed first). This engine holds '
            f'{mine} open read transaction{"" if mine == 1 else "s"} (an '
            f'iterator neither exhausted nor closed holds one){others}. '
            f'Close unfinished iterators and transactions, or open the '
            f'database with a larger max_readers= (now {slots}; the first '
            f'process to open it sets the size for all)')

    def _describe(self) -> str:
        return f'{type(self).__name__}({self.path!r})'

    @property
    def map_size(self) -> int:
        """The current size of the memory map in bytes.

        :raises ~centidb.errors.EngineClosedError: after :meth:`close`.
        """
        if self._closed:
            raise self._closed_error()
        return self._env.info()['map_size']

    def backup(self, dest: str | os.PathLike[str], *, compact: bool = True,
               fill_pages: bool = True, repack: bool | None = None) -> None:
        """Write a consistent copy of the database to the directory `dest`.

        The copy is of one read snapshot, so other threads and processes may
        keep writing meanwhile; it holds exactly what was committed when it
        began. With `compact` (the default) free pages are left out and the
        copy is as small as its data: LMDB reuses freed pages but never
        shrinks its data file, so a compacting copy is how an LMDB store is
        compacted. `dest` is created if missing and must not hold a
        database; the copy is a ``data.mdb`` in it (openable as
        ``LmdbEngine(dest)``).

        With `fill_pages` too (the default), the copy is written key by key
        in order, appended (``MDB_APPEND``), so its pages are full: keys
        written in random order leave LMDB's pages about two thirds full,
        and a copy that keeps the pages as they are (``fill_pages=False``,
        LMDB's own compacting copy) keeps that. A copy with filled pages is
        about a third smaller; its first writes after split more pages.

        :param dest: the directory to write the copy into.
        :param compact: leave out free pages (``mdb_env_copy2`` with
            ``MDB_CP_COMPACT``, unless `fill_pages`).
        :param fill_pages: with `compact`, fill the copy's pages.
        :param repack: the older name of `fill_pages`; given, it wins.
        :raises ~centidb.errors.DatabasePathError: if `dest` already holds a
            ``data.mdb``, or is not a directory.
        :raises ~centidb.errors.EngineError: if LMDB cannot write the copy.
        :raises ~centidb.errors.EngineClosedError: after :meth:`close`.
        """
        if self._closed:
            raise self._closed_error()
        if repack is not None:
            fill_pages = repack
        dest = os.fspath(dest)
        if os.path.exists(os.path.join(dest, 'data.mdb')):
            raise DatabasePathError(f'{dest!r} already holds an LMDB database')
        try:
            os.makedirs(dest, exist_ok=True)
            if compact and fill_pages:
                self._filled_copy(dest)
            else:
                self._env.copy(dest, compact=compact)
        except (FileExistsError, NotADirectoryError) as exc:
            raise DatabasePathError(f'cannot back up to {dest!r}: {exc}') from exc
        except (lmdb.Error, OSError) as exc:
            raise EngineError(f'cannot back up {self.path!r} to {dest!r}: {exc}') from exc

    def _filled_copy(self, dest: str) -> None:
        """Write every key of one snapshot into a new ``dest/data.mdb``, appending."""
        with self.begin() as snapshot:
            pairs = snapshot._txn.cursor().iternext()  # type: ignore[attr-defined]
            copy = lmdb.open(dest, map_size=self._env.info()['map_size'], subdir=True,
                             lock=False, sync=False, metasync=False)
            try:
                while True:
                    with copy.begin(write=True) as txn:
                        # C iterators and putmulti: no Python step per key.
                        consumed, added = txn.cursor().putmulti(
                            itertools.islice(pairs, _FILL_CHUNK), append=True)
                    if added != consumed:   # never: a snapshot iterates in order
                        raise EngineError(f'{self.path!r} yielded keys out of order')
                    if consumed < _FILL_CHUNK:
                        break
                copy.sync(True)
            finally:
                copy.close()

    def _begin(self, write: bool, retry: bool = True) -> EngineTransaction:
        if write:
            if (time.monotonic() - self._last_reader_check
                    >= self.reader_check_interval):
                self._check_readers()
            if self.autogrow:
                self._grow()
        with self._active_lock:
            self._active += 1
        try:
            txn = self._env.begin(write=write, buffers=False)
        except lmdb.MapResizedError as exc:
            self._release_active()
            if not self._adopt_map_size():
                raise self._error(exc, 'beginning a transaction') from exc
            return self._begin(write)
        except lmdb.ReadersFullError as exc:
            self._release_active()
            if retry:   # a dead process may hold the slots: free them, retry
                self._check_readers()
                return self._begin(write, retry=False)
            raise self._readers_full_error() from exc
        except lmdb.Error as exc:
            self._release_active()
            raise self._error(exc, 'beginning a transaction') from exc
        except BaseException:
            self._release_active()
            raise
        return _LmdbTransaction(self, txn, write)

    def _release_active(self) -> None:
        with self._active_lock:
            self._active -= 1

    def _adopt_map_size(self) -> bool:
        """Follow a map another process grew; False if a transaction is open."""
        with self._active_lock:
            if self._active:
                return False
            self._env.set_mapsize(0)
            return True

    def _grow(self, need: int = 0, force: bool = False) -> bool:
        """Enlarge the map if over half full (or, if ``force``, anyway).

        Return True if the map grew; False if it did not need to or could
        not because a transaction is open.
        """
        with self._active_lock:
            if self._active:
                return False
            info = self._env.info()
            size = info['map_size']
            used = (info['last_pgno'] + 1) * self._page_size + need
            new_size = size * 2 if force else size
            while used > new_size // 2:
                new_size *= 2
            if new_size == size:
                return False
            self._env.set_mapsize(new_size)
            return True

    def _map_full_error(self) -> MapFullError:
        size = self.map_size
        if self.autogrow:
            hint = ('autogrow grows the map only between transactions, when '
                    'none is open in this process')
        else:
            hint = 'or pass autogrow=True'
        return MapFullError(
            f'LMDB map of {self.path!r} is full at map_size={size} bytes '
            f'({size / 2**20:g} MiB); the transaction was aborted. Reopen '
            f'with a larger map_size, e.g. map_size={size * 2} ({hint})')

    def _close(self) -> None:
        self._env.close()
        self.store_lock.release()

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
        with self._active_lock:
            self._active += 1
        try:
            with self._env.begin(buffers=False) as txn:
                return txn.get(key)
        except lmdb.BadValsizeError:
            return None  # too long to have been stored
        except (lmdb.MapResizedError, lmdb.ReadersFullError):
            pass    # the general path follows the map, or frees reader slots
        except lmdb.Error as exc:
            raise self._error(exc, 'reading') from exc
        finally:
            self._release_active()
        return super().get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Store `value` under `key`; autogrow grows and retries once.

        :param key: non-empty ``bytes``.
        :param value: ``bytes``.
        :raises TypeError: if `key` or `value` is not ``bytes``.
        :raises ValueError: if `key` is empty.
        :raises ~centidb.errors.TransactionError: if this thread holds a
            write transaction on this engine (use that instead).
        :raises ~centidb.errors.MapFullError: if the map is full (and could
            not grow).
        :raises ~centidb.errors.EngineError: for a key longer than
            :attr:`Engine.max_key_size`.
        """
        try:
            super().put(key, value)
            return
        except MapFullError:
            if not (self.autogrow
                    and self._grow(len(key) + len(value), force=True)):
                raise
        super().put(key, value)


class _LmdbTransaction(EngineTransaction):
    """A native LMDB transaction."""

    engine: LmdbEngine

    def __init__(self, engine: LmdbEngine, txn: lmdb.Transaction[bytes], write: bool) -> None:
        super().__init__(engine, write)
        self._txn = txn
        self._cursor: lmdb.Cursor[bytes] | None = None  # reused by first() and _put_many()
        self.fast.get = txn.get
        if write:
            self._putmulti = self._shared_cursor().putmulti
            # One record's keys: putmulti itself (C). Long lists take
            # _put_many, which may append.
            self.fast.put_many = self._putmulti
            self.fast.put = self._shared_cursor().put
            self.fast.replace = self._shared_cursor().replace
            self.fast.delete = txn.delete

    def _shared_cursor(self) -> lmdb.Cursor[bytes]:
        if self._cursor is None:
            self._cursor = self.fast.seek_cursor = self._txn.cursor()
        return self._cursor

    def get(self, key: bytes) -> bytes | None:
        """Return the value stored under ``key``, or ``None``."""
        if self._state is not _OPEN:
            self._raise_unusable()
        if type(key) is not bytes or not key:
            _bad_key(key)
        try:
            return self._txn.get(key)
        except lmdb.BadValsizeError:
            return None  # too long to have been stored
        except lmdb.Error as exc:
            raise self.engine._error(exc, 'reading') from exc

    def put(self, key: bytes, value: bytes) -> None:
        """Store ``value`` under ``key``, replacing any previous value."""
        if self._state is not _OPEN:
            self._raise_unusable()
        if type(key) is not bytes or not key:
            _bad_key(key)
        if type(value) is not bytes:
            _not_bytes('value', value)
        try:
            self._txn.put(key, value)
        except lmdb.ReadonlyError:
            raise TransactionError(
                'put() in a read-only transaction; use begin(write=True)') from None
        except lmdb.Error as exc:
            self._fail(exc, key)
        self.fast.writes += 1

    def _put_many(self, pairs: list[Item]) -> None:
        if self._state is not _OPEN or not self.write:
            self._refuse_write()
        self.fast.writes += len(pairs)   # first: a failure may have written some
        try:
            self._put_pairs(pairs)
        except lmdb.Error as exc:
            self._put_many_failed(exc, pairs)

    def _put_pairs(self, pairs: list[Item]) -> None:
        """Store `pairs` (unchecked); a long run in key order past the last key is appended.

        LMDB splits a full page in the middle unless the new key goes at
        its end, so keys written in random order leave pages about two
        thirds full, and keys written in order nearly full. With
        ``MDB_APPEND`` a key greater than every key stored goes at the end
        without a search, and fills the last page to the brim: so a long
        list whose keys ascend (a bulk load of sorted records, or of a
        counter's keys, with no index) is appended from the first key past
        the last key stored. Other lists are written as they come: sorting
        a list in Python costs more than LMDB saves.
        """
        if len(pairs) < _APPEND_AT_LEAST or not all(map(
                operator.lt, map(_first, pairs), map(_first, itertools.islice(pairs, 1, None)))):
            self._putmulti(pairs)
            return
        cursor = self._shared_cursor()
        start = 0
        if cursor.last():
            # The first pair whose key sorts after the last key stored.
            start = bisect.bisect_left(pairs, (cursor.key() + b'\x00',))
            if start:
                self._putmulti(pairs[:start])
        tail = pairs[start:] if start else pairs
        if tail:
            _, added = self._putmulti(tail, append=True)
            if added != len(tail):  # never: each key sorts after the one before
                self._putmulti(tail)

    def _put_many_failed(self, exc: Exception, pairs: list[Item]) -> NoReturn:
        if not isinstance(exc, lmdb.Error):
            raise exc
        self._fail(exc, max((key for key, _ in pairs), key=len))

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """Return the first ``(key, value)`` :meth:`items` would yield, or None."""
        if self._state is not _OPEN:
            self._raise_unusable()
        _check_bounds(lo, hi)
        try:
            return self._first(lo, hi, reverse)
        except lmdb.Error as exc:
            raise self.engine._error(exc, 'reading') from exc

    def _first(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> Item | None:
        cursor = self._shared_cursor()
        if reverse:
            if _seek_before(cursor, hi) and (lo is None or cursor.key() >= lo):
                return cursor.item()
        elif cursor.first() if lo is None else cursor.set_range(lo):
            if hi is None or cursor.key() < hi:
                return cursor.item()
        return None

    def _count(self, lo: bytes | None, hi: bytes | None) -> int:
        try:
            return self._count_keys(lo, hi)
        except lmdb.Error as exc:
            raise self.engine._error(exc, 'reading') from exc

    def _count_keys(self, lo: bytes | None, hi: bytes | None) -> int:
        cursor = self._shared_cursor()
        if not (cursor.first() if lo is None else cursor.set_range(lo)):
            return 0
        n = 0
        if hi is None:
            for _ in cursor.iternext(values=False):
                n += 1
        else:
            for key in cursor.iternext(values=False):
                if key >= hi:
                    break
                n += 1
        return n

    def _delete(self, key: bytes) -> None:
        try:
            self._txn.delete(key)
        except lmdb.BadValsizeError:
            return  # too long to have been stored
        except lmdb.Error as exc:
            self._fail(exc, key)

    def _fail(self, exc: Exception, key: bytes) -> NoReturn:
        engine = self.engine
        if isinstance(exc, lmdb.BadValsizeError):
            raise EngineError(
                f'key of {len(key)} bytes is too long for LMDB: at most '
                f'{engine.max_key_size} bytes') from exc
        self.abort()
        raise engine._error(exc, 'writing') from exc

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        try:
            yield from self._cursor_items(lo, hi, reverse)
        except lmdb.Error as exc:
            raise self.engine._error(exc, 'reading') from exc

    def _cursor_items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        cursor = self._txn.cursor()
        if reverse:
            found = _seek_before(cursor, hi)
            while found:
                key, value = cursor.item()
                if lo is not None and key < lo:
                    return
                mutations = self.fast.writes
                yield key, value
                if self.fast.writes != mutations:
                    found = _seek_before(cursor, key)
                else:
                    found = cursor.prev()
        else:
            found = cursor.first() if lo is None else cursor.set_range(lo)
            while found:
                key, value = cursor.item()
                if hi is not None and key >= hi:
                    return
                mutations = self.fast.writes
                yield key, value
                if self.fast.writes != mutations:
                    found = _seek_after(cursor, key)
                else:
                    found = cursor.next()

    def _item_chunks(self, lo: bytes | None, hi: bytes | None,
                     reverse: bool) -> Generator[list[Item], None, None]:
        return self._cursor_chunks(lo, hi, reverse, True)

    def _key_chunks(self, lo: bytes | None, hi: bytes | None,
                    reverse: bool) -> Generator[list[bytes], None, None]:
        return self._cursor_chunks(lo, hi, reverse, False)

    def _cursor_chunks(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                       values: bool) -> Generator[list[Any], None, None]:
        """The lists of item_chunks (key_chunks without `values`), filled by the
        cursor's own iterator without a Python step per pair."""
        try:
            yield from self._chunks(lo, hi, reverse, values)
        except lmdb.Error as exc:
            raise self.engine._error(exc, 'reading') from exc

    def _chunks(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                values: bool) -> Generator[list[Any], None, None]:
        cursor = self._txn.cursor()
        pairs: Iterator[Any]
        if reverse:
            if not _seek_before(cursor, hi):
                return
            pairs = cursor.iterprev() if values else cursor.iterprev(values=False)
        else:
            if not (cursor.first() if lo is None else cursor.set_range(lo)):
                return
            pairs = cursor.iternext() if values else cursor.iternext(values=False)
        yield from chunked(pairs, lo, hi, reverse, keys=not values)

    def verify_storage(self) -> list[str]:
        """:func:`~centidb.engines.lmdbmeta.check_pages`'s finding, as a list (for ``verify()``)."""
        problem = _check_pages(self.engine.data_file)
        return [] if problem is None else [problem]

    def _commit(self) -> None:
        try:
            self._txn.commit()
        except lmdb.Error as exc:
            raise self.engine._error(exc, 'commit') from exc
        finally:
            self._release()

    def _abort(self) -> None:
        try:
            self._txn.abort()
        finally:
            self._release()

    def _release(self) -> None:
        if self._txn is not None:
            # None once ended: every method checks the state before using _txn.
            self._txn = None  # type: ignore[assignment]
            self._cursor = self.fast.get = self.fast.put_many = self.fast.put = None
            self.fast.replace = self.fast.delete = self.fast.seek_cursor = None
            self._putmulti = None  # type: ignore[assignment]  # used only while open
            self.engine._release_active()


def _lmdb_error(engine: LmdbEngine, exc: BaseException, doing: str) -> EngineError:
    """The centidb error for ``exc``, an ``lmdb.Error`` `engine` raised while `doing` something.

    The one place that maps py-lmdb's errors (but for those of opening,
    which :meth:`_open_error` sorts first, and of a full reader table):
    damage is :class:`~centidb.errors.DatabaseCorruptError`; a failed
    read or write :class:`~centidb.errors.StorageIOError`, with
    ``errno`` when LMDB reports one; a panic (LMDB stopped trusting
    its own state) :class:`~centidb.errors.EngineFailedError`.
    """
    path = engine.path
    if isinstance(exc, lmdb.MapFullError):
        return engine._map_full_error()
    if isinstance(exc, lmdb.MapResizedError):
        return EngineError(
            f'another process grew the LMDB map of {path!r}; it can be '
            f'followed only when no transaction or iterator of this '
            f'process is open: finish those and retry')
    if isinstance(exc, (lmdb.CorruptedError, lmdb.PageNotFoundError,
                        lmdb.InvalidError, lmdb.BadChecksumError,
                        lmdb.VersionMismatchError, lmdb.IncompatibleError)):
        return DatabaseCorruptError(
            f'LMDB database {path!r} is damaged ({doing}: {exc}); restore '
            f'it from a backup or a dump')
    if isinstance(exc, lmdb.PanicError):
        return EngineFailedError(
            None, f'LMDB stopped using {path!r} after a fatal error '
                  f'({doing}: {exc}); close and reopen the store')
    code = errno.EIO if isinstance(exc, lmdb.DiskError) else _errno_in(str(exc))
    if code is not None:
        return StorageIOError(
            code, f'LMDB {doing} failed in {path!r}: {exc}; the '
                  f'transaction was aborted and wrote nothing (free disk '
                  f'space or fix the device, then retry)')
    return EngineError(f'LMDB {doing} failed in {path!r}: {exc}')


def _errno_in(message: str) -> int | None:
    """The errno code whose text ends an LMDB error message, or None."""
    for code in (errno.ENOSPC, errno.EFBIG, errno.EIO, errno.EDQUOT, errno.EROFS):
        if os.strerror(code) in message:
            return code
    return None


#: ``_put_pairs`` appends lists of at least this many pairs (when in key order).
_APPEND_AT_LEAST = 64
_first = operator.itemgetter(0)
#: Keys a copy with filled pages writes per transaction (bounding its dirty pages).
_FILL_CHUNK = 100_000


def _reader_slots(table: str) -> collections.Counter[int]:
    """Count the slots each pid holds in ``Environment.readers()`` text."""
    slots: collections.Counter[int] = collections.Counter()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if fields and fields[0].isdigit():
            slots[int(fields[0])] += 1
    return slots


def _seek_after(cursor: lmdb.Cursor[bytes], key: bytes) -> bool:
    """Put ``cursor`` on the first key greater than ``key``."""
    if not cursor.set_range(key):
        return False
    if cursor.key() == key:
        return cursor.next()
    return True


def _seek_before(cursor: lmdb.Cursor[bytes], key: bytes | None) -> bool:
    """Put ``cursor`` on the last key smaller than ``key`` (None: last key)."""
    if key is None or not cursor.set_range(key):
        return cursor.last()
    return cursor.prev()
