"""``centidb dump`` and ``centidb load``: a store as JSON Lines, and back.

The lines are those of :mod:`centidb.dumpformat`, and :mod:`centidb.dumpfile`
writes and checks them: a header, a line for each
collection (encoder, packer, key kind, indexes), one for each counter, one
per record, naming its collection and key, and a trailer with the line and
record counts and the checksum of the lines. ``dump`` reads everything in
one read transaction, so the dump is a consistent snapshot.

``load`` is all or nothing. A new store is built under a temporary name in
the target's directory, :data:`LOAD_BATCH` records a transaction, and
renamed to the target only once the whole dump, trailer included, has been
read and written; on any failure it is removed and no target is left. Into
an existing store the whole dump is written in one transaction, which
commits only at the end. Each record goes to its key, so loading the same
dump again overwrites each record with itself; counters end at least at the
dumped values. Every failure names the dump's line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from contextlib import ExitStack, contextmanager, nullcontext
from typing import IO, Any, Callable, ContextManager, Iterable, Iterator

from centidb import dumpfile, encodings
from centidb.store import verify
from centidb.catalog import read_metadata
from centidb.cli.commands import collection_of, store_of
from centidb.cli.common import EXIT_OK, EXIT_USAGE, CliError, open_store, parse_options, progress
from centidb.collection import Collection
from centidb.dumpformat import CollectionLine, CounterLine, Line, RecordLine
from centidb.errors import CentiError, DumpFormatError
from centidb.records import Record
from centidb.store import Store
from centidb.txn import Transaction

__all__ = ['LOAD_BATCH', 'cmd_dump', 'cmd_load']

#: Records written per transaction by ``load`` (``--batch``).
LOAD_BATCH = 1000


def cmd_dump(args: argparse.Namespace, out: IO[str]) -> int:
    """``dump STORE [-c COLLECTION]... [-o FILE]``: metadata, counters, records, trailer.

    ``FILE`` is written under a temporary name beside it and renamed at the
    end, so a dump that fails leaves it as it was.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    with ExitStack() as stack:
        store = stack.enter_context(store_of(args))
        if args.output:
            out = stack.enter_context(_replaced_at_the_end(args.output))
        txn = stack.enter_context(store.begin())
        _, metas, counters = read_metadata(txn.engine_txn)  # type: ignore[arg-type]  # open
        wanted = args.collections
        if wanted:
            unknown = sorted(set(wanted) - {meta.name for meta in metas})
            if unknown:
                raise CliError(f'the store has no collection {unknown[0]!r}')
            metas = [meta for meta in metas if meta.name in wanted]
            kept = {meta.info['counter'] for meta in metas}
            counters = {name: value for name, value in counters.items() if name in kept}
        colls = [collection_of(store, meta.name) for meta in metas]
        writer = dumpfile.DumpWriter(out)
        writer.write_header()
        for meta in metas:
            fields = {name: index.fields for name, index in meta.stored_indexes.items()}
            writer.write_collection(CollectionLine.from_info(meta.name, meta.info, meta.indexes,
                                                             fields))
        for name, value in sorted(counters.items()):
            writer.write_counter(CounterLine(name, value))
        total = sum(coll.count(txn=txn) for coll in colls)
        records = ((coll.name, key, value) for coll in colls
                   for key, value in coll.items(txn=txn))
        for name, key, value in progress(records, desc='dump', quiet=args.quiet, total=total):
            try:
                writer.write_record(name, key, value)
            except CentiError as exc:
                raise CliError(f'collection {name!r}, key {key!r}: {exc}') from None
        writer.write_trailer()
    return EXIT_OK


@contextmanager
def _replaced_at_the_end(path: str) -> Iterator[IO[str]]:
    """A text file written beside `path` and renamed to it once the block succeeds.

    If the block fails, the file is removed and `path` is left as it was.
    """
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, scratch = tempfile.mkstemp(prefix=f'.{os.path.basename(path)}.dump-', dir=directory)
    except OSError as exc:
        raise CliError(f'cannot write {path!r}: {exc}') from None
    try:
        with open(fd, 'w', encoding='utf-8', newline='\n') as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.chmod(scratch, 0o666 & ~_umask())
        os.replace(scratch, path)
    except BaseException:
        try:
            os.unlink(scratch)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _encoder(name: str, what: str) -> encodings.Encoder:
    for encoder in encodings.BUILTIN_ENCODERS:
        if encoder.name == name:
            return encoder
    raise CliError(f'{what} {name!r} is not built in: --app must register it and create '
                   f'the collection', EXIT_USAGE)


