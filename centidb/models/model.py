"""Declarative models: a class declares a collection's fields, key and indexes.

A model is a class with annotated fields, in the style of a dataclass::

    class User(centidb.Model, collection='users', key='email'):
        email: str
        name: str
        age: int = 0
        tags: list[str] = centidb.field(default_factory=list)

        by_age = centidb.index_on('age')
        by_name = centidb.index_on(lambda user: user.name.lower(), unique=True)

``User.bind(store)`` opens the collection and adds its indexes, so the
opening code never repeats ``add_index``. Instances are made with keyword
arguments (``User(email='a@b', name='Ann')``), saved with ``save()``,
removed with ``delete()``; class methods read them back (``get``,
``get_many``, ``items``, ``keys``, ``values``, ``find``, ``count``) and write
many at once (``put_many``, ``delete_many``); ``User.by_age`` queries the
index and returns instances. Every call takes ``txn=``, or joins the write transaction the
thread has open, as collection calls do.

Records are stored as plain ``dict`` objects (field name to value) with the
collection's default encoder, so any program can read them without the
model. Field types are checked on every save; see :class:`Model` for what
is accepted.

The key is ``key=`` (a field name, or a tuple of them: the key tuple holds
those fields' values; or a function of an instance returning the key).
Without ``key=``, records are numbered by the collection's counter, and an
instance remembers the number it was saved under.

A model used before ``bind(store)`` raises
:class:`~centidb.errors.ModelNotBoundError`. Fields and their type checks
are :mod:`centidb.models.fields`, index declarations and queries
:mod:`centidb.models.index`; ``field``, ``Field``, ``index_on``,
``DeclaredIndex`` and ``ModelIndex`` can be imported from here too.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Iterator, TypeVar, overload

from centidb.collection import Collection
from centidb.errors import ModelNotBoundError
from centidb.expr import Expr
from centidb.models.fields import (MISSING, Check, Field, declare_field, described, field, field_names,
                            field_values, type_checks)
from centidb.index import Index
from centidb.keylib import Key
from centidb.models.index import DeclaredIndex, ModelIndex, index_on
from centidb.query import query_doc
from centidb.records import Record, as_key
from centidb.store import Store
from centidb.txn import Transaction, TxnManager
from centidb.where import WhereQuery, as_expr

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def _no_transform(**kwargs):
        return lambda cls: cls

    # PEP 681's marker, for tools that look for it at run time; a no-op
    # before Python 3.11. Type checkers read the import above.
    dataclass_transform = getattr(typing, 'dataclass_transform', None) or _no_transform

__all__ = ['Model', 'ModelIndex', 'DeclaredIndex', 'Field', 'field', 'index_on']

_D = TypeVar('_D')
_M = TypeVar('_M', bound='Model')


def _on_instances(cls: type[Model], func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``func``, a function of an instance of `cls`, as a function of a stored ``dict``."""
    return lambda data: func(cls._from_record(data))


class _Binding:
    """A model class's store, collection and transaction manager."""

    __slots__ = ('store', 'coll', 'txns')

    def __init__(self, store: Store, coll: Collection, txns: TxnManager) -> None:
        self.store = store
        self.coll = coll
        self.txns = txns


