"""Query parameters shared by collections and indexes, and :class:`KeySpace`: find()/count().

Every iterating method of :class:`~centidb.collection.Collection` and
:class:`~centidb.index.Index`, ``find()``, ``count()`` and
``group_counts()`` take these parameters, in this order; all but ``lo`` and
``hi`` are keyword-only:

``lo``
    Lowest key (or index tuple) included. A bare value means a 1-tuple.
``hi``
    Key at which to stop, excluded unless ``include=True``.
``prefix``
    Only keys whose first elements equal this tuple's, element by element:
    ``prefix=('libc6',)`` matches ``('libc6', 2)`` but not
    ``('libc6-dev',)``. Elements compare as stored keys do, so ``1`` does
    not match ``1.0`` or ``True``.
``startswith``
    Like ``prefix``, except that the last element, a ``str`` or ``bytes``
    (or a ``Desc`` of one), matches every string that starts with it:
    ``startswith='libc6'`` matches ``('libc6',)`` and ``('libc6-dev', 1)``.
    All given bounds apply together (``lo``, ``hi``, ``prefix`` and
    ``startswith``).
``reverse``
    Iterate from the highest key down.
``max``
    Stop after this many results.

Only ``None`` means "no bound": ``0``, ``''`` and ``False`` are real bounds.

The loop of ``group_counts()`` is the key codec's
:func:`~centidb.keylib.count_groups`.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Callable, Iterator, TypeVar

from centidb import keylib
from centidb.engines import EngineTransaction
from centidb.keylib import Key, count_groups
from centidb.records import as_key
from centidb.txn import Transaction, TxnManager

__all__ = ['KeySpace', 'check_query', 'doc_of', 'key_range', 'query_doc', 'readonly']

_F = TypeVar('_F', bound=Callable[..., Any])


def readonly(attr: str, doc: str) -> Any:
    """A read-only property returning the attribute `attr`, documented by `doc`.

    Typed ``Any`` for the type checker: it cannot read the attribute's type
    from its name, so a class that wants one declares it.

    :param attr: the private attribute's name.
    :param doc: the property's docstring.
    :returns: the ``property``.
    """
    return property(operator.attrgetter(attr), doc=doc)


def check_query(reverse: object, max: int | None) -> None:
    """Check the `reverse` and `max` query parameters.

    :param reverse: the ``reverse`` parameter (any value is accepted).
    :param max: ``None`` or a non-negative ``int``.
    :raises TypeError: if `max` is not an ``int``.
    :raises ValueError: if `max` is negative.
    """
    if max is not None:
        if type(max) is not int:
            raise TypeError(f'max must be an int or None, not {type(max).__name__!r}')
        if max < 0:
            raise ValueError(f'max must not be negative, got {max}')


def key_range(prefix_bytes: bytes, lo: object, hi: object, prefix: object, include: bool,
              startswith: object = None) -> tuple[bytes, bytes | None]:
    """Byte bounds ``(lo, hi)`` for a query under `prefix_bytes`; see the module doc.

    :param prefix_bytes: the collection's or index's prefix.
    :param lo: the ``lo`` parameter, or None.
    :param hi: the ``hi`` parameter, or None.
    :param prefix: the ``prefix`` parameter, or None.
    :param include: the ``include`` parameter.
    :param startswith: the ``startswith`` parameter, or None.
    :raises TypeError: if the last element of `startswith` is not a ``str``
        or ``bytes``.
    :raises ValueError: if `startswith` is an empty tuple.
    """
    if prefix is None:
        lo_bytes, hi_bytes = keylib.prefix_range((), prefix_bytes)
    else:
        lo_bytes, hi_bytes = keylib.prefix_range(as_key(prefix), prefix_bytes)
    if startswith is not None:
        low, high = keylib.startswith_range(as_key(startswith), prefix_bytes)
        lo_bytes = max(lo_bytes, low)
        # high is never None: the string's type tag, below 0xFF, comes first.
        hi_bytes = high if hi_bytes is None else min(hi_bytes, high)  # type: ignore[type-var]
    if lo is not None:
        lo_bytes = max(lo_bytes, keylib.packs(as_key(lo), prefix_bytes))
    if hi is not None:
        bound = keylib.upper_bound(as_key(hi), prefix_bytes, include)
        hi_bytes = bound if hi_bytes is None else min(hi_bytes, bound)
    return lo_bytes, hi_bytes


_QUERY_FIELDS = """\
:param lo: the lowest {what} included; a bare value means a 1-tuple.
:param hi: the {what} at which to stop, excluded unless `include`.
:param prefix: only {what}s whose first elements equal this tuple's.
:param startswith: as `prefix`, but the last element (a ``str`` or
    ``bytes``) matches every string starting with it.
