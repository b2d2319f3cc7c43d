"""Queries by field: ``coll.where(F('city') == 'Leeds', F('age') >= 30)``, planned over field indexes.

:meth:`~centidb.collection.Collection.where` makes a :class:`WhereQuery`.
Each terminal call (iterating, :meth:`WhereQuery.items`, ``keys``,
``first``, ``count``, ``delete``) plans the query over the collection's
field indexes (:mod:`centidb.fieldpaths`) and runs in one transaction.

The plan rules:

* a conjunction (``&``, or several arguments) may use a field index whose
  fields all have a condition in it: an equality (``==``, ``is_in``,
  ``contains``) on a leading run of the index's fields, then at most one
  range (``<``, ``<=``, ``>``, ``>=``, ``between``, ``startswith``) on the
  next. The index with the most equalities wins (a unique one on a tie);
  a second index with an equality on other fields is intersected with it;
* an ``|`` whose every branch can use an index is a union of them, each
  record once;
* with ``order_by``, an index whose every field has a condition only a
  single value meets, whose leading fields are equal to one value each and
  whose next fields are the order's, is walked in that order instead of
  sorting (and a ``limit`` stops the walk early), unless another index
  has more equalities;
* anything else scans the collection;
* every candidate record is then checked against the whole expression, so
  a plan only decides how many records are read, never what is returned;
* results come in record key order, or, with :meth:`WhereQuery.order_by`,
  sorted by the fields' values in the key codec's order (a record lacking a
  field first, values the codec cannot order last), equal values in record
  key order; ``limit`` bounds the sort.

Function indexes are not used: they stay the explicit
:class:`~centidb.index.Index` API.

This layer calls collections and indexes through their public methods, the
expressions of :mod:`centidb.expr` and the key codec; never a layer above.
"""

from __future__ import annotations

import heapq
import itertools
import weakref
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from centidb import keylib
from centidb.expr import (
    And, Between, Compare, Contains, Expr, F, IsIn, Or, StartsWith, sort_key,
)
from centidb.keylib import Key

from centidb.txn import Transaction, TxnManager

__all__ = ['Lookup', 'Plan', 'WhereQuery', 'as_expr', 'plan_query']

#: The most equality lookups one index step expands ``is_in`` into.
MAX_LOOKUPS = 256

#: Collection -> (its record paths object, ``(name, fields, unique)`` of its
#: field indexes), while the record paths object is the same.
_FIELD_INDEXES: weakref.WeakKeyDictionary[Any, tuple[Any, list[tuple[str, tuple[str, ...], bool]]]] \
    = weakref.WeakKeyDictionary()


def as_expr(exprs: Sequence[Expr], equalities: dict[str, Any]) -> Expr | None:
    """The conjunction of `exprs` and ``F(name) == value`` for each of `equalities`.

    :param exprs: :class:`~centidb.expr.Expr` objects.
    :param equalities: field path to value.
    :returns: None for no condition at all (every record).
    :raises TypeError: for an argument that is not an expression.
    """
    parts = list(exprs)
    for expr in parts:
        if not isinstance(expr, Expr):
            raise TypeError(f'where() takes expressions (F(...) == value, ...), not '
                            f'{type(expr).__name__!r} ({expr!r})')
    parts += [F(name) == value for name, value in equalities.items()]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(*parts)


