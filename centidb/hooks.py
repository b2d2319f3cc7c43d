"""Hooks: user code the store calls on a write.

Two mixins hold the methods that add and remove hooks; the object using each
keeps the list of its hooks.

- :class:`CollectionHooks` gives a collection ``before_write()`` and
  ``remove_hook()``: functions called just before each record is written,
  handed to the collection's :class:`~centidb.access.Records` when its write
  paths are rebuilt.
- :class:`StoreHooks` gives the store ``on_commit()`` and ``remove_hook()``:
  functions called with the :class:`~centidb.txn.Change` list of each
  committed write transaction, through the
  :class:`~centidb.txn.TxnManager`'s ``after_commit``.

The collection and the store are layers above; what the mixins use of them
is declared below for the type checker, never imported.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Protocol, TypeVar

from centidb.catalog import Catalog
from centidb.keylib import Key
from centidb.txn import Change, TxnManager

__all__ = ['CollectionHooks', 'StoreHooks']

_Check = TypeVar('_Check', bound=Callable[[Key, Any], object])
_Hook = TypeVar('_Hook', bound=Callable[[List[Change]], object])


class _Rebuilds(Protocol):
    """What the store's hooks need of an open collection."""

    def rebuild(self) -> None: ...


class CollectionHooks:
    """The hook methods of a collection, which keeps its hooks as ``_before_write``."""

    _before_write: list[Callable[[Key, Any], object]]
    _name: str

    if TYPE_CHECKING:   # what the collection provides, declared for the type checker
        def _rebuild(self) -> None: ...

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
        self._rebuild()
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
        self._rebuild()


class StoreHooks:
    """The hook methods of a store, which keeps its hooks as ``_commit_hooks``.

    The store also has ``_hooks_lock`` (serializing adding and removing),
    its ``_txns`` and ``_catalog``, and ``_collections``, its open
    collections by name, each rebuilt when changes start or stop being
    recorded.
    """

    _commit_hooks: list[Callable[[list[Change]], object]]
    _hooks_lock: threading.Lock
    _txns: TxnManager
    _catalog: Catalog
    _collections: Mapping[str, _Rebuilds]

    def on_commit(self, hook: _Hook) -> _Hook:
        """Call ``hook(changes)`` after each write transaction that changed records commits.

        `changes` is a new ``list`` of :class:`~centidb.txn.Change`
        ``(collection, key, value)``, one per record written or deleted, in
        the order of the writes (``value`` is the value given to ``put()``,
        ``None`` for a delete). Every write reports its change:
        ``put()``, ``put_many()``, ``delete()``, ``delete_many()``,
        ``coll[key] = value``, ``del coll[key]``, in a transaction of their
        own or joined to one. A transaction that aborts, or changed no
        record, calls nothing; neither do the records of a ``put_many()`` or
        ``delete_many()`` that failed and wrote nothing. ``batch()``,
        ``drop_collection()``, ``rename_collection()``, counters and index
        changes report nothing: they change no record's value.

        The hook runs in the committing thread once the engine has committed
        and the transaction has ended (a write it makes runs in a
        transaction of its own, whose changes call the hooks again). An
        exception from a hook propagates to the caller of the commit (the
        ``with store.begin(write=True)`` block, ``commit()``, or a ``put()``
        or other call that committed a transaction of its own), but the
        commit stands, as durable as any other. When several hooks are registered, all run, in the
        order registered, even if one raises; the first exception is then
        raised (on Python 3.11 and later, noting the others).

        While a store has hooks, every write also records its change, which
        costs some speed (a bulk load runs at two thirds to three quarters
        of its rate, see :doc:`perf`); without hooks the write paths are
        exactly as before. A hook registered while a write transaction is
        open sees the changes made after it was registered. A
        transaction's changes are held in memory until it ends.

        Returns `hook`, so it works as a decorator.

        :param hook: ``hook(changes)``; what it returns is ignored.
        :returns: `hook`.
        :raises TypeError: if `hook` is not callable.
        """
        if not callable(hook):
            raise TypeError(f'an on_commit hook must be callable, not {hook!r}')
        with self._hooks_lock:
            self._commit_hooks.append(hook)
            if len(self._commit_hooks) == 1:
                self._record_changes(True)
        return hook

    def remove_hook(self, hook: Callable[[list[Change]], object]) -> None:
        """Stop calling a hook registered with :meth:`on_commit`.

        A hook registered twice is called twice, and removed once by each
        call. Without hooks left, writes take the fast paths again.

        :param hook: the hook, as given to :meth:`on_commit`.
        :raises ValueError: if `hook` is not registered.
        """
        with self._hooks_lock:
            try:
                self._commit_hooks.remove(hook)
            except ValueError:
                raise ValueError(f'{hook!r} is not an on_commit hook of this store') from None
            if not self._commit_hooks:
                self._record_changes(False)

    def _record_changes(self, on: bool) -> None:
        """Start or stop recording changes, and rebuild every collection's write paths."""
        with self._catalog.lock:    # collections are made under it, seeing the switch
            self._txns.after_commit = self._run_hooks if on else None
            colls = list(self._collections.values())
        for coll in colls:
            coll.rebuild()

    def _run_hooks(self, changes: list[Change]) -> None:
        """Call every :meth:`on_commit` hook; raise the first exception after."""
        first: Exception | None = None
        for hook in tuple(self._commit_hooks):
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
