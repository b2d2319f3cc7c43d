"""Expressions over a record's fields: ``F('score') >= 10``, combined with ``&``, ``|``, ``~``.

``F(path)`` names a field of a record ``dict`` (a dotted path goes into
nested dicts, as in :mod:`centidb.fieldpaths`). Comparing it with a value
makes an :class:`Expr`; :meth:`Expr.matches` says whether a record meets it.

The rules, the same for every type:

* values compare in the key codec's order (:mod:`centidb.keylib`), and are
  equal when the codec encodes them alike: ``None``, numbers, strings and
  bytes compare across types as they sort in keys, ``1`` and ``1.0`` are
  not equal, and a value the codec cannot encode (a ``list``, a ``dict``)
  is never equal to, less or greater than anything;
* a comparison on a field the record lacks is false, so
  ``F('x') != 1`` is false for a record without ``x``, while
  ``~(F('x') == 1)`` (plain logical negation) is true;
* a stored ``None`` is a value: ``F('x') == None`` matches it;
* ``contains(v)`` is true when the field holds a ``list`` with an element
  equal to ``v``; ``startswith(p)`` when it holds a ``str`` (or ``bytes``)
  starting with ``p``; ``exists()`` when the record has the field.

This layer calls the key codec and :mod:`centidb.fieldpaths`; never a layer above.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from centidb import keylib
from centidb.errors import KeyEncodingError
from centidb.fieldpaths import check_fields

__all__ = ['F', 'Expr', 'Compare', 'Between', 'IsIn', 'StartsWith', 'Contains', 'Exists',
           'And', 'Or', 'Not', 'MISSING', 'OPERATORS', 'sort_key']

#: The comparison operators, as :class:`Compare` names them.
OPERATORS = ('==', '!=', '<', '<=', '>', '>=')

_MISSING = object()


def sort_key(value: Any) -> bytes | None:
    """`value`'s place in the key codec's order: its packed bytes, or None if it has none.

    :param value: any value.
    """
    try:
        return keylib.packs((value,))
    except (KeyEncodingError, TypeError, ValueError):
        return None


def _checked(value: Any, what: str) -> bytes:
    """`value`'s :func:`sort_key`, or a ``TypeError`` naming it and `what` it is for."""
    try:
        return keylib.packs((value,))
    except (KeyEncodingError, TypeError, ValueError) as exc:
        raise TypeError(f'{what}: {value!r} cannot be compared ({exc})') from None


def _lookup(record: Any, parts: Sequence[str]) -> Any:
    value = record
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


class Expr:
    """A condition on a record; combine with ``&``, ``|`` and ``~``."""

    __slots__ = ()

    def matches(self, record: Any) -> bool:
        """True if `record` meets the condition.

        :param record: a record value (a ``dict``, or anything else, which
            has no fields).
        """
        raise NotImplementedError

    def __and__(self, other: Expr) -> Expr:
        return And(self, _expr(other, '&'))

    def __or__(self, other: Expr) -> Expr:
        return Or(self, _expr(other, '|'))

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError('an expression has no truth value: combine expressions with &, | '
                        'and ~, not and, or and not (and compare F() with one value at a time)')

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and type(self) is type(other) and \
            self._parts() == other._parts()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._parts()))

    def _parts(self) -> tuple[Any, ...]:
        raise NotImplementedError


def _expr(value: Any, op: str) -> Expr:
    if not isinstance(value, Expr):
        raise TypeError(f'{op} combines expressions, not {type(value).__name__!r} ({value!r})')
    return value


class F:
    """A field of the record: ``F('city')``, ``F('address.city')``.

    :param path: a field path (see :func:`centidb.fieldpaths.check_fields`).
    :raises TypeError: if `path` is not a ``str``.
    :raises ValueError: for an empty path or path part.
    """

    __slots__ = ('path', 'parts')

    def __init__(self, path: str) -> None:
        if not isinstance(path, str):
            raise TypeError(f'F() takes a field path (str), not {type(path).__name__!r}')
        #: The field path.
        self.path: str = check_fields(path)[0]
        #: The path split at its dots.
        self.parts: tuple[str, ...] = tuple(path.split('.'))

    def __repr__(self) -> str:
        return f'F({self.path!r})'

    def value(self, record: Any) -> Any:
        """The field's value in `record`, or :data:`MISSING` when it has none.

        :param record: a record value.
        """
        return _lookup(record, self.parts)

    def __eq__(self, value: Any) -> Compare:  # type: ignore[override]
        return Compare(self, '==', value)

    def __ne__(self, value: Any) -> Compare:  # type: ignore[override]
        return Compare(self, '!=', value)

    def __lt__(self, value: Any) -> Compare:
        return Compare(self, '<', value)

    def __le__(self, value: Any) -> Compare:
        return Compare(self, '<=', value)

    def __gt__(self, value: Any) -> Compare:
        return Compare(self, '>', value)

    def __ge__(self, value: Any) -> Compare:
        return Compare(self, '>=', value)

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise TypeError(f'{self!r} has no truth value: compare it with a value '
                        f'(F(...) == x), or use .exists()')

    def between(self, lo: Any, hi: Any) -> Between:
        """The field is at least `lo` and at most `hi` (both ends included).

        :param lo: the low end.
        :param hi: the high end.
        """
        return Between(self, lo, hi)

    def is_in(self, values: Iterable[Any]) -> IsIn:
        """The field equals one of `values`.

        :param values: an iterable of values.
        """
        return IsIn(self, values)

    def startswith(self, prefix: str | bytes) -> StartsWith:
        """The field is a ``str`` (or ``bytes``) starting with `prefix`.

        :param prefix: a ``str`` or ``bytes``.
        """
        return StartsWith(self, prefix)

    def contains(self, value: Any) -> Contains:
        """The field is a ``list`` holding an element equal to `value`.

        :param value: the element looked for.
        """
        return Contains(self, value)

    def exists(self) -> Exists:
        """The record has the field (``None`` counts)."""
        return Exists(self)