class Lookup(NamedTuple):
    """One read of an index: the equal leading values, and a range on the next field."""

    #: The index's name.
    index_name: str
    #: The index's field paths.
    fields: tuple[str, ...]
    #: How many leading fields have an equality.
    width: int
    #: Each tuple of equal leading values read (several for ``is_in``; none
    #: for ``is_in([])``, which nothing meets).
    equal: tuple[tuple[Any, ...], ...]
    #: The range on the next field, ``(low, high, high included)``, or None.
    #: ``low``/``high`` of None leave that end open.
    bounds: tuple[Any, Any, bool] | None
    #: For ``startswith`` on the next field: the string or bytes, or None.
    startswith: Any
    #: True if the index is unique.
    unique: bool

    def describe(self) -> str:
        """The lookup in words, for :meth:`Plan.text`."""
        if not self.equal:
            return f'index {self.index_name!r} ({", ".join(self.fields)}): nothing (is_in of no values)'
        parts = []
        for at, field in enumerate(self.fields[:self.width]):
            values = sorted({repr(v[at]) for v in self.equal})
            parts.append(f'{field} == {values[0]}' if len(values) == 1
                         else f'{field} in [{", ".join(values)}]')
        if self.bounds is not None:
            field = self.fields[self.width]
            low, high, included = self.bounds
            if low is not None:
                parts.append(f'{field} >= {low!r}')
            if high is not None:
                parts.append(f'{field} {"<=" if included else "<"} {high!r}')
        if self.startswith is not None:
            parts.append(f'{self.fields[self.width]} startswith {self.startswith!r}')
        unique = ', unique' if self.unique else ''
        return f'index {self.index_name!r} ({", ".join(self.fields)}{unique}): {" and ".join(parts)}'


class Plan(NamedTuple):
    """How a query reads: :meth:`WhereQuery.explain` prints it."""

    #: ``'scan'``, ``'index'``, ``'intersection'``, ``'union'`` or ``'walk'``
    #: (an index read in the order asked for: no sort).
    kind: str
    #: The index reads: one for ``'index'``, several for the others, none for ``'scan'``.
    lookups: tuple[Lookup, ...]
    #: The expression each candidate record is checked against, or None.
    filter: Expr | None
    #: The fields sorted by, in order (empty: record key order).
    order: tuple[str, ...]
    #: True for a descending sort.
    reverse: bool
    #: The most records the sort keeps (offset plus limit), or None.
    bound: int | None

    def text(self) -> str:
        """The plan, one step a line."""
        if self.kind == 'scan':
            lines = ['scan the collection in key order']
        else:
            head = {'index': 'read', 'intersection': 'intersect, in record key order:',
                    'union': 'union, each record once:', 'walk': 'walk'}[self.kind]
            if self.kind == 'index':
                lines = [f'read {self.lookups[0].describe()}']
            elif self.kind == 'walk':
                way = 'descending' if self.reverse else 'ascending'
                lines = [f'walk {self.lookups[0].describe()}, {way}',
                         'read each candidate record in that order']
            else:
                lines = [head] + [f'  {lookup.describe()}' for lookup in self.lookups]
            if self.kind != 'walk':
                lines.append('read the candidate records in key order')
        lines.append(f'filter: {self.filter!r}' if self.filter is not None
                     else 'filter: none (every record)')
        if self.kind == 'walk':
            stop = '' if self.bound is None else f', stopping after {self.bound} records'
            lines.append(f'order: the walk\'s, by {", ".join(self.order)} (no sort){stop}')
        elif self.order:
            way = 'descending' if self.reverse else 'ascending'
            kept = '' if self.bound is None else f', keeping the first {self.bound}'
            lines.append(f'sort by {", ".join(self.order)} {way} (ties in key order){kept}')
        else:
            lines.append('order: record key (no sort)')
        return '\n'.join(lines)


# --- planning -----------------------------------------------------------------------------

def _conditions(expr: Expr) -> dict[str, list[Expr]]:
    """Field path -> the conjuncts of `expr` that condition it (and imply it exists)."""
    found: dict[str, list[Expr]] = {}
    for part in (expr.exprs if isinstance(expr, And) else (expr,)):
        if isinstance(part, (Compare, Between, IsIn, StartsWith, Contains)):
            found.setdefault(part.field.path, []).append(part)
    return found


def _equal_values(conds: list[Expr]) -> list[Any] | None:
    """The values an equality among `conds` allows (None: no equality)."""
    for cond in conds:
        if type(cond) is Compare and cond.op == '==':
            return [cond.value]
        if type(cond) is Contains:
            return [cond.value]
        if type(cond) is IsIn:
            return list(cond.values)
    return None


