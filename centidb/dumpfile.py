"""A whole dump: written with its trailer, read with its order and trailer checked.

:mod:`centidb.dumpformat` converts values and single lines; this module
deals with the dump as a file. :class:`DumpWriter` writes the lines in
order and ends them with the trailer, which holds the number of lines
before it, each collection's record count and the SHA-256 of those lines.
:func:`read_dump` reads a dump back, refusing one whose lines are out of
order, whose trailer is missing or does not match, or that goes on after
its trailer; with ``partial=True`` it reads a damaged or cut dump up to its
first problem instead, and says what it skipped. :doc:`dumpformat`
specifies the format.
"""

from __future__ import annotations

import hashlib
import json
from typing import IO, Any, Callable, Iterable, Iterator

from centidb.dumpformat import (
    CollectionLine, CounterLine, HeaderLine, Line, RecordLine, TrailerLine, header_line,
    parse_line, record_line,
)
from centidb.errors import DumpFormatError
from centidb.keyformat import Key

__all__ = ['line_digest', 'DumpWriter', 'read_dump', 'parse_lines']


def line_digest(line: str | bytes) -> bytes:
    """The bytes of one dump line that the trailer's checksum covers.

    That is the line's UTF-8 bytes without its line break (``\\n`` or
    ``\\r\\n``), followed by one ``\\n``: for a dump as
    :class:`DumpWriter` writes it, the file's bytes before the trailer.

    :param line: the line, as text or as bytes, with or without its line
        break.
    """
    data = line if isinstance(line, bytes) else line.encode('utf-8', 'surrogatepass')
    if data.endswith(b'\n'):
        data = data[:-2] if data.endswith(b'\r\n') else data[:-1]
    return data + b'\n'


class DumpWriter:
    """Writes a dump to a text stream, line by line, and its trailer at the end.

    It counts the lines and each collection's records and keeps the
    running SHA-256 of the lines, which :meth:`write_trailer` writes.
    Lines go out in the order the methods are called; the caller writes the
    header, then collections and counters, then records.

    :param out: the stream, opened for text (newlines are written as
        ``\\n``, so open a file with ``newline='\\n'``).
    """

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        #: The lines written so far.
        self.lines = 0
        #: ``{collection name: records written}``, in the order of the collection lines.
        self.record_counts: dict[str, int] = {}
        self._digest = hashlib.sha256()

    def _write(self, text: str) -> None:
        line = text + '\n'
        self._digest.update(line.encode('utf-8'))
        self.out.write(line)
        self.lines += 1

    def write_header(self) -> None:
        """Write the header line."""
        self._write(header_line())

    def write_collection(self, line: CollectionLine) -> None:
        """Write a collection's line; its records may follow.

        :param line: the collection's line.
        :raises ~centidb.errors.DumpFormatError: if the collection was
            written already.
        """
        if line.name in self.record_counts:
            raise DumpFormatError(f'collection {line.name!r} is written twice')
        self._write(line.text())
        self.record_counts[line.name] = 0

    def write_counter(self, line: CounterLine) -> None:
        """Write a counter's line.

        :param line: the counter's line.
        """
        self._write(line.text())

    def write_record(self, collection: str, key: Key, value: Any) -> None:
        """Write a record's line (see :func:`record_line`).

        :param collection: the collection's name, whose line was written.
        :param key: the record's key.
        :param value: the record.
        :raises ~centidb.errors.DumpTypeError: if the key or value holds a
            type :func:`to_json` does not write; nothing is written then.
        :raises ~centidb.errors.DumpFormatError: if no line of the
            collection was written.
        """
        if collection not in self.record_counts:
            raise DumpFormatError(f'a record of collection {collection!r} before its '
                                  f'collection line')
        self._write(record_line(collection, key, value))
        self.record_counts[collection] += 1

    def trailer(self) -> TrailerLine:
        """The trailer line of what was written so far."""
        return TrailerLine(self.lines, tuple(self.record_counts.items()), self._digest.hexdigest())

    def write_trailer(self) -> TrailerLine:
        """Write the trailer line, which ends the dump, and return it."""
        trailer = self.trailer()
        self.out.write(trailer.text() + '\n')
        return trailer


