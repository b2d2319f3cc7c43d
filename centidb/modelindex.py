"""Alias of :mod:`centidb.models.index`: the same names, under the import path ``centidb.modelindex``."""

from centidb.models.index import *  # noqa: F401,F403
from centidb.models.index import __all__  # noqa: F401
