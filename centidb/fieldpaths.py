"""Field paths: names of values inside a record ``dict``, and the index functions they make.

A *field path* is a key of a record ``dict`` (``'city'``), or keys of nested
``dict`` joined by dots (``'address.city'``). A *field index* is an index
defined by a tuple of field paths instead of a function: its definition is
stored in the store's metadata, so every session and process uses it without
calling ``add_index`` again.

A field index makes, for each record, the tuples of its fields' values:

* a record that is not a ``dict``, or lacks one of the fields (or holds a
  non-``dict`` where a path goes deeper), has no entry;
* a field holding a ``list`` gives one value per element (an empty list: no
  entry); with several such fields, every combination is an entry;
* any other value, ``None`` included, is the field's one value.

This layer calls nothing of centidb but its errors; never a layer above.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

__all__ = ['FieldIndexFunc', 'check_fields', 'field_values']


def check_fields(fields: str | Sequence[str]) -> tuple[str, ...]:
    """Return `fields` as a tuple of checked field paths.

    :param fields: one field path, or a non-empty tuple or list of them.
    :raises TypeError: if `fields`, or a path in it, is not a ``str``.
    :raises ValueError: for no paths, an empty path or path part (``'a..b'``),
        a lone surrogate, or a path given twice.
    """
    paths = (fields,) if isinstance(fields, str) else fields
    if not isinstance(paths, (tuple, list)):
        raise TypeError(f'fields must be a field path (str) or a tuple of them, '
                        f'not {type(fields).__name__!r}')
    if not paths:
        raise ValueError('fields must name at least one field path')
    for path in paths:
        if not isinstance(path, str):
            raise TypeError(f'a field path must be a str, not {type(path).__name__!r} '
                            f'({path!r})')
        try:
            path.encode('utf-8')
        except UnicodeEncodeError:
            raise ValueError(f'field path {path!r} holds a lone surrogate, which no record '
                             f'encoder keeps') from None
        if not all(path.split('.')):
            raise ValueError(f'field path {path!r} has an empty part: name a key of the '
                             f'record dict, or keys of nested dicts joined by dots')
    if len(set(paths)) != len(paths):
        raise ValueError(f'fields {tuple(paths)!r} name a field path twice')
    return tuple(paths)


def field_values(record: Any, parts: Sequence[str]) -> list[Any] | None:
    """The values of one split field path in `record`: None if it is missing.

    :param record: a record value.
    :param parts: the path's parts (``'a.b'`` is ``('a', 'b')``).
    :returns: None if the field is missing; the list's elements if it holds
        a ``list``; otherwise ``[value]``.
    """
    value = record
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value if isinstance(value, list) else [value]


class FieldIndexFunc:
    """The index function of a field index: a record to its entries' tuples.

    :param fields: the checked field paths (see :func:`check_fields`).
    """

    __slots__ = ('fields', '_parts')

    def __init__(self, fields: Iterable[str]) -> None:
        #: The field paths, in entry order.
        self.fields: tuple[str, ...] = tuple(fields)
        self._parts = tuple(tuple(path.split('.')) for path in self.fields)

    def __call__(self, record: Any) -> list[tuple[Any, ...]] | None:
        """The index tuples of `record`: None when it has none."""
        found = []
        for parts in self._parts:
            values = field_values(record, parts)
            if not values:
                return None
            found.append(values)
        if len(found) == 1:
            return [(value,) for value in found[0]]
        return list(itertools.product(*found))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldIndexFunc) and other.fields == self.fields

    def __hash__(self) -> int:
        return hash(self.fields)

    def __repr__(self) -> str:
        return f'FieldIndexFunc({self.fields!r})'
