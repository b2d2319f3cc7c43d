"""Record values: every type a key may hold round-trips through the default
(msgpack) encoder, alone and nested, and through a store on every engine.

The extension types' bytes are specified in ``docs/format.rst`` ("Value
format (msgpack encoder)"); :func:`test_format_doc_examples` reads the
examples from that page and checks them against the encoder, so the page and
the code cannot drift. What the JSON encoder does with each type is stated in
``docs/encoders.rst`` and checked here too.
"""

import collections
import datetime
import decimal
import enum
import math
import os
import re
import sys
import threading
import uuid

import msgpack
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from centidb import checksums, encodings, keylib
from centidb.errors import CorruptRecordError

import strategies

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'docs')

ENCODER = encodings.make_msgpack_encoder()
encode, decode = ENCODER.encode, ENCODER.decode

UTC = datetime.timezone.utc
IST = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
MINUS_1S = datetime.timezone(-datetime.timedelta(seconds=1))
D = decimal.Decimal


# --- comparing values exactly ------------------------------------------------

def exact(value):
    """A form of `value` that is equal only for values of the same types and
    contents: NaN equals NaN, -0.0 differs from 0.0, Decimals compare by
    repr, an aware datetime by wall time and offset (not by its tzinfo
    object), containers element by element and dicts in order."""
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes, uuid.UUID, datetime.date):
        return kind.__name__, value
    if kind is float:
        return 'float', repr(value)
    if kind is decimal.Decimal:
        return 'Decimal', repr(value)
    if kind is datetime.datetime:
        return 'datetime', value.replace(tzinfo=None), value.utcoffset()
    if kind in (list, tuple):
        return kind.__name__, [exact(item) for item in value]
    if kind is dict:
        return 'dict', [(exact(k), exact(v)) for k, v in value.items()]
    raise AssertionError(f'no exact form for {kind.__name__}')


def assert_aware_values_have_fixed_offsets(value):
    """Decoded aware datetimes carry a ``datetime.timezone``, at any depth."""
    if type(value) is datetime.datetime and value.tzinfo is not None:
        assert type(value.tzinfo) is datetime.timezone
    elif type(value) in (list, tuple):
        for item in value:
            assert_aware_values_have_fixed_offsets(item)
    elif type(value) is dict:
        for item in value.items():
            assert_aware_values_have_fixed_offsets(item)


def assert_round_trips(value, expected=None):
    """`value` encodes to bytes that decode to `expected` (default: `value`)
    exactly, and those bytes are the one encoding of the decoded value."""
    data = encode(value)
    back = decode(data)
    assert exact(back) == exact(value if expected is None else expected)
    assert_aware_values_have_fixed_offsets(back)
    assert encode(back) == data
    return data


# --- edge values -------------------------------------------------------------

EDGE_INTS = [0, 1, -1, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, 2 ** 64 + 1,
             -2 ** 63, -2 ** 63 - 1, -2 ** 64, -2 ** 64 - 1, 2 ** 71, -2 ** 71,
             2 ** 71 - 1, -2 ** 71 - 1, 2 ** 1000, -(2 ** 1000), 10 ** 5000, -(10 ** 5000)]
EDGE_FLOATS = [0.0, -0.0, 1.5, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308]
EDGE_STRS = ['', '\x00', 'Zürich', '\U0001f600', '\ud800', '\udfff', 'a\udcffb', '\uffff']
EDGE_BYTES = [b'', b'\x00', b'\xff' * 3, bytes(range(256))]
EDGE_UUIDS = [uuid.UUID(int=0), uuid.UUID(int=2 ** 128 - 1),
              uuid.UUID('12345678-1234-5678-1234-567812345678')]
