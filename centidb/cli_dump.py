"""``centidb dump`` and ``centidb load``: a store as JSON Lines, and back.

The lines are those of :mod:`centidb.dumpformat`: a header, a line for each
collection (encoder, packer, key kind, indexes), one for each counter, then
one per record, naming its collection and key. ``dump`` reads everything in
one read transaction, so the dump is a consistent snapshot. ``load``
creates the store if it is missing and writes records with
:meth:`~centidb.bulk.BulkWrites.put_many`, :data:`LOAD_BATCH` records a
transaction; a record goes to its key, so loading the same dump again
overwrites each record with itself. Counters end at least at the dumped
values.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from typing import IO, Any, Callable

from centidb import dumpformat, encodings
from centidb.cli_common import (
    EXIT_OK, EXIT_USAGE, CliError, progress, read_metadata,
)
from centidb.cli_commands import collection_of, store_of
from centidb.collection import Collection
from centidb.dumpformat import CollectionLine, CounterLine, RecordLine
from centidb.errors import CentiError
from centidb.records import Record
from centidb.store import Store
from centidb.txn import Transaction

__all__ = ['LOAD_BATCH', 'cmd_dump', 'cmd_load']

#: Records written per transaction by ``load`` (``--batch``).
LOAD_BATCH = 1000


def cmd_dump(args: argparse.Namespace, out: IO[str]) -> int:
    """``dump STORE [-c COLLECTION]... [-o FILE]``: metadata, counters, records.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    with ExitStack() as stack:
        store = stack.enter_context(store_of(args))
        if args.output:
            out = stack.enter_context(open(args.output, 'w', encoding='utf-8', newline='\n'))
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
        out.write(dumpformat.header_line() + '\n')
        for meta in metas:
            out.write(CollectionLine.from_info(meta.name, meta.info, meta.indexes).text() + '\n')
        for name, value in sorted(counters.items()):
            out.write(CounterLine(name, value).text() + '\n')
        total = sum(coll.count(txn=txn) for coll in colls)
        records = ((coll.name, key, value) for coll in colls
                   for key, value in coll.items(txn=txn))
        for name, key, value in progress(records, desc='dump', quiet=args.quiet, total=total):
            try:
                out.write(dumpformat.record_line(name, key, value) + '\n')
            except CentiError as exc:
                raise CliError(f'collection {name!r}, key {key!r}: {exc}') from None
    return EXIT_OK


def _encoder(name: str, what: str) -> encodings.Encoder:
    for encoder in encodings.BUILTIN_ENCODERS:
        if encoder.name == name:
            return encoder
    raise CliError(f'{what} {name!r} is not built in: --app must register it and create '
                   f'the collection', EXIT_USAGE)


def _placeholder(name: str) -> Callable[..., Any]:
    def key_func(*args: Any) -> Any:
        raise CliError(f'collection {name!r}: the loaded records carry their keys; '
                       f'give --app to put records without keys')
    return key_func


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
                         packer=_encoder(line.packer, 'packer'), counter_name=line.counter)
    coll = collection_of(store, line.name)
    for label, have, want in (('encoder', coll.encoder.name, line.encoder),
                              ('packer', coll.packer.name, line.packer),
                              ('counter', coll.counter_name, line.counter)):
        if have != want:
            raise CliError(f'collection {line.name!r} has {label} {have!r} in the store '
                           f'but {want!r} in the dump')
    missing = [index.name for index in line.indexes if index.name not in coll.indices]
    if missing:
        raise CliError(f'collection {line.name!r} has the index {missing[0]!r}: give '
                       f'--app MODULE:FUNCTION that adds it', EXIT_USAGE)
    return coll


class _Loader:
    """Writes record lines in batches of whole transactions."""

    def __init__(self, store: Store, batch: int) -> None:
        self.store = store
        self.batch = batch
        self.coll: Collection | None = None
        self.pending: list[Record] = []
        self.written = 0

    def add(self, coll: Collection, key: Any, value: Any) -> None:
        if coll is not self.coll or len(self.pending) >= self.batch:
            self.flush()
            self.coll = coll
        self.pending.append(Record(coll, value, key))

    def flush(self) -> None:
        if self.pending and self.coll is not None:
            with self.store.begin(write=True) as txn:
                self._put(txn, self.coll)
            self.written += len(self.pending)
        self.pending = []

    def _put(self, txn: Transaction, coll: Collection) -> None:
        coll.put_many(self.pending, txn=txn)


def cmd_load(args: argparse.Namespace, out: IO[str]) -> int:
    """``load STORE [FILE]``: read a dump; the store is created if missing.

    :param args: the parsed command line (``argparse.Namespace``).
    :param out: the stream data is written to.
    :returns: the exit status.
    """
    if args.batch < 1:
        raise CliError('--batch must be at least 1', EXIT_USAGE)
    counters: dict[str, int] = {}
    with ExitStack() as stack:
        source: IO[str] = sys.stdin
        if args.file and args.file != '-':
            try:
                source = stack.enter_context(open(args.file, encoding='utf-8'))
            except OSError as exc:
                raise CliError(f'cannot read {args.file!r}: {exc}', EXIT_USAGE) from None
        store = stack.enter_context(store_of(args, create=True))
        colls: dict[str, Collection] = {}
        loader = _Loader(store, args.batch)
        for line in progress(dumpformat.parse_lines(source), desc='load', quiet=args.quiet,
                             unit='line'):
            if isinstance(line, RecordLine):
                loader.add(colls[line.collection], line.key, line.value)
            elif isinstance(line, CollectionLine):
                colls[line.name] = _prepare(store, line, args.allow_pickle)
            elif isinstance(line, CounterLine):
                counters[line.name] = line.value
        loader.flush()
        _raise_counters(store, counters)
    return EXIT_OK


def _raise_counters(store: Store, counters: dict[str, int]) -> None:
    """Make each counter at least its dumped value."""
    with store.begin() as txn:
        _, _, stored = read_metadata(txn.engine_txn)  # type: ignore[arg-type]  # open
    for name, value in sorted(counters.items()):
        if name not in stored:
            store.counter(name, 1, init=value - 1)
        elif stored[name] < value:
            store.counter(name, value - stored[name])
