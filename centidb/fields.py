"""Alias of :mod:`centidb.models.fields`: the same names, under the import path ``centidb.fields``."""

from centidb.models.fields import *  # noqa: F401,F403
from centidb.models.fields import __all__  # noqa: F401
