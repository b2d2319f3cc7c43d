"""The mapping protocol of a collection: keys to values.

:class:`MappingMethods` is a mixin giving a collection ``key in coll``,
``coll[key]``, ``coll[key] = value``, ``del coll[key]``, ``iter(coll)``,
``len(coll)`` and ``bool(coll)``, each in terms of the collection's own
methods (``get()``, ``put()``, ``delete()``, ``keys()``, ``count()``), so
each runs in a transaction of its own or joins the thread's write
transaction. The collection is the layer above; what the mixin uses of it is
declared below for the type checker, never imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from centidb import keylib
from centidb.access import Records
from centidb.engines import EngineTransaction
from centidb.keylib import Key
from centidb.records import Record, as_key
from centidb.txn import Transaction, TxnManager

__all__ = ['MappingMethods']

_MISSING = object()


class MappingMethods:
    """``in``, ``[]``, ``del``, ``iter()``, ``len()`` and ``bool()`` for a collection."""

    _txns: TxnManager
    _records: Records
    _prefix: bytes

    if TYPE_CHECKING:   # what the collection provides, declared for the type checker
        def get(self, key: object, default: Any = None) -> Any: ...

        def put(self, rec: Any, key: object = None) -> Record: ...

        def delete(self, key: object) -> Record | None: ...

        def keys(self, *, max: int | None = None) -> Iterator[Key]: ...

        def count(self) -> int: ...

    def __len__(self) -> int:
        return self.count()

    def __bool__(self) -> bool:
        for _ in self.keys(max=1):
            return True
        return False

    def __contains__(self, key: object) -> bool:
        return self._txns.run(None, False, self._has, as_key(key))

    def _has(self, txn: Transaction, etxn: EngineTransaction, key: Key) -> bool:
        return self._records.stored(etxn, keylib.packs(key, self._prefix)) is not None

    def __getitem__(self, key: object) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: object, value: Any) -> None:
        self.put(value, key=key)

    def __delitem__(self, key: object) -> None:
        if self.delete(key) is None:
            raise KeyError(key)

    def __iter__(self) -> Iterator[Key]:
        return self.keys()
