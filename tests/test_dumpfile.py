"""Whole dumps (centidb.dumpfile): written by DumpWriter, read back by read_dump and
parse_lines; the trailer counts and checks the lines before it, and cut or
damaged dumps are refused naming the line.

The values, lines and their checks (centidb.dumpformat) are tested in
``test_dumpformat.py``, whose strict comparison :func:`same` this file uses.
"""

import hashlib
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from centidb.dumpfile import DumpWriter, line_digest, parse_lines, read_dump
from centidb.dumpformat import (
    CollectionLine, CounterLine, HeaderLine, RecordLine, TrailerLine, header_line, parse_line,
)
from centidb.errors import DumpFormatError, DumpTypeError
from strategies import keys, texts
from test_dumpformat import COLLECTION, same, values


def write_dump():
    """A small dump's text, as DumpWriter writes it."""
    out = io.StringIO()
    writer = DumpWriter(out)
    writer.write_header()
    writer.write_collection(COLLECTION)
    writer.write_collection(CollectionLine('empty', 'auto', 'msgpack', 'plain', 'empty:key'))
    writer.write_counter(CounterLine('people:key', 3))
    writer.write_record('people', ('ann',), {'city': 'Leeds'})
    writer.write_record('people', ('bob',), {'$city': 'Bath'})
    writer.write_trailer()
    return out.getvalue()


LINES = [HeaderLine(), COLLECTION, CollectionLine('empty', 'auto', 'msgpack', 'plain', 'empty:key'),
         CounterLine('people:key', 3), RecordLine('people', ('ann',), {'city': 'Leeds'}),
         RecordLine('people', ('bob',), {'$city': 'Bath'})]


def with_trailer(lines):
    """`lines` (texts, without newlines) and a trailer that matches them."""
    texts = [text + '\n' for text in lines]
    digest = hashlib.sha256(b''.join(map(line_digest, texts))).hexdigest()
    records = {}
    for text in lines:
        obj = json.loads(text) if text.strip() else {}
        if obj.get('type') == 'collection':
            records[obj['name']] = 0
        elif obj.get('type') == 'record':
            records[obj['collection']] += 1
    return texts + [TrailerLine(len(lines), tuple(records.items()), digest).text() + '\n']


def blank_dump():
    """The small dump's lines with a blank line after the counter (the trailer counts it)."""
    lines = write_dump().splitlines()[:-1]
    return with_trailer(lines[:4] + [''] + lines[4:])


def test_the_trailer_counts_and_checks_the_lines_before_it():
    text = write_dump()
    *lines, last = text.splitlines(keepends=True)
    body = ''.join(lines).encode()
    assert last == ('{"type":"trailer","lines":6,"records":[["people",2],["empty",0]],'
                    f'"sha256":"{hashlib.sha256(body).hexdigest()}"}}\n')
    assert list(parse_lines(text.splitlines(keepends=True)))[:-1] == LINES
    assert parse_line(last) == TrailerLine(6, (('people', 2), ('empty', 0)),
                                           hashlib.sha256(body).hexdigest())


def test_read_dump_numbers_lines_and_takes_text_or_bytes():
    text = ''.join(blank_dump())
    assert text.splitlines()[-1] == write_dump().splitlines()[-1].replace(
        '"lines":6', '"lines":7').replace(json.loads(write_dump().splitlines()[-1])['sha256'],
                                          json.loads(text.splitlines()[-1])['sha256'])
    for source in (text.splitlines(keepends=True), io.BytesIO(text.encode()),
                   text.replace('\n', '\r\n').encode().splitlines(True)):
        numbered = list(read_dump(source))
        assert [number for number, _ in numbered] == [1, 2, 3, 4, 6, 7, 8]
        assert [line for _, line in numbered][:-1] == LINES


def test_line_digest():
    assert line_digest('ab') == line_digest('ab\n') == line_digest(b'ab\r\n') == b'ab\n'
    assert line_digest('é\n') == 'é\n'.encode()
    assert line_digest('\ud800') == b'\xed\xa0\x80\n'   # no error; such a line never parses


def test_the_writer_refuses_a_record_without_its_collection():
    writer = DumpWriter(io.StringIO())
    writer.write_header()
    with pytest.raises(DumpFormatError, match="collection 'c'"):
        writer.write_record('c', (1,), None)
    writer.write_collection(CollectionLine('c', 'auto', 'msgpack', 'plain', 'c:key'))
    with pytest.raises(DumpFormatError, match="'c' is written twice"):
        writer.write_collection(CollectionLine('c', 'auto', 'msgpack', 'plain', 'c:key'))
    with pytest.raises(DumpTypeError):
        writer.write_record('c', (1,), object())
    assert writer.trailer().lines == 2 and writer.record_counts == {'c': 0}


def test_every_line_prefix_is_refused_and_read_partially():
    lines = blank_dump()
    for end in range(len(lines)):
        with pytest.raises(DumpFormatError, match='--partial') as info:
            list(parse_lines(lines[:end]))
        where = 'the dump is empty' if end == 0 else f'the dump ends at line {end} without'
        assert str(info.value).startswith(where)
        warnings = []
        read = list(parse_lines(lines[:end], partial=True, warn=warnings.append))
        assert read == LINES[:end - (end > 4)]
        assert len(warnings) == 1 and 'without its trailer' in warnings[0] or end == 0


