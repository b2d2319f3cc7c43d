"""Tests of the key codec through ``centidb.keylib``, whichever implementation
is active (the README test command runs this file once per implementation)."""

import csv
import datetime
import decimal
import math
import os
import uuid

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from centidb import errors, keylib
from centidb.keylib import Desc, next_prefix, packs, prefix_range
import keyorder
import strategies

VECTORS_PATH = os.path.join(os.path.dirname(__file__), 'key_vectors.csv')
_VECTOR_NAMES = {'datetime': datetime, 'UUID': uuid.UUID, 'Desc': Desc,
                 'inf': math.inf, 'nan': math.nan, '__builtins__': {}}


def load_vectors():
    with open(VECTORS_PATH, newline='', encoding='utf-8') as fp:
        rows = list(csv.DictReader(fp))
    return [(row['case'], eval(row['key'], dict(_VECTOR_NAMES)), bytes.fromhex(row['bytes']))
            for row in rows]


VECTORS = load_vectors()


def unpacks(data, prefix=b''):
    # Look the function up at call time: keylib chooses the implementation.
    return keylib.unpacks(data, prefix)


def unpacks_list(data, prefix=b''):
    return keylib.unpacks_list(data, prefix)


def assert_decodes_canonically_or_raises(data):
    """Bytes either raise CorruptKeyError or are the exact encoding of a key."""
    try:
        decoded = unpacks_list(data)
    except errors.CorruptKeyError:
        return None
    assert packs(decoded if len(decoded) > 1 else decoded[0]) == data
    return decoded


# --- golden vectors and hand-checked bytes ----------------------------------------

@pytest.mark.parametrize('case,key,expected', VECTORS, ids=[v[0] for v in VECTORS])
def test_golden_vector(case, key, expected):
    assert packs(key) == expected
    if isinstance(key, list):
        decoded = unpacks_list(expected)
        assert len(decoded) == len(key)
        assert all(keyorder.same_key(a, b) for a, b in zip(decoded, key))
    else:
        assert keyorder.same_key(unpacks(expected), key)


def test_vectors_cover_every_tag():
    from centidb import keyformat
    tags = {value for name, value in keyformat.FORMAT_CONSTANTS.items()
            if name.startswith('TAG_')}
    first_bytes = {data[0] for _, key, data in VECTORS if data}
    assert tags - first_bytes == set()


def test_hand_checked_bytes():
    assert packs(7) == b'\x1c\x07'
    assert packs(-1) == b'\x1a'
    assert packs(None) == b'\x05'
    assert packs('a') == bytes([0x31, 0x80 | (ord('a') >> 1), 0x80 | ((ord('a') & 1) << 6)])
    assert packs(('a', 1)) == packs('a') + packs(1)
    assert packs([('a',), (1,)]) == packs('a') + b'\x01' + packs(1)
    assert packs(1, prefix=b'P') == b'P\x1c\x01'


# --- round trip ------------------------------------------------------------------

@given(strategies.keys)
def test_round_trip(key):
    decoded = unpacks(packs(key))
    assert keyorder.same_key(decoded, key)


@given(st.lists(strategies.keys, min_size=1, max_size=4))
def test_round_trip_list_of_keys(key_list):
    decoded = unpacks_list(packs(key_list))
    assert len(decoded) == len(key_list)
    assert all(keyorder.same_key(a, b) for a, b in zip(decoded, key_list))


@given(strategies.keys, st.binary(max_size=5))
def test_round_trip_with_prefix(key, prefix):
    data = packs(key, prefix)
    assert data.startswith(prefix)
    assert keyorder.same_key(unpacks(data, prefix), key)


def test_bare_element_is_a_one_tuple():
    assert packs('x') == packs(('x',))
    assert unpacks(packs('x')) == ('x',)
    assert packs(['x', ('y', 1)]) == packs([('x',), ('y', 1)])