EDGE_DATETIMES = [
    datetime.datetime.min, datetime.datetime.max,
    datetime.datetime(1970, 1, 1), datetime.datetime(2024, 2, 29, 23, 59, 59, 999999),
    datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=IST),
    datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=MINUS_1S),
    datetime.datetime(2024, 1, 2, tzinfo=UTC),
    datetime.datetime.min.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=14))),
    datetime.datetime.max.replace(tzinfo=datetime.timezone(-datetime.timedelta(hours=23))),
    datetime.datetime.min.replace(tzinfo=datetime.timezone(
        datetime.timedelta(hours=23, minutes=59, seconds=59, microseconds=999999))),
    datetime.datetime.max.replace(tzinfo=datetime.timezone(
        -datetime.timedelta(hours=23, minutes=59, seconds=59, microseconds=999999))),
    datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(microseconds=1))),
]
EDGE_DATES = [datetime.date.min, datetime.date.max, datetime.date(1970, 1, 1),
              datetime.date(2024, 2, 29)]
EDGE_DECIMALS = [D(text) for text in (
    'NaN', '-NaN', 'NaN123', 'sNaN', '-sNaN45', 'Infinity', '-Infinity', '0', '-0',
    '0E-7', '-0E+3', '1E+1000', '-1E-1000', '1.50', '-1.50', '1E+999999999',
    '12345678901234567890.123456789012345678901234567890', '9' * 100)]
EDGE_TUPLES = [(), (1,), ((),), (1, 'a', (2.5, None), [3, (4,)])]
def short(value):
    """A test id for `value`: its repr, cut short (10**5000 has none)."""
    if type(value) is int and value.bit_length() > 1000:
        return f'int of {value.bit_length()} bits'
    text = repr(value)
    return text if len(text) <= 50 else text[:47] + '...'


EDGE_VALUES = ([None, True, False] + EDGE_INTS + EDGE_FLOATS + EDGE_STRS + EDGE_BYTES
               + EDGE_UUIDS + EDGE_DATETIMES + EDGE_DATES + EDGE_DECIMALS + EDGE_TUPLES)


def hashable(value):
    try:
        hash(value)
    except TypeError:       # a list inside a tuple, a signaling NaN
        return False
    return True


@pytest.mark.parametrize('value', EDGE_VALUES, ids=short)
def test_edge_values_round_trip(value):
    assert_round_trips(value)


@pytest.mark.parametrize('value', EDGE_VALUES, ids=short)
def test_edge_values_round_trip_nested(value):
    assert_round_trips({'v': value, 'list': [value, [value]], 'tuple': (value, (value,))})
    assert_round_trips([{'deep': [(value,)]}])


def test_every_edge_value_in_one_record():
    """One record holding them all, also as dict keys where hashable."""
    keys = [v for v in EDGE_VALUES if hashable(v)]
    record = {'all': EDGE_VALUES, 'keyed': {v: i for i, v in enumerate(keys)}}
    data = assert_round_trips(record)
    keyed = decode(data)['keyed']
    assert [type(k) for k in keyed] == [type(k) for k in record['keyed']]


def test_decimal_comes_back_with_the_same_repr():
    for value in EDGE_DECIMALS:
        back = decode(encode(value))
        assert type(back) is decimal.Decimal and repr(back) == repr(value)
        assert back.as_tuple() == value.as_tuple()
        if not value.is_nan():
            assert back == value


def test_aware_datetimes_keep_their_offset_exactly():
    for value in EDGE_DATETIMES:
        back = decode(encode(value))
        assert back == value and back.utcoffset() == value.utcoffset()
        assert (back.tzinfo is None) == (value.tzinfo is None)
        assert back.replace(tzinfo=None) == value.replace(tzinfo=None)   # the wall time
    assert decode(encode(EDGE_DATETIMES[4])).tzinfo == IST
    assert decode(encode(EDGE_DATETIMES[6])).tzinfo is UTC


