"""Engines that forward every call to another: tracing and fault injection."""

from __future__ import annotations

import collections
from typing import Callable, Iterable

from centidb.engines.base import (
    _OPEN,
    Engine,
    EngineTransaction,
    Item,
    ItemIterator,
    KeyIterator,
    _check_bounds,
)

__all__ = [
    'TraceEngine',
    'TraceTransaction',
    'WrapperEngine',
    'WrapperTransaction',
]


class WrapperTransaction(EngineTransaction):
    """Forwards every call to a transaction of the wrapped engine (``inner``).

    Override a public method (e.g. ``put``) to inject a fault or observe.
    The base class checks arguments and state before forwarding.

    :param engine: the :class:`WrapperEngine` that began it.
    :param inner: the inner engine's :class:`EngineTransaction`, kept as
        ``inner``.
    """

    def __init__(self, engine: WrapperEngine, inner: EngineTransaction) -> None:
        super().__init__(engine, inner.write)
        self.inner = inner

    def _get(self, key: bytes) -> bytes | None:
        return self.inner.get(key)

    def _get_many(self, keys: list[bytes]) -> list[bytes | None]:
        return self.inner.get_many(keys)

    def _put(self, key: bytes, value: bytes) -> None:
        self.inner.put(key, value)

    def _delete(self, key: bytes) -> None:
        self.inner.delete(key)

    def _delete_range(self, lo: bytes | None, hi: bytes | None) -> None:
        self.inner.delete_range(lo, hi)

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        return self.inner.items(lo, hi, reverse)

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """Check the state and bounds, then forward to ``inner.first``.

        So the inner engine's own seek is used, not an iteration.

        :param lo: as for :meth:`EngineTransaction.first`.
        :param hi: as for :meth:`EngineTransaction.first`.
        :param reverse: as for :meth:`EngineTransaction.first`.
        :returns: ``(key, value)``, or ``None`` if the range is empty.
        """
        if self._state is not _OPEN or self.engine._closed:
            self._raise_unusable()
        _check_bounds(lo, hi)
        return self.inner.first(lo, hi, reverse)

    def _count(self, lo: bytes | None, hi: bytes | None) -> int:
        return self.inner.count(lo, hi)

    def _commit(self) -> None:
        self.inner.commit()

    def _abort(self) -> None:
        self.inner.abort()


