"""Targeted cases the hypothesis tests reach only rarely.

Parity of the twins on random float bit patterns, ints around 2**63/2**64,
long strings crossing the twin's 256-byte stack buffer and many-element keys;
a crash-detecting decoder fuzz of the twin in a subprocess; prefix ranges of
Desc elements whose encoding ends in 0x00; datetime extremes. Through the
active implementation: ints of 256 bytes or more (a multi-byte length),
``memoryview`` and ``bytearray`` input, invalid UTF-8 under the str tag.
"""

import datetime
import os
import random
import struct
import subprocess
import sys
import textwrap
import uuid

import pytest

from centidb import errors, keylib
from centidb.keylib import Desc
import keyorder

IMPLS = keylib.available_implementations()
PURE = IMPLS['python']
FAST = IMPLS.get('speedups')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

needs_twin = pytest.mark.skipif(FAST is None, reason='centidb._speedups is not built')


def outcome(func, *args):
    try:
        return 'ok', repr(func(*args))
    except Exception as exc:
        return 'error', type(exc)


def assert_parity_and_round_trip(key, prefix=b''):
    data = PURE.packs(key, prefix)
    assert FAST.packs(key, prefix) == data
    assert outcome(PURE.unpacks_list, data, prefix) == outcome(FAST.unpacks_list, data, prefix)
    decoded = FAST.unpacks_list(data, prefix)
    keys = key if isinstance(key, list) else [key if isinstance(key, tuple) else (key,)]
    assert len(decoded) == len(keys)
    assert all(keyorder.same_key(a, tuple(b)) for a, b in zip(decoded, keys))


@needs_twin
def test_parity_random_float_bit_patterns():
    rnd = random.Random(20240101)
    for _ in range(20000):
        x = struct.unpack('<d', rnd.getrandbits(64).to_bytes(8, 'little'))[0]
        tiny = rnd.choice([1, -1]) * float.fromhex('0x1.%013xp-%d' % (rnd.getrandbits(52), rnd.randint(0, 1074)))
        for value in (x, tiny):
            assert_parity_and_round_trip((value, Desc(value)))


@needs_twin
def test_parity_ints_near_word_boundaries():
    for base in (2 ** 53, 2 ** 56, 2 ** 63, 2 ** 64, 2 ** 128):
        for delta in range(-40, 41):
            for n in (base + delta, -base + delta, -base - 1 + delta):
                assert_parity_and_round_trip((n, Desc(n), float(n), Desc(float(n))))


@needs_twin
@pytest.mark.parametrize('prefix', [b'', b'p' * 200, b'\xff' * 255])
def test_parity_long_strings_cross_stack_buffer(prefix):
    rnd = random.Random(7)
    alphabet = ['a', '\x00', '\x7f', '\x80', '\uffff', '\ud800', '\U0010ffff']
    for length in list(range(30, 320, 7)) + [1000, 5000]:
        text = ''.join(rnd.choice(alphabet) for _ in range(length))
        raw = text.encode('utf-8', 'surrogatepass')
        assert_parity_and_round_trip((text, Desc(text), raw, Desc(raw)), prefix)
        assert_parity_and_round_trip([(text,), (Desc(raw), 1)], prefix)


@needs_twin
def test_parity_many_element_keys():
    rnd = random.Random(3)
    pool = [None, True, False, 0, -1, 255, -257, 2 ** 64, 0.1, -0.0, float('nan'),
            'x', b'y', uuid.UUID(int=5), datetime.datetime(2000, 1, 1),
            datetime.date(2000, 1, 1), datetime.date.max]
    for size in (100, 255, 256, 257, 2000):
        key = tuple(rnd.choice(pool) for _ in range(size))
        key = tuple(Desc(x) if rnd.random() < 0.3 else x for x in key)
        assert_parity_and_round_trip(key)


