"""Alias of :mod:`centidb.cli.dump`: the same names, under the import path ``centidb.cli_dump``."""

from centidb.cli.dump import *  # noqa: F401,F403
from centidb.cli.dump import __all__  # noqa: F401