def _range(conds: list[Expr]) -> tuple[tuple[Any, Any, bool] | None, Any]:
    """``(bounds, startswith)`` for the next field from `conds`; both None for none."""
    for cond in conds:
        if type(cond) is Between:
            return (cond.lo, cond.hi, True), None
        if type(cond) is StartsWith:
            return None, cond.prefix
        if type(cond) is Compare and cond.op in ('<', '<=', '>', '>='):
            low = cond.value if cond.op in ('>', '>=') else None
            high = cond.value if cond.op in ('<', '<=') else None
            return (low, high, cond.op == '<='), None
    return None, None


def _lookup(name: str, fields: tuple[str, ...], unique: bool,
            conds: dict[str, list[Expr]]) -> tuple[tuple[int, int, int], Lookup] | None:
    """The best lookup of one field index for a conjunction, and its score; None if unusable."""
    for field in fields:
        if field not in conds:
            return None     # a record lacking a field of the index has no entry in it
    equal: list[list[Any]] = []
    for field in fields:
        values = _equal_values(conds[field])
        if values is None:
            break
        equal.append(values)
    bounds, startswith = (None, None)
    if len(equal) < len(fields):
        bounds, startswith = _range(conds[fields[len(equal)]])
    if not equal and bounds is None and startswith is None:
        return None
    combos = 1
    for values in equal:
        combos *= len(values)
    if combos > MAX_LOOKUPS:
        return None
    tuples = tuple(itertools.product(*equal)) if equal else ((),)
    ranged = bounds is not None or startswith is not None
    score = (len(equal) if tuples else len(fields) + 1, int(ranged),
             int(unique and len(equal) == len(fields)))
    return score, Lookup(name, fields, len(equal), tuples, bounds, startswith, unique)


def _best(indexes: Sequence[tuple[str, tuple[str, ...], bool]],
          expr: Expr) -> list[Lookup]:
    """The lookups answering a conjunction: the best, and one to intersect it with."""
    conds = _conditions(expr)
    scored = []
    for name, fields, unique in indexes:
        found = _lookup(name, fields, unique, conds)
        if found is not None:
            scored.append((found[0], name, found[1]))
    if not scored:
        return []
    # The highest score first; on a tie, the first name.
    scored.sort(key=lambda item: (-item[0][0], -item[0][1], -item[0][2], item[1]))
    best = scored[0][2]
    if not best.equal or (best.unique and best.bounds is None and best.startswith is None
                          and best.width == len(best.fields)):
        return [best]
    used = set(best.fields[:best.width])
    for _, _, other in scored[1:]:
        if other.bounds is None and other.startswith is None and other.width and \
                not used & set(other.fields[:other.width]):
            return [best, other]
    return [best]


def plan_query(expr: Expr | None, indexes: Sequence[tuple[str, tuple[str, ...], bool]],
               order: tuple[str, ...] = (), reverse: bool = False,
               bound: int | None = None) -> Plan:
    """Plan `expr` over field indexes.

    :param expr: the condition, or None for every record.
    :param indexes: ``(name, fields, unique)`` of each field index.
    :param order: the field paths to sort by.
    :param reverse: sort descending.
    :param bound: the most records the sort must keep, or None.
    """
    if expr is None:
        return Plan('scan', (), None, order, reverse, bound)
    if isinstance(expr, Or):
        branches = [_best(indexes, branch) for branch in expr.exprs]
        if all(branches):
            lookups = tuple(branch[0] for branch in branches)
            return Plan('union', lookups, expr, order, reverse, bound)
        return Plan('scan', (), expr, order, reverse, bound)
    lookups = tuple(_best(indexes, expr))
    walk = _walk(indexes, expr, order) if order else None
    if walk is not None and (not lookups or lookups[0].index_name == walk.index_name
                             or walk.width >= lookups[0].width):
        return Plan('walk', (walk,), expr, order, reverse, bound)
    if not lookups:
        return Plan('scan', (), expr, order, reverse, bound)
    kind = 'index' if len(lookups) == 1 else 'intersection'
    return Plan(kind, lookups, expr, order, reverse, bound)