def test_datetime_round_trip_keeps_offset_and_naivety():
    aware = datetime.datetime(1901, 2, 3, 4, 5, 6, 7,
                              tzinfo=datetime.timezone(datetime.timedelta(hours=-3, seconds=-1)))
    naive = datetime.datetime(2200, 1, 1, 0, 0, 0, 999999)
    (a, n) = unpacks(packs((aware, naive)))
    assert a == aware and a.utcoffset() == aware.utcoffset()
    assert n == naive and n.tzinfo is None


def test_datetime_utc_offset_must_be_strictly_within_a_day():
    day, tick = datetime.timedelta(days=1), datetime.timedelta(microseconds=1)

    def with_offset(offset):
        # datetime.utcoffset() itself refuses a whole day; a subclass need not.
        class Odd(datetime.datetime):
            def utcoffset(self):
                return offset
        return Odd(2000, 1, 2)

    for offset in (day, -day):
        with pytest.raises(errors.KeyEncodingError, match='not within a day'):
            packs(with_offset(offset))
    for offset in (day - tick, -day + tick):
        (back,) = unpacks(packs(with_offset(offset)))
        assert back.utcoffset() == offset and back == datetime.datetime(
            2000, 1, 2, tzinfo=datetime.timezone(offset))
    # The decoder refuses a stored offset of a whole day either way.
    instant = packs(datetime.datetime(2000, 1, 2, tzinfo=datetime.timezone.utc))[:10]
    for offset_us, ok in ((86_400_000_000, False), (-86_400_000_000, False),
                          (86_399_999_999, True), (-86_399_999_999, True)):
        data = instant + (offset_us + (1 << 39)).to_bytes(5, 'big')
        if ok:
            assert unpacks(data)[0].utcoffset() == datetime.timedelta(microseconds=offset_us)
        else:
            with pytest.raises(errors.CorruptKeyError, match='UTC offset out of range'):
                unpacks(data)


def test_date_exact_bytes():
    # The tag, then date.toordinal() (1 is 0001-01-01) in 3 bytes, big-endian.
    assert packs(datetime.date(1, 1, 1)) == b'\x37\x00\x00\x01'
    assert packs(datetime.date(1970, 1, 1)) == b'\x37' + (719163).to_bytes(3, 'big')
    assert packs(datetime.date.max) == b'\x37\x37\xb9\xdb'
    assert packs(Desc(datetime.date(1, 1, 1))) == b'\x40\xc8\xff\xff\xfe\xff'
    assert packs(('a', datetime.date(1, 1, 1), 1)) == packs('a') + b'\x37\x00\x00\x01' + packs(1)


@given(strategies.dates, strategies.dates)
@example(datetime.date.fromordinal(255), datetime.date.fromordinal(256))
@example(datetime.date.fromordinal(65535), datetime.date.fromordinal(65536))
@example(datetime.date.min, datetime.date.max)
def test_dates_sort_as_dates_and_round_trip(a, b):
    pa, pb = packs(a), packs(b)
    assert _sign((pa > pb) - (pa < pb)) == _sign((a > b) - (a < b))
    da, db = packs(Desc(a)), packs(Desc(b))
    assert _sign((da > db) - (da < db)) == _sign((b > a) - (b < a))
    for value in (a, Desc(a), (a, b), (Desc(b), a, 'x')):
        back = unpacks(packs(value))
        assert keyorder.same_key(back, value if isinstance(value, tuple) else (value,))
    (back,) = unpacks(packs(a))
    assert type(back) is datetime.date and back == a


def test_dates_are_their_own_kind_between_str_and_datetime():
    day = datetime.date(2024, 1, 1)
    midnight = datetime.datetime(2024, 1, 1)
    assert packs('\U0010ffff' * 3) < packs(datetime.date.min)
    assert packs(datetime.date.max) < packs(datetime.datetime.min)
    assert packs(day) != packs(midnight)
    assert unpacks(packs((day, midnight))) == (day, midnight)
    assert type(unpacks(packs(midnight))[0]) is datetime.datetime