def test_zoneinfo_zones_come_back_as_fixed_offsets():
    zoneinfo = pytest.importorskip('zoneinfo')
    try:
        paris = zoneinfo.ZoneInfo('Europe/Paris')
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip('no time zone database')
    summer = datetime.datetime(2024, 7, 1, 12, tzinfo=paris)
    winter = datetime.datetime(2024, 1, 1, 12, tzinfo=paris)
    for value, hours in ((summer, 2), (winter, 1)):
        back = decode(encode(value))
        assert back == value and back.hour == 12
        assert back.tzinfo == datetime.timezone(datetime.timedelta(hours=hours))
    # Inside the autumn fold, fold chooses the offset; the offset is kept.
    first = datetime.datetime(2024, 10, 27, 2, 30, tzinfo=paris)
    second = first.replace(fold=1)
    assert decode(encode(first)).utcoffset() == datetime.timedelta(hours=2)
    assert decode(encode(second)).utcoffset() == datetime.timedelta(hours=1)


def test_a_tzinfo_without_an_offset_counts_as_naive():
    class NoOffset(datetime.tzinfo):
        def utcoffset(self, dt):
            return None

    value = datetime.datetime(2024, 1, 2, tzinfo=NoOffset())
    assert decode(encode(value)) == datetime.datetime(2024, 1, 2)
    assert decode(encode(value)).tzinfo is None


def test_lone_surrogates_use_surrogatepass_as_the_format_page_says():
    assert encode('\ud800') == bytes.fromhex('a3 ed a0 80')
    # Inside a tuple's payload too (packed by a packer of its own).
    assert encode(('\udcff',)) == bytes.fromhex('c7 05 01 91 a3 ed b3 bf')
    assert decode(bytes.fromhex('92 a1 61 a3 ed a0 80')) == ['a', '\ud800']


def test_threads_encoding_at_once_each_get_their_own_bytes():
    # Decimals and tuples go through the packer's Python default hook, where
    # threads switch in the middle of a pack; a packer shared between
    # threads would mix their buffers.
    encoder = encodings.make_msgpack_encoder()
    values = [[D(n), (n, str(n)), {'n': n, 'at': datetime.date(2024, 1, 1 + n % 28)}]
              for n in range(600)]
    expected = [encoder.encode(value) for value in values]
    start, results = threading.Barrier(4), {}

    def work(t):
        start.wait(timeout=30)
        results[t] = [encoder.encode(value) for value in values[t::4]]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    assert sorted(results) == [0, 1, 2, 3]
    for t in range(4):
        assert results[t] == expected[t::4]
    # The thread that called last changed; this one still gets its own.
    assert encoder.encode(values[5]) == expected[5]


def test_bytes_like_values_come_back_as_bytes():
    assert assert_round_trips(bytearray(b'ab'), b'ab') == encode(b'ab')
    assert decode(encode(memoryview(b'ab'))) == b'ab'


# --- subclasses --------------------------------------------------------------

class Color(enum.IntEnum):
    RED = 1
    HUGE = 2 ** 70


class Perm(enum.IntFlag):
    R = 4
    W = 2


class Mood(str, enum.Enum):
    HAPPY = 'happy'


class Loud(str):
    def __str__(self):
        return self.upper()


class Pi(float):
    def __float__(self):
        return 3.0


class Stamp(datetime.datetime):
    pass


class Day(datetime.date):
    pass


class Id(uuid.UUID):
    pass


class Money(decimal.Decimal):
    def __str__(self):
        return 'not a number'


class Blob(bytes):
    def __bytes__(self):
        return b'other'


class Items(list):
    pass


Point = collections.namedtuple('Point', 'x y')

SUBCLASSES = [
    (Color.RED, 1), (Color.HUGE, 2 ** 70), (Perm.R | Perm.W, 6),
    (Mood.HAPPY, 'happy'), (Loud('quiet'), 'quiet'), (Pi(1.5), 1.5), (Blob(b'x'), b'x'),
    (Point(1, (2, 3)), (1, (2, 3))),
    (collections.OrderedDict(a=1), {'a': 1}), (collections.defaultdict(int, a=1), {'a': 1}),
    (Items([1, (2,)]), [1, (2,)]),
    (Stamp(2024, 1, 2, 3, tzinfo=IST), datetime.datetime(2024, 1, 2, 3, tzinfo=IST)),
    (Stamp(2024, 1, 2, 3), datetime.datetime(2024, 1, 2, 3)),
    (Day(2024, 1, 2), datetime.date(2024, 1, 2)),
    (Id(int=5), uuid.UUID(int=5)), (Money('-1.50'), D('-1.50')),
]