def _walk(indexes: Sequence[tuple[str, tuple[str, ...], bool]], expr: Expr,
          order: tuple[str, ...]) -> Lookup | None:
    """An index whose entries come in `order` for the records `expr` can match, or None.

    Every field of the index must have a condition that only a single value
    meets (a comparison, ``between``, ``is_in``, ``startswith``): then each
    such record has exactly one entry. Leading fields with one equal value
    are skipped; the order's fields must come next.
    """
    conds = _conditions(expr)
    best: Lookup | None = None
    for name, fields, unique in indexes:
        if not all(field in conds and any(type(cond) is not Contains for cond in conds[field])
                   for field in fields):
            continue
        width = 0
        equal: list[Any] = []
        for field in fields:
            values = _single_value(conds[field])
            if values is None:
                break
            equal.append(values[0])
            width += 1
        if fields[width:width + len(order)] != order:
            continue
        bounds, startswith = _range(conds[fields[width]]) if width < len(fields) else (None, None)
        if best is None or width > best.width:
            best = Lookup(name, fields, width, (tuple(equal),), bounds, startswith, unique)
    return best


def _single_value(conds: list[Expr]) -> list[Any] | None:
    """``[value]`` if `conds` hold an ``==`` (one value, a scalar); else None."""
    for cond in conds:
        if type(cond) is Compare and cond.op == '==':
            return [cond.value]
    return None


# --- running --------------------------------------------------------------------------------

def _read(read: Callable[..., Iterator[Any]], lookup: Lookup, equal: tuple[Any, ...],
          reverse: bool, txn: Transaction) -> Iterator[Any]:
    """What ``read`` (an index's ``keys`` or ``pairs``) gives for one tuple of a lookup."""
    if lookup.startswith is not None:
        return read(startswith=equal + (lookup.startswith,), reverse=reverse, txn=txn)
    if lookup.bounds is not None:
        low, high, included = lookup.bounds
        lo = None if low is None else equal + (low,)
        if high is None:
            hi, include = None, False
        elif len(lookup.fields) == len(equal) + 1:
            hi, include = equal + (high,), included
        else:       # longer tuples follow (high,): read the whole run of `equal`
            hi, include = None, False
        return read(lo, hi, prefix=equal or None, include=include, reverse=reverse, txn=txn)
    return read(prefix=equal or None, reverse=reverse, txn=txn)


def _lookup_keys(coll: Any, lookup: Lookup, txn: Transaction) -> set[Key]:
    """The record keys one lookup finds (a superset of the matches)."""
    read = coll.indices[lookup.index_name].keys
    keys: set[Key] = set()
    for equal in lookup.equal:
        keys.update(_read(read, lookup, equal, False, txn))
    return keys


def _walk_keys(coll: Any, plan: Plan, txn: Transaction) -> Iterator[Key]:
    """The record keys of a walk, in the plan's order; equal values in record key order."""
    lookup = plan.lookups[0]
    at, stop = lookup.width, lookup.width + len(plan.order)
    group: list[Key] = []
    last = None
    for tup, key in _read(coll.indices[lookup.index_name].pairs, lookup, lookup.equal[0],
                          plan.reverse, txn):
        packed = keylib.packs(tup[at:stop])     # the codec's equality, not Python's
        if packed != last and group:
            yield from sorted(group, key=keylib.packs)
            group = []
        last = packed
        group.append(key)
    yield from sorted(group, key=keylib.packs)


