"""Stands for the ``cython`` module where Cython is not installed.

A module Cython compiles as it is (:data:`centidb.impl.PURE_MODE`) tests
``cython.compiled`` to import the pure-Python names its ``.pxd`` replaces
with compiled ones; without Cython, it imports this instead.
"""

#: False: this is pure Python.
compiled = False
