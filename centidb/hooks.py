"""Hooks: user code the store calls on a write.

- :class:`CollectionHooks`, a mixin, gives a collection ``before_write()``
  and ``remove_hook()``: functions called just before each record is
  written, handed to the collection's :class:`~centidb.access.Records` when
  its write paths are rebuilt. The collection keeps the list.
- :class:`CommitHooks`, which the store holds, keeps the functions its
  ``on_commit()`` registers: called with the :class:`~centidb.txn.Change`
  list of each committed write transaction, through the
  :class:`~centidb.txn.TxnManager`'s ``after_commit``.

The collection is a layer above; what the mixin uses of it is declared below
for the type checker, never imported.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, List, TypeVar

from centidb.keylib import Key
from centidb.txn import Change

__all__ = ['CollectionHooks', 'CommitHooks']

_Check = TypeVar('_Check', bound=Callable[[Key, Any], object])
_Hook = TypeVar('_Hook', bound=Callable[[List[Change]], object])


class CollectionHooks:
    """The hook methods of a collection, which keeps its hooks as ``_before_write``."""

    _before_write: list[Callable[[Key, Any], object]]
    _name: str

    if TYPE_CHECKING:   # what the collection provides, declared for the type checker
        def rebuild(self) -> None: ...

    def before_write(self, hook: _Check) -> _Check:
        """Call ``hook(key, value)`` before each record of this collection is written.

        For validation: the hook runs in the write transaction, for every
        ``put()``, ``put_many()``, ``delete()``, ``delete_many()``,
        ``coll[key] = value`` and ``del coll[key]``, after the key, the
        index entries and every other check have been made and just before
        the record is written (``value`` is ``None`` for a delete, and a
        delete of a missing key calls nothing). If it raises, that write
        writes nothing, and for ``put_many()`` and ``delete_many()`` the
        whole call writes nothing, and the exception propagates. ``batch()``
        and ``Store.drop_collection()`` call no hook. Hooks run in the
        order added and last for this session only; while a collection has
        one, its writes take the general (slower) path.

        Returns `hook`, so it works as a decorator.

        :param hook: ``hook(key tuple, value)``; what it returns is ignored.
        :returns: `hook`.
        :raises TypeError: if `hook` is not callable.
        """
        if not callable(hook):
            raise TypeError(f'a before_write hook must be callable, not {hook!r}')
        self._before_write.append(hook)
        self.rebuild()
        return hook

    def remove_hook(self, hook: Callable[[Key, Any], object]) -> None:
        """Stop calling a hook added with :meth:`before_write`.

        A hook added twice is called twice, and removed once by each call.

        :param hook: the hook, as given to :meth:`before_write`.
        :raises ValueError: if `hook` is not one of this collection's hooks.
        """
        try:
            self._before_write.remove(hook)
        except ValueError:
            raise ValueError(f'{hook!r} is not a before_write hook of collection '
                             f'{self._name!r}') from None
        self.rebuild()


class CommitHooks:
    """The functions a store calls after each committed write transaction that changed records.

    The store's :meth:`~centidb.store.Store.on_commit` adds one and
    :meth:`~centidb.store.Store.remove_hook` removes one; the store hands
    :meth:`run` to its :class:`~centidb.txn.TxnManager` as ``after_commit``
    through `switch`.

    :param switch: ``switch(run)``, called with :meth:`run` when the first
        hook is added and with None when the last is removed (under this
        object's lock, which serializes adding and removing), so the store
        starts or stops recording changes.
    """

    def __init__(self, switch: Callable[[Callable[[list[Change]], None] | None], object]) -> None:
        self._hooks: list[Callable[[list[Change]], object]] = []
        self._lock = threading.Lock()
        self._switch = switch

    def add(self, hook: _Hook) -> _Hook:
        """Register `hook` (``Store.on_commit``).

        :param hook: ``hook(changes)``.
        :returns: `hook`.
        :raises TypeError: if `hook` is not callable.
        """
        if not callable(hook):
            raise TypeError(f'an on_commit hook must be callable, not {hook!r}')
        with self._lock:
            self._hooks.append(hook)
            if len(self._hooks) == 1:
                self._switch(self.run)
        return hook

    def remove(self, hook: Callable[[list[Change]], object]) -> None:
        """Unregister `hook` once (``Store.remove_hook``).

        :param hook: the hook, as given to :meth:`add`.
        :raises ValueError: if `hook` is not registered.
        """
        with self._lock:
            try:
                self._hooks.remove(hook)
            except ValueError:
                raise ValueError(f'{hook!r} is not an on_commit hook of this store') from None
            if not self._hooks:
                self._switch(None)

    def run(self, changes: list[Change]) -> None:
        """Call every hook with a copy of `changes`; raise the first exception after.

        :param changes: the committed transaction's :class:`~centidb.txn.Change` list.
        """
        first: Exception | None = None
        for hook in tuple(self._hooks):
            try:
                hook(list(changes))
            except Exception as exc:
                if first is None:
                    first = exc
                elif hasattr(first, 'add_note'):
                    first.add_note(f'another on_commit hook, {hook!r}, also raised '
                                   f'{type(exc).__name__}: {exc}')
        if first is not None:
            raise first
