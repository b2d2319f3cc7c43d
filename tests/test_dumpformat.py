"""The dump format (centidb.dumpformat): values and lines round-trip; bad lines fail.

Whole dumps (centidb.dumpfile) are tested in ``test_dumpfile.py``.

Round trips are checked with :func:`same`, which compares types as well as
values (``1`` is not ``1.0``, a tuple is not a list) and compares floats bit
for bit, so NaN and -0.0 count.
"""

import datetime
import decimal
import json
import math
import struct
import uuid

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from centidb import encodings
from centidb.dumpformat import (
    DUMP_FORMAT, DUMP_VERSION, SAFE_INT_MAX, CollectionLine, CounterLine, HeaderLine, IndexSpec,
    RecordLine, TrailerLine, from_json, header_line, parse_line, record_line, to_json,
)
from centidb.errors import DumpFormatError, DumpTypeError
from centidb.keyformat import Desc
from strategies import binaries, datetimes, elements, floats, ints, keys, texts, uuids

MSGPACK = encodings.make_msgpack_encoder()


def same(a, b):
    """True if `a` and `b` are equal values of the same types, floats bit for bit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack('>d', a) == struct.pack('>d', b)
    if isinstance(a, decimal.Decimal):
        return repr(a) == repr(b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return (len(a) == len(b)
                and all(same(ka, kb) and same(a[ka], b[kb]) for ka, kb in zip(a, b)))
    if isinstance(a, Desc):
        return same(a.value, b.value)
    if isinstance(a, datetime.datetime):
        return a == b and a.utcoffset() == b.utcoffset()
    return a == b


def through_json(value):
    """`value` written by to_json, through JSON text, and read back."""
    text = json.dumps(to_json(value), ensure_ascii=False, allow_nan=False)
    text.encode('utf-8')        # strict: no lone surrogates left in the text
    return from_json(json.loads(text))


# --- values ----------------------------------------------------------------------------

decimals = st.sampled_from(['0', '-0', '1.50', '-1.50', '1E+1000', '1E-1000', 'NaN', '-NaN',
                            'sNaN', 'NaN123', 'Infinity', '-Infinity', '123456789.987654321']
                           ).map(decimal.Decimal) | st.decimals()
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts, binaries, uuids, datetimes,
                    st.dates(), decimals)
# A signalling NaN cannot be hashed, so it is no dict key.
hashables = st.recursive(scalars.filter(lambda v: not (isinstance(v, decimal.Decimal) and v.is_snan())),
                         lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)
values = st.recursive(
    scalars | st.sampled_from(['$', '$x', '$bytes', '$int']),
    lambda inner: (st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
                   | st.dictionaries(texts | st.sampled_from(['$bytes', '$', '$dict', 'a']),
                                     inner, max_size=3)
                   | st.dictionaries(hashables, inner, max_size=3)),
    max_leaves=20)


@settings(max_examples=400)
@given(values)
def test_values_round_trip(value):
    assert same(through_json(value), value)


@settings(max_examples=200)
@given(values)
def test_values_stored_by_msgpack_round_trip(value):
    """What the msgpack encoder gives back (timezones fixed, say) round-trips too."""
    stored = MSGPACK.decode(MSGPACK.encode(value))
    assert same(through_json(stored), stored)


@settings(max_examples=300)
@given(keys, values)
def test_record_lines_round_trip(key, value):
    text = record_line('c\ud800' if not key else 'people', key, value)
    assert text.splitlines() == [text]  # no line break of any kind, U+2028 included
    json.loads(text)                    # valid JSON
    text.encode('utf-8')
    line = parse_line(text)
    assert type(line) is RecordLine
    assert same(line.key, key) and same(line.value, value)
    assert line.collection == ('c\ud800' if not key else 'people')


def plain_ints(obj):
    """Every JSON int in `obj` (the parsed JSON text of a line)."""
    if type(obj) is int:
        yield obj
    elif isinstance(obj, list):
        for item in obj:
            yield from plain_ints(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from plain_ints(item)


@given(st.lists(ints, max_size=6))
def test_ints_are_plain_exactly_when_safe(numbers):
    parsed = json.loads(record_line('c', (), numbers))['value']
    for number, written in zip(numbers, parsed):
        if abs(number) <= SAFE_INT_MAX:
            assert written == number and type(written) is int
        else:
            assert written == {'$int': str(number)}
    assert all(abs(n) <= SAFE_INT_MAX for n in plain_ints(parsed))


def test_int_bounds():
    assert SAFE_INT_MAX == 2 ** 53 - 1
    assert to_json(2 ** 53 - 1) == 2 ** 53 - 1 and to_json(-(2 ** 53 - 1)) == -(2 ** 53 - 1)
    assert to_json(2 ** 53) == {'$int': '9007199254740992'}
    assert to_json(-2 ** 53) == {'$int': '-9007199254740992'}


def test_ints_beyond_the_decimal_limit_are_hex():
    huge = 7 ** 20000                       # more than 4300 decimal digits
    written = to_json(-huge)['$int']
    assert written.startswith('-0x') or written.lstrip('-').isdigit()
    assert from_json({'$int': written}) == -huge
    assert from_json({'$int': '-0x10'}) == -16 and from_json({'$int': '5'}) == 5


TAGGED = [
    (2 ** 53, {'$int': '9007199254740992'}),
    (-2 ** 64, {'$int': '-18446744073709551616'}),
    (float('nan'), {'$float': 'nan'}),
    (float('inf'), {'$float': 'inf'}),
    (float('-inf'), {'$float': '-inf'}),
    (-0.0, {'$float': '-0.0'}),
    (-float('nan'), {'$float': 'nan:fff8000000000000'}),
    (struct.unpack('>d', bytes.fromhex('7ff0000000000001'))[0], {'$float': 'nan:7ff0000000000001'}),
    ('a\ud800b\udfff', {'$str': ['a', 55296, 'b', 57343]}),
    ('\udc00\ud800', {'$str': [56320, 55296]}),
    (b'\x00\x01\xff', {'$bytes': 'AAH/'}),
    (b'', {'$bytes': ''}),
    ((), {'$tuple': []}),
    ((1, ('a',)), {'$tuple': [1, {'$tuple': ['a']}]}),
    ({1: 2}, {'$dict': [[1, 2]]}),
    ({'a': 1, None: 2}, {'$dict': [['a', 1], [None, 2]]}),
    ({'\ud800': 1}, {'$dict': [[{'$str': [55296]}, 1]]}),
    ({'$x': 1}, {'$dict': [['$x', 1]]}),
    ({'$': {'$': 2}}, {'$dict': [['$', {'$dict': [['$', 2]]}]]}),
    (uuid.UUID(int=1), {'$uuid': '00000000-0000-0000-0000-000000000001'}),
    (datetime.datetime(2024, 1, 2, 3, 4, 5, 6), {'$datetime': '2024-01-02T03:04:05.000006'}),
    (datetime.datetime(2024, 1, 2, tzinfo=datetime.timezone.utc),
     {'$datetime': '2024-01-02T00:00:00+00:00'}),
    (datetime.datetime(1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(
        hours=-23, seconds=-1, microseconds=-5))),
     {'$datetime': '0001-01-01T00:00:00-23:00:01.000005'}),
    (datetime.date(2024, 1, 2), {'$date': '2024-01-02'}),
    (decimal.Decimal('-1.50'), {'$decimal': '-1.50'}),
    (decimal.Decimal('-sNaN12'), {'$decimal': '-sNaN12'}),
    (Desc(b'\x00'), {'$desc': {'$bytes': 'AA=='}}),
    (msgpack.ExtType(42, b'\x01'), {'$ext': [42, 'AQ==']}),
    (msgpack.Timestamp(1, 500), {'$timestamp': [1, 500]}),
]
PLAIN = [None, True, False, 0, -1, SAFE_INT_MAX, 1.0, -1.5, 5e-324, 1e300, '', 'é€\U0001f600',
         '\x00', [], [1, [2]], {}, {'a': 1}, {'$a': 1, 'b': 2}, {'a': {'x$': [1]}}]


@pytest.mark.parametrize('value, tagged', TAGGED, ids=lambda v: repr(v)[:30])
def test_tags(value, tagged):
    assert to_json(value) == tagged
    assert same(from_json(tagged), value)
    assert same(through_json(value), value)


@pytest.mark.parametrize('value', PLAIN, ids=repr)
def test_plain_values_stay_plain(value):
    assert to_json(value) == value
    assert same(from_json(value), value)


def test_subclasses_are_written_as_their_base_type():
    import collections
    import enum

    class Number(enum.IntEnum):
        ONE = 1

    class Colour(str, enum.Enum):
        RED = 'red'

    Point = collections.namedtuple('Point', 'x y')
    value = [Number.ONE, Colour.RED, Point(1, 2), bytearray(b'a'), memoryview(b'b'),
             {Colour.RED: 1}, {Colour.RED: 1, 2: 3}]
    assert to_json(value) == [1, 'red', {'$tuple': [1, 2]}, {'$bytes': 'YQ=='},
                              {'$bytes': 'Yg=='}, {'red': 1}, {'$dict': [['red', 1], [2, 3]]}]


def test_a_zoneinfo_comes_back_as_its_fixed_offset():
    zoneinfo = pytest.importorskip('zoneinfo')
    try:
        zone = zoneinfo.ZoneInfo('Europe/Paris')
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip('no time zone data')
    value = datetime.datetime(2024, 7, 1, 12, tzinfo=zone)
    back = through_json(value)
    assert back == value and back.utcoffset() == datetime.timedelta(hours=2)
    assert to_json(value) == {'$datetime': '2024-07-01T12:00:00+02:00'}


@pytest.mark.parametrize('value', [object(), {1, 2}, [1, 2j], {'a': frozenset()}],
                         ids=repr)
def test_other_types_are_refused(value):
    with pytest.raises(DumpTypeError, match='cannot write') as info:
        to_json(value)
    assert isinstance(info.value, TypeError)


BAD_JSON = [
    ({'$nope': 1}, 'unknown tag'),
    ({'$int': 5}, 'not a string'),
    ({'$int': '1.5'}, 'decimal or 0x-hex'),
    ({'$int': '007'}, 'decimal or 0x-hex'),
    ({'$int': ' 7'}, 'decimal or 0x-hex'),
    ({'$float': 'NaN'}, '"nan"'),
    ({'$float': '1.5'}, '"nan"'),
    ({'$float': 'nan:3ff0000000000000'}, '"nan"'),        # 1.0, not a NaN
    ({'$str': 'a'}, 'not an array'),
    ({'$str': [65]}, 'surrogate code point'),
    ({'$str': [None]}, 'surrogate code point'),
    ({'$bytes': 'AA'}, 'base64'),
    ({'$bytes': 'AB=='}, 'base64'),                         # not the one spelling of b'\x00'
    ({'$bytes': 'A A='}, 'base64'),
    ({'$tuple': {}}, 'not an array'),
    ({'$dict': [[1]]}, 'an array of 2'),
    ({'$dict': [[1, 2], [1, 3]]}, 'twice'),
    ({'$dict': [[[1], 2]]}, 'unhashable'),
    ({'$dict': {'a': 1}}, 'not an array'),
    ({'$uuid': '12345678123456781234567812345678'}, 'not the text of a uuid'),
    ({'$uuid': 'x'}, 'not the text of a uuid'),
    ({'$datetime': '2024-01-02'}, 'not the text of a datetime'),
    ({'$datetime': '2024-01-02T00:00:00Z'}, 'not the text of a datetime'),
    ({'$datetime': '2024-13-02T00:00:00'}, 'not the text of a datetime'),
    ({'$date': '2024-01-02T00:00:00'}, 'not the text of a date'),
    ({'$decimal': '1e5'}, 'not the text of a decimal'),
    ({'$decimal': 'nan'}, 'not the text of a decimal'),
    ({'$decimal': 'x'}, 'not the text of a decimal'),
    ({'$desc': {'$desc': 1}}, 'another \\$desc'),
    ({'$ext': [200, '']}, 'not 0 to 127'),
    ({'$ext': [1]}, 'an array of 2'),
    ({'$timestamp': [1, 10 ** 9]}, 'timestamp'),
    ({'$timestamp': [1, 'x']}, 'two ints'),
]
# Python data json.loads never gives.
NOT_JSON = [
    (float('nan'), 'not a JSON number'),
    ((1, 2), 'not a JSON type'),
    ({1: 2, 3: 4}, 'not a string'),
]


@pytest.mark.parametrize('obj, message', BAD_JSON, ids=lambda v: repr(v)[:40])
def test_bad_tags_are_refused(obj, message):
    with pytest.raises(DumpFormatError, match=message):
        from_json(obj)
    with pytest.raises(DumpFormatError, match=r'^line 3: .*' + message):
        parse_line(json.dumps({'type': 'record', 'collection': 'c', 'key': [],
                               'value': [obj]}), 3)


@pytest.mark.parametrize('obj, message', NOT_JSON, ids=lambda v: repr(v)[:40])
def test_python_data_that_is_not_json_is_refused(obj, message):
    with pytest.raises(DumpFormatError, match=message):
        from_json(obj)


# --- lines -----------------------------------------------------------------------------

COLLECTION = CollectionLine('people', 'key_func', 'msgpack', 'zlib', 'people:key', True,
                            (IndexSpec('city'), IndexSpec('email', True)))


def test_a_field_index_round_trips_with_its_fields():
    line = CollectionLine('c', None, 'msgpack', 'plain', 'c:key', False,
                          (IndexSpec('f', True, ('a', 'b.c')), IndexSpec('g')))
    text = line.text()
    assert text.endswith('"indexes":[{"name":"f","unique":true,"fields":["a","b.c"]},'
                         '{"name":"g","unique":false}]}')
    assert parse_line(text) == line


def test_line_texts():
    assert header_line() == '{"type":"header","format":"centidb-dump","version":1}'
    assert HeaderLine().text() == header_line()
    assert (DUMP_FORMAT, DUMP_VERSION) == ('centidb-dump', 1)
    assert COLLECTION.text() == (
        '{"type":"collection","name":"people","key":"key_func","encoder":"msgpack",'
        '"packer":"zlib","counter":"people:key","batched":true,'
        '"indexes":[{"name":"city","unique":false},{"name":"email","unique":true}]}')
    assert CounterLine('n', 2 ** 60).text() == (
        '{"type":"counter","name":"n","value":{"$int":"1152921504606846976"}}')
    assert RecordLine('c', (1, 'a'), {'x': b''}).text() == record_line('c', (1, 'a'), {'x': b''})
    assert record_line('c', (1, Desc('a')), (2.5, None)) == (
        '{"type":"record","collection":"c","key":[1,{"$desc":"a"}],'
        '"value":{"$tuple":[2.5,null]}}')
    assert record_line('c', (), '\n\r\x85\u2028\u2029') == (
        '{"type":"record","collection":"c","key":[],"value":"\\n\\r\\u0085\\u2028\\u2029"}')
    assert record_line('c', ('é',), 'ü') == '{"type":"record","collection":"c","key":["é"],"value":"ü"}'


@pytest.mark.parametrize('line', [
    HeaderLine(), COLLECTION, CollectionLine('old', None, 'msgpack', 'plain', 'old:key'),
    CollectionLine('\ud800', 'auto', 'e\udc00', 'p', 'c'),
    CollectionLine('sums', 'auto', 'msgpack', 'plain', 'sums:key', checksum=True),
    CounterLine('people:key', 7), CounterLine('big', -2 ** 70),
    RecordLine('c', (), None), RecordLine('c', (Desc(1.5), None, b'k'), {'a': [1, {2: 3}]}),
    TrailerLine(1, (), '0' * 64), TrailerLine(9, (('a', 0), ('\udc00', 2 ** 60)), 'f' * 64),
], ids=repr)
def test_lines_round_trip(line):
    text = line.text()
    text.encode('utf-8')
    assert isinstance(json.loads(text), dict)
    assert parse_line(text) == line
    assert parse_line(text + '\n') == line
    assert parse_line(text + '\r\n', 5) == line


def test_collection_line_from_info():
    info = {'id': 3, 'encoder': 'msgpack', 'packer': 'zlib', 'counter': 'people:key',
            'key': 'key_func', 'batched': True}
    assert CollectionLine.from_info('people', info, {'city': False, 'email': True}) == COLLECTION
    old = CollectionLine.from_info('old', {'id': 4, 'encoder': 'e', 'packer': 'p',
                                           'counter': 'old:key'}, {})
    assert old == CollectionLine('old', None, 'e', 'p', 'old:key', False, ())


def test_collection_line_from_a_store():
    import centidb
    store = centidb.open('MemoryEngine')
    people = store.collection('people', key_func=lambda rec: rec['name'])
    people.add_index('city', lambda rec: rec['city'])
    people.put({'name': 'ann', 'city': 'Leeds'})
    catalog = store._catalog                # the command line reads it so
    with store.begin() as txn:
        info = catalog.collection_info(txn.engine_txn, 'people')
        indexes = {name: catalog.index_unique(txn.engine_txn, info['id'], name)
                   for name in catalog.index_ids(txn.engine_txn, info['id'])}
    line = CollectionLine.from_info('people', info, indexes)
    assert line == CollectionLine('people', 'key_func', 'msgpack', 'plain', 'people:key',
                                  False, (IndexSpec('city'),))
    assert parse_line(line.text()) == line


def test_a_collection_line_carries_the_checksum_setting():
    """Written as ``"checksum":true`` only when on; a line without it has checksums off."""
    import centidb
    store = centidb.open('MemoryEngine')
    store.collection('plain')
    store.collection('sums', checksum=True)
    catalog = store._catalog                # the command line reads it so
    with store.begin() as txn:
        lines = {name: CollectionLine.from_info(
            name, catalog.collection_info(txn.engine_txn, name), {}) for name in ('plain', 'sums')}
    assert lines['sums'] == CollectionLine('sums', 'auto', 'msgpack', 'plain', 'sums:key',
                                           checksum=True)
    assert lines['sums'].text().endswith(',"indexes":[],"checksum":true}')
    assert lines['plain'].checksum is False and '"checksum"' not in lines['plain'].text()
    text = lines['plain'].text()
    assert parse_line(text[:-1] + ',"checksum":false}') == lines['plain']
    assert parse_line(text[:-1] + ',"checksum":true}') == CollectionLine(
        'plain', 'auto', 'msgpack', 'plain', 'plain:key', checksum=True)
    with pytest.raises(DumpFormatError, match='"checksum".* not a bool'):
        parse_line(text[:-1] + ',"checksum":1}')
    with pytest.raises(DumpFormatError, match='twice'):
        parse_line(text[:-1] + ',"checksum":true,"checksum":true}')


RECORD = '{"type":"record","collection":"c","key":[1],"value":2}'
BAD_LINES = [
    ('', 'not JSON'),
    ('{"type":"record"', 'not JSON'),
    ('[1]', 'not a JSON object'),
    ('"record"', 'not a JSON object'),
    ('{"type":"recrd"}', '"type" is "recrd"'),
    ('{"collection":"c"}', '"type" is null'),
    ('{"type":1}', '"type" is 1'),
    ('{"type":"record","collection":"c","key":[1]}', "lacks \\['value'\\]"),
    ('{"type":"record","collection":"c","key":[1],"value":2,"x":3}', "extra \\['x'\\]"),
    ('{"type":"record","collection":"c","key":[1],"value":2,"value":3}', "'value' twice"),
    ('{"type":"record","collection":1,"key":[1],"value":2}', '"collection".* not a str'),
    ('{"type":"record","collection":"c","key":1,"value":2}', 'not an array'),
    ('{"type":"record","collection":"c","key":[[1]],"value":2}', 'not a valid key'),
    ('{"type":"record","collection":"c","key":[{"$desc":{"$desc":1}}],"value":2}',
     'another \\$desc'),
    ('{"type":"record","collection":"c","key":[{"$decimal":"1"}],"value":2}', 'not a valid key'),
    ('{"type":"record","collection":"c","key":[],"value":NaN}', 'NaN is not JSON'),
    ('{"type":"record","collection":"c","key":[],"value":-Infinity}', 'is not JSON'),
    ('{"type":"record","collection":"c","key":[],"value":1e400}', 'out of the float range'),
    ('{"type":"record","collection":"c","key":[],"value":{"$float":"Infinity"}}', '"inf"'),
    ('{"type":"header","format":"centidb-dump","version":2}', 'version 2'),
    ('{"type":"header","format":"other","version":1}', "format 'other'"),
    ('{"type":"header","format":"centidb-dump","version":"1"}', 'not an int'),
    ('{"type":"header","format":"centidb-dump","version":true}', 'not an int'),
    ('{"type":"counter","name":"n","value":1.0}', 'not an int'),
    ('{"type":"counter","name":"n"}', 'lacks'),
    ('{"type":"collection","name":"c","key":"auto","encoder":"m","packer":"p","counter":"n",'
     '"batched":0,"indexes":[]}', '"batched".* not a bool'),
    ('{"type":"collection","name":"c","key":1,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[]}', '"key".* not a str'),
    ('{"type":"collection","name":"c","key":null,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[{"name":"i"}]}', '"indexes"'),
    ('{"type":"collection","name":"c","key":null,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[{"name":"i","unique":1}]}', '"unique".* not a bool'),
    ('{"type":"collection","name":"c","key":null,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[{"name":"i","unique":false,"fields":"a"}]}', '"fields" of index .i.*not an array'),
    ('{"type":"collection","name":"c","key":null,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[{"name":"i","unique":false,"fields":[]}]}', 'at least one'),
    ('{"type":"collection","name":"c","key":null,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[{"name":"i","unique":false,"fields":["a..b"]}]}', 'empty part'),
    ('{"type":"collection","name":"c","key":null,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[{"name":"i","unique":false,"fields":[1]}]}', "not 'int'"),
    ('{"type":"collection","name":"c","key":null,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[{"name":"i","unique":false,"fields":["a","a"]}]}', 'twice'),
    ('{"type":"collection","name":"c","key":null,"encoder":"m","packer":"p","counter":"n",'
     '"batched":false,"indexes":[{"name":"i","unique":false,"other":1}]}', '"indexes"'),
    ('[' * 100000 + ']' * 100000, 'too deep'),
    ('{"type":"trailer","lines":1,"records":[],"sha256":"' + '0' * 64 + '","x":1}', 'extra'),
    ('{"type":"trailer","lines":0,"records":[],"sha256":"' + '0' * 64 + '"}', 'at least 1'),
    ('{"type":"trailer","lines":1,"records":[],"sha256":"' + 'A' * 64 + '"}', 'lowercase hex'),
    ('{"type":"trailer","lines":1,"records":[],"sha256":"' + '0' * 63 + '"}', 'lowercase hex'),
    ('{"type":"trailer","lines":"1","records":[],"sha256":"' + '0' * 64 + '"}', 'not an int'),
    ('{"type":"trailer","lines":1,"records":{"c":1},"sha256":"' + '0' * 64 + '"}',
     '"records".* pairs'),
    ('{"type":"trailer","lines":1,"records":[["c",-1]],"sha256":"' + '0' * 64 + '"}',
     '"records".* pairs'),
    ('{"type":"trailer","lines":1,"records":[["c",1.0]],"sha256":"' + '0' * 64 + '"}',
     '"records".* pairs'),
    ('{"type":"trailer","lines":1,"records":[[1,1]],"sha256":"' + '0' * 64 + '"}',
     'not of a collection name'),
]


@pytest.mark.parametrize('text, message', BAD_LINES, ids=lambda v: v[:50])
def test_bad_lines_are_refused(text, message):
    with pytest.raises(DumpFormatError, match=r'^line 12: .*' + message) as info:
        parse_line(text, 12)
    assert isinstance(info.value, ValueError)
    assert text[:40] in str(info.value)          # the message shows the line
    with pytest.raises(DumpFormatError, match=r'^a dump line: '):
        parse_line(text)


def test_a_long_bad_line_is_shortened_in_the_message():
    text = RECORD.replace('2}', '{"$x":"' + 'y' * 1000 + '"}}')
    with pytest.raises(DumpFormatError) as info:
        parse_line(text, 1)
    assert len(str(info.value)) < 400 and str(info.value).endswith('...')


def test_a_huge_plain_int_is_read_or_refused_cleanly():
    assert parse_line(RECORD.replace(':2}', ':' + '9' * 100 + '}')).value == int('9' * 100)
    with pytest.raises(DumpFormatError, match='^line 2: '):
        parse_line(RECORD.replace(':2}', ':' + '9' * 5000 + '}'), 2)


def test_every_truncation_of_a_line_is_refused():
    text = record_line('c', (1, b'x'), {'a': (1, 2.5, {'$x': None})})
    for end in range(len(text)):
        with pytest.raises(DumpFormatError):
            parse_line(text[:end])


@given(elements)
def test_key_elements_round_trip(element):
    assert same(parse_line(record_line('c', (element,), None)).key, (element,))


def test_same_is_strict():
    assert not same(1, 1.0) and not same((1,), [1]) and not same(0.0, -0.0)
    assert same(float('nan'), float('nan')) and not same(float('nan'), -float('nan'))
    assert not same({1: 2, 3: 4}, {3: 4, 1: 2})
    assert not same(math.inf, -math.inf)