@pytest.mark.parametrize('value, expected', SUBCLASSES, ids=short)
def test_subclasses_come_back_as_their_base_type(value, expected):
    assert_round_trips(value, expected)
    assert_round_trips({'v': [value]}, {'v': [expected]})
    assert encode(value) == encode(expected)


if sys.version_info >= (3, 11):
    def test_str_enum_comes_back_as_its_value():
        class Level(enum.StrEnum):
            LOW = 'low'

        assert_round_trips(Level.LOW, 'low')


@pytest.mark.parametrize('value', [
    {1, 2}, frozenset(), datetime.time(1, 2), datetime.timedelta(1), 1j, object(),
    range(3), [1, {'a': {2}}], (1, datetime.time()),
], ids=short)
def test_unsupported_types_raise_type_error_naming_the_type(value):
    with pytest.raises(TypeError, match=r"msgpack encoder cannot store '\w+' values"):
        encode(value)
    assert encode({'ok': 1}) == b'\x81\xa2ok\x01'   # the packer was reset


# --- the format page ---------------------------------------------------------

_DOC_NAMES = {'datetime': datetime.datetime, 'date': datetime.date,
              'timezone': datetime.timezone, 'timedelta': datetime.timedelta,
              'Decimal': decimal.Decimal, 'UUID': uuid.UUID, '__builtins__': {}}


def format_doc_examples():
    """The (value source, hex) examples of the value format section of docs/format.rst."""
    with open(os.path.join(DOCS, 'format.rst'), encoding='utf-8') as fp:
        text = fp.read()
    start = text.index('\nValue format (msgpack encoder)\n')
    section = re.split(r'\n[^\n]+\n-{3,}\n', text[start + 1:])[0]
    # An example is a value in ``...``, a blank line, then its bytes in ``...``.
    pairs = re.findall(r'``([^`]+)``\n\s*\n\s*``((?:[0-9a-f]{2} )*[0-9a-f]{2})``', section)
    return [(source, hexed) for source, hexed in pairs]


EXAMPLES = format_doc_examples()


def test_format_doc_has_an_example_for_every_extension_type():
    codes = {bytes.fromhex(hexed)[1 if hexed[:2] in ('d4', 'd5', 'd6', 'd7', 'd8') else 2]
             for _, hexed in EXAMPLES}
    assert codes == {1, 2, 3, 4, 5, 6}
    assert len(EXAMPLES) >= 7


@pytest.mark.parametrize('source, hexed', EXAMPLES)
def test_format_doc_examples(source, hexed):
    value = eval(source, dict(_DOC_NAMES))
    assert encode(value).hex(' ') == hexed
    assert exact(decode(bytes.fromhex(hexed))) == exact(value)


def old_packb(value):
    """The msgpack encoder as it was before extension types 2 to 6: plain
    msgpack, with tuples as extension 1 (how existing stores were written)."""
    def tuples(value):
        if type(value) is tuple:
            return msgpack.ExtType(1, old_packb(list(value)))
        raise TypeError(type(value).__name__)

    return msgpack.packb(value, use_bin_type=True, strict_types=True, default=tuples)


OLD_VALUES = [None, True, 0, -1, 2 ** 63, -2 ** 63, 2 ** 64 - 1, 1.5, -0.0, math.nan, '',
              'Zürich', b'\x00', [], (), (1, ('a', [b'', (None,)])),
              {'a': 1, 2: (3,), (4, 5): [6.0], None: {}}]
old_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 64 - 1) | st.floats()
    | st.text() | st.binary(),
    lambda children: st.lists(children, max_size=3) | st.lists(children, max_size=3).map(tuple)
    | st.dictionaries(st.text(max_size=3) | st.integers(-2 ** 63, 2 ** 64 - 1), children,
                      max_size=3),
    max_leaves=12)


