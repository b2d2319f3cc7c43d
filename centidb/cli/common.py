"""What every ``centidb`` subcommand shares: opening stores, the app, progress, exits.

The command line (:mod:`centidb.cli`) is built on this module. A STORE
argument is a path; its engine is found from the files in it
(:func:`detect_engine`: LMDB's ``data.mdb``, LevelDB's ``CURRENT``) unless
``--engine`` names one, and ``--option key=value`` passes engine options
(:func:`parse_options`). :func:`load_app` imports the ``--app
MODULE:FUNCTION`` callable that registers key functions, index functions and
encoders. Failures raise :class:`CliError`, which carries the exit status.
The catalog itself is read with :func:`centidb.catalog.read_metadata`.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import IO, Any, Callable, Iterable, Iterator, TypeVar

from centidb import encodings, engines
from centidb.engines import ENGINES, Engine
from centidb.errors import CentiError
from centidb.store import Store

__all__ = ['CliError', 'EXIT_OK', 'EXIT_PROBLEMS', 'EXIT_USAGE', 'EXIT_STORE', 'EXIT_APP',
           'EXIT_INTERNAL', 'EXIT_INTERRUPTED', 'ENGINE_ALIASES', 'FILE_ENGINES', 'engine_name',
           'detect_engine',
           'parse_options', 'open_engine', 'open_store', 'load_app', 'progress',
           'disk_size', 'write_line']

_T = TypeVar('_T')

#: Exit status: success.
EXIT_OK = 0
#: Exit status: the command ran and found problems (``verify``), or nothing
#: (``get`` of a missing key).
EXIT_PROBLEMS = 1
#: Exit status: the command line is wrong (argparse's own status).
EXIT_USAGE = 2
#: Exit status: the store could not be opened, read or written (it is
#: damaged, locked, missing...), or another file could not be.
EXIT_STORE = 3
#: Exit status: the ``--app`` callable could not be imported or failed.
EXIT_APP = 4
#: Exit status: an unexpected error, one that is not a centidb error nor an
#: ``OSError``: a bug in centidb or in the ``--app`` code.
EXIT_INTERNAL = 5
#: Exit status: interrupted (Ctrl-C), as shells report SIGINT.
EXIT_INTERRUPTED = 130

#: Short engine names, any case (:data:`centidb.engines.ENGINE_ALIASES`,
#: which ``centidb.open()`` reads too).
ENGINE_ALIASES = engines.ENGINE_ALIASES

#: The engines ``--engine`` accepts: those that keep a store at a path.
FILE_ENGINES = ('LmdbEngine', 'PlyvelEngine')


class CliError(Exception):
    """A failure the command line reports on stderr and exits with.

    :param message: the line printed after ``centidb: error:``.
    :param status: the exit status (:data:`EXIT_STORE` by default).
    """

    def __init__(self, message: str, status: int = EXIT_STORE) -> None:
        super().__init__(message)
        self.status = status


def engine_name(name: str) -> str:
    """The :data:`~centidb.engines.ENGINES` name for `name` (an alias or a class name).

    :param name: the name given.
    :raises CliError: (usage) for an unknown name, listing the known ones.
    """
    found = ENGINE_ALIASES.get(name.lower(), name)
    if found not in FILE_ENGINES:
        known = ', '.join([*(alias for alias, target in ENGINE_ALIASES.items()
                             if target in FILE_ENGINES), *FILE_ENGINES])
        raise CliError(f'unknown engine {name!r}; known engines: {known}', EXIT_USAGE)
    return found


def detect_engine(path: str) -> str | None:
    """The engine name of the store at `path`, from its files; None if none is there.

    A directory holding ``data.mdb`` is LMDB (as is a file, opened with
    ``subdir=False``); one holding ``CURRENT`` is LevelDB.

    :param path: the store's path.
    """
    if os.path.isdir(path):
        names = set(os.listdir(path))
        if 'data.mdb' in names:
            return 'LmdbEngine'
        if 'CURRENT' in names:
            return 'PlyvelEngine'
        return None
    return None


def parse_options(pairs: Iterable[str]) -> dict[str, Any]:
    """Engine keyword options from ``key=value`` strings.

    A value that parses as JSON (``1048576``, ``true``, ``"x"``) is that
    value; anything else is the string as given.

    :param pairs: the ``--option`` arguments.
    :raises CliError: (usage) for a pair without ``=``.
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition('=')
        if not sep or not key:
            raise CliError(f'--option needs key=value, not {pair!r}', EXIT_USAGE)
        try:
            options[key] = json.loads(text)
        except ValueError:
            options[key] = text
    return options