@pytest.mark.parametrize('ordinal', [0, datetime.date.max.toordinal() + 1, 0xFFFFFF])
def test_date_ordinal_out_of_range_raises(ordinal):
    payload = ordinal.to_bytes(3, 'big')
    for data in (b'\x37' + payload, packs('a') + b'\x37' + payload + packs(1),
                 b'\x40' + (b'\x37' + payload).translate(bytes(range(255, -1, -1))) + b'\xff'):
        with pytest.raises(errors.CorruptKeyError, match='date out of range'):
            unpacks(data)
        with pytest.raises(errors.CorruptKeyError, match='date out of range'):
            unpacks_list(data)


@pytest.mark.parametrize('value', [datetime.date.min, datetime.date(2024, 2, 29),
                                   datetime.date.max])
def test_every_truncation_of_a_date_raises(value):
    element = packs(value)
    for before, after in ((b'', b''), (packs('a'), b''), (b'', packs('a'))):
        data = before + element + after
        for cut in range(len(before) + 1, len(before) + len(element)):
            with pytest.raises(errors.CorruptKeyError, match='truncated'):
                unpacks(data[:cut])
    desc = packs(Desc(value))
    for cut in range(1, len(desc)):
        with pytest.raises(errors.CorruptKeyError):
            unpacks(desc[:cut])


def test_lone_surrogates_round_trip():
    for text in ['\ud800', 'a\udfffb', '\ud83d\ude00', '\udc80' * 3]:
        assert unpacks(packs(text)) == (text,)


# --- order -----------------------------------------------------------------------

def _sign(x):
    return (x > 0) - (x < 0)


@given(strategies.clustered_keys, strategies.clustered_keys)
@example((1,), (1.0,))
@example((True,), (1.5,))
@example((-0.0,), (0,))
@example(('a',), ('a', None))
@example((Desc('a'),), (Desc('ab'),))
@example((Desc(1),), (Desc(1.0),))
@example((float('nan'),), (float('inf'),))
def test_byte_order_equals_reference_order(a, b):
    pa, pb = packs(a), packs(b)
    assert _sign((pa > pb) - (pa < pb)) == keyorder.compare_keys(a, b)


@given(st.lists(strategies.keys, max_size=12))
def test_sorting_by_bytes_sorts_keys(key_list):
    by_bytes = sorted(key_list, key=packs)
    by_reference = sorted(key_list, key=keyorder.sort_key)
    assert [packs(k) for k in by_bytes] == [packs(k) for k in by_reference]


def test_numbers_interleave_and_tie_rule():
    ordered = [-math.inf, -2 ** 100, -1.5, -1, -1.0, -0.5, 0, False, -0.0, 0.0,
               5e-324, 0.5, 1, True, 1.0, 1.5, 2, 2 ** 100, math.inf, math.nan]
    packed = [packs(x) for x in ordered]
    assert packed == sorted(packed)
    assert len(set(packed)) == len(packed)


def test_cross_kind_order_table():
    ordered = [None, -math.inf, 0, math.nan, b'', b'\xff', '', '\U0010ffff',
               datetime.date.min, datetime.date.max, datetime.datetime(1, 1, 1),
               uuid.UUID(int=0), Desc(datetime.date.max), Desc(datetime.date.min),
               Desc('z'), Desc(None)]
    packed = [packs(x) for x in ordered]
    assert packed == sorted(packed)


def test_tuple_sorts_before_its_extensions():
    assert packs(('a',)) < packs(('a', None)) < packs(('a', 0))
    assert packs(()) < packs((None,))
    assert packs([('a',), ('z',)]) < packs(('a', None))


@given(strategies.texts, strategies.texts)
def test_desc_strings_reverse_order(a, b):
    pa, pb = packs((Desc(a), 1)), packs((Desc(b), 1))
    assert _sign((pa > pb) - (pa < pb)) == _sign((b > a) - (b < a))