@given(old_values)
def test_values_of_the_old_types_encode_and_decode_as_before(value):
    """Stores written before this format read unchanged, and values of the
    types stored then are written with the same bytes."""
    for item in OLD_VALUES + [value]:
        data = old_packb(item)
        assert encode(item) == data
        assert exact(decode(data)) == exact(item)


# --- properties --------------------------------------------------------------

decimals = (st.sampled_from(EDGE_DECIMALS)
            | st.decimals(allow_nan=True, allow_infinity=True)
            | st.builds(lambda sign, digits, exp: D((sign, digits, exp)),
                        st.integers(0, 1), st.lists(st.integers(0, 9), max_size=30).map(tuple),
                        st.integers(-10 ** 6, 10 ** 6)))
dates = st.sampled_from(EDGE_DATES) | st.dates()
hashable_leaves = st.one_of(
    st.none(), st.booleans(), strategies.ints, strategies.texts, strategies.binaries,
    strategies.uuids, strategies.datetimes, dates)
leaves = hashable_leaves | strategies.floats | decimals
values = st.recursive(
    leaves,
    lambda children: (st.lists(children, max_size=4)
                      | st.lists(children, max_size=4).map(tuple)
                      | st.dictionaries(hashable_leaves, children, max_size=4)),
    max_leaves=20)


@given(values)
@example(2 ** 1000)
@example({'when': datetime.datetime(2024, 1, 2, tzinfo=MINUS_1S), 'd': D('-0')})
def test_values_round_trip(value):
    assert_round_trips(value)


@given(values)
def test_every_truncation_raises_value_error(value):
    data = encode(value)
    for end in range(len(data)):
        with pytest.raises(ValueError):
            decode(data[:end])


def _ext(code, payload):
    return msgpack.packb(msgpack.ExtType(code, payload))


def _mutations(value):
    """Payloads near the valid payload of `value`: bytes changed, cut or added."""
    data = encode(value)
    head = 2 if data[0] in (0xd4, 0xd5, 0xd6, 0xd7, 0xd8) else 3
    code, payload = data[head - 1], data[head:]
    return st.tuples(st.integers(0, max(len(payload) - 1, 0)), st.integers(0, 255),
                     st.sampled_from(['set', 'cut', 'add'])).map(
        lambda change: (code, _mutate(payload, *change)))


def _mutate(payload, at, byte, how):
    if how == 'set' and payload:
        return payload[:at] + bytes([byte]) + payload[at + 1:]
    if how == 'cut':
        return payload[:at]
    return payload[:at] + bytes([byte]) + payload[at:]


ext_values = st.one_of(
    st.integers(2 ** 64, 2 ** 80) | st.integers(-2 ** 80, -2 ** 63 - 1),
    strategies.uuids, strategies.datetimes, dates, decimals)


@given(st.one_of(
    st.tuples(st.integers(2, 6), st.binary(max_size=20)),
    ext_values.flatmap(_mutations)))
@example((2, b''))
@example((2, b'\x00' * 9))
@example((2, b'\x00\x01' + bytes(7)))
@example((4, bytes(8) + b'\x7f\xff\xff\xff\xff'))
@example((6, b'1e5'))
@example((6, b' 1'))
@example((6, b'nan'))
def test_an_extension_payload_decodes_canonically_or_raises(ext):
    """Any payload of a type 2..6 extension either raises ValueError or
    decodes to the value whose encoding it is: never to another value."""
    data = _ext(*ext)
    try:
        value = decode(data)
    except ValueError as exc:
        assert f'malformed msgpack extension type {ext[0]} (' in str(exc)
    else:
        assert encode(value) == data


# --- malformed payloads ------------------------------------------------------

