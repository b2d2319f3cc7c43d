"""centidb.models.fields: field declarations and the type checks of their values.

The functions of the module on plain classes (``field``, ``field_names``,
``declare_field``, ``field_values``, ``type_checks``, ``described``), then
the checks through a model on every engine: every supported type stores
and reads back, and a value of the wrong type is an error naming the
field, the type and the value, which writes nothing.
"""

from __future__ import annotations

import datetime
import decimal
import sys
import uuid
from typing import Any, ClassVar, Dict, List, Literal, Optional, Tuple, Union

import pytest

import centidb
from centidb.models.fields import (
    MISSING, Field, declare_field, described, field, field_names, field_values, type_checks,
)

from stores import fails_cleanly


# --- declarations on plain classes -----------------------------------------------------

class Plain:
    a: int
    b: str = 'x'
    c: list[int] = field(default_factory=list)
    d: int = field(default=4)
    shared: ClassVar[int] = 0


def test_field_names_are_the_annotated_names_but_class_variables():
    assert field_names(Plain) == ['a', 'b', 'c', 'd']

    class Sub(Plain):
        e: bytes = b''
    assert field_names(Sub) == ['e']


def test_declare_field_reads_the_default_and_sets_the_class_attribute():
    class Body:
        a: int
        b: str = 'x'
        c: list[int] = field(default_factory=list)
        d: int = field(default=4)
    declared = {name: declare_field(Body, name) for name in field_names(Body)}
    assert declared['a'].required and declared['a'].default is MISSING
    assert not declared['b'].required and declared['b'].default == 'x'
    assert declared['c'].make_default() == [] and declared['c'].make_default() is not \
        declared['c'].make_default()
    assert declared['d'].default == 4
    assert (Body.b, Body.d) == ('x', 4)
    assert not hasattr(Body, 'a') and not hasattr(Body, 'c')


@pytest.mark.parametrize('default', [[], {}, set()])
def test_a_mutable_default_is_refused(default):
    class Body:
        tags: Any = default
    with pytest.raises(TypeError, match=rf'Body.tags: a mutable default.*'
                                        rf'default_factory={type(default).__name__}'):
        declare_field(Body, 'tags')


def test_field_checks_its_arguments():
    assert isinstance(field(default=1), Field) and isinstance(field(default_factory=list), Field)
    with pytest.raises(TypeError):
        field(default=1, default_factory=list)  # type: ignore[call-overload]


def test_field_values_reads_one_field_or_a_tuple_with_defaults():
    fields = {'a': Field(MISSING), 'b': Field(7), 'c': Field(MISSING, list)}
    assert field_values(('a',), fields)({'a': 1}) == 1
    assert field_values(('a',), fields, whole_tuple=True)({'a': 1}) == (1,)
    assert field_values(('a', 'b'), fields)({'a': 1}) == (1, 7)     # missing: the default
    assert field_values(('c',), fields)({}) == []
    with pytest.raises(KeyError):
        field_values(('a',), fields)({})        # a required field missing


def test_type_checks_name_the_type_and_what_was_found():
    class Typed:
        n: int
        tags: list[str]
        maybe: Optional[float]
    checks = {name: (check, shown) for name, check, shown in
              type_checks(Typed, ['n', 'tags', 'maybe'])}
    assert [shown for _, shown in checks.values()] == ['int', 'list[str]', 'float | None']
    assert checks['n'][0](3) is None and checks['n'][0](True) == 'bool (True)'
    assert checks['tags'][0](['a']) is None
    assert checks['tags'][0](['a', 2]) == "a list whose item [1] is int (2)"
    assert checks['maybe'][0](None) is None and checks['maybe'][0](2) is None


def test_an_unsupported_or_unreadable_annotation_is_a_type_error():
    class Odd:
        s: set[int]
    with pytest.raises(TypeError, match='Odd.s'):
        type_checks(Odd, ['s'])

    class Broken:
        x: 'NoSuchType'  # noqa: F821
    with pytest.raises(TypeError, match='cannot read the field types of Broken'):
        type_checks(Broken, ['x'])


def test_described_cuts_long_reprs():
    assert described(3) == 'int (3)'
    text = described('x' * 100)
    assert text.startswith("str ('xxx") and text.endswith('...)') and len(text) == len('str ()') + 40


# --- through a model, on every engine -----------------------------------------------------

class Everything(centidb.Model, collection='everything', key='id'):
    id: int
    s: str = ''
    b: bytes = b''
    i: int = 0
    f: float = 0.0
    flag: bool = False
    none: None = None
    when: datetime.datetime = datetime.datetime(2020, 1, 1)
    day: datetime.date = datetime.date(2020, 1, 1)
    price: decimal.Decimal = decimal.Decimal('0')
    uid: uuid.UUID = uuid.UUID(int=0)
    ints: list[int] = centidb.field(default_factory=list)
    old_list: List[str] = centidb.field(default_factory=list)
    scores: dict[str, float] = centidb.field(default_factory=dict)
    old_dict: Dict[str, int] = centidb.field(default_factory=dict)
    pair: tuple[int, str] = (0, '')
    many: tuple[int, ...] = ()
    old_pair: Tuple[str, str] = ('', '')
    maybe: Optional[int] = None
    either: Union[int, str] = 0
    status: Literal['open', 'closed'] = 'open'
    anything: Any = None


