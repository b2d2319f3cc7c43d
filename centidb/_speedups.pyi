"""Types of the compiled twin ``centidb._speedups`` (built from ``_speedups.pyx``).

Each name has the signature of the pure-Python name it mirrors, in
``centidb/keylib.py`` and ``centidb/records/record.py``, which hold the
documentation. ``tests/test_typing.py`` checks this stub against the built
module (mypy's stubtest) and against the pure signatures.
"""

from typing import Any, Callable, ClassVar, Iterable, Iterator

from typing_extensions import disjoint_base

from centidb.engines import EngineTransaction
from centidb.engines.base import Item
from centidb.engines.fastcalls import SeekCursor
from centidb.errors import CorruptKeyError
from centidb.keyformat import Key
from centidb.txn import Transaction, TxnManager

#: The names this module provides, each the twin of the pure-Python name.
TWINS: tuple[str, ...]
#: The twin's copies of the on-disk constants of ``centidb.keyformat``.
FORMAT_CONSTANTS: dict[str, int]
DT_INSTANT_BIAS_: int
DT_OFFSET_BIAS_: int
__test__: dict[str, str]  # Cython's table of docstrings for doctest

# --- _keylib.pxi: centidb/keylib.py --------------------------------------------

def packs(key: object, prefix: bytes = b'') -> bytes: ...
def unpacks(data: bytes | bytearray | memoryview, prefix: bytes = b'') -> Key: ...
def unpacks_list(data: bytes | bytearray | memoryview, prefix: bytes = b'') -> list[Key]: ...

# --- _kernel.pxi: the kernel -------------------------------------------------

def may_nest_deeper(data: bytes | bytearray | memoryview, max_depth: int) -> bool: ...

# --- _records.pxi: centidb/records/record.py ------------------------------------------
# Typed as the pure classes are. The stub names the store transactions and
# engine transactions the twins are handed (types only: a stub is never
# imported); what belongs to the layers above (the collection, its indexes)
# is Any or object, as in centidb/records/record.py.

_IndexSpec = tuple[Callable[[Any], Any], bytes]

def index_entries(specs: tuple[_IndexSpec, ...], data: Any, tail: bytes) -> list[bytes]: ...

@disjoint_base
class Record:
    coll: Any
    data: Any
    key: Key | None
    _stored: bytes | None
    _entries: list[bytes] | None
    _indexes: tuple[object, ...] | None
    _read_in: object
    _read_at: int
    _key_bytes: bytes | None
    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __init__(self, coll: Any, data: Any, key: Key | None = None,
                 _stored: bytes | None = None, _entries: list[bytes] | None = None,
                 _indexes: tuple[object, ...] | None = None) -> None: ...
    def __eq__(self, value: object, /) -> bool: ...

@disjoint_base
class RecordWriter:
    @property
    def coll(self) -> Any: ...
    @property
    def txns(self) -> TxnManager: ...
    @property
    def txn_class(self) -> type[Transaction]: ...
    @property
    def usable(self) -> bool: ...
    @property
    def counted(self) -> bool: ...
    @property
    def prefix(self) -> bytes: ...
    @property
    def encode(self) -> Callable[[Any], bytes]: ...
    @property
    def compress(self) -> Callable[[bytes], bytes] | None: ...
    @property
    def header(self) -> bytes: ...
    @property
    def key_func(self) -> Callable[[Any], Any] | None: ...
    @property
    def specs(self) -> tuple[_IndexSpec, ...]: ...
    @property
    def indexes(self) -> tuple[object, ...]: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def old_entries(self) -> Callable[[bytes, bytes], list[bytes]]: ...
    @property
    def too_long(self) -> Callable[[Key, bytes, list[bytes]], object]: ...
    @property
    def record_class(self) -> type: ...
    def __init__(self, coll: Any, txns: TxnManager, txn_class: type[Transaction],
                 usable: bool, prefix: bytes, encode: Callable[[Any], bytes],
                 compress: Callable[[bytes], bytes] | None, header: bytes,
                 key_func: Callable[[Any], Any] | None, specs: tuple[_IndexSpec, ...],
                 indexes: tuple[object, ...], limit: int | None,
                 old_entries: Callable[[bytes, bytes], list[bytes]],
                 too_long: Callable[[Key, bytes, list[bytes]], object], record_class: type,
                 counted: bool = False, plain_id: int = -1,
                 decode_plain: Callable[[bytes], Any] | None = None,
                 checksum: bool = False) -> None: ...
    @property
    def checksum(self) -> bool: ...
    @property
    def plain_id(self) -> int: ...
    @property
    def decode_plain(self) -> Callable[[bytes], Any] | None: ...
    def write(self, txn: Transaction, data: Any, key: object, blind: bool) -> Record | None: ...
    def write_many(self, etxn: EngineTransaction, datas: list[Any], blind: bool,
                   first_id: int | None) -> list[Key] | None: ...
    def merge_stored(self, etxn: EngineTransaction, writes: list[Item], counts: list[int],
                     start: int, stored: bool) -> tuple[list[Item], list[bytes]]: ...

