"""Checked by ``mypy`` in tests/test_typing.py, never run: stub and pure signatures agree.

The compiled twin's types come from ``centidb/_speedups.pyi``; the pure
functions' from their annotations. Each function below assigns a twin to a
variable of the pure function's type and back, which mypy accepts only if
each signature accepts every call the other does.
"""

from __future__ import annotations

from centidb import _speedups, keylib


def packs_agree() -> None:
    pure = keylib.packs
    twin = _speedups.packs
    pure = _speedups.packs
    twin = keylib.packs


def unpacks_agree() -> None:
    pure = keylib.unpacks
    twin = _speedups.unpacks
    pure = _speedups.unpacks
    twin = keylib.unpacks


def unpacks_list_agree() -> None:
    pure = keylib.unpacks_list
    twin = _speedups.unpacks_list
    pure = _speedups.unpacks_list
    twin = keylib.unpacks_list
