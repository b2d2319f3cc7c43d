"""The unchecked calls an engine transaction may offer: :class:`FastCalls`.

Every :class:`~centidb.engines.base.EngineTransaction` holds one as its
attribute ``fast``, made by the base class with every call ``None``; an
engine sets the calls it offers there while they are valid, and resets them
to ``None`` when the transaction ends. :mod:`centidb.records.fastpath` and the
record paths call them when they are there, and the checked methods when
they are not. :class:`FastCallsLike` states the contract for type checkers;
:class:`SeekCursor` is what ``seek_cursor`` offers.

The calls skip every check: callers pass non-empty ``bytes`` keys no longer
than the engine's ``max_key_size`` and ``bytes`` values, in an open
transaction (a write one for the writes). After a write call, or one that
raised, the caller adds the pairs written to ``writes``; it passes an
exception a write call raised, with the list of pairs, to the engine
transaction's ``_put_many_failed(exc, pairs)``, which raises the engine's
error for it.
"""

from __future__ import annotations

import weakref
from typing import Callable, Protocol

__all__ = ['FastCalls', 'FastCallsLike', 'SeekCursor', 'guarded', 'weakly']


class SeekCursor(Protocol):
    """What an engine transaction's ``fast.seek_cursor`` offers (an ``lmdb.Cursor`` does)."""

    def set_range(self, key: bytes, /) -> bool:
        """Move to the first key ``>= key``; False if there is none.

        :param key: the key to seek.
        """

    def key(self) -> bytes:
        """The key at the current position."""


class FastCallsLike(Protocol):
    """The attributes of an engine transaction's ``fast`` (see :class:`FastCalls`)."""

    #: The transaction's write counter.
    writes: int
    #: ``(key) -> value or None``, or None.
    get: Callable[[bytes], bytes | None] | None
    #: ``(key, value)``, or None.
    put: Callable[[bytes, bytes], object] | None
    #: ``(pairs)``, or None.
    put_many: Callable[[list[tuple[bytes, bytes]]], object] | None
    #: ``(key, value) -> old value or None``, or None.
    replace: Callable[[bytes, bytes], bytes | None] | None
    #: ``(key)``, or None.
    delete: Callable[[bytes], object] | None
    #: A :class:`SeekCursor`, or None.
    seek_cursor: SeekCursor | None


class FastCalls:
    """The unchecked calls of one engine transaction, and its write counter.

    Every :class:`~centidb.engines.base.EngineTransaction` holds one as
    ``fast`` (its constructor makes it, with every call ``None``). An engine
    sets the calls it offers, keeps them valid while the transaction is
    open, and sets them back to ``None`` when it ends; each call it does not
    offer stays ``None``, and callers then use the checked method named
    below. A :class:`~centidb.records.Record` read or written in a
    transaction keeps its ``fast`` to tell that transaction from others, so
    the calls must not refer to the transaction object itself (a Record
    would hold it open). Compiled (``fastcalls.pxd``), the attributes are C
    fields that the compiled record layer reads directly.
    """

    __slots__ = ('get', 'put', 'put_many', 'replace', 'delete', 'seek_cursor', 'writes')

    #: Changes with every put and delete, and when the transaction ends:
    #: iterators that read ahead compare it between steps to notice the
    #: transaction's own writes (and its end).
    writes: int
    #: A callable ``(key) -> value or None`` that reads `key`. ``None``:
    #: use ``get``.
    get: Callable[[bytes], bytes | None] | None
    #: A callable ``(key, value)`` that stores one pair; the caller adds 1
    #: to ``writes`` first. ``None``: use :attr:`put_many`, else
    #: ``_put_many``.
    put: Callable[[bytes, bytes], object] | None
    #: A callable ``(pairs)`` that stores a list of ``(key, value)`` pairs;
    #: the caller adds ``len(pairs)`` to ``writes`` first. ``None``: use
    #: ``_put_many``.
    put_many: Callable[[list[tuple[bytes, bytes]]], object] | None
    #: A callable ``(key, value)`` that stores one pair and returns the value
    #: (bytes) it replaced, or None, in one lookup of the key; the caller
    #: adds 1 to ``writes`` first. ``None``: read, then write.
    replace: Callable[[bytes, bytes], bytes | None] | None
    #: A callable ``(key)`` that deletes one key (a missing key too); its
    #: exception is passed with ``[(key, b'')]``. ``None``: use ``delete``.
    delete: Callable[[bytes], object] | None
    #: A :class:`SeekCursor` over the transaction's data. ``None``: use
    #: ``first``.
    seek_cursor: SeekCursor | None

    def __init__(self) -> None:
        self.writes = 0
        self.get = self.put = self.put_many = self.replace = self.delete = None
        self.seek_cursor = None


def guarded(call: Callable[[bytes], bytes | None], errors: type[BaseException] | tuple[type[BaseException], ...],
            mapped: Callable[[BaseException], BaseException]) -> Callable[[bytes], bytes | None]:
    """`call` (a getter), raising ``mapped(exc)`` for each exception `exc` of `errors` it raises.

    For an engine's ``fast.get`` whose library raises its own errors: the
    callers of the unchecked calls pass on what they raise, so the engine
    maps them here.

    :param call: a callable ``(key) -> value or None``.
    :param errors: the library's exception class (or a tuple of them).
    :param mapped: returns the centidb error for one of them.
    """
    def get(key: bytes) -> bytes | None:
        try:
            return call(key)
        except errors as exc:
            raise mapped(exc) from exc
    return get


def weakly(method: Callable[[], object]) -> Callable[[], object]:
    """The bound method `method`, called through a weak reference to its object.

    For an unchecked call that must call back into its transaction: a
    FastCalls must not hold the transaction (see :class:`FastCalls`). Once
    the object is gone, calling it does nothing.

    :param method: a bound method taking no argument.
    """
    ref = weakref.WeakMethod(method)

    def call() -> object:
        bound = ref()
        return None if bound is None else bound()
    return call

