"""Hooks: user code the store calls on a write.

- :class:`BeforeWriteHooks`, which each collection holds, keeps the
  functions its ``before_write()`` registers: called just before each
  record is written, handed to the collection's
  :class:`~centidb.records.access.Records` when its record paths are made again.
- :class:`CommitHooks`, which the store holds, keeps the functions its
  ``on_commit()`` registers: called with the :class:`~centidb.txn.Change`
  list of each committed write transaction, through the
  :class:`~centidb.txn.TxnManager`'s ``after_commit``.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, List, TypeVar

from centidb.keylib import Key
from centidb.txn import Change

__all__ = ['BeforeWriteHooks', 'CommitHooks']

_Check = TypeVar('_Check', bound=Callable[[Key, Any], object])
_Hook = TypeVar('_Hook', bound=Callable[[List[Change]], object])


class BeforeWriteHooks:
    """A collection's ``before_write`` hooks, in the order added.

    The collection holds one; its :meth:`~centidb.collection.Collection.before_write`
    and :meth:`~centidb.collection.Collection.remove_hook` call :meth:`add`
    and :meth:`remove`, and its record paths are made again with
    :attr:`hooks` after each change.

    :param coll_name: the collection's name, for errors.
    :param changed: called with no arguments after a hook is added or removed.
    """

    def __init__(self, coll_name: str, changed: Callable[[], object]) -> None:
        self.coll_name = coll_name
        self.changed = changed
        #: The hooks, in the order added (a hook added twice is there twice).
        self.hooks: tuple[Callable[[Key, Any], object], ...] = ()

    def add(self, hook: _Check) -> _Check:
        """Add `hook`; see ``Collection.before_write``.

        :param hook: ``hook(key tuple, value)``.
        :returns: `hook`.
        :raises TypeError: if `hook` is not callable.
        """
        if not callable(hook):
            raise TypeError(f'a before_write hook must be callable, not {hook!r}')
        self.hooks += (hook,)
        self.changed()
        return hook

    def remove(self, hook: Callable[[Key, Any], object]) -> None:
        """Remove `hook` once; see ``Collection.remove_hook``.

        :param hook: the hook, as given to :meth:`add`.
        :raises ValueError: if `hook` is not one of the hooks.
        """
        hooks = list(self.hooks)
        try:
            hooks.remove(hook)
        except ValueError:
            raise ValueError(f'{hook!r} is not a before_write hook of collection '
                             f'{self.coll_name!r}') from None
        self.hooks = tuple(hooks)
        self.changed()


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
