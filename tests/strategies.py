"""Hypothesis strategies for key elements, skewed towards edge cases."""

import datetime
import uuid

from hypothesis import strategies as st

from centidb.keyformat import Desc

EDGE_INTS = sorted({sign * ((1 << k) + delta)
                    for k in list(range(0, 70)) + [100, 127, 128, 200]
                    for delta in (-1, 0, 1) for sign in (1, -1)} | {0})
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 0.1, -0.1,
               float('inf'), float('-inf'), float('nan'),
               5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
               -1.7976931348623157e308, 2.0 ** 53, 2.0 ** 53 + 2, -(2.0 ** 63),
               2.0 ** 64, 1 - 2.0 ** -53, -(1 - 2.0 ** -53), -(2.0 ** -60)]
EDGE_STRINGS = ['', '\x00', '\x00\x00', 'a', 'a\x00', 'ab', 'abc', 'b', '\x7f',
                '\x80', '\xff', '\uffff', '\ud800', '\udfff', '\U0001f600',
                '\U0010ffff', 'aaaaaaa', 'aaaaaaaa', 'aaaaaaaaa']
EDGE_BYTES = [b'', b'\x00', b'\x00\x00', b'\x01', b'\x7f', b'\x80', b'\xff',
              b'\xff\xff', b'\x00\xff', b'abcdefg', b'abcdefgh', b'\xff' * 9]
_EPOCH = datetime.datetime(1970, 1, 1)
EDGE_DATETIMES = [
    datetime.datetime.min, datetime.datetime.max, _EPOCH,
    _EPOCH - datetime.timedelta(microseconds=1),
    _EPOCH + datetime.timedelta(microseconds=1),
    _EPOCH.replace(tzinfo=datetime.timezone.utc),
    datetime.datetime.min.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=14))),
    datetime.datetime.max.replace(tzinfo=datetime.timezone(-datetime.timedelta(hours=23))),
]

# Dates at the range ends, around 1970, and where the ordinal's bytes carry.
EDGE_DATES = [datetime.date.min, datetime.date.max, datetime.date(1970, 1, 1),
              datetime.date(1969, 12, 31), datetime.date(2000, 2, 29)] + [
    datetime.date.fromordinal(n) for n in (2, 255, 256, 257, 65535, 65536, 65537,
                                           datetime.date.max.toordinal() - 1)]

offsets = st.timedeltas(min_value=-datetime.timedelta(hours=23, minutes=59),
                        max_value=datetime.timedelta(hours=23, minutes=59))
timezones = st.none() | st.just(datetime.timezone.utc) | offsets.map(datetime.timezone)

ints = st.sampled_from(EDGE_INTS) | st.integers() | st.integers(-2 ** 300, 2 ** 300)
floats = (st.sampled_from(EDGE_FLOATS) | st.floats()
          | st.floats(allow_subnormal=True, min_value=-1e-300, max_value=1e-300))
texts = st.sampled_from(EDGE_STRINGS) | st.text(
    st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()),
    max_size=20)
binaries = st.sampled_from(EDGE_BYTES) | st.binary(max_size=20)
datetimes = (st.sampled_from(EDGE_DATETIMES)
             | st.datetimes(timezones=timezones)
             | st.datetimes(min_value=datetime.datetime(1969, 12, 31, 23, 59),
                            max_value=datetime.datetime(1970, 1, 1, 0, 1),
                            timezones=timezones))
dates = st.sampled_from(EDGE_DATES) | st.dates()
uuids = st.uuids() | st.sampled_from([uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1)])

plain_elements = st.one_of(st.none(), st.booleans(), ints, floats, texts, binaries,
                           dates, datetimes, uuids)
elements = plain_elements | st.builds(Desc, plain_elements)
keys = st.lists(elements, max_size=4).map(tuple)
# Keys drawn from a small pool so that shared prefixes and ties are common.
small_elements = st.sampled_from([None, False, True, 0, 1, -1, 1.0, 0.5, -0.0, 0.0,
                                  '', 'a', 'ab', 'b', b'', b'a', b'ab',
                                  Desc('a'), Desc('ab'), Desc(1), Desc(1.0), Desc(None),
                                  datetime.date(2000, 1, 1), datetime.date(2000, 1, 2),
                                  datetime.datetime(2000, 1, 1), Desc(datetime.date(2000, 1, 1)),
                                  Desc(datetime.date(2000, 1, 2))])
clustered_keys = st.lists(small_elements | elements, max_size=4).map(tuple)