:param reverse: start from the highest {what}, going down.
:param max: stop after this many results (``None``: no limit).
:param include: include `hi` itself.
:param txn: a :class:`~centidb.txn.Transaction` of the store to read in
    (default: see the module doc).
:raises TypeError: if `max` is not an ``int``, `txn` is not a
    transaction of this store, or the last element of `startswith` is not
    a ``str`` or ``bytes``.
:raises ValueError: if `max` is negative.
:raises ~centidb.errors.TransactionError: if `txn` has ended."""


def query_doc(what: str) -> Callable[[_F], _F]:
    """Put the query parameters' fields, written once, where ``{query}`` stands.

    :param what: what the bounds are, as in "the lowest {what} included".
    :returns: a decorator for a method whose docstring holds ``{query}``.
    """
    def fill(method: _F) -> _F:
        if method.__doc__:   # None under python -OO
            fields = _QUERY_FIELDS.format(what=what).replace('\n', '\n' + ' ' * 8)
            method.__doc__ = method.__doc__.replace('{query}', fields)
        return method
    return fill


def doc_of(source: Callable[..., Any]) -> Callable[[_F], _F]:
    """Give a method that passes its call on the docstring of the method it calls.

    :param source: the method whose docstring is copied (say
        :meth:`KeySpace.count`).
    :returns: a decorator.
    """
    def copy(method: _F) -> _F:
        method.__doc__ = source.__doc__
        return method
    return copy


class KeySpace:
    """The queries over one key space: a collection's records, or an index's entries.

    A :class:`~centidb.collection.Collection` and an
    :class:`~centidb.index.Index` each hold one and pass their ``find()``,
    ``count()`` and ``group_counts()`` calls to it.

    :param prefix: the bytes every engine key of the space starts with.
    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param values: the holder's ``values()`` (the query parameters, and
        ``txn=``), which :meth:`find` calls.
    :param entries: ``entries(etxn, lo, hi, reverse)`` iterates the engine
        key of each result (a record key, or an index entry) without
        decoding it.
    :param chunks: ``chunks(etxn, lo, hi, reverse)`` iterates the same
        engine keys in lists (fewer Python steps for a long count).
    :param group_of: ``group_of(key_bytes, size)`` returns the first `size`
        elements of the key or index tuple in one of those engine keys
        (raising the holder's error for a corrupt one).
    :param key_parts: how many keys one engine key packs: 1 (a record
        key), 2 (an index entry: index tuple, then record key).
    :param countable: ``countable(etxn)`` is True when, in `etxn`'s view,
        every engine key of the space is one result, so the engine may
        count them (an index always; a collection while it holds no
        batch, whose keys hold several records each).
    """

    def __init__(self, prefix: bytes, txns: TxnManager, values: Callable[..., Iterator[Any]],
                 entries: Callable[[EngineTransaction, bytes, bytes | None, bool],
                                   Iterator[bytes]],
                 chunks: Callable[[EngineTransaction, bytes, bytes | None, bool],
                                  Iterator[list[bytes]]],
                 group_of: Callable[[bytes, int], Key], key_parts: int,
                 countable: Callable[[EngineTransaction], bool]) -> None:
        self.prefix = prefix
        self.txns = txns
        self.values = values
        self.entries = entries
        self.chunks = chunks
        self.group_of = group_of
        self.key_parts = key_parts
        self.countable = countable

    def bounds(self, lo: object, hi: object, prefix: object, startswith: object,
               include: bool) -> tuple[bytes, bytes | None]:
        """The engine key bounds ``(lo, hi)`` of a query; see :func:`key_range`.

        :param lo: the ``lo`` parameter, or None.
        :param hi: the ``hi`` parameter, or None.
        :param prefix: the ``prefix`` parameter, or None.
        :param startswith: the ``startswith`` parameter, or None.
        :param include: the ``include`` parameter.
        """
        return key_range(self.prefix, lo, hi, prefix, include, startswith)

    def find(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, include: bool = False,
             txn: Transaction | None = None, default: Any = None) -> Any:
        """Return the value of the first matching record, or `default`.

        For an index: the value of the record the first matching entry
        points to.

        :param lo: the lowest key (index tuple, for an index) included; a
            bare value means a 1-tuple.
        :param hi: the key at which to stop, excluded unless `include`.
        :param prefix: only keys whose first elements equal this tuple's.
        :param startswith: as `prefix`, but the last element (a ``str`` or
            ``bytes``) matches every string starting with it.
        :param reverse: start from the highest key, going down.
        :param include: include `hi` itself.
        :param txn: a :class:`~centidb.txn.Transaction` of the store to
            read in (default: see the module doc).
        :param default: returned when nothing matches.
        :returns: the record's value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.UnknownEncoderError: for a record stored
            with a packer not registered in this session.
        :raises ~centidb.errors.IndexInconsistentError: (an index) if the
            entry points at a missing record.
        """
        for value in self.values(lo, hi, prefix=prefix, startswith=startswith,
                                 reverse=reverse, max=1, include=include, txn=txn):
            return value
        return default

    @query_doc('key')
    def count(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, reverse: bool = False, max: int | None = None,
              include: bool = False, txn: Transaction | None = None) -> int:
        """Return how many records (or index entries) match the query.

        For an index, the keys below are index tuples. Nothing is decoded:
        the count costs one pass over the engine keys (no value is read,
        unless the collection holds batches).

        {query}
        :returns: the count, at most `max`.
        """
        check_query(reverse, max)
        lo_bytes, hi_bytes = self.bounds(lo, hi, prefix, startswith, include)
        return self.txns.run(txn, False, self._count, lo_bytes, hi_bytes, reverse, max)

    def _count(self, txn: Transaction, etxn: EngineTransaction, lo: bytes, hi: bytes | None,
               reverse: bool, max: int | None) -> int:
        if max is None and self.countable(etxn):
            return etxn.count(lo, hi)
        keys = self.entries(etxn, lo, hi, reverse)
        if max is not None:
            keys = itertools.islice(keys, max)
        n = 0
        for _ in keys:
            n += 1
        return n

    @query_doc('key')
    def group_counts(self, size: int = 1, lo: object = None, hi: object = None, *,
                     prefix: object = None, startswith: object = None, reverse: bool = False,
                     max: int | None = None, include: bool = False,
                     txn: Transaction | None = None) -> list[tuple[Key, int]]:
        """Return ``[(group, count), ...]``: matches counted per leading elements.

        A group is the first `size` elements of a key (of an index tuple,
        for an index); a shorter key is a group of its own. Groups come in
        key order (reversed with `reverse`). Only the first key of each
        group is decoded, so this costs about one pass over the engine keys.
        For example ``index.group_counts()`` counts the entries per first
        element, like SQL's ``GROUP BY``.

        :param size: how many leading elements make a group (``>= 1``).
        {query}
        :returns: a ``list`` of ``(group tuple, count)``; `max` limits the
            number of groups.
        :raises ValueError: if `size` is less than 1.
        """
        if type(size) is not int:
            raise TypeError(f'size must be an int, not {type(size).__name__!r}')
        if size < 1:
            raise ValueError(f'size must be at least 1, got {size}')
        check_query(reverse, max)
        lo_bytes, hi_bytes = self.bounds(lo, hi, prefix, startswith, include)
        return self.txns.run(txn, False, self._group_counts, lo_bytes, hi_bytes,
                             reverse, max, size)

    def _group_counts(self, txn: Transaction, etxn: EngineTransaction, lo: bytes,
                      hi: bytes | None, reverse: bool, max: int | None,
                      size: int) -> list[tuple[Key, int]]:
        return count_groups(self.chunks(etxn, lo, hi, reverse), self.prefix, size,
                            reverse, max, self.key_parts, self.group_of)
