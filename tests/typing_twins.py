"""Checked by ``mypy`` in tests/test_typing.py, never run: stub and pure signatures agree.

The compiled twins (the key codec's functions and the kernel's) get
their types from ``centidb/_speedups.pyi``; the pure functions from their
annotations. Each check below hands :func:`same` a pure-Python type and its
twin's, which mypy accepts only if the two are the same type (each accepts
every call the other does); otherwise it reports that it cannot infer
``_T``. The modules Cython compiles from their own source
(:data:`centidb.impl.PURE_MODE`) have one set of annotations, so nothing
of theirs is compared here.
"""

from __future__ import annotations

from typing import TypeVar

from centidb import _speedups, keylib, msgpackcodec

_T = TypeVar('_T')


def same(pure: list[_T], twin: list[_T]) -> None:
    """Type-checks only if ``pure`` and ``twin`` hold the same type (lists are invariant)."""


def key_codec_agrees() -> None:
    same([keylib.packs], [_speedups.packs])
    same([keylib.unpacks], [_speedups.unpacks])
    same([keylib.unpacks_list], [_speedups.unpacks_list])


def count_groups_agrees() -> None:
    same([keylib.count_groups], [_speedups.count_groups])


def kernel_agrees() -> None:
    same([msgpackcodec.may_nest_deeper], [_speedups.may_nest_deeper])