@disjoint_base
class RecordReader:
    @property
    def txns(self) -> TxnManager: ...
    @property
    def txn_class(self) -> type[Transaction]: ...
    @property
    def prefix(self) -> bytes: ...
    @property
    def plain_id(self) -> int: ...
    @property
    def decode_plain(self) -> Callable[[bytes], Any]: ...
    @property
    def decode(self) -> Callable[[bytes], Any]: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def batched(self) -> bool: ...
    @property
    def batch_get(self) -> Callable[[EngineTransaction, bytes], bytes | None]: ...
    @property
    def missing(self) -> Callable[[str, Key], Exception]: ...
    @property
    def corrupt_entry(self) -> Callable[[bytes], Exception]: ...
    @property
    def corrupt_record(self) -> Callable[[bytes, Exception], Exception]: ...
    def __init__(self, txns: TxnManager, txn_class: type[Transaction], prefix: bytes,
                 plain_id: int, decode_plain: Callable[[bytes], Any],
                 decode: Callable[[bytes], Any], limit: int | None, batched: bool,
                 batch_get: Callable[[EngineTransaction, bytes], bytes | None],
                 missing: Callable[[str, Key], Exception],
                 corrupt_entry: Callable[[bytes], Exception],
                 corrupt_record: Callable[[bytes, Exception], Exception],
                 corrupt_key: Callable[[bytes, CorruptKeyError], Exception],
                 batch_items: Callable[[EngineTransaction, bytes, bytes, bool],
                                       Iterator[tuple[bytes, bytes]]],
                 batch_flag: int, end: bytes | None, coll: Any = None,
                 specs: tuple[_IndexSpec, ...] = (),
                 indexes: tuple[object, ...] = (),
                 checksum: bool = False) -> None: ...
    @property
    def checksum(self) -> bool: ...
    @property
    def coll(self) -> Any: ...
    @property
    def specs(self) -> tuple[_IndexSpec, ...]: ...
    @property
    def indexes(self) -> tuple[object, ...]: ...
    @property
    def corrupt_key(self) -> Callable[[bytes, CorruptKeyError], Exception]: ...
    @property
    def batch_items(self) -> Callable[[EngineTransaction, bytes, bytes, bool],
                                      Iterator[tuple[bytes, bytes]]]: ...
    @property
    def batch_flag(self) -> int: ...
    @property
    def end(self) -> bytes | None: ...
    def values(self, etxn: EngineTransaction, lo: bytes, hi: bytes,
               reverse: bool) -> Iterator[Any]: ...
    def items(self, etxn: EngineTransaction, lo: bytes, hi: bytes,
              reverse: bool) -> Iterator[tuple[Key, Any]]: ...
    def keys(self, etxn: EngineTransaction, lo: bytes, hi: bytes,
             reverse: bool) -> Iterator[Key]: ...
    def get(self, txn: Transaction, key: object, default: Any) -> Any: ...
    def get_record(self, txn: Transaction, key: object, default: Any) -> Any: ...
    def index_get(self, txn: Transaction, index_prefix: bytes, index_name: str, x: object,
                  default: Any) -> Any: ...
    def index_records(self, index_prefix: bytes, index_name: str, items: bool,
                      etxn: EngineTransaction, lo: bytes | None, hi: bytes | None,
                      reverse: bool) -> Iterator[Any]: ...

# count_groups: _keylib.pxi, centidb/keylib.py

def count_groups(chunks: Iterable[list[bytes]], prefix: bytes, size: int,
                 reverse: bool, max: int | None, parts: int,
                 group_of: Callable[[bytes, int], Key]) -> list[tuple[Key, int]]: ...

# --- _collection.pxi: centidb/collection.py ------------------------------------

def _collection_get(self: Any, key: object, default: Any = None, *,
                    txn: Transaction | None = None, rec: bool = False, encoded: bool = False,
                    raw: bool = False) -> Any: ...
def _collection_put(self: Any, rec: Any, key: object = None, blind: bool = False,
                    txn: Transaction | None = None, packer: Any = None) -> Any: ...

# --- _index.pxi: centidb/index.py ----------------------------------------------

def _index_get(self: Any, tup: object, default: Any = None, *, rec: bool = False,
               txn: Transaction | None = None) -> Any: ...

# --- _engines.pxi: centidb/engines/fastcalls.py --------------------------------

@disjoint_base
class FastCalls:
    writes: int
    get: Callable[[bytes], bytes | None] | None
    put: Callable[[bytes, bytes], object] | None
    put_many: Callable[[list[tuple[bytes, bytes]]], object] | None
    replace: Callable[[bytes, bytes], bytes | None] | None
    delete: Callable[[bytes], object] | None
    seek_cursor: SeekCursor | None

@disjoint_base
class GuardedGet:
    def get(self, key: bytes) -> bytes | None: ...

def guarded(call: Callable[[bytes], bytes | None],
            errors: type[BaseException] | tuple[type[BaseException], ...],
            mapped: Callable[[BaseException], BaseException]) -> Callable[[bytes], bytes | None]: ...