GOOD = [
    ('s', 'text'), ('b', b'\x00'), ('i', -5), ('i', 2 ** 70), ('f', 1.5), ('f', 2),
    ('flag', True), ('none', None), ('when', datetime.datetime(2020, 1, 1, 9)),
    ('day', datetime.date(2021, 2, 3)), ('price', decimal.Decimal('9.90')),
    ('uid', uuid.UUID(int=7)), ('ints', [1, 2]), ('old_list', ['a']),
    ('scores', {'x': 1.5, 'y': 2}), ('old_dict', {'a': 1}), ('pair', (1, 'a')),
    ('many', (1, 2, 3)), ('old_pair', ('a', 'b')), ('maybe', None), ('maybe', 3),
    ('either', 'x'), ('either', 3), ('status', 'closed'),
    ('anything', {'nested': [1]}),
]


@pytest.mark.parametrize('name, value', GOOD, ids=[f'{n}={v!r}' for n, v in GOOD])
def test_values_that_fit_are_stored_and_read_back(store, name, value):
    Everything.bind(store)
    Everything(id=1, **{name: value}).save()
    back = getattr(Everything.get(1), name)
    assert back == value and type(back) is type(value)


BAD = [
    ('s', b'bytes', 'str', 'bytes'),
    ('b', 'text', 'bytes', 'str'),
    ('i', True, 'int', 'bool'),                 # bool is not accepted for int
    ('i', 1.0, 'int', 'float'),
    ('f', False, 'float', 'bool'),
    ('f', '1.5', 'float', 'str'),
    ('flag', 1, 'bool', 'int'),                 # nor int for bool
    ('flag', None, 'bool', 'NoneType'),
    ('none', 0, 'None', 'int'),
    ('when', '2020-01-01', 'datetime', 'str'),
    ('day', '2020-01-01', 'date', 'str'),
    ('price', 9.9, 'Decimal', 'float'),
    ('uid', 'x', 'UUID', 'str'),
    ('ints', (1, 2), r'list\[int\]', 'tuple'),
    ('ints', [1, 'x'], r'list\[int\]', r"a list whose item \[1\] is str \('x'\)"),
    ('old_list', [1], r'list\[str\]', r'a list whose item \[0\] is int'),
    ('scores', {'x': 'y'}, r'dict\[str, float\]', "a dict whose value at 'x' is str"),
    ('scores', {1: 1.0}, r'dict\[str, float\]', 'a dict with a key of int'),
    ('pair', (1, 2), r'tuple\[int, str\]', r'a tuple whose item \[1\] is int'),
    ('pair', (1,), r'tuple\[int, str\]', 'a tuple of 1 items'),
    ('many', (1, 'x'), r'tuple\[int, \.\.\.\]', r'a tuple whose item \[1\] is str'),
    ('maybe', 'x', r'int \| None', 'str'),
    ('either', 1.5, r'int \| str', 'float'),
    ('status', 'shut', r"Literal\['open', 'closed'\]", 'str'),
]


@pytest.mark.parametrize('name, value, expected, found', BAD,
                         ids=[f'{n}={v!r}' for n, v, _, _ in BAD])
def test_a_wrong_type_is_an_error_that_writes_nothing(store, name, value, expected, found):
    Everything.bind(store)
    thing = Everything(id=1, **{name: value})
    message = rf'^Everything\.{name} must be {expected}, not {found}'
    fails_cleanly(store, TypeError, thing.save, match=message)
    fails_cleanly(store, TypeError, lambda: Everything.put_many([Everything(id=2), thing]),
                  match=message)


class Newer(centidb.Model, collection='newer', key='id'):
    id: int
    n: int | None = None        # a string annotation, read when the model is bound


@pytest.mark.skipif(sys.version_info < (3, 10), reason='X | Y is a type from Python 3.10')
def test_union_operator_annotations(store):
    Newer.bind(store)
    assert Newer(id=1, n=2).save() == (1,) and Newer(id=2).save() == (2,)
    fails_cleanly(store, TypeError, Newer(id=3, n='x').save,  # type: ignore[arg-type]
                  match=r"^Newer.n must be int \| None, not str \('x'\)")


@pytest.mark.skipif(sys.version_info >= (3, 10), reason='X | Y is a type from Python 3.10')
def test_union_operator_annotations_before_python_3_10(store):
    with pytest.raises(TypeError, match=r'cannot read the field types of Newer: .*'
                                        r'write Optional\[X\] for X \| None'):
        Newer.bind(store)