BAD_PAYLOADS = [
    (2, b'', 'shortest'),
    (2, b'\x05', '64-bit range'),
    (2, b'\x00\x80' + bytes(7), '64-bit range'),          # 2**63: msgpack stores it natively
    (2, b'\x00\x01' + bytes(8), 'shortest'),               # 2**64 with a leading zero byte
    (2, b'\xff\xfe' + b'\xff' * 8, 'shortest'),            # -2**64-1 with a leading 0xff byte
    (3, bytes(15), '15 bytes, not 16'),
    (3, bytes(17), '17 bytes, not 16'),
    (4, bytes(7), '7 bytes, not 8'),
    (4, bytes(12), '12 bytes'),
    (4, b'\xff' * 8, 'after datetime.max'),
    (4, bytes(8) + b'\x14\x1d\xd7\x60\x00', 'offset'),     # +24:00
    (4, bytes(8) + b'\xeb\xe2\x28\xa0\x00', 'offset'),     # -24:00
    (5, bytes(4), 'ordinal'),
    (5, b'\xff' * 4, 'ordinal'),
    (5, bytes(3), '3 bytes, not 4'),
    (6, b'', "'' is not the str"),
    (6, b'1e5', "'1e5' is not the str"),
    (6, b'+1', "'\\+1' is not the str"),
    (6, b'1_000', 'is not the str'),
    (6, b'Inf', 'is not the str'),
    (6, b'\xff', 'ascii'),
    (6, '١'.encode(), 'ascii'),
]


@pytest.mark.parametrize('code, payload, why', BAD_PAYLOADS)
def test_malformed_extension_payloads_raise_value_error(code, payload, why):
    with pytest.raises(ValueError, match=why) as info:
        decode(_ext(code, payload))
    assert f'malformed msgpack extension type {code} (' in str(info.value)
    assert type(info.value) is ValueError


def test_malformed_payload_error_shows_a_bounded_payload():
    with pytest.raises(ValueError, match=r'payload \[(ff ){39}ff \.\.\.\]') as info:
        decode(_ext(3, b'\xff' * 1000))
    assert len(str(info.value)) < 300


@pytest.mark.parametrize('payload', [b'\x05', b'\xa2ab', b'\x81\x01\x02', b'\x92\x01', b'\xc1',
                                     b'\x90\x90'])
def test_malformed_tuple_payloads_raise_value_error(payload):
    with pytest.raises(ValueError):
        decode(_ext(1, payload))


def test_other_extension_codes_decode_to_ext_type_objects():
    assert decode(_ext(7, b'abc')) == msgpack.ExtType(7, b'abc')
    assert decode(_ext(127, b'')) == msgpack.ExtType(127, b'')
    stamp = msgpack.packb(msgpack.Timestamp(5, 7))       # msgpack's own code -1
    assert decode(stamp) == msgpack.Timestamp(5, 7)
    for data in (_ext(7, b'abc'), stamp):
        assert encode(decode(data)) == data


def test_decoding_under_a_context_that_does_not_trap():
    """A thread whose decimal context does not trap InvalidOperation (where
    Decimal('junk') is NaN) still rejects a malformed Decimal payload."""
    with decimal.localcontext() as context:
        context.traps[decimal.InvalidOperation] = False
        context.prec = 3
        with pytest.raises(ValueError, match="'junk' is not the str"):
            decode(_ext(6, b'junk'))
        assert repr(decode(encode(D('1.23456789')))) == "Decimal('1.23456789')"


def test_the_encoder_matches_msgpacks_pure_python_packer():
    """msgpack's pure-Python twin (used where its extension is missing) calls
    the same hooks the same way, big ints included."""
    from msgpack import fallback

    packer = fallback.Packer(use_bin_type=True, strict_types=True,
                             default=encodings._msgpack_default)
    for value in EDGE_VALUES + [value for value, _ in SUBCLASSES]:
        if isinstance(value, str) and any('\ud800' <= c <= '\udfff' for c in value):
            continue    # surrogates take the encoder's slow path
        data = packer.pack(value)
        assert data == encode(value)
        back = fallback.unpackb(data, raw=False, strict_map_key=False,
                                ext_hook=encodings._msgpack_ext)
        assert exact(back) == exact(decode(data))