class _Placeholder:
    """The key function of a collection loaded without ``--app``: the records carry their keys."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any) -> Any:
        raise CliError(f'collection {self.name!r}: the loaded records carry their keys; '
                       f'give --app to put records without keys')


def _placeholder(name: str) -> Callable[..., Any]:
    return _Placeholder(name)


def _prepare(store: Store, line: CollectionLine, allow_pickle: bool) -> Collection:
    """Open or create the collection of a collection line, checking that they agree."""
    if line.name not in store.collections():
        if line.encoder == 'pickle' and not allow_pickle:
            raise CliError(f'collection {line.name!r} is stored with pickle: give '
                           f'--allow-pickle to load it', EXIT_USAGE)
        kind = line.key_kind or 'auto'
        func = _placeholder(line.name)
        store.collection(line.name, key_func=func if kind == 'key_func' else None,
                         txn_key_func=func if kind == 'txn_key_func' else None,
                         encoder=_encoder(line.encoder, 'encoder'),
                         packer=_encoder(line.packer, 'packer'), counter_name=line.counter,
                         checksum=True if line.checksum else None)
    coll = collection_of(store, line.name)
    for label, have, want in (('encoder', coll.encoder.name, line.encoder),
                              ('packer', coll.packer.name, line.packer),
                              ('counter', coll.counter_name, line.counter)):
        if have != want:
            raise CliError(f'collection {line.name!r} has {label} {have!r} in the store '
                           f'but {want!r} in the dump')
    for index in line.indexes:
        if index.fields is not None:    # the same definition: returns the stored index
            coll.add_index(index.name, fields=index.fields, unique=index.unique)
    missing = [index.name for index in line.indexes if index.name not in coll.indices]
    if missing:
        raise CliError(f'collection {line.name!r} has the index {missing[0]!r}: give '
                       f'--app MODULE:FUNCTION that adds it', EXIT_USAGE)
    return coll


class _Loader:
    """Writes record lines with ``put_many``, in batches, each in the transaction ``begin()`` gives.

    :param batch: the most records a batch holds.
    :param begin: gives a context manager holding the batch's transaction.
    """

    def __init__(self, batch: int, begin: Callable[[], ContextManager[Transaction]]) -> None:
        self.batch = batch
        self.begin = begin
        self.coll: Collection | None = None
        self.pending: list[tuple[int, Record]] = []

    def add(self, number: int, coll: Collection, key: Any, value: Any) -> None:
        """Queue the record of line `number`; write the queue first if it is full.

        A record whose key is not its collection's ``key_func(value)`` (with
        ``--app``'s key function) is refused, naming the line.
        """
        if coll.key_func is not None and not isinstance(coll.key_func, _Placeholder):
            problem = verify.key_problem(coll, key, value)
            if problem is not None:
                raise CliError(f'line {number}: collection {coll.name!r}: {problem}')
        if coll is not self.coll or len(self.pending) >= self.batch:
            self.flush()
            self.coll = coll
        self.pending.append((number, Record(coll, value, key)))

    def flush(self) -> None:
        """Write the queued records; a failure names the line of the record that failed."""
        if self.pending and self.coll is not None:
            try:
                with self.begin() as txn:
                    self._put(txn, self.coll)
            except CliError:
                raise
            except Exception as exc:        # the commit failed
                first, last = self.pending[0][0], self.pending[-1][0]
                raise CliError(f'lines {first} to {last}: {_error_text(exc)}') from exc
        self.pending = []

    def _put(self, txn: Transaction, coll: Collection) -> None:
        try:
            coll.put_many([record for _, record in self.pending], txn=txn)
        except Exception as exc:
            number, error = self._culprit(txn, coll, exc)
            raise CliError(f'line {number}: {_error_text(error)}') from error

    def _culprit(self, txn: Transaction, coll: Collection,
                 exc: Exception) -> tuple[int, Exception]:
        """The line whose record fails, and how: the queue written again one by one.

        ``put_many`` writes nothing when it fails, and the transaction is
        aborted after this, so the records written here are discarded.
        """
        for number, record in self.pending:
            try:
                coll.put_many([record], txn=txn)
            except Exception as error:
                return number, error
        return self.pending[0][0], exc


def _error_text(exc: BaseException) -> str:
    """``Class: message`` of `exc`, as a line of a failed load names it."""
    return f'{type(exc).__name__}: {exc}'


class _Load:
    """One load: creates the dump's collections, writes its records, raises its counters.

    :param store: the store loaded into.
    :param args: the parsed command line.
    :param txn: the transaction everything is written in, or None for a
        transaction per batch.
    """

    def __init__(self, store: Store, args: argparse.Namespace,
                 txn: Transaction | None) -> None:
        self.store = store
        self.allow_pickle: bool = args.allow_pickle
        self.txn = txn
        self.colls: dict[str, Collection] = {}
        self.counters: dict[str, int] = {}
        self.loader = _Loader(args.batch, self.begin)

    def begin(self) -> ContextManager[Transaction]:
        """The transaction for a batch: the load's own, or a new one."""
        if self.txn is None:
            return self.store.begin(write=True)
        return nullcontext(self.txn)

    def run(self, lines: Iterable[tuple[int, Line]]) -> None:
        """Write every line's contents; CliErrors name the line."""
        for number, line in lines:
            if isinstance(line, RecordLine):
                self.loader.add(number, self.colls[line.collection], line.key, line.value)
                continue
            try:
                if isinstance(line, CollectionLine):
                    self.colls[line.name] = _prepare(self.store, line, self.allow_pickle)
                elif isinstance(line, CounterLine):
                    self.counters[line.name] = line.value
            except CliError as exc:
                raise CliError(f'line {number}: {exc}', exc.status) from exc
            except CentiError as exc:
                raise CliError(f'line {number}: {_error_text(exc)}') from exc
        self.loader.flush()
        with self.begin() as txn:
            _raise_counters(self.store, self.counters, txn)


