"""The unchecked calls an engine transaction may offer: :class:`FastCalls`.

:class:`~centidb.engines.base.EngineTransaction` derives from
:class:`FastCalls`; :mod:`centidb.fastpath` and the compiled record paths
call them. :class:`SeekCursor` is what ``_seek_cursor`` offers.
"""

from __future__ import annotations

from typing import Callable, Protocol

from centidb import impl

__all__ = ['FastCalls', 'SeekCursor', 'guarded']


class SeekCursor(Protocol):
    """What an engine transaction's ``_seek_cursor`` offers (an ``lmdb.Cursor`` does)."""

    def set_range(self, key: bytes, /) -> bool:
        """Move to the first key ``>= key``; False if there is none.

        :param key: the key to seek.
        """

    def key(self) -> bytes:
        """The key at the current position."""


class FastCalls:
    """The unchecked calls an :class:`EngineTransaction` may offer (see :mod:`centidb.fastpath`).

    Each is ``None`` when the checked method must be used instead. Engines
    set them while they are valid and reset them when the transaction ends.
    Also ``writes``, which the callers of these calls keep. Twinned:
    compiled, these are C fields, which the compiled paths read without an
    attribute lookup (a subclass must not shadow them with class
    attributes: the compiled paths would not see its values).
    """

    #: Changes with every put and delete, and when the transaction ends:
    #: iterators that read ahead compare it between steps to notice the
    #: transaction's own writes (and its end).
    writes: int = 0
    #: An object of this transaction's own (``None``: it has none), which a
    #: :class:`~centidb.records.Record` read in it keeps instead of the
    #: transaction, so that holding the Record holds no transaction open.
    _token: object = None

    #: A callable ``(key) -> value or None`` that skips every check, for
    #: callers that pass non-empty bytes keys no longer than the engine's
    #: ``max_key_size``.
    _fast_get: Callable[[bytes], bytes | None] | None = None
    #: Likewise a callable ``(pairs)`` that stores a list of ``(key,
    #: value)`` pairs with no checks; the caller first adds ``len(pairs)``
    #: to ``writes``, and passes any exception it raises to
    #: ``_put_many_failed``. ``None``: use ``_put_many``.
    _fast_put_many: Callable[[list[tuple[bytes, bytes]]], object] | None = None
    #: Likewise a callable ``(key, value)`` that stores one pair with no
    #: checks; the caller adds 1 to ``writes`` and passes any exception,
    #: with the list of that pair, to ``_put_many_failed``. ``None``: use
    #: ``_put_many``.
    _fast_put: Callable[[bytes, bytes], object] | None = None
    #: Likewise a callable ``(key, value)`` that stores one pair with no
    #: checks and returns the value (bytes) it replaced, or None, in one lookup of
    #: the key; the caller adds 1 to ``writes`` and passes any exception, with
    #: the list of that pair, to ``_put_many_failed``. ``None``: read, then
    #: write.
    _fast_replace: Callable[[bytes, bytes], bytes | None] | None = None
    #: Likewise a callable ``(key)`` that deletes one key with no checks,
    #: its exception passed with ``[(key, b'')]``. ``None``: use ``delete``.
    _fast_delete: Callable[[bytes], object] | None = None
    #: Likewise a :class:`SeekCursor`. ``None``: use ``first``.
    _seek_cursor: SeekCursor | None = None


def guarded(call: Callable[[bytes], bytes | None], errors: type[BaseException] | tuple[type[BaseException], ...],
            mapped: Callable[[BaseException], BaseException]) -> Callable[[bytes], bytes | None]:
    """`call` (a getter), raising ``mapped(exc)`` for each exception `exc` of `errors` it raises.

    For an engine's ``_fast_get`` whose library raises its own errors: the
    callers of the unchecked calls pass on what they raise, so the engine
    maps them here. Twinned: compiled, one C call with a ``try`` around it.

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


FastCalls = impl.choose(FastCalls)  # type: ignore[misc]
guarded = impl.choose(guarded)