class _Schema:
    """What one model class declares, the functions made from it, and its binding.

    :param cls: the model class.
    :param collection: the collection's name (None for :class:`Model`).
    :param fields: field name to :class:`~centidb.models.fields.Field`, in declaration order
        (inherited fields first).
    :param key: None (counter keys), a tuple of field names, or a function
        of an instance.
    :param indexes: index name to :class:`~centidb.models.index.DeclaredIndex`.
    """

    def __init__(self, cls: type[Model], collection: str | None, fields: dict[str, Field],
                 key: tuple[str, ...] | Callable[[Any], Any] | None,
                 indexes: dict[str, DeclaredIndex]) -> None:
        self.cls = cls
        self.collection = collection
        self.fields = fields
        self.key = key
        self.indexes = indexes
        self.auto = key is None
        # The functions the collection calls with each stored dict. Made
        # once per class: reopening a collection in one store session must
        # pass the same key function object.
        self.key_func: Callable[[Any], Any] | None = None
        if isinstance(key, tuple):
            self.key_func = field_values(key, fields, whole_tuple=True)
        elif key is not None:
            self.key_func = _on_instances(cls, key)
        self.index_funcs = {
            name: (field_values(declared.fields, fields) if declared.func is None
                   else _on_instances(cls, declared.func))
            for name, declared in indexes.items()}
        self._checks: tuple[tuple[str, Check, str], ...] | None = None
        self.binding: _Binding | None = None

    def checks(self) -> tuple[tuple[str, Check, str], ...]:
        """``(field name, check, type name)`` of each field, made at first use.

        :raises TypeError: if an annotation cannot be read, or names a type
            that is not supported.
        """
        if self._checks is None:
            self._checks = type_checks(self.cls, self.fields)
        return self._checks

    def instance(self, data: Any, key: Key | None) -> Any:
        """An instance from a stored ``dict`` (not checked); `key` kept for counter keys."""
        cls = self.cls
        if type(data) is not dict:
            raise ValueError(f'collection {self.collection!r} holds a '
                             f'{type(data).__name__} where {cls.__name__} expects a dict')
        instance = object.__new__(cls)
        own = instance.__dict__
        for name, declared in self.fields.items():
            if name in data:
                own[name] = data[name]
            elif declared.required:
                raise ValueError(f'a record of collection {self.collection!r} has no '
                                 f'value for the field {cls.__name__}.{name}, which has no '
                                 f'default')
            else:
                own[name] = declared.make_default()
        if key is not None and self.auto:
            own['_model_key'] = key
        return instance

    def record(self, instance: Model) -> dict[str, Any]:
        """The ``dict`` to store for `instance`, after checking every field's type."""
        data = {}
        for name, check, expected in self.checks():
            value = getattr(instance, name)
            problem = check(value)
            if problem is not None:
                raise TypeError(f'{self.cls.__name__}.{name} must be {expected}, not {problem}')
            data[name] = value
        return data

    def key_to_delete(self, item: object) -> Key:
        """The key ``delete()`` deletes for `item`, an instance; or `item` as a key tuple.

        :raises TypeError: for an instance of another model class.
        :raises ValueError: for an instance with counter keys never saved or loaded.
        """
        cls = self.cls
        if not isinstance(item, Model):
            return as_key(item)
        if type(item) is not cls:
            raise TypeError(f'{cls.__name__}.delete_many() takes keys or {cls.__name__} '
                            f'instances, not {described(item)}')
        if not self.auto:
            return self.key_of(item)
        key: Key | None = item.__dict__.get('_model_key')
        if key is None:
            raise ValueError(f'this {cls.__name__} was never saved, so it has no key to delete')
        return key

    def key_of(self, instance: Model) -> Key:
        """The key of `instance` made from its fields (not for counter keys)."""
        if isinstance(self.key, tuple):
            return tuple(getattr(instance, name) for name in self.key)
        return as_key(self.key(instance))  # type: ignore[misc]  # not counter keys

    def bind(self, store: Store) -> Collection:
        """Open the collection in `store`, add the indexes, keep the binding (``Model.bind``)."""
        if self.collection is None:
            raise TypeError('Model is the base class of models; declare a subclass')
        if not isinstance(store, Store):
            raise TypeError(f'{self.cls.__name__}.bind() needs a Store, not {store!r}')
        self.checks()       # an unsupported field type fails here, not at the first save
        coll = store.collection(self.collection, key_func=self.key_func)
        if coll.key_func is not self.key_func or coll.txn_key_func is not None:
            raise ValueError(f'collection {coll.name!r} is already open in this store with '
                             f'another key function than {self.cls.__name__} makes')
        for name, func in self.index_funcs.items():
            index = coll.indices.get(name)
            if index is not None and index.func is func:
                continue    # bound before, to this store
            coll.add_index(name, func, unique=self.indexes[name].unique)
        # A transaction names its manager: it finds the thread's write
        # transaction, which reads and saves join.
        probe = store.begin()
        txns = probe.manager
        probe.abort()
        self.binding = _Binding(store, coll, txns)
        return coll

    def bound(self) -> _Binding:
        """The binding, or a :class:`~centidb.errors.ModelNotBoundError` saying how to make it."""
        binding = self.binding
        if binding is None:
            if self.collection is None:
                raise TypeError('Model is the base class of models; declare a subclass')
            raise ModelNotBoundError(f'{self.cls.__name__} is not bound to a store; call '
                                     f'{self.cls.__name__}.bind(store) first')
        return binding

    def index(self, name: str) -> Index:
        """The bound collection's :class:`~centidb.index.Index` `name`."""
        coll = self.bound().coll
        index = coll.indices.get(name)
        if index is None:
            raise ModelNotBoundError(f'the index {name!r} of {self.cls.__name__} is not added '
                                     f'to collection {coll.name!r}; call '
                                     f'{self.cls.__name__}.bind(store) again')
        return index

    def reading(self, txn: Transaction | None) -> tuple[Transaction, Transaction | None]:
        """``(transaction to read in, own transaction to end or None)``.

        `txn` if given, else the thread's write transaction, else a new read
        transaction that the caller ends.
        """
        if txn is not None:
            return txn, None
        binding = self.bound()
        current = binding.txns.current_write()
        if current is not None:
            return current, None
        own = binding.store.begin()
        return own, own

    def forget_on_abort(self, txn: Transaction | None, instances: Iterable[Model]) -> None:
        """Make `instances` forget the counter keys they were just given if `txn` aborts."""
        if txn is None:
            txn = self.bound().txns.current_write()
            if txn is None:
                return      # the write committed in a transaction of its own

        def forget() -> None:
            for instance in instances:
                instance.__dict__.pop('_model_key', None)
        txn.undo.append(forget)


