"""Alias of :mod:`centidb.cli.common`: the same names, under the import path ``centidb.cli_common``.

``CollectionMeta`` and ``read_metadata`` are :mod:`centidb.catalog`'s.
"""

from centidb.catalog import CollectionMeta, read_metadata  # noqa: F401
from centidb.cli.common import *  # noqa: F401,F403
from centidb.cli.common import __all__ as _common_names

__all__ = [*_common_names, 'CollectionMeta', 'read_metadata']