#: What :meth:`F.value` returns for a field the record lacks.
MISSING = _MISSING


def _field(field: Any) -> F:
    if not isinstance(field, F):
        raise TypeError(f'expected F(...), not {type(field).__name__!r} ({field!r})')
    return field


class Compare(Expr):
    """``F(path) <op> value``, `op` one of :data:`OPERATORS`.

    :param field: the :class:`F`.
    :param op: the operator.
    :param value: the value compared with.

    :raises ValueError: for an unknown operator.
    :raises TypeError: for a value the key codec cannot encode.
    """

    __slots__ = ('field', 'op', 'value', 'packed', '_test', '_plain', '_direct')

    def __init__(self, field: F, op: str, value: Any) -> None:
        self.field = _field(field)
        if op not in _TESTS:
            raise ValueError(f'unknown operator {op!r}; the operators are {", ".join(OPERATORS)}')
        self.op = op
        self.value = value
        #: The value's place in the key codec's order.
        self.packed = _checked(value, f'{field!r} {op}')
        self._test: Callable[[bytes, bytes], bool] = _TESTS[op]
        #: The value's type when Python's comparison of it is the codec's.
        self._plain = type(value) if type(value) in _PLAIN_TYPES else None
        self._direct: Callable[[Any, Any], bool] = _TESTS[op]

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        value = _lookup(record, self.field.parts)
        if value is _MISSING:
            return False
        if type(value) is self._plain and self._plain is not None:
            # ints, strs and bytes each sort in the codec as Python sorts them
            return self._direct(value, self.value)
        packed = sort_key(value)
        return packed is not None and self._test(packed, self.packed)

    def _parts(self) -> tuple[Any, ...]:
        return (self.field.path, self.op, self.packed)

    def __repr__(self) -> str:
        return f'{self.field!r} {self.op} {self.value!r}'


#: Types whose values compare in Python as the key codec orders them (a
#: ``str`` by code point, which its UTF-8 bytes keep; ``bool`` and ``float``
#: are left out: the codec orders ``True`` apart from ``1``, ``-0.0`` apart
#: from ``0.0``).
_PLAIN_TYPES = (int, str, bytes)

_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    '==': lambda a, b: a == b, '!=': lambda a, b: a != b,
    '<': lambda a, b: a < b, '<=': lambda a, b: a <= b,
    '>': lambda a, b: a > b, '>=': lambda a, b: a >= b,
}


class Between(Expr):
    """``lo <= F(path) <= hi`` in the key codec's order.

    :param field: the :class:`F`.
    :param lo: the low end, included.
    :param hi: the high end, included.
    :raises TypeError: for an end the key codec cannot encode.
    """

    __slots__ = ('field', 'lo', 'hi', 'packed_lo', 'packed_hi', '_plain')

    def __init__(self, field: F, lo: Any, hi: Any) -> None:
        self.field = _field(field)
        self.lo, self.hi = lo, hi
        self.packed_lo = _checked(lo, f'{field!r}.between() low end')
        self.packed_hi = _checked(hi, f'{field!r}.between() high end')
        plain = type(lo)
        self._plain = plain if plain in _PLAIN_TYPES and type(hi) is plain else None

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        value = _lookup(record, self.field.parts)
        if value is _MISSING:
            return False
        if type(value) is self._plain and self._plain is not None:
            return bool(self.lo <= value <= self.hi)
        packed = sort_key(value)
        return packed is not None and self.packed_lo <= packed <= self.packed_hi

    def _parts(self) -> tuple[Any, ...]:
        return (self.field.path, self.packed_lo, self.packed_hi)

    def __repr__(self) -> str:
        return f'{self.field!r}.between({self.lo!r}, {self.hi!r})'