def _candidates(coll: Any, plan: Plan, txn: Transaction) -> Iterator[tuple[Key, Any]]:
    """``(key, value)`` of every record the plan reads, in record key order."""
    if plan.kind == 'scan':
        yield from coll.items(txn=txn)
        return
    if plan.kind == 'walk':
        walked = _walk_keys(coll, plan, txn)
        size = 16       # a limited walk stops early: read a few records at a time at first
        while True:
            chunk = list(itertools.islice(walked, size))
            if not chunk:
                return
            for key, value in zip(chunk, coll.get_many(chunk, _GONE, txn=txn)):
                if value is not _GONE:
                    yield key, value
            size = min(size * 4, 1000)
    sets = [_lookup_keys(coll, lookup, txn) for lookup in plan.lookups]
    keys = set.intersection(*sets) if plan.kind == 'intersection' else set.union(*sets)
    ordered = sorted(keys, key=keylib.packs)
    for start in range(0, len(ordered), 1000):
        chunk = ordered[start:start + 1000]
        for key, value in zip(chunk, coll.get_many(chunk, _GONE, txn=txn)):
            if value is not _GONE:
                yield key, value


#: Stands for a record that is not there, and for a field a record lacks.
_GONE = object()


def _order_key(value: Any, parts: tuple[tuple[str, ...], ...]) -> tuple[tuple[int, bytes], ...]:
    out = []
    for path in parts:
        field = value
        for part in path:
            if not isinstance(field, dict) or part not in field:
                field = _GONE
                break
            field = field[part]
        if field is _GONE:
            out.append((0, b''))
        else:
            packed = sort_key(field)
            out.append((2, b'') if packed is None else (1, packed))
    return tuple(out)


