"""Query parameters shared by collections and indexes, and find()/count().

Every iterating method of :class:`~centidb.collection.Collection` and
:class:`~centidb.index.Index`, and ``count()``, takes these keyword
parameters:

``lo``
    Lowest key (or index tuple) included. A bare value means a 1-tuple.
``hi``
    Key at which to stop, excluded unless ``include=True``.
``prefix``
    Only keys that start with this tuple. A ``str`` or ``bytes`` as the last
    element also matches longer strings (``prefix='ab'`` matches
    ``('abc', 1)``). Combined with ``lo``/``hi``, all bounds apply.
``reverse``
    Iterate from the highest key down.
``max``
    Stop after this many results.

Only ``None`` means "no bound": ``0``, ``''`` and ``False`` are real bounds.
"""

import operator

from centidb import keylib
from centidb.records import as_key

__all__ = ['Queryable', 'check_query', 'key_range', 'query_doc', 'readonly']


def readonly(attr, doc):
    """A read-only property returning the attribute `attr`, documented by `doc`.

    :param attr: the private attribute's name.
    :param doc: the property's docstring.
    """
    return property(operator.attrgetter(attr), doc=doc)


def check_query(reverse, max):
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


def key_range(prefix_bytes, lo, hi, prefix, include):
    """Byte bounds ``(lo, hi)`` for a query under `prefix_bytes`; see the module doc.

    :param prefix_bytes: the collection's or index's prefix.
    :param lo: the ``lo`` parameter, or None.
    :param hi: the ``hi`` parameter, or None.
    :param prefix: the ``prefix`` parameter, or None.
    :param include: the ``include`` parameter.
    """
    if prefix is None:
        lo_bytes, hi_bytes = keylib.prefix_range((), prefix_bytes)
    else:
        lo_bytes, hi_bytes = keylib.prefix_range(as_key(prefix), prefix_bytes)
    if lo is not None:
        lo_bytes = max(lo_bytes, keylib.packs(as_key(lo), prefix_bytes))
    if hi is not None:
        bound = keylib.upper_bound(as_key(hi), prefix_bytes, include)
        hi_bytes = bound if hi_bytes is None else min(hi_bytes, bound)
    return lo_bytes, hi_bytes


_QUERY_FIELDS = """\
:param lo: the lowest {what} included; a bare value means a 1-tuple.
:param hi: the {what} at which to stop, excluded unless `include`.
:param prefix: only {what}s that start with this tuple (see the module doc).
:param reverse: start from the highest {what}, going down.
:param max: stop after this many results (``None``: no limit).
:param include: include `hi` itself.
:param txn: a :class:`~centidb.txn.Transaction` of the store to read in
    (default: see the module doc).
:raises TypeError: if `max` is not an ``int``, or `txn` is not a
    transaction of this store.
:raises ValueError: if `max` is negative.
:raises ~centidb.errors.TransactionError: if `txn` has ended."""


def query_doc(what):
    """Put the query parameters' fields, written once, where ``{query}`` stands.

    :param what: what the bounds are, as in "the lowest {what} included".
    :returns: a decorator for a method whose docstring holds ``{query}``.
    """
    def fill(method):
        if method.__doc__:   # None under python -OO
            fields = _QUERY_FIELDS.format(what=what).replace('\n', '\n' + ' ' * 8)
            method.__doc__ = method.__doc__.replace('{query}', fields)
        return method
    return fill


class Queryable:
    """``find()`` and ``count()`` for a class with ``values()`` and ``_matches()``.

    ``_matches(...)`` iterates whatever counts as one result (records of a
    collection, entries of an index) for the query parameters.
    """

    def find(self, lo=None, hi=None, prefix=None, reverse=False, include=False,
             txn=None, default=None):
        """Return the value of the first matching record, or `default`.

        For an index: the value of the record the first matching entry
        points to.

        :param lo: the lowest key (index tuple, for an index) included; a
            bare value means a 1-tuple.
        :param hi: the key at which to stop, excluded unless `include`.
        :param prefix: only keys that start with this tuple (see the module
            doc).
        :param reverse: start from the highest key, going down.
        :param include: include `hi` itself.
        :param txn: a :class:`~centidb.txn.Transaction` of the store to
            read in (default: see the module doc).
        :param default: returned when nothing matches.
        :returns: the record's value, or `default`.
        :raises TypeError: if `txn` is not a transaction of this store.
        :raises ~centidb.errors.TransactionError: if `txn` has ended.
        :raises ~centidb.errors.UnknownEncoderError: for a record packed
            with a packer not registered in this session.
        :raises ~centidb.errors.IndexInconsistentError: (an index) if the
            entry points at a missing record.
        """
        for value in self.values(lo, hi, prefix, reverse, 1, include, txn):
            return value
        return default

    @query_doc('key')
    def count(self, lo=None, hi=None, prefix=None, reverse=False, max=None,
              include=False, txn=None):
        """Return how many records (or index entries) match the query.

        For an index, the keys below are index tuples.

        {query}
        :returns: the count, at most `max`.
        """
        return sum(1 for _ in self._matches(txn, lo, hi, prefix, reverse, max, include))
