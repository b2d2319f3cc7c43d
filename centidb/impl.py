"""Chooses, once per process, the compiled or the pure-Python implementation.

centidb's hot paths exist twice: the pure-Python reference (in
:mod:`centidb.keylib` and :mod:`centidb.records`, which hold the
documentation) and the compiled twin ``centidb._speedups``, whose
``TWINS`` tuple lists the names it provides. This module alone decides which
is active, from two environment variables read at import:

* ``CENTIDB_NO_SPEEDUPS=1`` forces pure Python;
* ``CENTIDB_REQUIRE_SPEEDUPS=1`` makes a missing compiled module an
  ``ImportError`` (a missing one is otherwise a ``RuntimeWarning``).

A module with a twinned function ends with ``name = impl.choose(name)``, so
every twinned name is looked up here and nowhere else. :data:`IMPL` names the
active implementation (``'speedups'`` or ``'python'``).
"""

from __future__ import annotations

import os
import types
import warnings
from typing import Callable, TypeVar

__all__ = ['IMPL', 'COMPILED', 'choose', 'compiled_module']

_Twinned = TypeVar('_Twinned', bound=Callable[..., object])


def _env_flag(name: str) -> bool:
    return os.environ.get(name, '').strip() not in ('', '0')


def compiled_module() -> types.ModuleType | None:
    """Return the compiled module ``centidb._speedups``, or None if not built.

    It is returned even when ``CENTIDB_NO_SPEEDUPS`` keeps it inactive: for
    parity tests and benchmarks, which compare both implementations.
    """
    try:
        from centidb import _speedups
    except ImportError:
        return None
    return _speedups


def _load() -> types.ModuleType | None:
    """Return the compiled module if it is to be active, else None."""
    if _env_flag('CENTIDB_NO_SPEEDUPS'):
        if _env_flag('CENTIDB_REQUIRE_SPEEDUPS'):
            raise ImportError('CENTIDB_NO_SPEEDUPS and CENTIDB_REQUIRE_SPEEDUPS '
                              'are both set; unset one of them')
        return None
    try:
        from centidb import _speedups
    except ImportError as exc:
        if _env_flag('CENTIDB_REQUIRE_SPEEDUPS'):
            raise ImportError(
                'CENTIDB_REQUIRE_SPEEDUPS=1 but the compiled extension '
                f'centidb._speedups cannot be imported ({exc}); reinstall '
                'centidb with a C compiler available') from exc
        # pip hides build output, so say it where the user will see it.
        warnings.warn(
            f'centidb._speedups is not available ({exc}); using the much '
            'slower pure-Python code. Reinstall centidb with a C compiler, '
            'or set CENTIDB_NO_SPEEDUPS=1 to silence this warning.',
            RuntimeWarning, stacklevel=3)
        return None
    return _speedups


#: The active compiled module, or None when pure Python is in use.
COMPILED = _load()
#: The active implementation: ``'speedups'`` or ``'python'``.
IMPL = 'python' if COMPILED is None else 'speedups'


def choose(pure: _Twinned) -> _Twinned:
    """Return the active implementation of the pure function or class `pure`.

    The compiled twin of the same name when :data:`COMPILED` is active, with
    `pure`'s docstring where the twin's can be set; else `pure` itself.

    :param pure: a function or class of the pure-Python reference, named in
        the compiled module's ``TWINS``.
    :raises LookupError: if the compiled module has no twin of that name
        (a build from another version of the source).
    """
    if COMPILED is None:
        return pure
    name = pure.__name__
    if name not in COMPILED.TWINS:
        raise LookupError(f'centidb._speedups has no twin of {name!r}; rebuild it '
                          f'from this source tree')
    twin: _Twinned = getattr(COMPILED, name)
    if not isinstance(twin, type):
        try:
            twin.__doc__ = pure.__doc__
        except (AttributeError, TypeError):
            pass
    return twin