def test_desc_prefix_strings():
    assert packs(Desc('ab')) < packs(Desc('a')) < packs(Desc(''))
    assert packs((Desc('a'), 'z')) < packs((Desc(''), 'a'))


# --- prefix property and prefix ranges ------------------------------------------------

@given(strategies.keys, strategies.keys)
def test_packed_key_is_prefix_of_its_extensions(t, u):
    assert packs(t + u).startswith(packs(t))


def _in_range(data, bounds):
    lo, hi = bounds
    return lo <= data and (hi is None or data < hi)


@given(strategies.clustered_keys, strategies.clustered_keys, st.binary(max_size=2))
@example(('ab',), ('ab',), b'')
@example(('ab',), ('ab', 1), b'')
@example(('ab',), ('abc', 2), b'')
@example(('ab',), ('ac',), b'')
@example((1,), (1.0,), b'')
@example((Desc('ab'),), (Desc('abc'),), b'')
@example((b'\xff',), (b'\xff\xff',), b'\xff')
def test_prefix_range_matches_reference(prefix, key, collection_prefix):
    bounds = prefix_range(prefix, collection_prefix)
    expected = keyorder.has_prefix(key, prefix)
    assert _in_range(packs(key, collection_prefix), bounds) == expected
    # Index entries (index tuple, record key) obey the same bound.
    entry = packs([key, ('record', 1)], collection_prefix)
    assert _in_range(entry, bounds) == expected


def _string_last(key):
    last = key[-1] if key else None
    inner = last.value if isinstance(last, Desc) else last
    return isinstance(inner, (str, bytes))


@given(strategies.clustered_keys, strategies.clustered_keys, st.binary(max_size=2))
@example(('ab',), ('ab',), b'')
@example(('ab',), ('ab', 1), b'')
@example(('ab',), ('abc', 2), b'')
@example(('ab',), ('ac',), b'')
@example((Desc('ab'),), (Desc('abc'),), b'')
@example((b'\xff',), (b'\xff\xff',), b'\xff')
def test_startswith_range_matches_reference(prefix, key, collection_prefix):
    if not _string_last(prefix):
        with pytest.raises((TypeError, ValueError)):
            keylib.startswith_range(prefix, collection_prefix)
        return
    bounds = keylib.startswith_range(prefix, collection_prefix)
    expected = keyorder.starts_with(key, prefix)
    assert _in_range(packs(key, collection_prefix), bounds) == expected
    entry = packs([key, ('record', 1)], collection_prefix)
    assert _in_range(entry, bounds) == expected


@given(strategies.keys, strategies.keys)
def test_prefix_range_contains_every_extension(prefix, rest):
    assert _in_range(packs(prefix + rest), prefix_range(prefix))
    if _string_last(prefix):
        assert _in_range(packs(prefix + rest), keylib.startswith_range(prefix))


def test_prefix_range_examples_from_spec():
    bounds = prefix_range('ab')
    assert _in_range(packs(('ab',)), bounds)
    assert _in_range(packs(('ab', 1)), bounds)
    assert _in_range(packs(('ab', 'c')), bounds)
    assert not _in_range(packs(('abc', 2)), bounds)
    assert not _in_range(packs(('ac',)), bounds)
    assert not _in_range(packs(('aa', 'z')), bounds)
    assert bounds == (packs('ab'), packs('ab') + b'\x80')


def test_startswith_range_examples_from_spec():
    bounds = keylib.startswith_range('ab')
    assert _in_range(packs(('ab',)), bounds)
    assert _in_range(packs(('ab', 1)), bounds)
    assert _in_range(packs(('abc', 2)), bounds)
    assert not _in_range(packs(('ac',)), bounds)
    assert not _in_range(packs(('aa', 'z')), bounds)
    bounds = keylib.startswith_range((1, b'x'))
    assert _in_range(packs((1, b'xyz')), bounds)
    assert not _in_range(packs((1, 'xyz')), bounds)
    assert not _in_range(packs((2, b'xyz')), bounds)


