"""The ``centidb`` subcommands that inspect, check and copy stores.

``info``, ``get``, ``keys``, ``scan``, ``verify``, ``reindex``, ``backup``,
``copy`` and ``compact``; ``dump`` and ``load`` are in
:mod:`centidb.cli.dump`. Each takes the parsed arguments
(``argparse.Namespace``) and the stream for data, and returns the exit
status; failures raise :class:`~centidb.cli.common.CliError`. Keys and
values are written in the tagged JSON of :mod:`centidb.dumpformat`, so
bytes, datetimes and the other types read back exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import IO, Any, Callable

from centidb import dumpformat
from centidb.catalog import read_metadata
from centidb.cli.common import (
    EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, CliError, detect_engine, disk_size, open_engine,
    open_store, parse_options, progress, write_line,
)
from centidb.collection import Collection
from centidb.engines import Engine, LmdbEngine, PlyvelEngine
from centidb.errors import CentiError
from centidb.store import Store

__all__ = ['COPY_BATCH', 'store_of', 'collection_of', 'parse_key', 'key_json', 'copy_engine',
           'cmd_info', 'cmd_get', 'cmd_keys', 'cmd_scan', 'cmd_verify', 'cmd_reindex',
           'cmd_backup', 'cmd_copy', 'cmd_compact']

#: Engine keys written per transaction by ``copy`` (and ``backup`` on LevelDB).
COPY_BATCH = 1000


def store_of(args: argparse.Namespace, *, create: bool = False) -> Store:
    """Open the store named by ``args.store`` with the common options.

    :param args: the parsed command line.
    :param create: create the store if it is missing.
    """
    return open_store(args.store, args.engine, parse_options(args.option), app=args.app,
                      allow_pickle=args.allow_pickle, create=create)


def collection_of(store: Store, name: str) -> Collection:
    """The existing collection `name` of `store`.

    :param store: the open store.
    :param name: the collection's name.
    :raises ~centidb.cli.common.CliError: if the store has no such
        collection, or it cannot be opened.
    """
    if name not in store.collections():
        raise CliError(f'the store has no collection {name!r}')
    try:
        return store.collection(name)
    except CentiError as exc:
        raise CliError(f'cannot open collection {name!r}: {type(exc).__name__}: {exc}') \
            from exc


def parse_key(text: str, what: str) -> tuple[Any, ...]:
    """A key from a JSON array (its elements in tagged JSON); a bare scalar is a 1-tuple.

    :param text: the JSON text.
    :param what: the argument's name, for messages.
    :raises ~centidb.cli.common.CliError: (usage) if it is not valid.
    """
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise CliError(f'{what} must be a JSON array, not {text!r} ({exc})', EXIT_USAGE) from None
    elements = obj if isinstance(obj, list) else [obj]
    try:
        return tuple(dumpformat.from_json(element) for element in elements)
    except (TypeError, ValueError) as exc:
        raise CliError(f'{what}: {exc}', EXIT_USAGE) from None


def key_json(key: tuple[Any, ...]) -> list[Any]:
    """A key as a JSON array of tagged JSON elements.

    :param key: the key tuple.
    """
    return [dumpformat.to_json(element) for element in key]


def _query(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of a key query from ``--lo`` ... ``--limit``."""
    query: dict[str, Any] = {'reverse': args.reverse, 'max': args.limit}
    for name in ('lo', 'hi', 'prefix'):
        text = getattr(args, name)
        if text is not None:
            query[name] = parse_key(text, f'--{name}')
    if args.startswith is not None:
        query['startswith'] = parse_key(args.startswith, '--startswith')
    return query


# --- info -------------------------------------------------------------------------------

def _store_info(store: Store, path: str, engine: Engine) -> dict[str, Any]:
    """What ``info`` prints of the store at `path`, as a JSON object."""
    with engine.begin() as etxn:
        fmt, metas, counters = read_metadata(etxn)
    collections = []
    for meta in metas:
        entry: dict[str, Any] = {
            'name': meta.name, 'records': None,
            'key': meta.info.get('key', 'unknown'),
            'encoder': meta.info['encoder'], 'packer': meta.info['packer'],
            'counter': meta.info['counter'],
            'indexes': [{'name': name, 'unique': index.unique,
                         'fields': None if index.fields is None else list(index.fields)}
                        for name, index in sorted(meta.stored_indexes.items())],
        }
        try:
            entry['records'] = store.collection(meta.name).count()
        except CentiError as exc:
            entry['error'] = str(exc)
        collections.append(entry)
    return {'path': path, 'engine': type(engine).__name__,
            'format': fmt.get('format'), 'version': fmt.get('version'),
            'size': disk_size(path), 'collections': collections, 'counters': counters}


