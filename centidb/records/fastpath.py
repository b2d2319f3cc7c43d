"""Fast paths: an engine transaction's unchecked calls, used when it offers them.

An :class:`~centidb.engines.EngineTransaction` holds, as ``fast``, the
unchecked calls it offers (see :class:`~centidb.engines.FastCalls`):
calls that skip its argument and state checks. The functions here use one
when it is there and the checked method when it is not, and keep the
transaction's ``fast.writes`` count; the callers have checked the keys and
pass the transaction with its ``fast``. :func:`checked_engine_txn` does the
one check they need, that the store transaction is open. Compiled
(``fastpath.pxd``), the record layer calls them without a Python call.

This layer calls engine transactions only; never a layer above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from centidb import _nocython as cython
else:
    try:
        import cython
    except ImportError:     # not built: the names below are the pure-Python ones
        from centidb import _nocython as cython

from centidb.engines import EngineTransaction
from centidb.engines.base import Item
from centidb.engines.fastcalls import FastCallsLike
from centidb.txn import TxnManager

if not cython.compiled:
    # Compiled, fastpath.pxd cimports the class, to read its fields directly.
    from centidb.txn import Transaction


__all__ = ['checked_engine_txn', 'put_many', 'put_one', 'replace_one', 'delete_one',
           'first_key']

_EMPTY = b''


def checked_engine_txn(txns: TxnManager, txn_class: type[Transaction], txn: Transaction,
                       write: bool) -> EngineTransaction:
    """The engine transaction of the store transaction `txn`, checked.

    :param txns: the store's :class:`~centidb.txn.TxnManager`.
    :param txn_class: :class:`~centidb.txn.Transaction`.
    :param txn: what the caller passed as ``txn=``.
    :param write: True if the caller writes.
    :raises TypeError: if `txn` is not a transaction of `txns`.
    :raises ~centidb.errors.TransactionError: if it has ended, or is
        read-only and `write` is true.
    """
    if type(txn) is txn_class:
        checked: Transaction = txn
        if checked.manager is txns and (not write or checked.write):
            etxn = checked.engine_txn
            if etxn is not None:
                return etxn
    return txns.engine_txn(txn, write)   # raises the right error


def put_many(etxn: EngineTransaction, fast: FastCallsLike, pairs: list[Item]) -> None:
    """Write the ``(key, value)`` list `pairs` through the engine's fastest path.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param fast: its ``fast``.
    :param pairs: a ``list`` of ``(key, value)`` pairs of checked bytes.
    """
    fast_put_many = fast.put_many
    if fast_put_many is None:
        etxn._put_many(pairs)
    else:
        fast.writes += len(pairs)
        try:
            fast_put_many(pairs)
        except Exception as exc:
            etxn._put_many_failed(exc, pairs)


def put_one(etxn: EngineTransaction, fast: FastCallsLike, key: bytes, value: bytes) -> None:
    """Write one checked ``(key, value)`` pair through the engine's fastest path.

    Without the engine's ``fast.put`` it is :func:`put_many` of one pair.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param fast: its ``fast``.
    :param key: the key bytes.
    :param value: the value bytes.
    """
    fast_put = fast.put
    if fast_put is None:
        put_many(etxn, fast, [(key, value)])
    else:
        fast.writes += 1
        try:
            fast_put(key, value)
        except Exception as exc:
            etxn._put_many_failed(exc, [(key, value)])


def replace_one(etxn: EngineTransaction, fast: FastCallsLike, key: bytes,
                value: bytes) -> bytes | None:
    """Write one checked pair through ``fast.replace``, which `etxn` must offer.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param fast: its ``fast``.
    :param key: the key bytes.
    :param value: the value bytes.
    :returns: the value `key` held before, or None.
    """
    fast.writes += 1
    try:
        return fast.replace(key, value)  # type: ignore[misc]  # the caller checked
    except Exception as exc:
        etxn._put_many_failed(exc, [(key, value)])


def delete_one(etxn: EngineTransaction, fast: FastCallsLike, key: bytes) -> None:
    """Delete the checked key `key` through the engine's fastest path.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param fast: its ``fast``.
    :param key: the key bytes.
    """
    fast_delete = fast.delete
    if fast_delete is None:
        etxn.delete(key)
    else:
        fast.writes += 1
        try:
            fast_delete(key)
        except Exception as exc:
            etxn._put_many_failed(exc, [(key, _EMPTY)])


def first_key(etxn: EngineTransaction, lo: bytes, hi: bytes) -> bytes | None:
    """Return the first key ``>= lo`` and ``< hi`` of `etxn`, or None.

    It seeks the engine's ``fast.seek_cursor`` when there is one.

    :param etxn: an :class:`~centidb.engines.EngineTransaction`.
    :param lo: the lower bound (bytes).
    :param hi: the upper bound (bytes).
    """
    cursor = etxn.fast.seek_cursor
    if cursor is None:
        found = etxn.first(lo, hi)
        return None if found is None else found[0]
    if cursor.set_range(lo):
        key = cursor.key()
        if key < hi:
            return key
    return None
