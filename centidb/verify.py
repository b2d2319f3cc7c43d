"""Alias of :mod:`centidb.store.verify`: the same names, under the import path ``centidb.verify``."""

from centidb.store.verify import *  # noqa: F401,F403
from centidb.store.verify import __all__  # noqa: F401