def _declared(cls: type[Model], collection: str | None,
              key: str | tuple[str, ...] | Callable[[Any], Any] | None) -> _Schema:
    """The schema of `cls`, a new model class: what its body and class keywords declare.

    Until it is replaced, ``cls._model_schema`` is the schema of the model `cls`
    subclasses, whose fields, indexes and key (unless `key`) it inherits.
    """
    name = cls.__name__
    parent = cls._model_schema
    if collection is None:
        collection = name
    elif not isinstance(collection, str) or not collection:
        raise TypeError(f'{name}: collection must be a non-empty str, not {collection!r}')
    fields: dict[str, Field] = dict(parent.fields)
    for attr in field_names(cls):
        if isinstance(vars(cls).get(attr), DeclaredIndex):
            raise TypeError(f'{name}.{attr} is both a field and an index')
        fields[attr] = declare_field(cls, attr)     # redeclared: same place
    indexes = dict(parent.indexes)
    indexes.update((attr, value) for attr, value in vars(cls).items()
                   if isinstance(value, DeclaredIndex))
    both = sorted(set(fields) & set(indexes))
    if both:
        raise TypeError(f'{name}.{both[0]} is both a field and an index')
    for attr in list(fields) + list(indexes):
        if attr in _RESERVED or attr.startswith('_model_schema'):
            raise TypeError(f'{name}.{attr}: the name is taken by centidb.Model; '
                            f'choose another')
    if key is None:
        key = parent.key if parent.collection is not None else None
    elif isinstance(key, str):
        key = (key,)
    elif isinstance(key, (tuple, list)):
        key = tuple(key)
        if not key or not all(isinstance(part, str) for part in key):
            raise TypeError(f'{name}: key must be a field name, a tuple of field '
                            f'names, or a function, not {key!r}')
    elif not callable(key):
        raise TypeError(f'{name}: key must be a field name, a tuple of field names, '
                        f'or a function, not {key!r}')
    for what, names in [('key', key if isinstance(key, tuple) else ())] + [
            (f'index {attr!r}', declared.fields) for attr, declared in indexes.items()]:
        unknown = [part for part in names if part not in fields]
        if unknown:
            raise TypeError(f'{name}: the {what} names {unknown[0]!r}, which is not a '
                            f'field of {name}')
    return _Schema(cls, collection, fields, key, indexes)


