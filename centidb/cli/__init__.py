"""The ``centidb`` command line: inspect, verify, dump, load, back up and copy stores.

Run as ``centidb SUBCOMMAND ...`` (the console script) or ``python -m
centidb SUBCOMMAND ...``; ``docs/cli.rst`` has a worked session. Data goes to
stdout (JSON Lines where there are records); messages, and progress bars
when stderr is a terminal, go to stderr. :func:`main` returns the exit
status: 0 success, 1 problems found (``verify``) or no such key (``get``),
2 usage error, 3 the store (or another file) could not be opened, read or
written, 4 the ``--app`` callable failed, 5 an unexpected error (a bug),
130 interrupted. Every failure is one line on stderr naming the error's
class; the global ``--debug`` option prints the traceback too.

This package holds the parser and :func:`main`; the subcommands are in
:mod:`centidb.cli.commands` and :mod:`centidb.cli.dump`, and what they share
(opening a store from a path, ``--app``, ``--option``, output) in
:mod:`centidb.cli.common`. The command line uses the public API only, and
reads the catalog with :func:`centidb.catalog.read_metadata`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from typing import IO, Callable, Sequence

from centidb.cli import commands, dump
from centidb.cli.common import (
    EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_STORE, EXIT_USAGE, CliError,
)
from centidb.errors import (
    CentiError, CorruptKeyError, CorruptRecordError, DatabaseCorruptError, IndexInconsistentError,
    StoreFormatError,
)

__all__ = ['main', 'make_parser', 'run']

Command = Callable[[argparse.Namespace, IO[str]], int]

_EPILOG = """\
exit status: 0 success; 1 problems found (verify) or no such key (get);
2 usage error; 3 the store (or another file) could not be opened, read or
written; 4 the --app callable failed; 5 an unexpected error (a bug: rerun
with --debug and report it); 130 interrupted.
"""

#: The longest error message printed, in characters (the rest is cut).
MESSAGE_LIMIT = 1000

# The error classes that mean the store's bytes are damaged.
_DAMAGE = (CorruptKeyError, CorruptRecordError, DatabaseCorruptError, IndexInconsistentError,
           StoreFormatError)


def _common() -> argparse.ArgumentParser:
    """The options every subcommand takes."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group('store options')
    group.add_argument('--engine', metavar='NAME',
                       help='the engine: lmdb or leveldb (LmdbEngine, PlyvelEngine); '
                            'default: found from the files of STORE')
    group.add_argument('--option', metavar='KEY=VALUE', action='append', default=[],
                       help='an engine option (repeatable); VALUE is JSON or a string')
    group.add_argument('--app', metavar='MODULE:FUNCTION',
                       help='a callable given the Store, which registers key and index '
                            'functions and encoders')
    group.add_argument('--allow-pickle', action='store_true',
                       help='decode collections stored with pickle (it can run code '
                            'from the store)')
    group.add_argument('-q', '--quiet', action='store_true',
                       help='no progress bars or notes on stderr')
    group.add_argument('--debug', action='store_true', default=argparse.SUPPRESS,
                       help='on an error, print the traceback too')
    return common


def _query_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('collection', metavar='COLLECTION')
    parser.add_argument('--lo', metavar='KEY', help='first key (a JSON array), inclusive')
    parser.add_argument('--hi', metavar='KEY', help='last key (a JSON array), exclusive')
    parser.add_argument('--prefix', metavar='KEY', help='keys starting with these elements')
    parser.add_argument('--startswith', metavar='KEY',
                        help='as --prefix, the last str or bytes element a prefix too')
    parser.add_argument('--reverse', action='store_true', help='in descending key order')
    parser.add_argument('--limit', metavar='N', type=int, help='at most N records')