class WrapperEngine(Engine):
    """An engine that forwards every call to another engine, ``inner``.

    Subclass it and override one method to trace or inject faults. Its
    transactions are instances of :attr:`transaction_class`, which forward
    to the inner engine's transactions. Closing the wrapper closes ``inner``.

    :param inner: the :class:`Engine` to forward to, kept as ``inner``.
    :raises TypeError: if `inner` is not an ``Engine``.
    """

    #: Class of the transactions :meth:`Engine.begin` returns.
    transaction_class: type[WrapperTransaction] = WrapperTransaction

    def __init__(self, inner: Engine) -> None:
        if not isinstance(inner, Engine):
            raise TypeError(
                f'inner must be an Engine, not {type(inner).__name__}')
        super().__init__()
        self.inner = inner
        self.max_key_size = inner.max_key_size
        self.max_value_size = inner.max_value_size
        self.max_txn_ops = inner.max_txn_ops
        self.max_txn_bytes = inner.max_txn_bytes
        self.snapshot_at = inner.snapshot_at

    def _describe(self) -> str:
        return f'{type(self).__name__}({self.inner._describe()})'

    def _begin(self, write: bool) -> EngineTransaction:
        return self.transaction_class(self, self.inner.begin(write))

    def _close(self) -> None:
        self.inner.close()

    def _check_open(self) -> None:
        if self._closed:
            raise self._closed_error()

    def get(self, key: bytes) -> bytes | None:
        """Forward to ``inner.get``.

        :param key: as for :meth:`Engine.get`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.get`` raises.
        """
        self._check_open()
        return self.inner.get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Forward to ``inner.put``.

        :param key: as for :meth:`Engine.put`.
        :param value: as for :meth:`Engine.put`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.put`` raises.
        """
        self._check_open()
        self.inner.put(key, value)

    def delete(self, key: bytes) -> None:
        """Forward to ``inner.delete``.

        :param key: as for :meth:`Engine.delete`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.delete`` raises.
        """
        self._check_open()
        self.inner.delete(key)

    def items(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> ItemIterator:
        """Forward to ``inner.items``.

        :param lo: as for :meth:`Engine.items`.
        :param hi: as for :meth:`Engine.items`.
        :param reverse: as for :meth:`Engine.items`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.items`` raises.
        """
        self._check_open()
        return self.inner.items(lo, hi, reverse)

    def keys(self, lo: bytes | None = None, hi: bytes | None = None,
             reverse: bool = False) -> KeyIterator:
        """Forward to ``inner.keys``.

        :param lo: as for :meth:`Engine.keys`.
        :param hi: as for :meth:`Engine.keys`.
        :param reverse: as for :meth:`Engine.keys`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.keys`` raises.
        """
        self._check_open()
        return self.inner.keys(lo, hi, reverse)

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """Forward to ``inner.first``.

        :param lo: as for :meth:`Engine.first`.
        :param hi: as for :meth:`Engine.first`.
        :param reverse: as for :meth:`Engine.first`.
        :raises ~centidb.errors.EngineClosedError: if the wrapper is closed;
            otherwise whatever ``inner.first`` raises.
        """
        self._check_open()
        return self.inner.first(lo, hi, reverse)


class TraceTransaction(WrapperTransaction):
    """A :class:`WrapperTransaction` that records calls on its engine.

    :param engine: the :class:`TraceEngine` that began it.
    :param inner: the inner engine's :class:`EngineTransaction`.
    """

    engine: TraceEngine

    def get(self, key: bytes) -> bytes | None:
        """Record ``('txn.get', (key,))`` and forward.

        :param key: as for :meth:`EngineTransaction.get`.
        """
        self.engine.record('txn.get', (key,))
        return super().get(key)

    def get_many(self, keys: Iterable[bytes]) -> list[bytes | None]:
        """Record ``('txn.get_many', (keys,))`` (`keys` as a list) and forward.

        :param keys: as for :meth:`EngineTransaction.get_many`.
        """
        keys = list(keys)
        self.engine.record('txn.get_many', (keys,))
        return super().get_many(keys)

    def put(self, key: bytes, value: bytes) -> None:
        """Record ``('txn.put', (key, value))`` and forward.

        :param key: as for :meth:`EngineTransaction.put`.
        :param value: as for :meth:`EngineTransaction.put`.
        """
        self.engine.record('txn.put', (key, value))
        super().put(key, value)

    def delete(self, key: bytes) -> None:
        """Record ``('txn.delete', (key,))`` and forward.

        :param key: as for :meth:`EngineTransaction.delete`.
        """
        self.engine.record('txn.delete', (key,))
        super().delete(key)

    def delete_range(self, lo: bytes | None, hi: bytes | None) -> None:
        """Record ``('txn.delete_range', (lo, hi))`` and forward.

        :param lo: as for :meth:`EngineTransaction.delete_range`.
        :param hi: as for :meth:`EngineTransaction.delete_range`.
        """
        self.engine.record('txn.delete_range', (lo, hi))
        super().delete_range(lo, hi)

    def items(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> ItemIterator:
        """Record ``('txn.items', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`EngineTransaction.items`.
        :param hi: as for :meth:`EngineTransaction.items`.
        :param reverse: as for :meth:`EngineTransaction.items`.
        """
        self.engine.record('txn.items', (lo, hi, reverse))
        return super().items(lo, hi, reverse)

    def keys(self, lo: bytes | None = None, hi: bytes | None = None,
             reverse: bool = False) -> KeyIterator:
        """Record ``('txn.keys', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`EngineTransaction.keys`.
        :param hi: as for :meth:`EngineTransaction.keys`.
        :param reverse: as for :meth:`EngineTransaction.keys`.
        """
        self.engine.record('txn.keys', (lo, hi, reverse))
        return super().keys(lo, hi, reverse)

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """Record ``('txn.first', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`EngineTransaction.first`.
        :param hi: as for :meth:`EngineTransaction.first`.
        :param reverse: as for :meth:`EngineTransaction.first`.
        """
        self.engine.record('txn.first', (lo, hi, reverse))
        return super().first(lo, hi, reverse)

    def commit(self) -> None:
        """Record ``('txn.commit', ())`` and forward."""
        self.engine.record('txn.commit', ())
        super().commit()

    def abort(self) -> None:
        """Record ``('txn.abort', ())`` and forward."""
        self.engine.record('txn.abort', ())
        super().abort()


class TraceEngine(WrapperEngine):
    """A :class:`WrapperEngine` that records every call it forwards.

    Each call is appended to the list ``calls`` as ``(name, args)``, counted
    in ``counts`` (a :class:`collections.Counter` by name), and, if ``log``
    is given, passed to it as one line such as ``"txn.put(b'k', b'v')"``.
    Transaction calls are named ``'txn.get'``, ``'txn.commit'`` and so on.

    :param inner: the :class:`Engine` to forward to.
    :param log: a callable taking one ``str``, or ``None``.
    :raises TypeError: if `inner` is not an ``Engine``.
    """

    transaction_class = TraceTransaction

    def __init__(self, inner: Engine, *, log: Callable[[str], object] | None = None) -> None:
        super().__init__(inner)
        self.calls: list[tuple[str, tuple[object, ...]]] = []
        self.counts: collections.Counter[str] = collections.Counter()
        self.log = log

    def record(self, name: str, args: tuple[object, ...]) -> None:
        """Record one call.

        :param name: the call's name, such as ``'put'`` or ``'txn.get'``.
        :param args: the ``tuple`` of its arguments.
        """
        self.calls.append((name, args))
        self.counts[name] += 1
        if self.log is not None:
            self.log(f"{name}({', '.join(map(repr, args))})")

    def begin(self, write: bool = False) -> EngineTransaction:
        """Record ``('begin', (write,))`` and forward.

        :param write: as for :meth:`Engine.begin`.
        """
        self.record('begin', (write,))
        return super().begin(write)

    def close(self) -> None:
        """Record ``('close', ())`` and forward."""
        self.record('close', ())
        super().close()

    def get(self, key: bytes) -> bytes | None:
        """Record ``('get', (key,))`` and forward.

        :param key: as for :meth:`Engine.get`.
        """
        self.record('get', (key,))
        return super().get(key)

    def put(self, key: bytes, value: bytes) -> None:
        """Record ``('put', (key, value))`` and forward.

        :param key: as for :meth:`Engine.put`.
        :param value: as for :meth:`Engine.put`.
        """
        self.record('put', (key, value))
        super().put(key, value)

    def delete(self, key: bytes) -> None:
        """Record ``('delete', (key,))`` and forward.

        :param key: as for :meth:`Engine.delete`.
        """
        self.record('delete', (key,))
        super().delete(key)

    def items(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> ItemIterator:
        """Record ``('items', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Engine.items`.
        :param hi: as for :meth:`Engine.items`.
        :param reverse: as for :meth:`Engine.items`.
        """
        self.record('items', (lo, hi, reverse))
        return super().items(lo, hi, reverse)

    def keys(self, lo: bytes | None = None, hi: bytes | None = None,
             reverse: bool = False) -> KeyIterator:
        """Record ``('keys', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Engine.keys`.
        :param hi: as for :meth:`Engine.keys`.
        :param reverse: as for :meth:`Engine.keys`.
        """
        self.record('keys', (lo, hi, reverse))
        return super().keys(lo, hi, reverse)

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """Record ``('first', (lo, hi, reverse))`` and forward.

        :param lo: as for :meth:`Engine.first`.
        :param hi: as for :meth:`Engine.first`.
        :param reverse: as for :meth:`Engine.first`.
        """
        self.record('first', (lo, hi, reverse))
        return super().first(lo, hi, reverse)
