"""A model's indexes: declared in its class body, queried through its class.

``by_age = index_on('age')`` in a model's class body declares an index (a
:class:`DeclaredIndex`, named after its attribute), which ``bind()`` adds to
the model's collection. Read from the class, ``User.by_age`` is a
:class:`ModelIndex`: the queries of the collection's
:class:`~centidb.index.Index`, returning instances of the model.

The model is the layer above (:mod:`centidb.models.model`); what a model index
reads of it is declared here for the type checker, never imported.
"""

from __future__ import annotations

from typing import (Any, Callable, ClassVar, Generic, Iterable, Iterator, Protocol, TypeVar, cast,
                    overload)

from centidb.collection import Collection
from centidb.errors import IndexInconsistentError
from centidb.models.fields import MISSING
from centidb.index import Index
from centidb.keylib import Key
from centidb.query import query_doc
from centidb.records import Record
from centidb.txn import Transaction

__all__ = ['index_on', 'DeclaredIndex', 'ModelIndex']

_D = TypeVar('_D')


class _Binding(Protocol):
    """What a model index reads of its model's binding to a store."""

    @property
    def coll(self) -> Collection: ...


class _Schema(Protocol):
    """What a model index reads of its model's declaration (``model._model_schema``)."""

    @property
    def auto(self) -> bool: ...

    def bound(self) -> _Binding: ...

    def index(self, name: str) -> Index: ...

    def reading(self, txn: Transaction | None) -> tuple[Transaction, Transaction | None]: ...

    def instance(self, data: Any, key: Key | None) -> Any: ...


class _Model(Protocol):
    """What a model index uses of its model class; :class:`~centidb.models.model.Model` is one."""

    # A _Schema; typed Any here, since each model declares it more precisely.
    _model_schema: ClassVar[Any]


_M = TypeVar('_M', bound=_Model)


def index_on(*on: str | Callable[[Any], Any], unique: bool = False) -> DeclaredIndex:
    """Declare an index in a model's class body; the attribute's name is the index's.

    ``by_age = index_on('age')`` indexes one field: each record is indexed
    under that field's value, as ``add_index`` does with a function
    returning it (``None``: no entry; a ``list``: one entry per element).
    ``index_on('city', 'age')`` indexes the tuple of several fields.
    ``index_on(func)`` indexes what ``func(instance)`` returns.

    :param on: one or more field names, or one function of an instance.
    :param unique: no two records may have the same index tuple (see
        ``add_index``): a save that would raises
        :class:`~centidb.errors.UniqueError` and writes nothing.
    :returns: a :class:`DeclaredIndex`.
    :raises TypeError: for anything else in `on`.
    """
    if len(on) == 1 and callable(on[0]):
        return DeclaredIndex((), on[0], bool(unique))
    if not on or not all(isinstance(name, str) and name for name in on):
        raise TypeError('index_on() takes one or more field names, or one function, '
                        f'not {on!r}')
    return DeclaredIndex(cast('tuple[str, ...]', on), None, bool(unique))


class DeclaredIndex:
    """An index declared in a model's class body by :func:`index_on`.

    Read from the model class (``User.by_age``), it is the model's
    :class:`ModelIndex`, whose queries return instances.

    :param fields: the field names indexed, or ``()`` with `func`.
    :param func: ``func(instance)``, or None with `fields`.
    :param unique: whether no two records may share an index tuple.
    """

    def __init__(self, fields: tuple[str, ...], func: Callable[[Any], Any] | None,
                 unique: bool) -> None:
        self.fields = fields
        self.func = func
        self.unique = unique
        #: The attribute name, which is the index's name (set by the class).
        self.name = ''

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        on = ', '.join(map(repr, self.fields)) if self.func is None else repr(self.func)
        return f'index_on({on}{", unique=True" if self.unique else ""})'

    def __get__(self, obj: object, owner: type[_M]) -> ModelIndex[_M]:
        return ModelIndex(owner, self.name)