def test_every_byte_prefix_is_refused_cleanly():
    data = write_dump().encode()
    for end in range(len(data)):
        with pytest.raises(DumpFormatError):
            list(read_dump(io.BytesIO(data[:end])))
        warnings = []
        read = list(read_dump(io.BytesIO(data[:end]), partial=True, warn=warnings.append))
        assert len(warnings) == 1
        assert [line for _, line in read] == LINES[:len(read)]
    assert len(list(read_dump(io.BytesIO(data)))) == 7


def change_line(number, old, new):
    def change(lines):
        assert old in lines[number - 1]
        return lines[:number - 1] + [lines[number - 1].replace(old, new, 1)] + lines[number:]
    return change


@pytest.mark.parametrize('change, message', [
    (change_line(7, '"lines":6', '"lines":7'), 'line 7: the trailer says 7 lines come before '
                                               'it, but 6 do'),
    (change_line(7, '["people",2]', '["people",3]'),
     "line 7: the trailer counts 3 records of collection 'people', but the dump holds 2"),
    (change_line(7, ',["empty",0]', ''), 'line 7: the trailer counts the records of the '
                                        'collections \\["people"\\], but'),
    (change_line(7, '["people",2],["empty",0]', '["empty",0],["people",2]'),
     'line 7: the trailer counts the records of the collections'),
    (change_line(7, '["empty",0]', '["people",2]'), 'line 7: the trailer counts the records'),
    (change_line(5, 'Leeds', 'Leedz'), 'line 7: the SHA-256 of the lines before the trailer is '
                                       '[0-9a-f]{64}, not the trailer\'s'),
    (change_line(1, '"version":1}', '"version":1} '), 'line 7: the SHA-256'),
    (lambda lines: lines[:3] + ['\n'] + lines[3:], 'line 8: the trailer says 6 lines'),
    (lambda lines: lines + ['\n'], 'line 8: a line after the trailer \\(line 7\\)'),
    (lambda lines: lines + lines, 'line 8: a line after the trailer'),
    (lambda lines: lines[:4] + [lines[6]], 'line 5: the trailer says 6 lines'),
    (lambda lines: lines[1:], 'line 1: the first line is not the header'),
    (lambda lines: lines[:3] + [header_line()], 'line 4: a second header'),
    (lambda lines: lines[:2] + [COLLECTION.text()], "line 3: collection 'people' again"),
    (lambda lines: lines[:4] + [CounterLine('people:key', 4).text()],
     "line 5: counter 'people:key' again"),
    (lambda lines: [lines[0], lines[4], lines[1]],
     "line 2: a record of collection 'people' before its collection line"),
    (lambda lines: lines[:4] + ['{"type":"record"}'], 'line 5: a record line'),
    (lambda lines: lines[:4] + [b'{"type":"record",\xff}\n'], 'line 5: not UTF-8'),
])
def test_damaged_dumps_are_refused_naming_the_line(change, message):
    lines = change(write_dump().splitlines(keepends=True))
    with pytest.raises(DumpFormatError, match='^' + message):
        list(parse_lines(lines))
    warnings = []
    read = list(parse_lines(lines, partial=True, warn=warnings.append))
    assert len(warnings) == 1 and warnings[0].startswith(message.replace('\\', '')[:6])
    kinds = [type(line) for line in LINES] + [TrailerLine]
    assert [type(line) for line in read] == kinds[:len(read)]


def test_a_partial_read_says_what_it_skipped():
    lines = write_dump().splitlines(keepends=True)
    warnings = []
    read = list(parse_lines(lines[:5] + ['{"type":"rec\n', 'more\n', 'and more'],
                            partial=True, warn=warnings.append))
    assert read == LINES[:5]
    [warning] = warnings
    assert warning.startswith('line 6: not JSON')
    assert warning.endswith("read 1 record of 'people', 0 records of 'empty' from the lines "
                            "before it, and skipped lines 6 to 8")


@settings(max_examples=50)
@given(st.lists(st.tuples(keys, values), max_size=8))
def test_a_dump_round_trips(records):
    collection = CollectionLine('c', 'auto', 'msgpack', 'plain', 'c:key')
    out = io.StringIO()
    writer = DumpWriter(out)
    writer.write_header()
    writer.write_collection(collection)
    writer.write_counter(CounterLine('c:key', len(records)))
    for key, value in records:
        writer.write_record('c', key, value)
    writer.write_trailer()
    parsed = list(parse_lines(out.getvalue().splitlines(keepends=True)))
    assert parsed[:3] == [HeaderLine(), collection, CounterLine('c:key', len(records))]
    assert len(parsed) == 4 + len(records)
    assert parsed[-1] == writer.trailer() == TrailerLine(3 + len(records), (('c', len(records)),),
                                                         parsed[-1].sha256)
    for line, (key, value) in zip(parsed[3:], records):
        assert same(line.key, key) and same(line.value, value)
