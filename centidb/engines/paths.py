"""A database directory's checks and lock, for the engines that keep one on disk.

Before :class:`~centidb.engines.PlyvelEngine` or
:class:`~centidb.engines.LmdbEngine` opens a path, :func:`prepare_directory`
turns every wrong path (a file, a missing parent, another engine's
database, a directory of unrelated files, no permission) into an error from
:mod:`centidb.errors` that names the path and what is wrong with it. An
engine of your own that keeps a database directory can use it too.

The store lock: every :class:`~centidb.engines.LmdbEngine` and
:class:`~centidb.engines.PlyvelEngine` holds a :class:`StoreLock` (its
``store_lock`` attribute): a shared ``flock`` on the file ``centidb.lock``
in the store's directory (for an LMDB data file opened with
``subdir=False``, on ``FILE-centidb.lock`` beside it), taken before the
engine opens the store and released when it closes. Any number of
engines, in any number of processes, share it; the system releases it when
a process dies, however it dies. A child made by ``fork()`` shares its
parent's lock until it exits or runs another program (the file is not
inherited across ``exec``).

An operation that rewrites the store's files (``centidb compact``) makes
the lock exclusive with :meth:`StoreLock.make_exclusive`. That succeeds
only if no other engine, in this process or another, has the store open,
and while it is held no engine can open the store: it fails at once with
:class:`~centidb.errors.DatabaseLockedError`.

Only engines that open the store through centidb take the lock; a program
that opens the files with LMDB or LevelDB directly is not seen. Where the
lock file can be neither created nor opened (a read-only directory without
one), or the file system has no ``flock``, the engine opens the store
unlocked, and :meth:`StoreLock.make_exclusive` refuses. On systems without ``fcntl.flock`` (Windows), there is no lock and
:meth:`StoreLock.make_exclusive` always refuses.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable, Mapping

from centidb.errors import (
    DatabaseLockedError,
    DatabaseNotFoundError,
    DatabasePathError,
    DatabasePermissionError,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ['prepare_directory', 'make_directories', 'file_on_path', 'LOCK_NAME',
           'lock_path', 'StoreLock']

_HAVE_FLOCK: bool = fcntl is not None

#: The lock file's name in a store's directory (see :class:`StoreLock`).
LOCK_NAME = 'centidb.lock'


def file_on_path(path: str) -> str | None:
    """Return the first existing one of `path` and its parents, if it is not a directory.

    :param path: a path that may not exist yet.
    :returns: the path of the file that stands where a directory is needed,
        or ``None`` if the nearest existing one is a directory.
    """
    path = os.path.abspath(path)
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None if os.path.isdir(path) else path


def _missing_parent(path: str) -> str | None:
    """The parent directory of ``path`` if it does not exist, else None."""
    parent = os.path.dirname(os.path.abspath(path))
    return None if os.path.isdir(parent) else parent


def make_directories(path: str, what: str) -> None:
    """Create the directory `path` and its parents, as ``os.makedirs`` does.

    :param path: the database directory to create (existing is fine).
    :param what: the database's name in messages (``'LMDB'``).
    :raises ~centidb.errors.DatabasePermissionError: permission denied.
    :raises ~centidb.errors.DatabasePathError: it cannot be made, for example
        because a parent is a file (the message names that file).
    """
    try:
        os.makedirs(path, exist_ok=True)
    except PermissionError as exc:
        raise DatabasePermissionError(
            f'cannot create the {what} database directory {path!r}: '
            f'permission denied') from exc
    except OSError as exc:
        blocker = file_on_path(path)
        if blocker is not None:
            raise DatabasePathError(
                f'cannot create the {what} database directory {path!r}: '
                f'{blocker!r} is a file, not a directory') from exc
        raise DatabasePathError(
            f'cannot create the {what} database directory {path!r}: {exc}'
        ) from exc


def prepare_directory(path: str, *, what: str, create: bool, marker: str,
                      own_name: Callable[[str], object],
                      others: Mapping[str, tuple[str, str]]) -> bool:
    """Check that `path` is a directory holding a `what` database.

    If the database does not exist and `create` is true, the directory (and
    its parents) is made. Hidden files (``.name``) are ignored, and so is
    the lock file every engine keeps there (:data:`LOCK_NAME`).

    :param path: the database directory.
    :param what: the database's name in messages (``'LevelDB'``).
    :param create: true to create a missing database.
    :param marker: the file whose presence means the database exists.
    :param own_name: ``(name) -> bool``: is it a file the engine makes?
    :param others: ``{file: (description, engine)}``: a file that marks
        another kind of database, what that is and which engine opens it.
    :returns: True if the database exists (`marker` is there).
    :raises ~centidb.errors.DatabaseNotFoundError: there is no database and
        `create` is false.
    :raises ~centidb.errors.DatabasePermissionError: this process may not
        reach, read or create the directory.
    :raises ~centidb.errors.DatabasePathError: `path` or a parent is a
        file, or the directory holds another database or other files.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None     # missing, or a parent is a file: told apart below
    except PermissionError as exc:
        raise DatabasePermissionError(
            f'cannot reach the {what} database at {path!r}: permission '
            f'denied on one of its parent directories') from exc
    if mode is None:
        blocker = file_on_path(path)
        if blocker is not None:
            raise DatabasePathError(
                f'no {what} database can be at {path!r}: {blocker!r} is a '
                f'file, not a directory')
        if not create:
            parent = _missing_parent(path)
            also = '' if parent is None else (
                f' (its parent directory {parent!r} does not exist either)')
            raise DatabaseNotFoundError(
                f'no {what} database at {path!r}{also}; pass '
                f'create_if_missing=True to create one')
        make_directories(path, what)
        return False
    if not stat.S_ISDIR(mode):
        raise DatabasePathError(
            f'{path!r} is a file, not a directory: {what} keeps each '
            f'database in a directory of its own; pass the path of a '
            f'database directory, or of a new one to create')
    try:
        names = os.listdir(path)
    except PermissionError as exc:
        raise DatabasePermissionError(
            f'cannot open the {what} database at {path!r}: permission '
            f'denied to read the directory') from exc
    if marker in names:
        return True
    for name in sorted(others):
        if name in names:
            description, engine = others[name]
            raise DatabasePathError(
                f'{path!r} holds {description}, which {what} cannot open: '
                f'open it with {engine}')
    strangers = sorted(name for name in names
                       if not name.startswith('.') and name != LOCK_NAME
                  and not own_name(name))
    listed = ', '.join(map(repr, strangers[:5]))
    if len(strangers) > 5:
        listed += f' and {len(strangers) - 5} more'
    if not create:
        held = f' (it holds other files: {listed})' if strangers else ''
        raise DatabaseNotFoundError(
            f'no {what} database at {path!r}{held}; pass '
            f'create_if_missing=True to create one')
    if strangers:
        raise DatabasePathError(
            f'{path!r} holds no {what} database but other files ({listed}); '
            f'not creating one among them: pass a new or empty directory')
    return False