class ModelIndex(Generic[_M]):
    """An index of a model: queries over its index tuples that return instances.

    ``User.by_age`` is one (for the index declared as ``by_age``); the
    query parameters and their meaning are those of
    :class:`~centidb.index.Index`.

    :param model: the model class.
    :param name: the index's name.
    """

    def __init__(self, model: type[_M], name: str) -> None:
        self.model = model
        self.name = name

    def __repr__(self) -> str:
        return f'<ModelIndex {self.model.__name__}.{self.name}>'

    @property
    def index(self) -> Index:
        """The bound collection's :class:`~centidb.index.Index` of this name."""
        return _schema(self.model).index(self.name)

    def _instance(self, record: Record | None, default: Any) -> Any:
        if record is None:
            return default
        return _schema(self.model).instance(record.data, record.key)

    @overload
    def get(self, tup: object, *, txn: Transaction | None = None) -> _M | None: ...

    @overload
    def get(self, tup: object, default: _D, *, txn: Transaction | None = None) -> _M | _D: ...

    def get(self, tup: object, default: Any = None, *, txn: Transaction | None = None) -> Any:
        """Return the first instance (in key order) whose index tuple equals `tup`.

        :param tup: the index tuple (a bare value means a 1-tuple).
        :param default: returned when no record has that index tuple.
        :param txn: a :class:`~centidb.txn.Transaction` of the store to read
            in (default: the thread's write transaction, or one of its own).
        :returns: an instance, or `default`.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        return self._instance(self.index.get(tup, None, rec=True, txn=txn), default)

    def get_many(self, tups: Iterable[object], *,
                 txn: Transaction | None = None) -> list[_M | None]:
        """Return a list with, for each index tuple of `tups`, what :meth:`get` returns.

        All are read in one transaction.

        :param tups: an iterable of index tuples (bare values mean 1-tuples).
        :param txn: a :class:`~centidb.txn.Transaction` of the store to read
            in (default: the thread's write transaction, or one of its own).
        :returns: a ``list`` of instances or None, in the order of `tups`.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        found = self.index.get_many(tups, None, rec=True, txn=txn)
        return [self._instance(record, None) for record in found]

    def has(self, tup: object, *, txn: Transaction | None = None) -> bool:
        """Return True if some record has the index tuple `tup`.

        :param tup: the index tuple (a bare value means a 1-tuple).
        :param txn: a :class:`~centidb.txn.Transaction` of the store to read
            in (default: the thread's write transaction, or one of its own).
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        return self.index.has(tup, txn=txn)

    def __contains__(self, tup: object) -> bool:
        return self.has(tup)

    @query_doc('index tuple')
    def keys(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, max: int | None = None,
             include: bool = False, txn: Transaction | None = None) -> Iterator[Key]:
        """Iterate the keys of the records the matching entries point to.

        {query}
        :returns: an iterator of key tuples, one per entry.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        return self.index.keys(lo, hi, prefix=prefix, startswith=startswith, reverse=reverse,
                               max=max, include=include, txn=txn)

    @query_doc('index tuple')
    def items(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, reverse: bool = False, max: int | None = None,
              include: bool = False,
              txn: Transaction | None = None) -> Iterator[tuple[Key, _M]]:
        """Iterate ``(index tuple, instance)`` pairs, one per matching entry.

        {query}
        :returns: an iterator of ``(index tuple, instance)``.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        index, model = self.index, self.model
        schema = _schema(model)
        if not schema.auto:
            pairs = index.items(lo, hi, prefix=prefix, startswith=startswith, reverse=reverse,
                                max=max, include=include, txn=txn)
            return ((tup, schema.instance(data, None)) for tup, data in pairs)
        # The instances keep their keys: read the entries, then each record,
        # in one transaction.
        reading, own = schema.reading(txn)
        try:
            entries = index.pairs(lo, hi, prefix=prefix, startswith=startswith,
                                  reverse=reverse, max=max, include=include, txn=reading)
        except BaseException:
            if own is not None:
                own.abort()
            raise
        return _entries_read(model, self.name, entries, reading, own)

    @query_doc('index tuple')
    def values(self, lo: object = None, hi: object = None, *, prefix: object = None,
               startswith: object = None, reverse: bool = False, max: int | None = None,
               include: bool = False, txn: Transaction | None = None) -> Iterator[_M]:
        """Iterate the instances the matching entries point to.

        {query}
        :returns: an iterator of instances, one per entry.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        pairs = self.items(lo, hi, prefix=prefix, startswith=startswith, reverse=reverse,
                           max=max, include=include, txn=txn)
        return (instance for _, instance in pairs)

    @overload
    def find(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, include: bool = False,
             txn: Transaction | None = None) -> _M | None: ...

    @overload
    def find(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, include: bool = False,
             txn: Transaction | None = None, default: _D) -> _M | _D: ...

    def find(self, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, include: bool = False,
             txn: Transaction | None = None, default: Any = None) -> Any:
        """Return the instance the first matching entry points to, or `default`.

        :param lo: the lowest index tuple included; a bare value means a
            1-tuple.
        :param hi: the index tuple at which to stop, excluded unless
            `include`.
        :param prefix: only index tuples whose first elements equal this
            tuple's.
        :param startswith: as `prefix`, but the last element (a ``str`` or
            ``bytes``) matches every string starting with it.
        :param reverse: start from the highest index tuple, going down.
        :param include: include `hi` itself.
        :param txn: a :class:`~centidb.txn.Transaction` of the store to read
            in (default: the thread's write transaction, or one of its own).
        :param default: returned when nothing matches.
        :returns: an instance, or `default`.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        for instance in self.values(lo, hi, prefix=prefix, startswith=startswith,
                                    reverse=reverse, max=1, include=include, txn=txn):
            return instance
        return default

    @query_doc('index tuple')
    def count(self, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, reverse: bool = False, max: int | None = None,
              include: bool = False, txn: Transaction | None = None) -> int:
        """Return how many entries match the query, without reading any record.

        {query}
        :returns: the count, at most `max`.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        return self.index.count(lo, hi, prefix=prefix, startswith=startswith, reverse=reverse,
                                max=max, include=include, txn=txn)

    @query_doc('index tuple')
    def group_counts(self, size: int = 1, lo: object = None, hi: object = None, *,
                     prefix: object = None, startswith: object = None, reverse: bool = False,
                     max: int | None = None, include: bool = False,
                     txn: Transaction | None = None) -> list[tuple[Key, int]]:
        """Return ``[(group, count), ...]``: matching entries counted per leading elements.

        As :meth:`Index.group_counts() <centidb.index.Index.group_counts>`:
        a group is the first `size` elements of an index tuple (a shorter
        tuple is a group of its own), groups come in index order, and no
        record is read. ``User.by_city.group_counts()`` counts the users
        per city.

        :param size: how many leading elements make a group (``>= 1``).
        {query}
        :returns: a ``list`` of ``(group tuple, count)``; `max` limits the
            number of groups.
        :raises ValueError: if `size` is less than 1.
        :raises TypeError: if `size` is not an ``int``.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound to
            a store.
        """
        return self.index.group_counts(size, lo, hi, prefix=prefix, startswith=startswith,
                                       reverse=reverse, max=max, include=include, txn=txn)


def _schema(model: type[_Model]) -> _Schema:
    """The declaration of the model class `model`."""
    schema: _Schema = model._model_schema
    return schema


def _entries_read(model: type[_M], name: str, entries: Iterator[tuple[Key, Key]],
                  txn: Transaction, own: Transaction | None) -> Iterator[tuple[Key, _M]]:
    """``(index tuple, instance)`` for each entry, each record read in `txn`; ends `own`."""
    schema = _schema(model)
    coll = schema.bound().coll
    try:
        for tup, key in entries:
            data = coll.get(key, MISSING, txn=txn)
            if data is MISSING:
                raise IndexInconsistentError(
                    f'index {name!r} of collection {coll.name!r} points at missing record '
                    f'{key!r}: the index is inconsistent; store.verify() reports such '
                    f'problems, and reindex() repairs them')
            yield tup, schema.instance(data, key)
    finally:
        if own is not None:
            own.abort()