def make_parser() -> argparse.ArgumentParser:
    """The ``argparse`` parser of the command line; each subcommand sets ``func``."""
    parser = argparse.ArgumentParser(
        prog='centidb', description='Inspect, check, dump, load, back up and copy '
                                    'centidb stores.',
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--debug', action='store_true',
                        help='on an error, print the traceback too')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND', required=True)
    common = [_common()]

    def add(name: str, func: Command, help_text: str) -> argparse.ArgumentParser:
        sub = subparsers.add_parser(name, parents=common, help=help_text,
                                    description=help_text)
        sub.add_argument('store', metavar='STORE', help='the store path')
        sub.set_defaults(func=func)
        return sub

    sub = add('info', commands.cmd_info,
              'format, collections (records, indexes, encoders, key kind), counters, size')
    sub.add_argument('--json', action='store_true', help='one JSON object')

    sub = add('get', commands.cmd_get, 'print the value stored under KEY')
    sub.add_argument('collection', metavar='COLLECTION')
    sub.add_argument('key', metavar='KEY', help='a JSON array, e.g. \'["ann", 1]\'')

    _query_options(add('keys', commands.cmd_keys, "a collection's keys, one per line"))
    _query_options(add('scan', commands.cmd_scan,
                       "a collection's records as {\"key\": ..., \"value\": ...} lines"))

    sub = add('dump', dump.cmd_dump, 'write collections, metadata and counters '
                                          'as JSON Lines')
    sub.add_argument('-c', '--collection', metavar='COLLECTION', action='append',
                     dest='collections', help='only this collection (repeatable)')
    sub.add_argument('-o', '--output', metavar='FILE', help='write to FILE, not stdout')

    sub = add('load', dump.cmd_load, 'read a dump into STORE (created if missing), all '
                                          'or nothing; loading the same dump again changes '
                                          'nothing')
    sub.add_argument('file', metavar='FILE', nargs='?', help='the dump (default: stdin)')
    sub.add_argument('--batch', metavar='N', type=int, default=dump.LOAD_BATCH,
                     help='records per transaction into a new store (default %(default)s)')
    sub.add_argument('--partial', action='store_true',
                     help='load the valid lines of a dump that is cut short, damaged or '
                          'has no trailer, with a warning saying what is missing')

    add('verify', commands.cmd_verify, 'check every record and index entry; '
                                            'one line per problem')

    sub = add('reindex', commands.cmd_reindex,
              'rebuild the indexes of COLLECTION that --app adds (or only INDEX)')
    sub.add_argument('collection', metavar='COLLECTION')
    sub.add_argument('index', metavar='INDEX', nargs='?')

    sub = add('backup', commands.cmd_backup,
              'a consistent copy of STORE at DEST, on the same engine, while others write')
    sub.add_argument('dest', metavar='DEST')

    sub = add('copy', commands.cmd_copy,
              'copy every key of STORE to a new store DEST on the engine --engine names '
              '(--option: its options)')
    sub.add_argument('dest', metavar='DEST')
    sub.add_argument('--source-engine', metavar='NAME',
                     help='the engine of STORE, if its files do not tell')

    sub = add('compact', commands.cmd_compact,
              'LevelDB: compact now; LMDB: rewrite the file compacted; refused while '
              'any other process has STORE open')
    sub.add_argument('--offline', action='store_true',
                     help='deprecated and ignored (compact checks that no other process '
                          'has STORE open)')
    return parser


def _one_line(text: str) -> str:
    """`text` on one line, cut at :data:`MESSAGE_LIMIT` characters."""
    line = ' '.join(text.split())
    if len(line) > MESSAGE_LIMIT:
        line = line[:MESSAGE_LIMIT] + '...'
    return line


def _classify(exc: Exception) -> tuple[int, str]:
    """The exit status for `exc`, and the message line's text after ``error:``."""
    name = type(exc).__name__
    text = _one_line(str(exc))
    hint = ''
    if isinstance(exc, _DAMAGE) or isinstance(exc.__cause__, _DAMAGE):
        hint = (" (the store may be damaged: 'centidb verify' lists what it finds; "
                "restore it from a backup)")
    if isinstance(exc, CliError):
        return exc.status, text + hint
    if isinstance(exc, CentiError):
        return EXIT_STORE, f'{name}: {text}{hint}'
    module = type(exc).__module__.partition('.')[0]
    if module in ('lmdb', 'plyvel'):
        if exc.args and isinstance(exc.args[0], bytes):     # plyvel's messages
            text = _one_line(exc.args[0].decode('utf-8', 'replace'))
        return EXIT_STORE, (f'{module}.{name}: {text} (the store may be damaged; an '
                            f'engine error that centidb did not translate: please report it)')
    if isinstance(exc, OSError):
        return EXIT_STORE, f'{name}: {text}'
    return EXIT_INTERNAL, (f'unexpected {name}: {text} (a bug in centidb or in --app '
                           f'code: rerun with --debug for the traceback, and report it)')


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None) -> int:
    """Run the command line with `argv` (default ``sys.argv[1:]``); return the exit status.

    :param argv: the arguments, without the program name.
    :param out: where data goes (default ``sys.stdout``).
    """
    parser = make_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    stream = out if out is not None else sys.stdout
    try:
        status: int = args.func(args, stream)
        stream.flush()
        return status
    except KeyboardInterrupt:
        print(f'centidb {args.command}: interrupted', file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``centidb scan ... | head``): not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())   # Python's flush at exit goes nowhere
        return EXIT_OK
    except Exception as exc:
        status, text = _classify(exc)
        if args.debug:
            traceback.print_exc()
        print(f'centidb {args.command}: error: {text}', file=sys.stderr)
        return status


def run() -> None:
    """The console script's entry point: :func:`main`, then exit with its status."""
    sys.exit(main())