_FUZZ = textwrap.dedent('''
    import random, sys
    from centidb import keylib, errors
    from centidb.keylib import Desc
    impls = keylib.available_implementations()
    P, F = impls['python'], impls['speedups']
    rnd = random.Random(int(sys.argv[1]))
    seeds = [P.packs(k) for k in [
        ('abc', 1, -1.5, Desc(0.1), Desc('xy'), b'\\xff' * 9, 2 ** 70, -2 ** 70),
        (None, True, -5e-324, Desc(5e-324), Desc(-2 ** 64 - 1), float('nan')),
        (keylib.unpacks(bytes.fromhex('38800660c819a170000184'
                                      '9c2c0600'))[0], Desc(-0.0), 'x' * 300),
        (keylib.unpacks(bytes.fromhex('3737b9db'))[0], 'd',
         Desc(keylib.unpacks(bytes.fromhex('37000001'))[0]), 7)]]
    special = [0x00, 0x01, 0x11, 0x19, 0x1a, 0x1b, 0x1c, 0x24, 0x30, 0x31, 0x37, 0x38,
               0x40, 0x7f, 0x80, 0x81, 0x82, 0xbf, 0xc0, 0xfe, 0xff]
    for _ in range(int(sys.argv[2])):
        d = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(d))
            op = rnd.randrange(4)
            if op == 0: d[i] = rnd.randrange(256)
            elif op == 1: d[i] = rnd.choice(special)
            elif op == 2: d.insert(i, rnd.choice(special))
            else: del d[i:i + rnd.randint(1, 3)]
            if not d: d = bytearray(b'\\x05')
        d = bytes(d)
        try:
            got = F.unpacks_list(d)
        except errors.CorruptKeyError:
            got = None
        if got is not None:
            assert F.packs(got if len(got) > 1 else got[0]) == d, d.hex()
        try:
            ref = P.unpacks_list(d)
        except errors.CorruptKeyError:
            ref = None
        assert repr(ref) == repr(got), d.hex()
    print('fuzz ok')
''')


