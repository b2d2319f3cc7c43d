"""Alias of :mod:`centidb.cli.commands`: the same names, under the import path ``centidb.cli_commands``."""

from centidb.cli.commands import *  # noqa: F401,F403
from centidb.cli.commands import __all__  # noqa: F401
