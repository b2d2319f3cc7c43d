"""centidb.expr: F() expressions, and which records they match."""

import datetime
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from centidb import keylib
from centidb.expr import (
    MISSING, And, Between, Compare, Contains, Exists, F, IsIn, Not, Or, StartsWith, sort_key,
)

RECORD = {'n': 5, 'f': 2.5, 'none': None, 's': 'abc', 'b': b'ab', 'tags': ['red', 1, None],
          'empty': [], 'addr': {'city': 'Leeds', 'zip': None}, 'd': {'x': 1}, 'yes': True}


@pytest.mark.parametrize('expr, expected', [
    (F('n') == 5, True), (F('n') == 5.0, False),       # the codec's equality: 5 is not 5.0
    (F('n') != 5, False), (F('n') != 6, True),
    (F('n') < 6, True), (F('n') <= 5, True), (F('n') > 5, False), (F('n') >= 5, True),
    (F('f') > 2, True), (F('f') < 3, True),              # ints and floats share one order
    (F('none') == None, True), (F('none') != None, False),  # noqa: E711  a stored None is a value
    (F('none') < 0, True),                               # None sorts before numbers
    (F('s') > 10 ** 30, True),                           # strings sort after numbers
    (F('s') > b'zz', True),                              # ... and after bytes
    (F('s') == 'abc', True), (F('b') == b'ab', True), (F('b') == 'ab', False),
    (F('addr.city') == 'Leeds', True), (F('addr.zip') == None, True),  # noqa: E711
    (F('missing') == 1, False), (F('missing') != 1, False),  # a missing field: always false
    (F('addr.missing') != 1, False), (F('s.x') == 1, False),
    (F('tags') == 'red', False), (F('tags') != 'red', False),  # a list has no place in the order
    (F('d') == 1, False), (F('d') != 1, False),
    (F('yes') == True, True), (F('yes') == 1, False),    # noqa: E712
    (F('n').between(5, 5), True), (F('n').between(1, 4), False), (F('n').between(6, 1), False),
    (F('missing').between(None, 'z'), False),
    (F('n').is_in([1, 5]), True), (F('n').is_in([]), False), (F('n').is_in(['5', 5.0]), False),
    (F('none').is_in([None]), True), (F('missing').is_in([None]), False),
    (F('s').startswith('ab'), True), (F('s').startswith(''), True),
    (F('s').startswith('b'), False), (F('s').startswith(b'ab'), False),
    (F('b').startswith(b'a'), True), (F('n').startswith('5'), False),
    (F('missing').startswith(''), False),
    (F('tags').contains('red'), True), (F('tags').contains(None), True),
    (F('tags').contains(1.0), False), (F('tags').contains('blue'), False),
    (F('empty').contains(None), False), (F('s').contains('a'), False),
    (F('none').exists(), True), (F('missing').exists(), False), (F('addr.zip').exists(), True),
    (~(F('missing') == 1), True), (~(F('n') == 5), False),  # ~ is plain negation
    ((F('n') == 5) & (F('s') == 'abc'), True), ((F('n') == 5) & (F('s') == 'x'), False),
    ((F('n') == 4) | (F('s') == 'abc'), True), ((F('n') == 4) | (F('s') == 'x'), False),
    (~((F('n') == 4) | ~F('s').exists()), True),
])
def test_what_an_expression_matches(expr, expected):
    assert expr.matches(RECORD) is expected


@pytest.mark.parametrize('record', [None, 5, 'abc', ['n'], ('n',), b'n'])
def test_a_record_that_is_not_a_dict_has_no_fields(record):
    assert not (F('n') == 5).matches(record) and not F('n').exists().matches(record)
    assert (~F('n').exists()).matches(record)


def test_combinations_flatten_and_print():
    a, b, c = F('a') == 1, F('b') > 2, F('c').exists()
    assert (a & b & c) == And(a, b, c) and (a & b & c).exprs == (a, b, c)
    assert (a | b | c) == Or(a, b, c) and ((a | b) & c).exprs == (Or(a, b), c)
    assert repr((a | ~b) & c) == "((F('a') == 1) | ~(F('b') > 2)) & F('c').exists()"
    assert repr(F('x').is_in([2, 1])) == "F('x').is_in([2, 1])"
    assert repr(F('x').between(1, 'z')) == "F('x').between(1, 'z')"
    assert (F('x') == 1) == Compare(F('x'), '==', 1) and (F('x') == 1) != (F('x') == 1.0)
    assert hash(F('x') == 1) == hash(Compare(F('x'), '==', 1))
    assert F('x').is_in([1, 1, 2]) == IsIn(F('x'), (2, 1))
    assert Not(a).expr is a and isinstance(F('s').startswith('a'), StartsWith)
    assert isinstance(F('t').contains(1), Contains) and isinstance(F('e').exists(), Exists)
    assert isinstance(F('b').between(1, 2), Between)
    assert F('a.b').parts == ('a', 'b') and F('a.b').value({'a': {'b': 3}}) == 3
    assert F('a.b').value({'a': 3}) is MISSING


