"""Alias of :mod:`centidb.models.model`: the same names, under the import path ``centidb.model``."""

from centidb.models.model import *  # noqa: F401,F403
from centidb.models.model import __all__  # noqa: F401