def _names(names: Iterable[str]) -> str:
    text = json.dumps(list(names), ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + '...'


class _DumpCheck:
    """The state of reading one dump: the order of its lines and what its trailer checks."""

    def __init__(self) -> None:
        self.counters: set[str] = set()
        self.record_counts: dict[str, int] = {}
        self.digest = hashlib.sha256()
        self.lines = 0
        self.header = False
        self.trailer: int | None = None     # the trailer's line number, once read

    def line(self, number: int, raw: str | bytes) -> Line | None:
        """Parse and check line `number`; None for a blank line."""
        if self.trailer is not None:
            raise DumpFormatError(f'line {number}: a line after the trailer (line '
                                  f'{self.trailer}), which ends the dump')
        if isinstance(raw, bytes):
            try:
                text = raw.decode('utf-8')
            except UnicodeDecodeError as exc:
                raise DumpFormatError(f'line {number}: not UTF-8 ({exc})') from None
        else:
            text = raw
        line = parse_line(text, number) if text.strip() else None
        problem = None
        if line is None:
            pass
        elif self.header == isinstance(line, HeaderLine):
            problem = 'a second header' if self.header else 'the first line is not the header'
        elif isinstance(line, CollectionLine):
            problem = f'collection {line.name!r} again' if line.name in self.record_counts else None
            self.record_counts.setdefault(line.name, 0)
        elif isinstance(line, CounterLine):
            problem = f'counter {line.name!r} again' if line.name in self.counters else None
            self.counters.add(line.name)
        elif isinstance(line, RecordLine):
            if line.collection in self.record_counts:
                self.record_counts[line.collection] += 1
            else:
                problem = f'a record of collection {line.collection!r} before its collection line'
        elif isinstance(line, TrailerLine):
            problem = self._check_trailer(line)
            if problem is None and not text.endswith('\n'):
                problem = 'the trailer has no line break after it (the dump was cut short)'
            self.trailer = number
        if problem is not None:
            raise DumpFormatError(f'line {number}: {problem}: {text.rstrip()[:100]}')
        self.header = self.header or line is not None
        if self.trailer is None:
            self.digest.update(line_digest(raw))
            self.lines += 1
        return line

    def _check_trailer(self, line: TrailerLine) -> str | None:
        if line.lines != self.lines:
            return (f'the trailer says {line.lines} lines come before it, but {self.lines} do '
                    f'(lines were lost or added)')
        counted = dict(line.records)
        if len(counted) != len(line.records) or list(counted) != list(self.record_counts):
            return (f'the trailer counts the records of the collections '
                    f'{_names(counted)}, but the dump has the collections '
                    f'{_names(self.record_counts)}')
        for name, count in line.records:
            if self.record_counts[name] != count:
                return (f'the trailer counts {count} records of collection {name!r}, but '
                        f'the dump holds {self.record_counts[name]}')
        if line.sha256 != self.digest.hexdigest():
            return (f'the SHA-256 of the lines before the trailer is {self.digest.hexdigest()}, '
                    f'not the trailer\'s (a line was changed)')
        return None

    def summary(self) -> str:
        """What was read: the number of records of each collection."""
        if not self.record_counts:
            return 'no collection'
        return ', '.join(f'{count} record{"" if count == 1 else "s"} of {name!r}'
                         for name, count in self.record_counts.items())


def read_dump(lines: Iterable[str | bytes], *, partial: bool = False,
              warn: Callable[[str], None] | None = None) -> Iterator[tuple[int, Line]]:
    """Read a whole dump, checking the order of its lines and its trailer.

    The first line must be the header, and no other line may be one; each
    collection and counter appears once; a record comes after the line of
    its collection; the last line is the trailer, and its line count,
    record counts and checksum must match the lines before it, and it ends
    with a line break. Blank lines
    are skipped (the trailer counts them). Lines are given as they are read,
    so a caller acting on them must be able to undo it when a later line,
    or the trailer, is refused.

    With `partial`, the dump is read up to its first problem instead: the
    lines before it are given, and `warn` is called once with a message
    saying what is missing (no trailer, the line that does not parse, a
    trailer that does not match), and how many lines were not read.

    :param lines: the dump's lines, as text or bytes (UTF-8), each with
        its line break, as an open file gives them.
    :param partial: read the valid lines of a dump that is cut short or
        damaged, rather than refuse it.
    :param warn: called with the message when `partial` skips something.
    :returns: an iterator over ``(line number, line)``, numbers from 1,
        the lines as :func:`parse_line` gives them; the trailer too.
    :raises ~centidb.errors.DumpFormatError: unless `partial`, as
        :func:`parse_line` does, if the lines are out of order or the
        trailer is missing, does not match or is not the last line; the
        message names the line number.
    """
    check = _DumpCheck()
    source = iter(lines)
    number = 0
    for number, raw in enumerate(source, 1):
        try:
            line = check.line(number, raw)
        except DumpFormatError as exc:
            if not partial:
                raise
            rest = sum(1 for _ in source)
            skipped = f'line {number}' if not rest else f'lines {number} to {number + rest}'
            if warn is not None:
                warn(f'{exc}; read {check.summary()} from the lines before it, '
                     f'and skipped {skipped}')
            return
        if line is not None:
            yield number, line
    if check.trailer is None:
        if number == 0:
            message = 'the dump is empty (no header line)'
        else:
            message = (f'the dump ends at line {number} without its trailer line, so it '
                       f'may be cut short (a dump from a centidb that wrote no trailer has '
                       f'none either)')
        if not partial:
            raise DumpFormatError(f'{message}; a partial read (centidb load --partial) '
                                  f'reads the lines it has')
        if warn is not None:
            warn(f'{message}; read {check.summary()} from its {number} lines')


def parse_lines(lines: Iterable[str | bytes], *, partial: bool = False,
                warn: Callable[[str], None] | None = None) -> Iterator[Line]:
    """Read a whole dump, as :func:`read_dump` does, without line numbers.

    :param lines: the dump's lines, such as an open text file.
    :param partial: as for :func:`read_dump`.
    :param warn: as for :func:`read_dump`.
    :returns: an iterator over the lines, as :func:`parse_line` gives them.
    :raises ~centidb.errors.DumpFormatError: as :func:`read_dump` does.
    """
    for _, line in read_dump(lines, partial=partial, warn=warn):
        yield line