@dataclass_transform(kw_only_default=True, field_specifiers=(field, Field))
class Model:
    """The base class of models; see the module documentation.

    A subclass declares its fields with annotations (``name: str``, with a
    default after ``=``, or :func:`~centidb.models.fields.field`), its indexes
    with :func:`~centidb.models.index.index_on`, and, as class keywords, its
    collection and key:

    ``collection``
        the collection's name (default: the class's name);
    ``key``
        a field name, or a tuple of field names, whose values make the key
        tuple; or a function of an instance returning the key (a bare
        value is a 1-tuple). Without it, the collection's counter numbers
        the records 1, 2, 3, ... (an instance keeps its number once saved).

    The constructor takes the fields as keyword arguments; the class
    compares instances field by field and shows them as
    ``User(email='a@b', ...)``. A subclass of a model inherits its fields,
    indexes and key (unless it declares one), not its collection.

    Field types are checked by :meth:`save` and :meth:`put_many`, which
    raise ``TypeError`` naming the class, the field, the type expected and
    the value found, and write nothing. The types: ``str``, ``bytes``,
    ``int`` (not ``bool``), ``float`` (an ``int`` too, as for type
    checkers; not ``bool``), ``bool`` (only ``True`` or ``False``, not
    ``0`` or ``1``), ``None``, ``datetime``, ``date`` (a ``datetime`` too),
    ``Decimal``, ``UUID``, ``list[X]``, ``dict[K, V]``, ``tuple[X, ...]``
    and ``tuple[X, Y]`` (the elements checked too), ``Literal[...]``,
    ``Optional``/``Union``/``X | None`` of them, and ``Any``. Loaded
    records are not checked; a field missing from a stored record gets its
    default, and a stored key that is not a field is ignored (and not kept
    when the instance is saved again).

    Field and index names may not be the names of the methods here.

    :raises TypeError: (at class creation) for a field with a mutable
        default (use ``field(default_factory=...)``), a reserved name, or a
        key or index naming a field the class does not have.
    """

    if TYPE_CHECKING:
        _model_schema: ClassVar[_Schema]

    def __init_subclass__(cls, *, collection: str | None = None,
                          key: str | tuple[str, ...] | Callable[[Any], Any] | None = None,
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._model_schema = _declared(cls, collection, key)

    def __init__(self, **values: Any) -> None:
        fields = type(self)._model_schema.fields
        own = self.__dict__
        for name, declared in fields.items():
            if name in values:
                own[name] = values.pop(name)
            elif declared.required:
                raise TypeError(f'{type(self).__name__}() missing the field {name!r}')
            else:
                own[name] = declared.make_default()
        if values:
            raise TypeError(f'{type(self).__name__}() got an unexpected keyword argument '
                            f'{next(iter(values))!r}; its fields are {", ".join(fields)}')

    def __repr__(self) -> str:
        shown = ', '.join(f'{name}={getattr(self, name)!r}' for name in type(self)._model_schema.fields)
        return f'{type(self).__name__}({shown})'

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name)
                   for name in type(self)._model_schema.fields)

    __hash__ = None     # type: ignore[assignment]  # mutable, compared by value

    # --- the record ------------------------------------------------------------------

    @classmethod
    def _from_record(cls: type[_M], data: Any, key: Key | None = None) -> _M:
        """An instance from a stored ``dict`` (not checked); `key` kept for counter keys."""
        instance: _M = cls._model_schema.instance(data, key)
        return instance

    def _to_record(self) -> dict[str, Any]:
        """The ``dict`` to store, after checking every field's type."""
        return type(self)._model_schema.record(self)

    # --- binding -----------------------------------------------------------------------

    @classmethod
    def bind(cls, store: Store) -> Collection:
        """Open the model's collection in `store` and add its indexes; return the collection.

        Call it once per store (again after reopening one; binding to
        another store replaces the binding). New indexes are filled in for
        the records already stored. Index functions are the model's, so
        every program binding the model adds the same ones.

        :param store: an open :class:`~centidb.store.Store`.
        :returns: the :class:`~centidb.collection.Collection`.
        :raises TypeError: for a field type that is not supported.
        :raises ~centidb.errors.KeyKindMismatchError: for a model with a
            ``key`` whose collection was created with counter keys (in the
            other case, the first save raises it).
        :raises ~centidb.errors.UniqueError: if a new unique index finds two
            records with the same index tuple (the index is not created).
        :raises ValueError: if the collection is already open in this store
            with another key function, or an index of the same name was
            added by other code, or a stored index disagrees about
            ``unique``.
        """
        return cls._model_schema.bind(store)

    # --- writing -----------------------------------------------------------------------

    def save(self, *, txn: Transaction | None = None) -> Key:
        """Check the fields' types and store the instance; return its key.

        A record already under the key is replaced. With a key made from
        fields, changing those fields and saving stores a second record
        (delete the first, before the change, to move it). Without a
        ``key``, a new instance gets the counter's next number and keeps
        it: saving it again replaces that record (if the transaction
        aborts, it forgets the number again).

        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: the thread's write transaction, or one of its own).
        :returns: the key tuple.
        :raises TypeError: if a field has the wrong type (nothing is
            written).
        :raises ~centidb.errors.UniqueError: if a unique index already has
            the record's index tuple for another record (nothing is
            written).
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        schema = type(self)._model_schema
        coll = schema.bound().coll
        data = self._to_record()
        if not schema.auto:
            return coll.put(data, txn=txn).key  # type: ignore[return-value]  # stored: keyed
        key = self.__dict__.get('_model_key')
        saved: Key = coll.put(data, key=key, txn=txn).key  # type: ignore[assignment]
        if key is None:
            self.__dict__['_model_key'] = saved
            schema.forget_on_abort(txn, [self])
        return saved

    def delete(self, *, txn: Transaction | None = None) -> bool:
        """Delete the instance's record; return whether there was one.

        The key is made from the fields as they are now (or is the number
        the instance was saved under).

        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: the thread's write transaction, or one of its own).
        :returns: True if a record was deleted.
        :raises ValueError: for an instance without a ``key`` that was never
            saved or loaded.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        schema = type(self)._model_schema
        return schema.bound().coll.delete(schema.key_to_delete(self), txn=txn) is not None

    @classmethod
    def delete_many(cls: type[_M], keys: Iterable[object], *,
                    txn: Transaction | None = None) -> list[_M | None]:
        """Delete the records under `keys` in one transaction, as :meth:`delete` each.

        Atomic, as :meth:`~centidb.collection.Collection.delete_many`: every
        key is made and every record read before the first delete, so if
        anything fails for any key, nothing is deleted.

        :param keys: an iterable of key tuples (a bare value means a
            1-tuple) or instances of this class (the key made from an
            instance's fields as they are now, or the number it was saved
            under).
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: the thread's write transaction, or one of its own).
        :returns: a ``list`` mirroring `keys`: the deleted instance, as it
            was stored, for each, or ``None`` where there was no such
            record (also for a key that came earlier in `keys`).
        :raises TypeError: for an instance of another model class.
        :raises ValueError: for an instance without a ``key`` that was never
            saved or loaded.
        :raises ~centidb.errors.UnsupportedKeyTypeError: for a key element
            the key codec cannot encode.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        schema = cls._model_schema
        coll = schema.bound().coll
        deleted = coll.delete_many([schema.key_to_delete(item) for item in keys], txn=txn)
        return [None if record is None else cls._from_record(record.data, record.key)
                for record in deleted]

    @classmethod
    def put_many(cls: type[_M], instances: Iterable[_M], *,
                 txn: Transaction | None = None) -> list[Key]:
        """Save every instance in one transaction, as :meth:`save` each; return their keys.

        Atomic, as :meth:`~centidb.collection.Collection.put_many`: every
        field of every instance is checked first, and if anything fails for
        any instance, nothing is written.

        :param instances: an iterable of instances of this class.
        :param txn: a write :class:`~centidb.txn.Transaction` of the store
            (default: the thread's write transaction, or one of its own).
        :returns: a ``list`` of the key tuples, in order.
        :raises TypeError: for an instance of another class, or a field of
            the wrong type.
        :raises ~centidb.errors.UniqueError: if two records would share an
            index tuple of a unique index.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        schema = cls._model_schema
        coll = schema.bound().coll
        instances = list(instances)
        records: list[Any] = []
        for instance in instances:
            if type(instance) is not cls:
                raise TypeError(f'{cls.__name__}.put_many() takes {cls.__name__} instances, '
                                f'not {described(instance)}')
            data = instance._to_record()
            key = instance.__dict__.get('_model_key') if schema.auto else None
            records.append(data if key is None else Record(coll, data, key))
        keys = coll.put_many(records, txn=txn)
        if schema.auto:
            new = [instance for instance in instances if '_model_key' not in instance.__dict__]
            for instance, key in zip(instances, keys):
                instance.__dict__.setdefault('_model_key', key)
            schema.forget_on_abort(txn, new)
        return keys

    # --- reading -----------------------------------------------------------------------

    @overload
    @classmethod
    def get(cls: type[_M], key: object, *,
            txn: Transaction | None = None) -> _M | None: ...

    @overload
    @classmethod
    def get(cls: type[_M], key: object, default: _D, *,
            txn: Transaction | None = None) -> _M | _D: ...

    @classmethod
    def get(cls: type[_M], key: object, default: Any = None, *,
            txn: Transaction | None = None) -> Any:
        """Return the instance stored under `key`, or `default`.

        :param key: the key tuple (a bare value means a 1-tuple).
        :param default: returned when there is no record under `key`.
        :param txn: a :class:`~centidb.txn.Transaction` of the store to read
            in (default: the thread's write transaction, or one of its own).
        :returns: an instance, or `default`.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        key = as_key(key)
        data = cls._model_schema.bound().coll.get(key, MISSING, txn=txn)
        return default if data is MISSING else cls._from_record(data, key)

    @classmethod
    def get_many(cls: type[_M], keys: Iterable[object], *,
                 txn: Transaction | None = None) -> list[_M | None]:
        """Return a list with the instance under each key of `keys` (or None).

        All are read in one transaction.

        :param keys: an iterable of key tuples (bare values mean 1-tuples).
        :param txn: a :class:`~centidb.txn.Transaction` of the store to read
            in (default: the thread's write transaction, or one of its own).
        :returns: a ``list``, in the order of `keys`.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        tuples = [as_key(key) for key in keys]
        found = cls._model_schema.bound().coll.get_many(tuples, MISSING, txn=txn)
        return [None if data is MISSING else cls._from_record(data, key)
                for key, data in zip(tuples, found)]

    @classmethod
    @query_doc('key')
    def items(cls: type[_M], lo: object = None, hi: object = None, *,
              prefix: object = None, startswith: object = None, reverse: bool = False,
              max: int | None = None, include: bool = False,
              txn: Transaction | None = None) -> Iterator[tuple[Key, _M]]:
        """Iterate ``(key, instance)`` pairs in key order.

        {query}
        :returns: an iterator of ``(key tuple, instance)``.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        pairs = cls._model_schema.bound().coll.items(
            lo, hi, prefix=prefix, startswith=startswith, reverse=reverse, max=max,
            include=include, txn=txn)
        return ((key, cls._from_record(data, key)) for key, data in pairs)

    @classmethod
    @query_doc('key')
    def keys(cls, lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, max: int | None = None,
             include: bool = False, txn: Transaction | None = None) -> Iterator[Key]:
        """Iterate keys in key order, without reading any record.

        {query}
        :returns: an iterator of key tuples.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        return cls._model_schema.bound().coll.keys(
            lo, hi, prefix=prefix, startswith=startswith, reverse=reverse, max=max,
            include=include, txn=txn)

    @classmethod
    @query_doc('key')
    def values(cls: type[_M], lo: object = None, hi: object = None, *, prefix: object = None,
               startswith: object = None, reverse: bool = False, max: int | None = None,
               include: bool = False, txn: Transaction | None = None) -> Iterator[_M]:
        """Iterate instances in key order.

        {query}
        :returns: an iterator of instances.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        schema = cls._model_schema
        coll = schema.bound().coll
        if schema.auto:     # the keys are kept in the instances
            return (instance for _, instance in cls.items(
                lo, hi, prefix=prefix, startswith=startswith, reverse=reverse, max=max,
                include=include, txn=txn))
        found = coll.values(lo, hi, prefix=prefix, startswith=startswith, reverse=reverse,
                            max=max, include=include, txn=txn)
        return (cls._from_record(data) for data in found)

    @classmethod
    def where(cls: type[_M], *exprs: Expr, **equalities: Any) -> WhereQuery:
        """The instances meeting every condition, as ``Collection.where`` finds their records.

        :param exprs: expressions made with :class:`~centidb.expr.F`.
        :param equalities: ``field=value`` for ``F('field') == value``.
        :returns: a :class:`~centidb.where.WhereQuery` giving instances.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        binding = cls._model_schema.bound()
        return WhereQuery(binding.coll, binding.txns, as_expr(exprs, equalities),
                          wrap=lambda key, data: cls._from_record(data, key))

    @overload
    @classmethod
    def find(cls: type[_M], lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, include: bool = False,
             txn: Transaction | None = None) -> _M | None: ...

    @overload
    @classmethod
    def find(cls: type[_M], lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, include: bool = False,
             txn: Transaction | None = None, default: _D) -> _M | _D: ...

    @classmethod
    def find(cls: type[_M], lo: object = None, hi: object = None, *, prefix: object = None,
             startswith: object = None, reverse: bool = False, include: bool = False,
             txn: Transaction | None = None, default: Any = None) -> Any:
        """Return the first instance the query matches, or `default`.

        :param lo: the lowest key included; a bare value means a 1-tuple.
        :param hi: the key at which to stop, excluded unless `include`.
        :param prefix: only keys whose first elements equal this tuple's.
        :param startswith: as `prefix`, but the last element (a ``str`` or
            ``bytes``) matches every string starting with it.
        :param reverse: start from the highest key, going down.
        :param include: include `hi` itself.
        :param txn: a :class:`~centidb.txn.Transaction` of the store to read
            in (default: the thread's write transaction, or one of its own).
        :param default: returned when nothing matches.
        :returns: an instance, or `default`.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        for instance in cls.values(lo, hi, prefix=prefix, startswith=startswith,
                                   reverse=reverse, max=1, include=include, txn=txn):
            return instance
        return default

    @classmethod
    @query_doc('key')
    def count(cls, lo: object = None, hi: object = None, *, prefix: object = None,
              startswith: object = None, reverse: bool = False, max: int | None = None,
              include: bool = False, txn: Transaction | None = None) -> int:
        """Return how many records match the query, without decoding any.

        {query}
        :returns: the count, at most `max`.
        :raises ~centidb.errors.ModelNotBoundError: if the model is not bound
            to a store.
        """
        return cls._model_schema.bound().coll.count(
            lo, hi, prefix=prefix, startswith=startswith, reverse=reverse, max=max,
            include=include, txn=txn)


# The base class's own declaration: no collection, fields or indexes.
Model._model_schema = _Schema(Model, None, {}, None, {})

#: Names a field or index may not have: the methods of Model.
_RESERVED = frozenset(name for name in vars(Model) if not name.startswith('_'))
