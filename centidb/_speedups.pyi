"""Types of the compiled module ``centidb._speedups`` (built from ``_speedups.pyx``).

Each name has the signature of the pure-Python name it mirrors, in
``centidb/keylib.py`` and ``centidb/msgpackcodec.py``, which hold the
documentation. ``tests/test_typing.py`` checks this stub against the built
module (mypy's stubtest) and against the pure signatures. The C functions
that the compiled record layer cimports are declared in ``_speedups.pxd``.
"""

from typing import Callable, Iterable

from centidb.keyformat import Key

#: The names this module provides, each the twin of the pure-Python name.
TWINS: tuple[str, ...]
#: The twin's copies of the on-disk constants of ``centidb.keyformat``.
FORMAT_CONSTANTS: dict[str, int]
DT_INSTANT_BIAS_: int
DT_OFFSET_BIAS_: int
__test__: dict[str, str]  # Cython's table of docstrings for doctest
__pyx_capi__: dict[str, object]  # the C functions other compiled modules cimport

# --- _keylib.pxi: centidb/keylib.py --------------------------------------------

def packs(key: object, prefix: bytes = b'') -> bytes: ...
def unpacks(data: bytes | bytearray | memoryview, prefix: bytes = b'') -> Key: ...
def unpacks_list(data: bytes | bytearray | memoryview, prefix: bytes = b'') -> list[Key]: ...
def count_groups(chunks: Iterable[list[bytes]], prefix: bytes, size: int,
                 reverse: bool, max: int | None, parts: int,
                 group_of: Callable[[bytes, int], Key]) -> list[tuple[Key, int]]: ...

# --- _kernel.pxi: the kernel -------------------------------------------------

def may_nest_deeper(data: bytes | bytearray | memoryview, max_depth: int) -> bool: ...