@needs_twin
def test_twin_decoder_fuzz_in_subprocess():
    proc = subprocess.run([sys.executable, '-c', _FUZZ, '1', '30000'], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0 and 'fuzz ok' in proc.stdout, (proc.returncode, proc.stderr[-500:])


@pytest.mark.parametrize('last', [Desc(256), Desc(-256), Desc(uuid.UUID(int=0)),
                                  Desc(datetime.datetime(1970, 1, 1)), Desc(None),
                                  Desc(b'\xff'), Desc(''), Desc(2 ** 64)])
@pytest.mark.parametrize('collection', [b'', b'\xff', b'c\xff\xff'])
@pytest.mark.parametrize('kind', ['prefix', 'startswith'])
def test_prefix_range_of_desc_with_ff_heavy_inverted_encoding(last, collection, kind):
    if kind == 'startswith':
        if not isinstance(last.value, (str, bytes)):
            return
        lo, hi = keylib.startswith_range(('k', last), collection)
        matches = keyorder.starts_with
    else:
        lo, hi = keylib.prefix_range(('k', last), collection)
        matches = keyorder.has_prefix
    nxt = keylib.next_prefix(collection)
    assert lo.startswith(collection) and (nxt is None or hi <= nxt)
    inside = [('k', last), ('k', last, None), ('k', last, Desc(0)), ('k', last, 'z' * 50)]
    outside = [('k',), ('k', Desc(255)), ('k', Desc(257)), ('k', Desc(b'')), ('k', Desc(b'\xfe')),
               ('k', Desc(1)), ('l',), ('k', None), ('k', Desc(uuid.UUID(int=1)))]
    for key in inside:
        assert lo <= keylib.packs(key, collection) < hi
    for key in outside:
        if matches(key, ('k', last)):
            continue
        data = keylib.packs(key, collection)
        assert not (lo <= data and (hi is None or data < hi)), key


@needs_twin
@pytest.mark.parametrize('value', [datetime.date.min, datetime.date(2024, 2, 29),
                                   datetime.date.max])
def test_parity_on_every_byte_value_at_every_position_of_a_date(value):
    # Ordinals out of range (0, above date.max), truncations and bytes that
    # change the tag: both twins give the same key or the same error.
    for key in ((value,), (Desc(value),), ('a', value, 1)):
        data = PURE.packs(key)
        assert FAST.packs(key) == data
        for cut in range(len(data)):
            assert outcome(PURE.unpacks_list, data[:cut]) == outcome(FAST.unpacks_list, data[:cut])
        for i in range(len(data)):
            for b in range(256):
                mutated = data[:i] + bytes([b]) + data[i + 1:]
                assert (outcome(PURE.unpacks_list, mutated)
                        == outcome(FAST.unpacks_list, mutated)), mutated.hex()


def test_datetime_extremes_with_sub_minute_offsets_round_trip():
    td = datetime.timedelta
    offsets = [td(0), td(microseconds=1), td(microseconds=-1), td(seconds=30),
               td(hours=23, minutes=59, seconds=59, microseconds=999999),
               -td(hours=23, minutes=59, seconds=59, microseconds=999999)]
    values = [datetime.datetime.min, datetime.datetime.max, datetime.datetime(1970, 1, 1)]
    for impl in IMPLS.values():
        for base in values:
            for off in offsets:
                value = base.replace(tzinfo=datetime.timezone(off))
                (back,) = impl.unpacks(impl.packs(value))
                assert back == value and back.utcoffset() == off
                assert back.replace(tzinfo=None) == base


def test_unpacks_rejects_every_single_byte_change_of_a_float_canonically():
    for impl in IMPLS.values():
        for x in (0.1, -0.1, 5e-324, -5e-324, 1.5, -1.5, 2.0 ** 60 + 2 ** 8):
            data = bytearray(impl.packs(x))
            for i in range(len(data)):
                for b in range(256):
                    mutated = bytearray(data)
                    mutated[i] = b
                    try:
                        got = impl.unpacks_list(bytes(mutated))
                    except errors.CorruptKeyError:
                        continue
                    assert impl.packs(got if len(got) > 1 else got[0]) == bytes(mutated)


@pytest.mark.parametrize('name', sorted(IMPLS))
def test_overlong_float_fraction_is_rejected_quickly(name):
    data = b'\x1b\x82' + b'\xff' * 100_000
    with pytest.raises(errors.CorruptKeyError, match='longer than any double'):
        IMPLS[name].unpacks(data)


def test_float_fraction_group_limit_is_exactly_154():
    # 5e-324 needs all 154 groups; 154 groups that are not a double are
    # rejected as such, and a 155th group is refused before any arithmetic.
    assert keylib.unpacks(keylib.packs(5e-324)) == (5e-324,)
    assert len(keylib.packs(5e-324)) == 2 + 154
    with pytest.raises(errors.CorruptKeyError, match='not exactly representable'):
        keylib.unpacks(b'\x1b\x82' + b'\xff' * 154)
    with pytest.raises(errors.CorruptKeyError, match='longer than any double'):
        keylib.unpacks(b'\x1b\x82' + b'\xff' * 155)


@pytest.mark.parametrize('name', sorted(IMPLS))
def test_many_desc_elements_decode(name):
    key = tuple(Desc(i) for i in range(3000))
    assert IMPLS[name].unpacks(IMPLS[name].packs(key)) == key


@pytest.mark.parametrize('name', sorted(IMPLS))
def test_namedtuple_is_a_key(name):
    import collections
    Point = collections.namedtuple('Point', 'x y')
    assert IMPLS[name].packs(Point(1, 'a')) == IMPLS[name].packs((1, 'a'))
    assert IMPLS[name].packs([Point(1, 'a'), 2]) == IMPLS[name].packs([(1, 'a'), (2,)])


# --- through the active implementation (keylib.packs etc.), in both passes ------------

# Integers whose magnitude needs 256 bytes or more have a 2-byte (or longer)
# length after TAG_POS_BIG / TAG_NEG_BIG; negative ones are inverted throughout.
LONG_INTS = [
    (2 ** 2040 - 1, b'\x24\x01\xff' + b'\xff' * 255),
    (2 ** 2040, b'\x24\x02\x01\x00' + b'\x01' + b'\x00' * 255),
    (2 ** 2048 - 1, b'\x24\x02\x01\x00' + b'\xff' * 256),
    (2 ** 2048, b'\x24\x02\x01\x01' + b'\x01' + b'\x00' * 256),
    (2 ** 524288, b'\x24\x03\x01\x00\x01' + b'\x01' + b'\x00' * 65536),
    (-2 ** 2040, b'\x11\xfe\x00' + b'\x00' * 255),
    (-2 ** 2040 - 1, b'\x11\xfd\xfe\xff' + b'\xfe' + b'\xff' * 255),
    (-2 ** 2048, b'\x11\xfd\xfe\xff' + b'\x00' * 256),
    (-2 ** 2048 - 1, b'\x11\xfd\xfe\xfe' + b'\xfe' + b'\xff' * 256),
    (-2 ** 524288 - 1, b'\x11\xfc\xfe\xff\xfe' + b'\xfe' + b'\xff' * 65536),
]


@pytest.mark.parametrize('n,expected', LONG_INTS, ids=[
    '2**2040-1', '2**2040', '2**2048-1', '2**2048', '2**524288',
    '-2**2040', '-2**2040-1', '-2**2048', '-2**2048-1', '-2**524288-1'])
def test_ints_of_256_bytes_or_more_exact_bytes(n, expected):
    assert keylib.packs(n) == expected
    assert keylib.unpacks(expected) == (n,)
    desc = keylib.packs(Desc(n))
    assert desc == b'\x40' + expected.translate(bytes(range(255, -1, -1))) + b'\xff'
    assert keylib.unpacks(desc) == (Desc(n),)
    assert keylib.unpacks(keylib.packs((n, 1.5, 'x'))) == (n, 1.5, 'x')


def test_ints_around_the_two_byte_length_boundary_sort_and_round_trip():
    values = sorted({sign * (2 ** (8 * k) + delta) for k in (254, 255, 256, 257)
                     for delta in (-2, -1, 0, 1) for sign in (1, -1)})
    packed = [keylib.packs(n) for n in values]
    assert packed == sorted(packed) and len(set(packed)) == len(packed)
    assert [keylib.unpacks(p) for p in packed] == [(n,) for n in values]
    assert keylib.unpacks_list(keylib.packs([(values[0],), (values[-1],)])) == [
        (values[0],), (values[-1],)]


@pytest.mark.parametrize('data', [
    b'\x24\x00',                                   # no length bytes
    b'\x11\xff',
    b'\x24\x02\x00\xff' + b'\x01' * 255,           # length with a leading zero byte
    b'\x11\xfd\xff\x00' + b'\xfe' * 255,
    b'\x24\x01\x08' + b'\x01' * 8,                 # fits a short tag: not canonical
    b'\x11\xfe\xf7' + b'\xfe' * 8,
    b'\x24\x01\x09' + b'\x00' + b'\x01' * 8,       # magnitude with a leading zero byte
    b'\x11\xfe\xf6' + b'\xff' + b'\xfe' * 8,
    b'\x24\x02\x01\x00' + b'\x01' * 255,           # magnitude one byte short
    b'\x11\xfd\xfe\xff' + b'\xfe' * 255,
], ids=['pos-no-length', 'neg-no-length', 'pos-length-zero-byte', 'neg-length-zero-byte',
        'pos-short-fits', 'neg-short-fits', 'pos-magnitude-zero-byte', 'neg-magnitude-zero-byte',
        'pos-short-magnitude', 'neg-short-magnitude'])
def test_non_canonical_or_short_long_ints_raise(data):
    with pytest.raises(errors.CorruptKeyError):
        keylib.unpacks(data)
    with pytest.raises(errors.CorruptKeyError):
        keylib.unpacks_list(b'\x05\x01' + data)


def test_every_truncation_of_a_long_int_raises():
    for n in (2 ** 2040, -2 ** 2040 - 1, 2 ** 64, -2 ** 64 - 1):
        data = keylib.packs(n)
        for cut in range(1, len(data)):
            with pytest.raises(errors.CorruptKeyError):
                keylib.unpacks(data[:cut])


def test_unpacks_accepts_bytearray_and_memoryview():
    key = ('a', 2 ** 70, Desc(-1.5), None, b'\x00\xff')
    data = keylib.packs(key, b'P')
    for view in (bytearray(data), memoryview(data), memoryview(b'xx' + data + b'yy')[2:-2],
                 memoryview(bytearray(data))):
        assert keylib.unpacks(view, b'P') == key
        assert keylib.unpacks_list(view, b'P') == [key]
        assert keylib.unpacks(view[1:]) == key
    listed = keylib.packs([('a',), (Desc(1),)])
    assert keylib.unpacks_list(memoryview(listed)) == [('a',), (Desc(1),)]
    with pytest.raises(errors.CorruptKeyError, match='unpacks_list'):
        keylib.unpacks(memoryview(listed))
    with pytest.raises(errors.CorruptKeyError):
        keylib.unpacks(memoryview(data + b'\x7f'), b'P')
    with pytest.raises(errors.CorruptKeyError):
        keylib.unpacks(memoryview(data), b'Q')


@pytest.mark.parametrize('raw', [b'\xff', b'\x80', b'a\xc0\x80', b'\xe2\x82', b'\xf4\x90\x80\x80',
                                 b'\xf0\x9f\x98', b'abcdefgh\xfe'])
def test_invalid_utf8_under_the_str_tag_raises(raw):
    groups = keylib.packs(raw)[1:]           # the same 7-bit groups under the bytes tag
    assert keylib.unpacks(b'\x30' + groups) == (raw,)
    with pytest.raises(errors.CorruptKeyError):
        keylib.unpacks(b'\x31' + groups)
    with pytest.raises(errors.CorruptKeyError):
        keylib.unpacks(keylib.packs('ok') + b'\x31' + groups + keylib.packs(1))
    with pytest.raises(errors.CorruptKeyError):
        keylib.unpacks(b'\x40' + (b'\x31' + groups).translate(bytes(range(255, -1, -1))) + b'\xff')


def test_surrogate_utf8_under_the_str_tag_decodes():
    groups = keylib.packs(b'\xed\xa0\x80')[1:]
    assert keylib.unpacks(b'\x31' + groups) == ('\ud800',)
    assert keylib.packs('\ud800') == b'\x31' + groups