def test_startswith_range_refuses_a_non_string_last_element():
    with pytest.raises(TypeError, match='startswith'):
        keylib.startswith_range(('a', 1))
    with pytest.raises(TypeError, match='startswith'):
        keylib.startswith_range(Desc(1))
    with pytest.raises(ValueError, match='startswith'):
        keylib.startswith_range(())


def test_prefix_range_stays_inside_collection_prefix():
    lo, hi = prefix_range((), b'coll')
    assert (lo, hi) == (b'coll', b'colm')
    assert prefix_range(()) == (b'', None)


def test_prefix_range_of_a_number_excludes_bools_and_floats_with_its_integer_part():
    assert prefix_range(1) == (b'\x1c\x01', b'\x1c\x01\x80')
    assert prefix_range(Desc(1)) == (b'\x40\xe3\xfe\xff', b'\x40\xe3\xfe\xff\x80')
    for number, inside, outside in [
            (1, [(1,), (1, 'x'), (1, None)], [(True,), (1.0,), (1.5,), (2,)]),
            (0, [(0,), (0, b'')], [(False,), (-0.0,), (0.0,), (0.5,), (1,)])]:
        lo, hi = prefix_range(number)
        assert all(lo <= packs(key) < hi for key in inside)
        assert not any(lo <= packs(key) < hi for key in outside)


def test_upper_bound_and_after_key_exact_bytes():
    assert keylib.upper_bound(1) == b'\x1c\x01'
    assert keylib.upper_bound(1, include=True) == b'\x1c\x01\x02'
    assert keylib.upper_bound((1, 'a'), b'P', True) == b'P' + packs((1, 'a')) + b'\x02'
    assert keylib.after_key(b'ab') == b'ab\x02'


@given(strategies.clustered_keys, strategies.clustered_keys, st.booleans())
def test_upper_bound_matches_reference(bound, key, include):
    limit = keylib.upper_bound(bound, b'P', include)
    order = keyorder.compare_keys(key, bound)
    expected = order < 0 or (include and order == 0)
    assert (packs(key, b'P') < limit) == expected
    # An index entry (key, record key) is admitted exactly like its key.
    assert (packs([key, ('rec',)], b'P') < limit) == expected


def test_next_prefix():
    assert next_prefix(b'a') == b'b'
    assert next_prefix(b'aX') == b'aY'
    assert next_prefix(b'\x00X\xff') == b'\x00Y'
    assert next_prefix(b'a\xff\xff') == b'b'
    assert next_prefix(b'\xff') is None
    assert next_prefix(b'') is None


# --- size -------------------------------------------------------------------------

def test_small_ints_are_compact():
    for n in range(241):
        assert len(packs(n)) <= 2


@given(strategies.texts | st.text(max_size=300))
def test_strings_cost_at_most_15_percent_over_utf8(text):
    raw = text.encode('utf-8', 'surrogatepass')
    assert len(packs(text)) <= math.ceil(len(raw) * 8 / 7) + 1
    assert len(packs(text)) <= 1.15 * len(raw) + 2


# --- bad input -----------------------------------------------------------------------

@pytest.mark.parametrize('bad', [
    [1], {'a': 1}, {1}, (1, 2), datetime.time(1),
    decimal.Decimal('1.5'), object(), bytearray(b'x'), 1j, datetime.timedelta(1),
])
def test_unsupported_types_raise_type_error_naming_type(bad):
    with pytest.raises(TypeError) as info:
        packs(('ok', bad))
    assert type(bad).__name__ in str(info.value)
    assert isinstance(info.value, errors.UnsupportedKeyTypeError)


def test_unsupported_type_message_lists_the_supported_types():
    with pytest.raises(errors.UnsupportedKeyTypeError) as info:
        packs(object())
    assert str(info.value).endswith(
        "supported types: None, bool, int, float, bytes, str, uuid.UUID, "
        "datetime.date, datetime.datetime, centidb.keylib.Desc")


