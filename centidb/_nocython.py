"""Stands for the ``cython`` module where Cython is not installed.

A module Cython compiles as it is (:data:`centidb.impl.PURE_MODE`) tests
``cython.compiled`` to import the pure-Python names its ``.pxd`` replaces
with compiled ones, and may type a generator's locals with
``@cython.locals`` (a ``.pxd`` cannot); without Cython, it imports this
instead, where both do nothing.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

_F = TypeVar('_F', bound=Callable[..., Any])

#: False: this is pure Python.
compiled = False
#: The C types ``@cython.locals`` names, here only names.
int = bint = Py_ssize_t = None


def locals(**types: Any) -> Callable[[_F], _F]:   # noqa: A001  # cython's name
    """A decorator that returns the function unchanged."""
    return lambda func: func