def open_engine(path: str, engine: str | None, options: dict[str, Any], *,
                create: bool = False) -> Engine:
    """Open the engine of the store at `path`.

    :param path: the store's path.
    :param engine: the engine name given with ``--engine``, or None to detect
        it (a missing store is then created with LMDB when `create` is true).
    :param options: engine keyword options.
    :param create: create the store if it is missing.
    :raises CliError: if there is no store at `path` and `create` is false,
        or the engine cannot open it (with a centidb error or an
        ``OSError``; other exceptions propagate).
    """
    name = engine_name(engine) if engine else detect_engine(path)
    if name is None:
        if not create:
            if not os.path.lexists(path):
                raise CliError(f'no store at {path!r}: no such file or directory')
            raise CliError(f'no LMDB or LevelDB store at {path!r} '
                           f'(give --engine if it is another kind)')
        name = 'LmdbEngine'
    kwargs = dict(options)
    kwargs.setdefault('create_if_missing', create)
    engine_class = ENGINES[name]
    try:
        return engine_class(path=path, **kwargs)        # type: ignore[call-arg]
    except (CentiError, OSError) as exc:
        raise CliError(f'cannot open {path!r} with {name}: {type(exc).__name__}: {exc}') \
            from exc
    except (TypeError, ValueError) as exc:
        raise CliError(f'bad engine option for {name}: {exc}', EXIT_USAGE) from exc


def open_store(path: str, engine: str | None, options: dict[str, Any], *,
               app: str | None = None, allow_pickle: bool = False,
               create: bool = False) -> Store:
    """Open the store at `path`, then let the app register its code.

    :param path: the store's path.
    :param engine: as for :func:`open_engine`.
    :param options: engine keyword options.
    :param create: create the store if it is missing.
    :param app: ``MODULE:FUNCTION`` (see :func:`load_app`), or None.
    :param allow_pickle: register the pickle encoder, so that collections
        stored with pickle can be read (pickle can run code from the store).
    :raises CliError: as :func:`open_engine`, if the engine holds no
        centidb store, or (:data:`EXIT_APP`) if the app fails.
    """
    instance = open_engine(path, engine, options, create=create)
    try:
        store = Store(instance)
    except BaseException as exc:
        instance.close()
        if isinstance(exc, CentiError):
            raise CliError(f'cannot open the store at {path!r}: {type(exc).__name__}: '
                           f'{exc}') from exc
        raise
    try:
        if allow_pickle:
            store.add_encoder(encodings.PICKLE_ENCODER)
        if app:
            func = load_app(app)
            try:
                func(store)
            except Exception as exc:
                raise CliError(f'--app {app}: {type(exc).__name__}: {exc}', EXIT_APP) from None
    except BaseException:
        store.close()
        raise
    return store


def load_app(spec: str) -> Callable[[Store], object]:
    """Import the callable named by ``MODULE:FUNCTION`` (``MODULE`` alone: ``MODULE:app``).

    The current directory is searched first, as ``python -m`` does.

    :param spec: the ``--app`` argument.
    :raises CliError: (:data:`EXIT_APP`) if it cannot be imported or is not
        callable.
    """
    module_name, _, attr = spec.partition(':')
    attr = attr or 'app'
    if os.getcwd() not in sys.path and '' not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise CliError(f'--app {spec}: cannot import {module_name!r}: {exc}', EXIT_APP) from None
    func: Any = module
    for part in attr.split('.'):
        func = getattr(func, part, None)
        if func is None:
            raise CliError(f'--app {spec}: {module_name!r} has no {attr!r}', EXIT_APP)
    if not callable(func):
        raise CliError(f'--app {spec}: {attr!r} is not callable', EXIT_APP)
    return func  # type: ignore[no-any-return]  # checked callable


def progress(items: Iterable[_T], *, desc: str, quiet: bool,
             total: int | None = None, unit: str = 'rec') -> Iterator[_T]:
    """Iterate `items`, with a tqdm progress bar on stderr when it is a terminal.

    No bar when `quiet`, when stderr is not a terminal, or when tqdm is not
    installed.

    :param items: what to iterate.
    :param desc: the bar's label.
    :param quiet: no bar.
    :param total: how many items there are, if known.
    :param unit: what an item is called.
    """
    if quiet or not sys.stderr.isatty():
        return iter(items)
    try:
        from tqdm import tqdm
    except ImportError:
        return iter(items)
    return iter(tqdm(items, desc=desc, total=total, unit=unit, file=sys.stderr,
                     leave=False))


def disk_size(path: str) -> int:
    """Bytes used by the files at `path` (a file, or a directory's files).

    :param path: the store's path.
    """
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for directory, _, names in os.walk(path):
        for name in names:
            total += os.path.getsize(os.path.join(directory, name))
    return total


def write_line(out: IO[str], obj: object) -> None:
    """Write `obj` as one line of compact JSON (JSON Lines).

    :param out: the stream.
    :param obj: JSON data.
    """
    out.write(json.dumps(obj, ensure_ascii=False, separators=(',', ':')))
    out.write('\n')