class IsIn(Expr):
    """``F(path)`` equals one of the values.

    :param field: the :class:`F`.
    :param values: an iterable of values (not a ``str`` or ``bytes``).
    :raises TypeError: for a value the key codec cannot encode.
    """

    __slots__ = ('field', 'values', 'packed', '_plain')

    def __init__(self, field: F, values: Iterable[Any]) -> None:
        self.field = _field(field)
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise TypeError(f'{field!r}.is_in() takes an iterable of values, not '
                            f'{type(values).__name__!r}')
        self.values = tuple(values)
        #: The values' places in the key codec's order, sorted, each once.
        self.packed = tuple(sorted({_checked(value, f'{field!r}.is_in()')
                                    for value in self.values}))
        #: ``(type, value)`` of the ints, strs and bytes among the values.
        self._plain = frozenset((type(value), value) for value in self.values
                                if type(value) in _PLAIN_TYPES)

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        value = _lookup(record, self.field.parts)
        if value is _MISSING:
            return False
        if type(value) in _PLAIN_TYPES:
            return (type(value), value) in self._plain
        return sort_key(value) in self.packed

    def _parts(self) -> tuple[Any, ...]:
        return (self.field.path, self.packed)

    def __repr__(self) -> str:
        return f'{self.field!r}.is_in({list(self.values)!r})'


class StartsWith(Expr):
    """``F(path)`` is a ``str`` (or ``bytes``) starting with the prefix.

    :param field: the :class:`F`.
    :param prefix: a ``str`` or ``bytes``.
    """

    __slots__ = ('field', 'prefix')

    def __init__(self, field: F, prefix: str | bytes) -> None:
        self.field = _field(field)
        if not isinstance(prefix, (str, bytes)):
            raise TypeError(f'{field!r}.startswith() takes a str or bytes, not '
                            f'{type(prefix).__name__!r}')
        self.prefix = prefix

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        value = _lookup(record, self.field.parts)
        prefix = self.prefix
        if isinstance(prefix, str):
            return type(value) is str and value.startswith(prefix)
        return type(value) is bytes and value.startswith(prefix)

    def _parts(self) -> tuple[Any, ...]:
        return (self.field.path, type(self.prefix).__name__, self.prefix)

    def __repr__(self) -> str:
        return f'{self.field!r}.startswith({self.prefix!r})'


class Contains(Expr):
    """``F(path)`` is a ``list`` with an element equal to the value.

    :param field: the :class:`F`.
    :param value: the element looked for.
    """

    __slots__ = ('field', 'value', 'packed')

    def __init__(self, field: F, value: Any) -> None:
        self.field = _field(field)
        self.value = value
        self.packed = _checked(value, f'{field!r}.contains()')

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        value = _lookup(record, self.field.parts)
        return isinstance(value, list) and any(
            sort_key(element) == self.packed for element in value)

    def _parts(self) -> tuple[Any, ...]:
        return (self.field.path, self.packed)

    def __repr__(self) -> str:
        return f'{self.field!r}.contains({self.value!r})'


class Exists(Expr):
    """The record has the field ``F(path)``.

    :param field: the :class:`F`.
    """

    __slots__ = ('field',)

    def __init__(self, field: F) -> None:
        self.field = _field(field)

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        return _lookup(record, self.field.parts) is not _MISSING

    def _parts(self) -> tuple[Any, ...]:
        return (self.field.path,)

    def __repr__(self) -> str:
        return f'{self.field!r}.exists()'


class _Joined(Expr):
    """Expressions joined by one operator; nested joins of the same kind are flattened.

    :param exprs: one or more :class:`Expr`.
    :raises ValueError: for none.
    """

    __slots__ = ('exprs',)
    #: The operator, as the expressions are written.
    OP = ''

    def __init__(self, *exprs: Expr) -> None:
        flat: list[Expr] = []
        for expr in exprs:
            if type(expr) is type(self):
                flat.extend(expr.exprs)
            else:
                flat.append(_expr(expr, self.OP))
        if not flat:
            raise ValueError(f'{type(self).__name__}() needs at least one expression')
        self.exprs: tuple[Expr, ...] = tuple(flat)

    def _parts(self) -> tuple[Any, ...]:
        return self.exprs

    def __repr__(self) -> str:
        return f' {self.OP} '.join(_grouped(expr) for expr in self.exprs)


class And(_Joined):
    """Every one of the expressions holds."""

    __slots__ = ()
    OP = '&'

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        return all(expr.matches(record) for expr in self.exprs)


class Or(_Joined):
    """At least one of the expressions holds."""

    __slots__ = ()
    OP = '|'

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        return any(expr.matches(record) for expr in self.exprs)


class Not(Expr):
    """The expression does not hold.

    :param expr: the :class:`Expr` negated.
    """

    __slots__ = ('expr',)

    def __init__(self, expr: Expr) -> None:
        self.expr = _expr(expr, '~')

    def matches(self, record: Any) -> bool:
        """See :meth:`Expr.matches`.

        :param record: a record value.
        """
        return not self.expr.matches(record)

    def _parts(self) -> tuple[Any, ...]:
        return (self.expr,)

    def __repr__(self) -> str:
        return f'~{_grouped(self.expr)}'


def _grouped(expr: Expr) -> str:
    return f'({expr!r})' if type(expr) in (And, Or, Compare) else repr(expr)