@pytest.mark.parametrize('make, error, words', [
    (lambda: F(''), ValueError, 'empty part'),
    (lambda: F('a..b'), ValueError, 'empty part'),
    (lambda: F(3), TypeError, "not 'int'"),
    (lambda: F('a') == [1], TypeError, r"F\('a'\) ==: \[1\] cannot be compared"),
    (lambda: F('a') < {'x': 1}, TypeError, 'cannot be compared'),
    (lambda: F('a') == (1, 2), TypeError, 'cannot be compared'),
    (lambda: F('a').between(1, [2]), TypeError, 'high end'),
    (lambda: F('a').is_in([1, object()]), TypeError, r'is_in\(\)'),
    (lambda: F('a').is_in('abc'), TypeError, 'iterable of values'),
    (lambda: F('a').is_in(5), TypeError, 'iterable of values'),
    (lambda: F('a').startswith(1), TypeError, 'str or bytes'),
    (lambda: F('a').contains([1]), TypeError, 'cannot be compared'),
    (lambda: Compare(F('a'), '=~', 1), ValueError, "unknown operator '=~'"),
    (lambda: Compare('a', '==', 1), TypeError, 'expected F'),
    (lambda: (F('a') == 1) & True, TypeError, "& combines expressions, not 'bool'"),
    (lambda: (F('a') == 1) | 'x', TypeError, r'\| combines'),
    (lambda: Not(3), TypeError, '~ combines'),
    (lambda: And(), ValueError, 'at least one'),
    (lambda: Or(), ValueError, 'at least one'),
    (lambda: bool(F('a') == 1), TypeError, 'no truth value'),
    (lambda: (F('a') == 1) and (F('b') == 2), TypeError, 'no truth value'),
    (lambda: 1 < F('a') < 3, TypeError, 'no truth value'),
    (lambda: bool(F('a')), TypeError, 'no truth value'),
    (lambda: {F('a')}, TypeError, 'unhashable'),
])
def test_bad_expressions_name_what_is_wrong(make, error, words):
    with pytest.raises(error, match=words):
        make()


# Values of every key type, and some that are not (lists, dicts, tuples).
KEY_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=False),
    st.text(max_size=4), st.binary(max_size=4), st.uuids(),
    st.datetimes(min_value=datetime.datetime(1, 1, 2)), st.dates())
ANY_VALUES = st.one_of(KEY_VALUES, st.lists(KEY_VALUES, max_size=3),
                       st.dictionaries(st.text(max_size=2), KEY_VALUES, max_size=2))


@settings(max_examples=300, deadline=None)
@given(stored=ANY_VALUES, given_value=KEY_VALUES, op=st.sampled_from(['==', '!=', '<', '<=',
                                                                       '>', '>=']))
def test_a_comparison_is_the_key_codecs_comparison(stored, given_value, op):
    expr = Compare(F('x'), op, given_value)
    try:
        a = keylib.packs((stored,))
    except (TypeError, ValueError):
        assert not expr.matches({'x': stored}) and sort_key(stored) is None
        return
    b = keylib.packs((given_value,))
    expected = {'==': a == b, '!=': a != b, '<': a < b, '<=': a <= b, '>': a > b,
                '>=': a >= b}[op]
    assert expr.matches({'x': stored}) is expected
    assert expr.matches({'y': stored}) is False
    assert (~expr).matches({'x': stored}) is (not expected)


def test_uuid_and_dates_compare_as_keys():
    u1, u2 = uuid.UUID(int=1), uuid.UUID(int=2)
    assert (F('u') < u2).matches({'u': u1}) and not (F('u') < u1).matches({'u': u2})
    day = datetime.date(2020, 1, 2)
    assert (F('d').between(datetime.date(2020, 1, 1), day)).matches({'d': day})


SAME_TYPE_PAIRS = st.one_of(
    st.tuples(st.integers(-2 ** 80, 2 ** 80), st.integers(-2 ** 80, 2 ** 80)),
    st.tuples(st.text(st.characters(blacklist_categories=()), max_size=4),
              st.text(st.characters(blacklist_categories=()), max_size=4)),
    st.tuples(st.binary(max_size=4), st.binary(max_size=4)))


@settings(max_examples=500, deadline=None)
@given(pair=SAME_TYPE_PAIRS, op=st.sampled_from(['==', '!=', '<', '<=', '>', '>=']))
def test_ints_strings_and_bytes_compare_as_the_codec_orders_them(pair, op):
    """Compared with a value of its own type (surrogates and NULs included)."""
    stored, given_value = pair
    a, b = keylib.packs((stored,)), keylib.packs((given_value,))
    expected = {'==': a == b, '!=': a != b, '<': a < b, '<=': a <= b, '>': a > b,
                '>=': a >= b}[op]
    assert Compare(F('x'), op, given_value).matches({'x': stored}) is expected


@settings(max_examples=300, deadline=None)
@given(pair=SAME_TYPE_PAIRS, other=st.one_of(KEY_VALUES, st.integers(-2 ** 80, 2 ** 80),
                                             st.text(st.characters(blacklist_categories=()))),
       stored=st.one_of(ANY_VALUES, st.integers(-5, 5), st.text(max_size=3)))
def test_between_and_is_in_agree_with_the_codec(pair, other, stored):
    lo, hi = pair
    a = keylib.packs((lo,)), keylib.packs((hi,)), keylib.packs((other,))
    mine = sort_key(stored)
    inside = mine is not None and a[0] <= mine <= a[1]
    assert F('x').between(lo, hi).matches({'x': stored}) is inside
    assert F('x').is_in([lo, other]).matches({'x': stored}) is (mine is not None and mine in a[::2])