# --- in a store --------------------------------------------------------------

STORED = {
    'ints': EDGE_INTS, 'floats': EDGE_FLOATS, 'strs': EDGE_STRS, 'bytes': EDGE_BYTES,
    'uuids': EDGE_UUIDS, 'datetimes': EDGE_DATETIMES, 'dates': EDGE_DATES,
    'decimals': EDGE_DECIMALS, 'tuples': EDGE_TUPLES, 'flags': [None, True, False],
    'keyed': {2 ** 70: 'big', uuid.UUID(int=1): 'uuid', datetime.date(2024, 1, 2): 'date',
              datetime.datetime(2024, 1, 2, tzinfo=IST): 'aware', D('1.50'): 'decimal',
              (1, 'a'): 'tuple'},
}


def _check_stored(coll, keys):
    assert exact(coll.get('all')) == exact(STORED)
    for key, value in zip(keys, EDGE_VALUES):
        assert exact(coll.get(key)) == exact(value)
    by_key = dict(coll.items())
    assert exact(by_key[('all',)]) == exact(STORED)
    assert [exact(by_key[key]) for key in keys] == [exact(v) for v in EDGE_VALUES]


def test_values_round_trip_through_a_store(store):
    coll = store.collection('values')
    keys = [('v', i) for i in range(len(EDGE_VALUES))]
    coll.put(STORED, key='all')
    for key, value in zip(keys, EDGE_VALUES):
        coll.put(value, key=key)
    _check_stored(coll, keys)
    coll.batch(prefix=('v',), max_recs=7)          # batched records decode the same way
    _check_stored(coll, keys)


def test_values_survive_reopening(reopen):
    store = reopen()
    keys = [('v', i) for i in range(len(EDGE_VALUES))]
    with store:
        coll = store.collection('values')
        coll.put(STORED, key='all')
        for key, value in zip(keys, EDGE_VALUES):
            coll.put(value, key=key)
    with reopen() as store:
        _check_stored(store.collection('values'), keys)


def test_index_functions_see_the_stored_types(store):
    coll = store.collection('events', key_func=lambda rec: rec['id'])
    coll.add_index('when', lambda rec: rec['when'])
    coll.add_index('amount', lambda rec: str(rec['amount']))
    when = datetime.datetime(2024, 1, 2, 3, tzinfo=IST)
    coll.put({'id': 2 ** 70, 'when': when, 'amount': D('-1.50')})
    assert coll.indices['when'].get(when)['id'] == 2 ** 70
    assert coll.indices['amount'].get('-1.50')['when'].tzinfo == IST


@pytest.mark.parametrize('code, payload, why', BAD_PAYLOADS[::4])
def test_a_corrupt_extension_in_a_stored_record_is_a_corrupt_record_error(store, code, payload,
                                                                         why):
    coll = store.collection('c')
    coll.put({'when': datetime.date(2024, 1, 2)}, key=('k', 1))
    engine_key = keylib.packs(('k', 1), coll.prefix)
    stored = dict(store.engine.items())[engine_key]
    if coll.checksum:
        stored = checksums.opened(stored)   # the bad value is sealed below
    good = encode({'when': datetime.date(2024, 1, 2)})
    assert stored.endswith(good)
    header = stored[:-len(good)]
    bad = header + b'\x81\xa4when' + _ext(code, payload)
    store.engine.put(engine_key, checksums.seal(bad) if coll.checksum else bad)
    message = (r"^collection 'c': the record under key \('k', 1\) cannot be decoded "
               rf"\(ValueError: malformed msgpack extension type {code} \(")
    for read in (lambda: coll.get(('k', 1)), lambda: list(coll.values()),
                 lambda: coll.get_many([('k', 1)])):
        with pytest.raises(CorruptRecordError, match=message) as info:
            read()
        assert re.search(why, str(info.value))


# --- the JSON encoder, as docs/encoders.rst describes it ---------------------

JSON = encodings.make_json_encoder()