class WhereQuery:
    """The records of a collection that meet a condition; made by ``Collection.where()``.

    Iterating gives the records' values. ``order_by``, ``limit`` and
    ``offset`` return a new query; the terminal calls take ``txn=`` (a
    transaction of the store; default: the thread's open write transaction,
    or a read transaction of their own).

    :param coll: the collection.
    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param expr: the condition, or None for every record.
    :param order: the field paths to sort by (empty: record key order).
    :param reverse: sort descending.
    :param limit: the most records given, or None.
    :param offset: how many records to skip first.
    :param wrap: ``wrap(key, value)`` makes what is given for a record
        (``Model.where`` makes instances); None gives the value.
    """

    def __init__(self, coll: Any, txns: TxnManager, expr: Expr | None,
                 order: tuple[str, ...] = (), reverse: bool = False,
                 limit: int | None = None, offset: int = 0,
                 wrap: Callable[[Key, Any], Any] | None = None) -> None:
        self._coll = coll
        self._txns = txns
        self._expr = expr
        self._order = order
        self._reverse = reverse
        self._limit = limit
        self._offset = offset
        self._wrap = wrap
        self._cached: tuple[Any, Plan] | None = None

    def _with(self, **changes: Any) -> WhereQuery:
        args: dict[str, Any] = dict(order=self._order, reverse=self._reverse,
                                    limit=self._limit, offset=self._offset, wrap=self._wrap)
        args.update(changes)
        return WhereQuery(self._coll, self._txns, self._expr, **args)

    def order_by(self, fields: str | Sequence[str], reverse: bool = False) -> WhereQuery:
        """This query sorted by the values of `fields` (a field path or a sequence of them).

        :param fields: a field path, or a sequence of them.
        :param reverse: sort descending (equal values stay in record key order).

        :raises TypeError: for a field path that is not a ``str``.
        :raises ValueError: for an empty path or path part.
        """
        paths = (fields,) if isinstance(fields, str) else tuple(fields)
        return self._with(order=tuple(F(path).path for path in paths), reverse=bool(reverse))

    def limit(self, n: int | None) -> WhereQuery:
        """This query giving at most `n` records (None: no limit).

        :param n: the limit.

        :raises TypeError: if `n` is not an ``int`` or None.
        :raises ValueError: if `n` is negative.
        """
        return self._with(limit=_count(n, 'limit', allow_none=True))

    def offset(self, n: int) -> WhereQuery:
        """This query skipping its first `n` records.

        :param n: how many.

        :raises TypeError: if `n` is not an ``int``.
        :raises ValueError: if `n` is negative.
        """
        return self._with(offset=_count(n, 'offset'))

    def plan(self) -> Plan:
        """The :class:`Plan` a terminal call would follow now."""
        # The collection makes its record paths again whenever its indexes
        # change, so while they are the same object the plan holds.
        coll = self._coll
        paths = coll.records
        cached = self._cached
        if cached is not None and cached[0] is paths:
            return cached[1]
        known = _FIELD_INDEXES.get(coll)
        if known is not None and known[0] is paths:
            indexes = known[1]
        else:
            indexes = [(name, index.fields, index.unique)
                       for name, index in sorted(coll.indices.items())
                       if index.fields is not None]
            _FIELD_INDEXES[coll] = (paths, indexes)
        bound = None if self._limit is None else self._offset + self._limit
        plan = plan_query(self._expr, indexes, self._order, self._reverse, bound)
        self._cached = (paths, plan)
        return plan

    def explain(self) -> str:
        """The plan in words: the indexes read and their bounds, the filter, the sort."""
        return self.plan().text()

    def _run(self, txn: Transaction, etxn: Any) -> list[tuple[Key, Any]]:
        plan = self.plan()
        expr = self._expr
        found: Iterable[tuple[Key, Any]] = _candidates(self._coll, plan, txn)
        if expr is not None:
            found = ((key, value) for key, value in found if expr.matches(value))
        start, limit = self._offset, self._limit
        if self._order and plan.kind != 'walk':
            parts = tuple(tuple(path.split('.')) for path in self._order)
            key_of = (lambda item: _order_key(item[1], parts))  # noqa: E731
            if plan.bound is not None:
                pick = heapq.nlargest if self._reverse else heapq.nsmallest
                ordered = pick(plan.bound, found, key=key_of)
            else:
                ordered = sorted(found, key=key_of, reverse=self._reverse)
            return ordered[start:None if limit is None else start + limit]
        stop = None if limit is None else start + limit
        return list(itertools.islice(found, start, stop))

    def items(self, txn: Transaction | None = None) -> list[tuple[Key, Any]]:
        """The matching records as ``(key, value)`` pairs.

        :param txn: a transaction of the store, or None.
        """
        found = self._txns.run(txn, False, self._run)
        wrap = self._wrap
        return found if wrap is None else [(key, wrap(key, value)) for key, value in found]

    def keys(self, txn: Transaction | None = None) -> list[Key]:
        """The matching records' keys.

        :param txn: a transaction of the store, or None.
        """
        return [key for key, _ in self.items(txn)]

    def values(self, txn: Transaction | None = None) -> list[Any]:
        """The matching records' values.

        :param txn: a transaction of the store, or None.
        """
        return [value for _, value in self.items(txn)]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.values())

    def first(self, default: Any = None, txn: Transaction | None = None) -> Any:
        """The first matching record's value, or `default`.

        :param default: returned when no record matches.
        :param txn: a transaction of the store, or None.
        """
        found = self.limit(1 if self._limit is None else min(self._limit, 1)).items(txn)
        return found[0][1] if found else default

    def count(self, txn: Transaction | None = None) -> int:
        """How many records match (after ``offset`` and ``limit``).

        :param txn: a transaction of the store, or None.
        """
        return len(self.items(txn))

    def delete(self, txn: Transaction | None = None) -> int:
        """Delete the matching records in one write transaction; return how many.

        All or nothing: if one delete fails, none is made.

        :param txn: a write transaction of the store, or None (the thread's
            open write transaction, or one of its own).
        """
        return self._txns.run(txn, True, self._delete)

    def _delete(self, txn: Transaction, etxn: Any) -> int:
        keys = [key for key, _ in self._run(txn, etxn)]
        for key in keys:
            self._coll.delete(key, txn=txn)
        return len(keys)

    def __repr__(self) -> str:
        return f'<WhereQuery {self._coll.name!r}: {self._expr!r}>'


def _count(n: Any, what: str, allow_none: bool = False) -> Any:
    if n is None and allow_none:
        return None
    if type(n) is not int:
        raise TypeError(f'{what} must be an int{" or None" if allow_none else ""}, '
                        f'not {type(n).__name__!r}')
    if n < 0:
        raise ValueError(f'{what} must not be negative, got {n}')
    return n
