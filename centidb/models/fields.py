"""A model's fields: what their declarations mean, and the check of their values' types.

A model's class body declares each field with an annotation, and its
default after ``=`` or with :func:`field`, as a dataclass does::

    age: int = 0
    tags: list[str] = field(default_factory=list)

:func:`field_names` finds the fields a class body declares,
:func:`declare_field` reads each one's default (a :class:`Field`),
:func:`type_checks` makes the checks of the values a field may hold, from
its annotation, and :func:`field_values` makes the function that reads
fields from a stored ``dict``. :class:`~centidb.models.model.Model` uses them all;
this module knows nothing of stores.

The field types supported: ``str``, ``bytes``, ``int`` (not ``bool``),
``float`` (an ``int`` too; not ``bool``), ``bool`` (only ``True`` or
``False``), ``None``, ``datetime``, ``date`` (a ``datetime`` too),
``Decimal``, ``UUID``, ``list[X]``, ``dict[K, V]``, ``tuple[X, ...]`` and
``tuple[X, Y]`` (the elements checked too), ``Literal[...]``,
``Optional``/``Union``/``X | None`` of them, and ``Any``.
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import re
import types
import typing
import uuid
from typing import Any, Callable, ClassVar, Iterable, Literal, Optional, TypeVar, Union, overload

__all__ = ['Field', 'field', 'MISSING', 'field_names', 'declare_field', 'field_values',
           'type_checks', 'described']

_T = TypeVar('_T')

#: A value check: None when the value fits the field type, else a short
#: description of what the value is instead (for the error message).
Check = Callable[[Any], Optional[str]]


class _Missing:
    """The marker of a field without a default."""

    def __repr__(self) -> str:
        return '<no default>'


#: The default of a field declared without one (shown as ``<no default>``).
MISSING: Any = _Missing()


class Field:
    """A field's default value, as :func:`field` declares it.

    :param default: the value a field not given to the constructor gets.
    :param default_factory: a function of no arguments called for that value
        instead (for mutable values such as a ``list``).
    """

    __slots__ = ('default', 'default_factory')

    def __init__(self, default: Any = MISSING,
                 default_factory: Callable[[], Any] | None = None) -> None:
        if default is not MISSING and default_factory is not None:
            raise TypeError('give a field a default or a default_factory, not both')
        if default_factory is not None and not callable(default_factory):
            raise TypeError(f'default_factory must be callable, not {default_factory!r}')
        self.default = default
        self.default_factory = default_factory

    def __repr__(self) -> str:
        if self.default_factory is not None:
            return f'field(default_factory={self.default_factory!r})'
        return f'field(default={self.default!r})'

    @property
    def required(self) -> bool:
        """True if the field has no default: the constructor needs it."""
        return self.default is MISSING and self.default_factory is None

    def make_default(self) -> Any:
        """Return the default value (from the factory, if there is one)."""
        if self.default_factory is not None:
            return self.default_factory()
        return self.default


@overload
def field(*, default: _T) -> _T: ...


@overload
def field(*, default_factory: Callable[[], _T]) -> _T: ...


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | None = None) -> Any:
    """Declare a field's default in a model's class body.

    ``tags: list[str] = field(default_factory=list)`` gives every instance a
    new empty list; ``age: int = field(default=0)`` is ``age: int = 0``.

    :param default: the default value.
    :param default_factory: a function of no arguments making the default.
    :returns: a :class:`Field` (typed as the value, for the type checker).
    :raises TypeError: if both are given, or `default_factory` is not
        callable.
    """
    return Field(default, default_factory)


# --- what a class body declares ------------------------------------------------------

_CLASSVAR = re.compile(r'^(?:typing\.|t\.)?ClassVar\b')


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return bool(_CLASSVAR.match(annotation))
    return annotation is ClassVar or typing.get_origin(annotation) is ClassVar


def field_names(cls: type) -> list[str]:
    """Return the fields `cls`'s own body declares: its annotated names, but ``ClassVar`` ones.

    :param cls: the class.
    :returns: the names, in the order of the class body.
    """
    get_annotations = getattr(inspect, 'get_annotations', None)     # Python 3.10+
    if get_annotations is not None:
        annotations = dict(get_annotations(cls))
    else:
        annotations = dict(vars(cls).get('__annotations__', {}))
    # Strings, under postponed evaluation.
    return [name for name, annotation in annotations.items() if not _is_classvar(annotation)]


def declare_field(cls: type, attr: str) -> Field:
    """Return the :class:`Field` of the annotated attribute `attr`; set the class attribute.

    As in dataclasses, the class attribute becomes the default value, or is
    removed when there is none (or a ``default_factory``).

    :param cls: the class declaring the field.
    :param attr: the field's name.
    :returns: the field's :class:`Field`.
    :raises TypeError: for a mutable default (a ``list``, ``dict`` or
        ``set``), which every instance would share.
    """
    value = vars(cls).get(attr, MISSING)
    declared = value if isinstance(value, Field) else Field(value)
    if type(declared.default) in (list, dict, set):
        raise TypeError(f'{cls.__name__}.{attr}: a mutable default would be shared by every '
                        f'instance; use field(default_factory={type(declared.default).__name__})')
    if declared.required or declared.default_factory is not None:
        if attr in vars(cls):
            delattr(cls, attr)
    else:
        setattr(cls, attr, declared.default)
    return declared


def field_values(names: tuple[str, ...], fields: dict[str, Field],
                 whole_tuple: bool = False) -> Callable[[Any], Any]:
    """Return a function of a stored ``dict``: the value of one field, or the tuple of several.

    A field missing from an older record counts as its default.

    :param names: the fields' names.
    :param fields: field name to :class:`Field`, holding `names`.
    :param whole_tuple: make one field give a 1-tuple too.
    :returns: the function.
    """
    defaults = {name: fields[name] for name in names if not fields[name].required}

    def value(data: Any, name: str) -> Any:
        if name in data or name not in defaults:
            return data[name]
        return defaults[name].make_default()

    if len(names) == 1 and not whole_tuple:
        name = names[0]
        return lambda data: value(data, name)
    return lambda data: tuple(value(data, name) for name in names)


# --- type checks -----------------------------------------------------------------

#: ``Union[X, Y]`` and, from Python 3.10, ``X | Y``.
_UNION_TYPES: tuple[Any, ...] = (Union, getattr(types, 'UnionType', Union))

#: Classes a field may be, checked with ``isinstance``.
_CLASSES = (str, bytes, datetime.datetime, datetime.date, decimal.Decimal, uuid.UUID)

_SUPPORTED = ('str, int, float, bool, bytes, None, datetime, date, Decimal, UUID, list[X], '
              'dict[K, V], tuple, Literal, Optional or a Union of them, or Any')


def type_checks(cls: type, names: Iterable[str]) -> tuple[tuple[str, Check, str], ...]:
    """Return ``(field name, check, type name)`` for each of `names`, from `cls`'s annotations.

    ``check(value)`` returns None when `value` fits the field's type, else a
    short description of what the value is instead; the type name is the
    type as an error message shows it (``list[str]``, ``int | None``).

    :param cls: the class whose annotations (its own and inherited) type
        the fields.
    :param names: the fields' names.
    :returns: a tuple, in the order of `names`.
    :raises TypeError: if an annotation cannot be read, or names a type that
        is not supported.
    """
    try:
        hints = typing.get_type_hints(cls)
    except Exception as exc:
        raise TypeError(
            f'cannot read the field types of {cls.__name__}: {exc} (on Python '
            f'3.9, write Optional[X] for X | None)') from exc
    where = cls.__name__
    return tuple((name, _checker(hints[name], f'{where}.{name}'), _type_name(hints[name]))
                 for name in names)


def described(value: Any) -> str:
    """Return how an error message shows `value`: its type, and its repr cut to 40 characters.

    :param value: any value.
    :returns: for example ``int (3)``.
    """
    text = repr(value)
    return f'{type(value).__name__} ({text if len(text) <= 40 else text[:37] + "..."})'


def _type_name(tp: Any) -> str:
    """How a field type is shown in errors: ``list[str]``, ``int | None``."""
    if tp is type(None) or tp is None:
        return 'None'
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in _UNION_TYPES:
        return ' | '.join(_type_name(arg) for arg in args)
    if origin is Literal:
        return f'Literal[{", ".join(map(repr, args))}]'
    if origin is not None:
        shown = ['...' if arg is Ellipsis else _type_name(arg) for arg in args]
        return f'{origin.__name__}[{", ".join(shown)}]' if shown else str(origin.__name__)
    if tp is Any:
        return 'Any'
    return getattr(tp, '__name__', repr(tp))


def _checker(tp: Any, where: str) -> Check:
    """The check of values against the field type `tp`.

    :param tp: the resolved annotation.
    :param where: ``Model.field``, for the error on an unsupported type.
    :raises TypeError: if `tp` is not a supported field type.
    """
    if tp is Any or tp is object:
        return _anything
    if tp is None or tp is type(None):
        return lambda value: None if value is None else described(value)
    if tp is bool:
        return lambda value: None if type(value) is bool else described(value)
    if tp is int:
        return lambda value: (None if isinstance(value, int) and type(value) is not bool
                              else described(value))
    if tp is float:
        return lambda value: (None if isinstance(value, (int, float)) and type(value) is not bool
                              else described(value))
    if tp in _CLASSES:
        return lambda value: None if isinstance(value, tp) else described(value)
    origin, args = typing.get_origin(tp) or tp, typing.get_args(tp)
    if origin in _UNION_TYPES:
        return _union_checker([_checker(arg, where) for arg in args])
    if origin is Literal:
        return lambda value: (None if any(type(value) is type(a) and value == a for a in args)
                              else described(value))
    if origin is list:
        return _list_checker(_checker(args[0], where) if args else _anything)
    if origin is dict:
        return _dict_checker(*((_checker(args[0], where), _checker(args[1], where))
                               if args else (_anything, _anything)))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _tuple_checker(None, _checker(args[0], where))
        if args and args != ((),):
            return _tuple_checker([_checker(arg, where) for arg in args], _anything)
        return _tuple_checker(None, _anything)
    raise TypeError(f'{where}: the field type {_type_name(tp)} is not supported; '
                    f'use {_SUPPORTED}')


def _anything(value: Any) -> str | None:
    return None


def _union_checker(checks: list[Check]) -> Check:
    def check(value: Any) -> str | None:
        found = None
        for each in checks:
            problem = each(value)
            if problem is None:
                return None
            if problem.startswith('a '):     # the right container, a wrong element
                found = problem
        return found or described(value)
    return check


def _list_checker(item: Check) -> Check:
    def check(value: Any) -> str | None:
        if type(value) is not list:
            return described(value)
        for i, element in enumerate(value):
            problem = item(element)
            if problem is not None:
                return f'a list whose item [{i}] is {problem}'
        return None
    return check


def _dict_checker(key: Check, item: Check) -> Check:
    def check(value: Any) -> str | None:
        if type(value) is not dict:
            return described(value)
        for name, element in value.items():
            problem = key(name)
            if problem is not None:
                return f'a dict with a key of {problem}'
            problem = item(element)
            if problem is not None:
                return f'a dict whose value at {name!r} is {problem}'
        return None
    return check


def _tuple_checker(fixed: list[Check] | None, item: Check) -> Check:
    def check(value: Any) -> str | None:
        if type(value) is not tuple:
            return described(value)
        if fixed is not None and len(value) != len(fixed):
            return f'a tuple of {len(value)} items ({value!r:.40})'
        for i, element in enumerate(value):
            problem = (item if fixed is None else fixed[i])(element)
            if problem is not None:
                return f'a tuple whose item [{i}] is {problem}'
        return None
    return check
