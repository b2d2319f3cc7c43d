"""Chooses, once per process, the compiled or the pure-Python implementation.

The key codec exists twice: the pure-Python reference :mod:`centidb.keylib`,
which holds the documentation, and its compiled twin in
``centidb._speedups``, whose ``TWINS`` tuple lists the names it provides
(the codec's, and the kernel's one Python name). The modules named in
:data:`PURE_MODE` exist once: Cython compiles their own ``.py`` source (with
the types of the ``.pxd`` file beside it) into an extension module of the
same name, and this module's import hook loads either all of those or all
the sources.
This module alone decides which is active, from two environment variables
read at import:

* ``CENTIDB_NO_SPEEDUPS=1`` forces pure Python;
* ``CENTIDB_REQUIRE_SPEEDUPS=1`` makes a missing compiled module an
  ``ImportError`` (a missing one is otherwise a ``RuntimeWarning``), and so
  is a compiled :data:`PURE_MODE` module built from another version of its
  source (otherwise the source is loaded, with a warning).

A module with a twinned function ends with ``name = impl.choose(name)``, so
every twinned name is looked up here and nowhere else. :data:`IMPL` names the
active implementation (``'speedups'`` or ``'python'``).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
import warnings
from typing import Callable, Sequence, TypeVar

__all__ = ['IMPL', 'COMPILED', 'PURE_MODE', 'choose', 'compiled_module', 'source_version',
           'compiled_version']

#: The modules Cython compiles from their own source (pure-Python mode).
#: ``setup.py`` reads this tuple; keep it one literal.
PURE_MODE = ('centidb.engines.writelog', 'centidb.engines.fastcalls', 'centidb.txn',
             'centidb.msgpackcodec', 'centidb.records.fastpath', 'centidb.records.record',
             'centidb.records.reader', 'centidb.records.entry')
#: The file, beside the package's compiled modules, in which the build notes
#: the SHA-256 of each :data:`PURE_MODE` source it compiled, one
#: ``module digest`` line each.
SOURCES_FILE = '_compiled_sources.txt'
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

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


def _source_path(name: str) -> str:
    """The ``.py`` file of the :data:`PURE_MODE` module `name`."""
    return os.path.join(_PACKAGE_DIR, *name.split('.')[1:]) + '.py'


def _digest(path: str) -> str:
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def _compiled_path(name: str) -> tuple[str | None, str]:
    """The fresh compiled file of the :data:`PURE_MODE` module `name`, or None and why not."""
    base = _source_path(name)[:-len('.py')]
    found = [base + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES
             if os.path.exists(base + suffix)]
    if not found:
        return None, 'it is not built'
    try:
        with open(os.path.join(_PACKAGE_DIR, SOURCES_FILE), encoding='ascii') as f:
            built = dict(line.split() for line in f if line.strip())
    except (OSError, ValueError):
        built = {}
    if built.get(name) != _digest(_source_path(name)):
        return None, 'it was built from another version of its source'
    return found[0], ''


_usable: tuple[dict[str, str], str] | None = None


def _usable_compiled() -> tuple[dict[str, str], str]:
    """The compiled file of every :data:`PURE_MODE` module, or ``{}`` and why not.

    All or none: the compiled modules cimport each other's classes, which a
    module loaded from its source does not provide.
    """
    global _usable
    if _usable is None:
        files: dict[str, str] = {}
        why = ''
        for name in PURE_MODE:
            compiled, reason = _compiled_path(name)
            if compiled is None:
                files, why = {}, f'the compiled {name} cannot be used: {reason}'
                break
            files[name] = compiled
        _usable = files, why
    return _usable


class _PureModeFinder(importlib.abc.MetaPathFinder):
    """Loads the :data:`PURE_MODE` modules compiled or from source, as :data:`COMPILED` says.

    They are compiled only all together (see :func:`_usable_compiled`).
    """

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        """The spec of `fullname` if it is a :data:`PURE_MODE` module, else None."""
        if fullname not in PURE_MODE:
            return None
        if COMPILED is not None:
            files, why = _usable_compiled()
            compiled = files.get(fullname)
            if compiled is not None:
                return importlib.util.spec_from_file_location(
                    fullname, compiled,
                    loader=importlib.machinery.ExtensionFileLoader(fullname, compiled))
            if _env_flag('CENTIDB_REQUIRE_SPEEDUPS'):
                raise ImportError(f'CENTIDB_REQUIRE_SPEEDUPS=1 but {why}; rebuild it (bash '
                                  f'dev/setup.sh in a checkout, else reinstall centidb)')
            warnings.warn(f'{why}; using the pure-Python source of {fullname}. Rebuild '
                          f'(bash dev/setup.sh in a checkout, else reinstall centidb).',
                          RuntimeWarning, stacklevel=2)
        source = _source_path(fullname)
        return importlib.util.spec_from_file_location(
            fullname, source, loader=importlib.machinery.SourceFileLoader(fullname, source))


_versions: dict[tuple[str, bool], types.ModuleType] = {}


def source_version(name: str) -> types.ModuleType:
    """The :data:`PURE_MODE` module `name` run from its source, whichever is active.

    For parity tests and benchmarks. It is a module object of its own
    (loaded once, not in ``sys.modules``) unless the active one is the
    source.

    :param name: a name in :data:`PURE_MODE`.
    """
    active = sys.modules.get(name)
    if active is not None and not isinstance(active.__loader__,
                                             importlib.machinery.ExtensionFileLoader):
        return active
    if (name, False) not in _versions:
        source = _source_path(name)
        spec = importlib.util.spec_from_file_location(
            name, source, loader=importlib.machinery.SourceFileLoader(name, source))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _versions[name, False] = module
    return _versions[name, False]


def _cimported(name: str) -> list[str]:
    """The :data:`PURE_MODE` modules whose classes the ``.pxd`` of `name` cimports."""
    try:
        with open(_source_path(name)[:-len('.py')] + '.pxd', encoding='utf-8') as f:
            text = f.read()
    except OSError:
        return []
    return [other for other in PURE_MODE
            if other != name and f'from {other} cimport' in text]


def compiled_version(name: str) -> types.ModuleType | None:
    """The :data:`PURE_MODE` module `name` compiled, whichever is active; None if not built.

    For parity tests and benchmarks, as :func:`source_version`. Also None
    while a module it cimports is active from its source: the compiled
    module would not find the compiled classes it was built against.

    :param name: a name in :data:`PURE_MODE`.
    """
    active = sys.modules.get(name)
    if active is not None and isinstance(active.__loader__,
                                         importlib.machinery.ExtensionFileLoader):
        return active
    if (name, True) not in _versions:
        compiled, _ = _compiled_path(name)
        if compiled is None:
            return None
        for other in _cimported(name):
            __import__(other)
            if not isinstance(sys.modules[other].__loader__,
                              importlib.machinery.ExtensionFileLoader):
                return None
        loader = importlib.machinery.ExtensionFileLoader(name, compiled)
        spec = importlib.util.spec_from_file_location(name, compiled, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        _versions[name, True] = module
    return _versions[name, True]


sys.meta_path.insert(0, _PureModeFinder())


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