def lock_path(path: str, *, subdir: bool = True) -> str:
    """The lock file of the store at `path`.

    :param path: the store's directory, or with ``subdir=False`` its data
        file.
    :param subdir: whether `path` is a directory.
    """
    if subdir:
        return os.path.join(path, LOCK_NAME)
    return f'{path}-{LOCK_NAME}'


class StoreLock:
    """A shared ``flock`` on a store's lock file, held while an engine has it open.

    Taken by the constructor, without waiting.

    :param path: the lock file (see :func:`lock_path`); created if missing.
    :param store: the store's path, for messages.
    :raises ~centidb.errors.DatabaseLockedError: if another process holds
        the lock exclusively (it is rewriting the store's files).
    """

    def __init__(self, path: str, store: str) -> None:
        self.path = path
        self.store = store
        self._fd: int | None = None
        if not _HAVE_FLOCK:  # pragma: no cover - Windows
            return
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                return      # a read-only place without a lock file: unlocked
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                return      # a file system without flock: unlocked
            raise DatabaseLockedError(
                f'the store {store!r} is being rewritten by another process '
                f'(centidb compact holds {path!r} exclusively); open it again '
                f'when that has finished') from exc
        self._fd = fd

    @property
    def held(self) -> bool:
        """Whether this object holds the lock (false once released, or if unlocked)."""
        return self._fd is not None

    def make_exclusive(self, operation: str) -> None:
        """Hold the lock exclusively, without waiting, or raise.

        On failure the lock stays shared (unless another process took it
        exclusively meanwhile: then :attr:`held` is false).

        :param operation: what needs the store to itself, for the message
            (``'compact'``).
        :raises ~centidb.errors.DatabaseLockedError: if any other engine, in
            this process or another, has the store open (or the lock could
            not be taken at all), naming the store.
        """
        if self._fd is None:
            raise DatabaseLockedError(
                f'{operation} needs the store {self.store!r} to itself, but '
                f'its lock file {self.path!r} could not be locked, so other '
                f'processes that have it open cannot be seen; not changing it')
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise DatabaseLockedError(
                    f'{operation} needs the store {self.store!r} to itself, but '
                    f'its lock file {self.path!r} cannot be locked exclusively '
                    f'({exc}); not changing it') from exc
            # A failed conversion may have dropped the shared lock: take it
            # again. That fails only if another process took the lock
            # exclusively in between; this one then holds none.
            try:
                fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                self.release()
            raise DatabaseLockedError(
                f'{operation} needs the store {self.store!r} to itself, but '
                f'another process (or another open engine in this process) '
                f'has it open; close those and try again') from exc

    def release(self) -> None:
        """Release the lock (closing its file); releasing twice is fine."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