def _dump_lines(args: argparse.Namespace, source: Iterable[bytes]) -> Iterator[tuple[int, Line]]:
    """The dump's numbered lines, refused (or with --partial, warned about) as a CliError."""
    def warn(message: str) -> None:
        print(f'centidb load: warning: --partial: {message}', file=sys.stderr)

    lines = dumpfile.read_dump(source, partial=args.partial, warn=warn)
    try:
        yield from progress(lines, desc='load', quiet=args.quiet, unit='line')
    except DumpFormatError as exc:
        raise CliError(str(exc).replace('a partial read (centidb load --partial)',
                                        '--partial')) from exc


def _is_new(path: str) -> bool:
    """True if nothing is at `path` but, at most, an empty directory."""
    if not os.path.lexists(path):
        return True
    return os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path)


def _load_new(args: argparse.Namespace, lines: Iterator[tuple[int, Line]]) -> None:
    """Build the store beside ``args.store`` under a temporary name, then rename it."""
    target = os.path.abspath(args.store)
    parent = os.path.dirname(target)
    made = []
    ancestor = parent
    while not os.path.isdir(ancestor):
        made.append(ancestor)
        ancestor = os.path.dirname(ancestor)
    try:
        os.makedirs(parent, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=f'.{os.path.basename(target)}.load-', dir=parent)
    except OSError as exc:
        raise CliError(f'cannot create {args.store!r}: {exc}') from None
    try:
        path = os.path.join(scratch, 'store')
        store = open_store(path, args.engine, parse_options(args.option), app=args.app,
                           allow_pickle=args.allow_pickle, create=True)
        with store:
            _Load(store, args, None).run(lines)
        if not _is_new(target):
            raise CliError(f'{args.store!r} was created while loading: the load is discarded')
        try:
            os.rename(path, target)
        except OSError as exc:
            raise CliError(f'cannot rename the loaded store to {args.store!r}: {exc}') from None
        _sync_directory(parent)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        for directory in made:      # innermost first
            try:
                os.rmdir(directory)
            except OSError:
                break
        raise
    shutil.rmtree(scratch, ignore_errors=True)


def _sync_directory(path: str) -> None:
    """Make a rename in directory `path` durable, where the platform allows."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def cmd_load(args: argparse.Namespace, out: IO[str]) -> int:
    """``load STORE [FILE] [--partial]``: read a dump, all or nothing.

    A missing STORE is built under a temporary name and renamed at the end;
    an existing one gets the whole dump in one transaction.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    if args.batch < 1:
        raise CliError('--batch must be at least 1', EXIT_USAGE)
    with ExitStack() as stack:
        source: IO[bytes] = sys.stdin.buffer
        if args.file and args.file != '-':
            try:
                source = stack.enter_context(open(args.file, 'rb'))
            except OSError as exc:
                raise CliError(f'cannot read {args.file!r}: {exc}', EXIT_USAGE) from None
        lines = _dump_lines(args, source)
        if _is_new(args.store):
            _load_new(args, lines)
        else:
            store = stack.enter_context(store_of(args))
            with store.begin(write=True) as txn:
                _Load(store, args, txn).run(lines)
    return EXIT_OK


def _raise_counters(store: Store, counters: dict[str, int], txn: Transaction) -> None:
    """Make each counter at least its dumped value, in `txn`."""
    current = read_metadata(txn.engine_txn).counters  # type: ignore[arg-type]  # open
    for name, value in sorted(counters.items()):
        if name not in current:
            store.counter(name, 1, init=value - 1, txn=txn)
        elif current[name] < value:
            store.counter(name, value - current[name], txn=txn)