def test_available_implementations_lists_the_built_twin():
    # The parity tests skip themselves when 'speedups' is missing here, so a
    # twin that is built but not listed must fail loudly instead.
    from centidb import impl
    impls = keylib.available_implementations()
    assert impls['python'] is keylib.PYTHON
    assert (keylib.PYTHON.packs.__module__, keylib.PYTHON.unpacks.__name__,
            keylib.PYTHON.unpacks_list.__name__) == ('centidb.keylib', 'unpacks', 'unpacks_list')
    compiled = impl.compiled_module()
    if compiled is None:
        assert sorted(impls) == ['python']
    else:
        assert sorted(impls) == ['python', 'speedups']
        fast = impls['speedups']
        assert (fast.packs, fast.unpacks, fast.unpacks_list) == (
            compiled.packs, compiled.unpacks, compiled.unpacks_list)
    if keylib.IMPL == 'speedups':
        assert keylib.packs is impls['speedups'].packs
    else:
        assert keylib.packs is keylib.PYTHON.packs


def test_desc_cannot_wrap_desc():
    with pytest.raises(TypeError):
        Desc(Desc(1))
    sneaky = Desc(1)
    sneaky.value = Desc(2)
    with pytest.raises(TypeError):
        packs(sneaky)


def test_bad_arguments():
    with pytest.raises(ValueError):
        packs([])
    with pytest.raises(TypeError):
        packs(1, prefix='p')
    with pytest.raises(TypeError):
        unpacks('not bytes')
    with pytest.raises(errors.CorruptKeyError):
        unpacks(packs(1, b'A'), b'B')
    with pytest.raises(errors.CorruptKeyError, match='unpacks_list'):
        unpacks(packs([1, 2]))


def test_subclasses_encode_as_base_type():
    class MyInt(int):
        pass

    class MyStr(str):
        pass

    assert packs((MyInt(5), MyStr('x'))) == packs((5, 'x'))


@given(strategies.keys)
def test_every_truncation_raises_or_is_canonical(key):
    data = packs(key)
    for cut in range(len(data)):
        assert_decodes_canonically_or_raises(data[:cut])


@pytest.mark.parametrize('case,key,data', VECTORS, ids=[v[0] for v in VECTORS])
def test_truncated_single_element_vectors_raise(case, key, data):
    # A single fixed-size element cut inside its payload can only be invalid.
    if not isinstance(key, tuple) or len(key) != 1:
        return
    value = key[0].value if isinstance(key[0], Desc) else key[0]
    if isinstance(value, (str, bytes, float, bool)) or value is None:
        return
    for cut in range(1, len(data)):
        with pytest.raises(errors.CorruptKeyError):
            unpacks(data[:cut])


def test_every_truncation_of_every_vector_raises_or_is_canonical():
    # A cut at an element boundary (or inside a string or float fraction at a
    # 7-bit group boundary) is another valid key; anything else must raise.
    for _, _, data in VECTORS:
        for cut in range(len(data)):
            try:
                decoded = keylib.unpacks_list(data[:cut])
            except errors.CorruptKeyError:
                continue
            assert keylib.packs(decoded if len(decoded) > 1 else decoded[0]) == data[:cut]


@given(st.binary(max_size=40))
@example(b'\x80')
@example(b'\x1c\x00')
@example(b'\x31\x80')
@example(b'\x1c\x02\x80')
@example(b'\x1b\x82\x80')
@example(b'\x40\x40')
@example(b'\x24\x01\x08' + b'\x01' * 8)
@example(b'\x24\xff')
@example(b'\x38' + b'\xff' * 9)
@example(b'\x37\x00\x00\x00')
@example(b'\x37\xff\xff\xff')
@example(b'\x37\x37\xb9\xdc')
@example(b'\x40\xc8\xff\xff\xff\xff')
def test_random_bytes_raise_or_are_canonical(data):
    assert_decodes_canonically_or_raises(data)