@pytest.mark.parametrize('value, name', [
    (b'x', 'bytes'), (bytearray(b'x'), 'bytearray'), (uuid.UUID(int=1), 'UUID'),
    (datetime.datetime(2024, 1, 2), 'datetime'), (datetime.date(2024, 1, 2), 'date'),
    (D('1.5'), 'Decimal'), ({'a': [D('1.5')]}, 'Decimal'),
])
def test_json_encoder_raises_type_error_naming_the_type(value, name):
    with pytest.raises(TypeError, match=rf'\b{name}\b'):
        JSON.encode(value)


def test_json_encoder_round_trips_what_json_holds():
    for value in [None, True, 2 ** 70, -(2 ** 1000), 1.5, -0.0, 'Zürich', [1, [2]], {'a': {}}]:
        assert exact(JSON.decode(JSON.encode(value))) == exact(value)


def test_json_encoder_writes_non_standard_tokens_for_nan_and_infinities():
    assert JSON.encode([math.nan, math.inf, -math.inf]) == b'[NaN,Infinity,-Infinity]'
    assert exact(JSON.decode(b'[NaN,Infinity,-Infinity]')) == exact([math.nan, math.inf,
                                                                       -math.inf])


def test_json_encoder_gives_lists_for_tuples_and_strings_for_keys():
    assert JSON.decode(JSON.encode({'t': (1, (2,)), 'p': Point(1, 2)})) == {'t': [1, [2]],
                                                                           'p': [1, 2]}
    assert JSON.decode(JSON.encode({1: 'a', 1.5: 'b', False: 'c', None: 'd'})) == {
        '1': 'a', '1.5': 'b', 'false': 'c', 'null': 'd'}
    with pytest.raises(TypeError, match='keys must be'):
        JSON.encode({(1, 2): 'x'})


def test_json_encoder_writes_subclasses_as_their_base_value():
    assert JSON.decode(JSON.encode([Color.RED, Mood.HAPPY, Pi(1.5)])) == [1, 'happy', 1.5]


def test_json_encoder_refuses_lone_surrogates():
    with pytest.raises(UnicodeEncodeError):
        JSON.encode('\ud800')


@pytest.mark.skipif(not hasattr(sys, 'get_int_max_str_digits'),
                    reason='no int-to-str digit limit in this Python')
def test_json_encoder_refuses_ints_beyond_the_digit_limit():
    limit = sys.get_int_max_str_digits()
    if limit == 0:
        pytest.skip('the digit limit is switched off')
    assert JSON.decode(JSON.encode(10 ** (limit - 1))) == 10 ** (limit - 1)
    with pytest.raises(ValueError, match='digits'):
        JSON.encode(10 ** limit)


# --- the Encoder's names ------------------------------------------------------------------

def test_an_encoder_takes_encode_and_decode_or_their_older_names():
    encode, decode = str.encode, bytes.decode
    for encoder in (encodings.Encoder('t', encode, decode),
                    encodings.Encoder('t', encode=encode, decode=decode),
                    encodings.Encoder('t', pack=encode, unpack=decode),
                    encodings.Encoder('t', encode, unpack=decode)):
        assert (encoder.encode, encoder.decode) == (encode, decode)
        assert (encoder.pack, encoder.unpack) == (encode, decode)
        assert encoder.decode(encoder.encode('é')) == 'é'


@pytest.mark.parametrize('kwargs, match', [
    ({'encode': str.encode, 'pack': str.encode, 'decode': bytes.decode}, 'not both'),
    ({'encode': str.encode, 'decode': bytes.decode, 'unpack': bytes.decode}, 'not both'),
    ({'encode': str.encode}, 'must be callable'),
    ({'unpack': bytes.decode}, 'must be callable'),
    ({'pack': 'x', 'unpack': bytes.decode}, 'must be callable'),
])
def test_an_encoder_refuses_a_function_missing_or_given_twice(kwargs, match):
    with pytest.raises(TypeError, match=match):
        encodings.Encoder('t', **kwargs)