def cmd_info(args: argparse.Namespace, out: IO[str]) -> int:
    """``info STORE [--json]``: format, collections, indexes, counters, size.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    with store_of(args) as store:
        info = _store_info(store, args.store, store.engine)
    if args.json:
        write_line(out, info)
        return EXIT_OK
    out.write(f"store {info['path']}: {info['engine']}, format {info['format']} "
              f"version {info['version']}, {info['size']} bytes on disk\n")
    for coll in info['collections']:
        records = coll['records'] if coll['records'] is not None else '?'
        out.write(f"collection {coll['name']}: {records} records, key {coll['key']}, "
                  f"encoder {coll['encoder']}, packer {coll['packer']}, "
                  f"counter {coll['counter']}\n")
        if 'error' in coll:
            out.write(f"  not readable here: {coll['error']}\n")
        for index in coll['indexes']:
            unique = ', unique' if index['unique'] else ''
            made = ('a function' if index['fields'] is None
                    else 'fields ' + ', '.join(index['fields']))
            out.write(f"  index {index['name']}: {made}{unique}\n")
    for name, value in sorted(info['counters'].items()):
        out.write(f'counter {name} = {value}\n')
    return EXIT_OK


# --- reading records --------------------------------------------------------------------

def cmd_get(args: argparse.Namespace, out: IO[str]) -> int:
    """``get STORE COLLECTION KEY``: the value, or exit 1 if there is none.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    key = parse_key(args.key, 'KEY')
    missing = object()
    with store_of(args) as store:
        value = collection_of(store, args.collection).get(key, missing)
        if value is missing:
            return EXIT_PROBLEMS
        write_line(out, dumpformat.to_json(value))
    return EXIT_OK


def cmd_keys(args: argparse.Namespace, out: IO[str]) -> int:
    """``keys STORE COLLECTION``: one JSON array per line.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    query = _query(args)
    with store_of(args) as store:
        for key in collection_of(store, args.collection).keys(**query):
            write_line(out, key_json(key))
    return EXIT_OK


def cmd_scan(args: argparse.Namespace, out: IO[str]) -> int:
    """``scan STORE COLLECTION``: ``{"key": [...], "value": ...}`` per line.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    query = _query(args)
    with store_of(args) as store:
        for key, value in collection_of(store, args.collection).items(**query):
            write_line(out, {'key': key_json(key), 'value': dumpformat.to_json(value)})
    return EXIT_OK


# --- checking and repairing -------------------------------------------------------------

def cmd_verify(args: argparse.Namespace, out: IO[str]) -> int:
    """``verify STORE``: one line per problem; exit 1 if there is any.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    with store_of(args) as store:
        names = store.collections()
        ticks = progress(iter(names), desc='verify', quiet=args.quiet, total=len(names),
                         unit='coll')
        problems = store.verify(progress=lambda name: next(ticks, None))
        for _ in ticks:     # ends the bar
            pass
    for problem in problems:
        out.write(f'{problem}\n')
    if not args.quiet and not problems:
        os.write(2, f'{len(names)} collections: no problems\n'.encode())
    return EXIT_PROBLEMS if problems else EXIT_OK


def cmd_reindex(args: argparse.Namespace, out: IO[str]) -> int:
    """``reindex STORE COLLECTION [INDEX]``: rebuild indexes the app added.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    with store_of(args) as store:
        coll = collection_of(store, args.collection)
        names = [args.index] if args.index else sorted(coll.indices)
        if not names:
            raise CliError(f'no index of {args.collection!r} was added in this session: '
                           f'give --app MODULE:FUNCTION to add the index functions',
                           EXIT_USAGE)
        for name in names:
            if name not in coll.indices:
                raise CliError(f'index {name!r} of {args.collection!r} was not added: '
                               f'--app must add it', EXIT_USAGE)
            bar = _records_bar(f'reindex {name}', coll.count, quiet=args.quiet)
            try:
                coll.reindex(name, progress=None if bar is None else bar.update)
            finally:
                if bar is not None:
                    bar.close()
    return EXIT_OK


def _records_bar(desc: str, count: Callable[[], int], *, quiet: bool) -> Any:
    """A tqdm bar of records on stderr, as :func:`progress` shows one, or None.

    :param desc: the bar's label.
    :param count: returns the total (called only when a bar is shown).
    :param quiet: no bar.
    """
    if quiet or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(desc=desc, total=count(), unit='rec', file=sys.stderr, leave=False)


# --- copies -----------------------------------------------------------------------------

