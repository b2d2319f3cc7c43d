"""centidb.fieldpaths: checking field paths, and the entries a field index makes."""

import pytest

from centidb.fieldpaths import FieldIndexFunc, check_fields, field_values


def test_check_fields_takes_one_path_or_a_sequence_of_them():
    assert check_fields('city') == ('city',)
    assert check_fields(('city', 'address.zip')) == ('city', 'address.zip')
    assert check_fields(['a', 'b.c.d']) == ('a', 'b.c.d')


@pytest.mark.parametrize('fields, error, words', [
    ((), ValueError, 'at least one'),
    ('', ValueError, "field path '' has an empty part"),
    ('a..b', ValueError, "'a..b' has an empty part"),
    ('.a', ValueError, 'empty part'),
    ('a.', ValueError, 'empty part'),
    (('a', 'a'), ValueError, 'twice'),
    ('a\udc80', ValueError, 'lone surrogate'),
    (('a', 3), TypeError, "not 'int'"),
    (b'a', TypeError, "not 'bytes'"),
    ({'a'}, TypeError, "not 'set'"),
    (None, TypeError, "not 'NoneType'"),
])
def test_check_fields_names_what_is_wrong(fields, error, words):
    with pytest.raises(error, match=words):
        check_fields(fields)


RECORD = {'city': 'Leeds', 'n': None, 'tags': ['red', 'blue'], 'none': [],
          'address': {'zip': 'LS1', 'deep': {'x': 1}}, 'pair': (1, 2), 'flat': 'text'}


@pytest.mark.parametrize('path, values', [
    ('city', ['Leeds']),
    ('n', [None]),                     # a stored None is a value
    ('tags', ['red', 'blue']),         # a list: each element
    ('none', []),                      # an empty list: no value
    ('address.zip', ['LS1']),
    ('address.deep.x', [1]),
    ('address', [{'zip': 'LS1', 'deep': {'x': 1}}]),
    ('pair', [(1, 2)]),                # a tuple is one value
    ('missing', None),
    ('address.missing', None),
    ('flat.x', None),                  # a string has no fields
    ('city.x', None),
    ('tags.0', None),                  # a list is not indexed by position
])
def test_field_values(path, values):
    assert field_values(RECORD, path.split('.')) == values


@pytest.mark.parametrize('record', [None, 3, 'city', ['city'], ('city',), b'city'])
def test_a_record_that_is_not_a_dict_has_no_fields(record):
    assert field_values(record, ['city']) is None
    assert FieldIndexFunc(['city'])(record) is None


def test_field_index_entries():
    assert FieldIndexFunc(['city'])(RECORD) == [('Leeds',)]
    assert FieldIndexFunc(['tags'])(RECORD) == [('red',), ('blue',)]
    assert FieldIndexFunc(['city', 'address.zip'])(RECORD) == [('Leeds', 'LS1')]
    # Several list fields: every combination, in field order.
    record = {'a': [1, 2], 'b': ['x', 'y'], 'c': 0}
    assert FieldIndexFunc(['a', 'c', 'b'])(record) == [
        (1, 0, 'x'), (1, 0, 'y'), (2, 0, 'x'), (2, 0, 'y')]
    # One field missing or an empty list: no entry at all.
    assert FieldIndexFunc(['city', 'missing'])(RECORD) is None
    assert FieldIndexFunc(['city', 'none'])(RECORD) is None
    assert FieldIndexFunc(['n'])(RECORD) == [(None,)]


def test_field_index_functions_compare_by_their_fields():
    one = FieldIndexFunc(['a', 'b.c'])
    assert one.fields == ('a', 'b.c')
    assert one == FieldIndexFunc(('a', 'b.c')) and hash(one) == hash(FieldIndexFunc(['a', 'b.c']))
    assert one != FieldIndexFunc(['b.c', 'a']) and one != ('a', 'b.c')
    assert repr(one) == "FieldIndexFunc(('a', 'b.c'))"