@given(strategies.keys, st.integers(0, 1000), st.integers(0, 255))
def test_corrupted_byte_raises_or_is_canonical(key, where, value):
    data = bytearray(packs(key))
    assume(data)
    data[where % len(data)] = value
    assert_decodes_canonically_or_raises(bytes(data))


def test_specific_corruptions_raise():
    for data in [b'\x1c', b'\x1d\x01', b'\x1c\x00', b'\x19\xff', b'\x31\x80',
                 b'\x1c\x02\x80', b'\x1b\x81\x80', b'\x1c\x01\x81', b'\x1b\x82\x80',
                 b'\x40\x40\xff', b'\x40\xfa', b'\x39\x00', b'\x38\x80', b'\x7f',
                 b'\x24\x01\x08' + b'\x01' * 8, b'\x31\xfe\xbf',
                 b'\x37', b'\x37\x00', b'\x37\x00\x00', b'\x37\x00\x00\x00',
                 b'\x37\x37\xb9\xdc', b'\x40\xc8\xff\xff\xfe', b'\x40\xc8\xff\xff\xff\xff']:
        with pytest.raises(errors.CorruptKeyError):
            unpacks(data)


def test_decoding_never_mutates_shared_byte_objects():
    # Regression: the compiled decoder once inverted Desc payloads in place
    # inside CPython's cached one-byte bytes objects.
    for value in [Desc(2 ** 64), Desc(-2 ** 64 - 1), Desc(uuid.UUID(int=1)),
                  Desc(datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc))]:
        assert keyorder.same_key(unpacks(packs(value)), (value,))
    assert all(bytes([i])[0] == i for i in range(256))
    assert packs(-1) == b'\x1a'


@pytest.mark.parametrize('keys,size', [
    ([('a', 1), (2,)], 1), ([('a', 1), (2,)], 2), ([('a', 1), (2,)], 3),
    ([(keylib.Desc('x'), -1.5), ('r',)], 1), ([(), (1,)], 1)])
def test_decode_group_keeps_the_group_and_where_it_ends(keys, size):
    data = keylib.packs(keys, b'\x10')
    group, end = keylib.decode_group(data, b'\x10', size, 2)
    assert group == keys[0][:size]
    assert data[:end] == keylib.packs(group, b'\x10')


@pytest.mark.parametrize('data,parts', [
    (keylib.packs([('a',), (1,)], b'\x10'), 3),     # another number of keys
    (keylib.packs(('a',), b'\x10'), 2),
    (keylib.packs([('a',), (1,)], b'\x11'), 2),     # another prefix
    (keylib.packs([('a',), (1,)], b'\x10')[:-1], 2),    # truncated record key
    (b'\x10\x7f', 1)])                              # unknown tag
def test_decode_group_refuses_what_unpacks_list_refuses(data, parts):
    assert keylib.decode_group(data, b'\x10', 1, parts) is None


# --- pack_entry: the record layer's form of packs ----------------------------------

@given(strategies.keys | strategies.elements, st.binary(max_size=5), st.binary(max_size=5))
def test_pack_entry_is_the_key_packed_under_the_prefix_then_the_tail(key, prefix, tail):
    """A tuple is the key; any other value one element of it."""
    as_tuple = key if isinstance(key, tuple) else (key,)
    assert keylib.pack_entry(key, prefix, tail) == packs(as_tuple, prefix) + tail
    assert keylib.pack_entry(key, prefix, tail).startswith(prefix)


def test_pack_entry_takes_a_namedtuple_as_a_key_and_a_list_as_one_element():
    import collections
    pair = collections.namedtuple('pair', 'a b')
    assert keylib.pack_entry(pair(1, 'x'), b'p', b'!') == packs((1, 'x'), b'p') + b'!'
    with pytest.raises(errors.UnsupportedKeyTypeError):
        keylib.pack_entry([1, 2], b'p', b'')        # never a list of keys
    with pytest.raises(TypeError):
        keylib.pack_entry(1, 'p', b'')
    with pytest.raises(TypeError):
        keylib.pack_entry(1, b'p', 'tail')