def copy_engine(source: Engine, dest: Engine, *, quiet: bool, desc: str) -> int:
    """Copy every key and value of `source` (one read snapshot) into `dest`.

    Writes :data:`COPY_BATCH` keys per write transaction of `dest`.

    :param source: the engine read.
    :param dest: the engine written.
    :param quiet: no progress bar.
    :param desc: the progress bar's label.
    :returns: how many keys were copied.
    """
    copied = 0
    with source.begin() as etxn:
        total = etxn.count()
        pending: list[tuple[bytes, bytes]] = []
        for key, value in progress(etxn.items(), desc=desc, quiet=quiet, total=total,
                                   unit='key'):
            pending.append((key, value))
            if len(pending) >= COPY_BATCH:
                copied += _write(dest, pending)
        copied += _write(dest, pending)
    return copied


def _write(dest: Engine, pairs: list[tuple[bytes, bytes]]) -> int:
    n = len(pairs)
    if pairs:
        with dest.begin(write=True) as wtxn:
            for key, value in pairs:
                wtxn.put(key, value)
        pairs.clear()
    return n


def _empty_dest(path: str, engine: str | None, options: dict[str, Any]) -> Engine:
    """Create the engine at `path`, which must not hold data."""
    if detect_engine(path) is not None:
        raise CliError(f'{path!r} already holds a store; give a new path')
    dest = open_engine(path, engine, options, create=True)
    if dest.first() is not None:
        dest.close()
        raise CliError(f'{path!r} already holds data; give a new path')
    return dest


def cmd_backup(args: argparse.Namespace, out: IO[str]) -> int:
    """``backup STORE DEST``: a consistent snapshot, on the same engine.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    source = open_engine(args.store, args.engine, parse_options(args.option))
    try:
        if isinstance(source, LmdbEngine):
            if detect_engine(args.dest) is not None:
                raise CliError(f'{args.dest!r} already holds a store; give a new path')
            try:
                source.backup(args.dest)
            except CentiError as exc:
                raise CliError(f'{type(exc).__name__}: {exc}') from exc
            return EXIT_OK
        # LevelDB: a read transaction is a snapshot; copy it into a new database.
        dest = _empty_dest(args.dest, type(source).__name__, {})
        try:
            copy_engine(source, dest, quiet=args.quiet, desc='backup')
        finally:
            dest.close()
    finally:
        source.close()
    return EXIT_OK


def cmd_copy(args: argparse.Namespace, out: IO[str]) -> int:
    """``copy STORE DEST --engine NAME``: every key and value, to another engine.

    Here ``--engine`` and ``--option`` are the new store's; ``--source-engine``
    names the engine of STORE when its files do not tell.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    if not args.engine:
        raise CliError('copy needs --engine NAME, the engine of the new store', EXIT_USAGE)
    source = open_engine(args.store, args.source_engine, {})
    try:
        dest = _empty_dest(args.dest, args.engine, parse_options(args.option))
        try:
            copy_engine(source, dest, quiet=args.quiet, desc='copy')
        finally:
            dest.close()
    finally:
        source.close()
    return EXIT_OK


def cmd_compact(args: argparse.Namespace, out: IO[str]) -> int:
    """``compact STORE``: LevelDB compacts in place; LMDB is rewritten compacted.

    First the store's lock (:mod:`centidb.engines.paths`) is made exclusive,
    which proves that no other process, and no other engine in this
    process, has the store open; if one has, nothing is changed and
    :class:`~centidb.errors.DatabaseLockedError` is raised (exit status 3).
    Processes that try to open the store meanwhile fail with that error.
    LMDB never shrinks its file in place, so a compacting copy replaces the
    data file. ``--offline`` is accepted and ignored, with a warning.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    if args.offline:
        os.write(2, b'centidb compact: warning: --offline is deprecated and ignored: '
                    b'compact checks that no other process has the store open\n')
    engine = open_engine(args.store, args.engine, parse_options(args.option))
    try:
        if not isinstance(engine, (LmdbEngine, PlyvelEngine)):
            raise CliError(f'{type(engine).__name__} cannot be compacted')
        engine.store_lock.make_exclusive('compact')
        if isinstance(engine, PlyvelEngine):
            engine.compact()
            return EXIT_OK
        if not os.path.isdir(engine.path):
            raise CliError(f'compact rewrites LMDB stores kept in a directory; '
                           f'{args.store!r} is a data file (subdir=False): write a '
                           f'compacted copy with "centidb backup STORE DEST"',
                           EXIT_USAGE)
        data_file = os.path.join(engine.path, 'data.mdb')
        before = os.path.getsize(data_file)
        scratch = tempfile.mkdtemp(prefix='.compact-', dir=engine.path)
        try:
            engine.backup(scratch, compact=True)
            # Still holding the lock exclusively: nobody can open the store
            # between the replace and the close below.
            os.replace(os.path.join(scratch, 'data.mdb'), data_file)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if not args.quiet:
            after = os.path.getsize(data_file)
            os.write(2, f'{data_file}: {before} -> {after} bytes\n'.encode())
    finally:
        engine.close()
    return EXIT_OK
