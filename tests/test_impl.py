"""centidb.impl: which implementation runs, and how the PURE_MODE modules load.

A PURE_MODE module is compiled from its own source: the active one is the
compiled file exactly when the compiled codec is active, and a compiled
file built from another version of the source is never used (an error when
speedups are required, else the source with a warning). The checks on
stale files run a copy of the package in a child process, whichever
implementation this pass uses.
"""

import importlib.machinery
import os
import re
import shutil
import subprocess
import sys

import pytest

import centidb
from centidb import impl

PACKAGE = os.path.dirname(os.path.abspath(centidb.__file__))


def _base(name):
    """The path of the PURE_MODE module `name`, without its suffix."""
    return os.path.join(PACKAGE, *name.split('.')[1:])


def _built(name):
    return any(os.path.exists(_base(name) + suffix)
               for suffix in importlib.machinery.EXTENSION_SUFFIXES)


_NOT_BUILT = pytest.mark.skipif(not all(map(_built, impl.PURE_MODE)),
                                reason='the PURE_MODE modules are not compiled')


def c_only_names(name):
    """The names of the PURE_MODE module `name` that, compiled, are C only:
    the functions its ``.pxd`` declares ``cdef`` (not ``cpdef``), those it
    cimports, and ``cython``, which the source imports for its decorators."""
    with open(_base(name) + '.pxd') as f:
        pxd = f.read()
    names = {'cython'}
    names.update(re.findall(r'^cdef[ \t]+(?!class\b)(?:[\w.]+[ \t]+)*?(\w+)[ \t]*\(', pxd, re.M))
    for imported in re.findall(r'^from\s+[\w.]+\s+cimport\s+\(?([^)]*?)\)?\s*$', pxd,
                               re.M | re.S):
        names.update(re.findall(r'\w+', imported))
    return names


@pytest.mark.parametrize('name', impl.PURE_MODE)
def test_a_pure_mode_module_is_compiled_exactly_when_the_codec_is(name):
    active = sys.modules[name]
    assert active.__file__.endswith('.py') == (impl.COMPILED is None)
    if impl.COMPILED is not None:
        assert active is impl.compiled_version(name)


@pytest.mark.parametrize('name', impl.PURE_MODE)
def test_source_and_compiled_versions_are_the_same_module_built_twice(name):
    source = impl.source_version(name)
    assert source.__file__.endswith('.py')
    assert impl.source_version(name) is source
    if not _built(name):
        pytest.skip('not compiled')
    compiled = impl.compiled_version(name)
    if compiled is None:
        # As documented: a module it cimports is active from its source.
        assert impl.COMPILED is None
        pytest.skip('it cimports a module active from its source')
    assert not compiled.__file__.endswith('.py')
    # Both offer the same public names, but the .pxd's C functions (a name
    # the module cimports and also assigns may be in both).
    public = {n for n in vars(source) if not n.startswith('_')} - {'annotations'}
    compiled_public = {n for n in vars(compiled) if not n.startswith('_')}
    assert compiled_public <= public
    assert public - c_only_names(name) == compiled_public - c_only_names(name)
    assert {'pack_entry', 'cython'} <= c_only_names('centidb.records.record')
    assert {'split_first', 'first_key_end'} <= c_only_names('centidb.records.reader')


def _copy_package(tmp_path):
    root = tmp_path / 'site'
    shutil.copytree(PACKAGE, root / 'centidb',
                    ignore=shutil.ignore_patterns('__pycache__', '*.c'))
    return root


def _import_in_child(root, env_flag):
    env = {k: v for k, v in os.environ.items()
           if k not in ('CENTIDB_NO_SPEEDUPS', 'CENTIDB_REQUIRE_SPEEDUPS')}
    env.update(env_flag, PYTHONPATH=str(root))
    code = ('import warnings; warnings.simplefilter("always")\n'
            'import centidb.engines.writelog as w; print(w.__file__)')
    return subprocess.run([sys.executable, '-c', code], cwd=str(root), env=env,
                          capture_output=True, text=True, timeout=120)


@_NOT_BUILT
def test_a_fresh_compiled_module_is_loaded(tmp_path):
    root = _copy_package(tmp_path)
    run = _import_in_child(root, {'CENTIDB_REQUIRE_SPEEDUPS': '1'})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().startswith(str(root)) and not run.stdout.strip().endswith('.py')
    run = _import_in_child(root, {'CENTIDB_NO_SPEEDUPS': '1'})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().endswith('writelog.py')


@_NOT_BUILT
def test_a_compiled_module_of_another_source_is_never_used(tmp_path):
    root = _copy_package(tmp_path)
    with open(root / 'centidb' / 'engines' / 'writelog.py', 'a') as f:
        f.write('\nEDITED_AFTER_THE_BUILD = True\n')
    run = _import_in_child(root, {'CENTIDB_REQUIRE_SPEEDUPS': '1'})
    assert run.returncode != 0
    assert 'another version of its source' in run.stderr and 'ImportError' in run.stderr
    run = _import_in_child(root, {})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().endswith('writelog.py')
    assert 'RuntimeWarning' in run.stderr and 'another version of its source' in run.stderr


@_NOT_BUILT
def test_a_missing_record_of_the_built_sources_counts_as_stale(tmp_path):
    root = _copy_package(tmp_path)
    os.remove(root / 'centidb' / impl.SOURCES_FILE)
    run = _import_in_child(root, {'CENTIDB_REQUIRE_SPEEDUPS': '1'})
    assert run.returncode != 0 and 'another version of its source' in run.stderr


def test_setup_py_compiles_exactly_the_pure_mode_modules():
    """setup.py reads PURE_MODE from impl.py's source; each has a .pxd beside it."""
    root = os.path.dirname(PACKAGE)
    with open(os.path.join(root, 'setup.py')) as f:
        head = f.read().split('\nsetup(')[0]      # everything but the call
    namespace = {'__file__': os.path.join(root, 'setup.py'), '__name__': 'setup_under_test'}
    exec(compile(head, 'setup.py', 'exec'), namespace)
    assert namespace['pure_mode_modules']() == impl.PURE_MODE
    for name in impl.PURE_MODE:
        source = os.path.join(root, namespace['source_of'](name))
        assert os.path.exists(source) and os.path.exists(source[:-len('.py')] + '.pxd')
