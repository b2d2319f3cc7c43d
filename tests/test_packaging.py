"""The build degrades to pure Python when compiling fails, unless required."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytest.importorskip('Cython')


@pytest.fixture
def source_copy(tmp_path):
    """A copy of the package sources, subpackages included, without any built extension."""
    for name in ('setup.py', 'pyproject.toml', 'README.md'):
        shutil.copy(os.path.join(ROOT, name), tmp_path)
    for directory, subdirectories, names in os.walk(os.path.join(ROOT, 'centidb')):
        subdirectories[:] = [name for name in subdirectories if name != '__pycache__']
        copy = tmp_path / os.path.relpath(directory, ROOT)
        copy.mkdir()
        for name in names:
            if name.endswith(('.py', '.pyx', '.pxi', '.pxd', '.pyi')) or name == 'py.typed':
                shutil.copy(os.path.join(directory, name), copy)
    return tmp_path


# An editable install's import hook finds centidb._speedups of the real tree
# even for a copied package; drop it so the copy is what gets imported.
IMPORT_FROM_COPY = ('import sys; sys.meta_path[:] = [f for f in sys.meta_path '
                    'if "editable" not in repr(f).lower()]; ')


def clean_environ():
    """The environment without any CENTIDB_* switch."""
    return {k: v for k, v in os.environ.items() if not k.startswith('CENTIDB_')}


def build(directory, **env):
    """Run setup.py build_ext --inplace with a C compiler that always fails."""
    environ = dict(clean_environ(), CC='false', **env)
    return subprocess.run(
        [sys.executable, 'setup.py', 'build_ext', '--inplace'], cwd=directory,
        env=environ, capture_output=True, text=True, timeout=300)


def test_failed_compile_installs_pure_python_with_warning(source_copy):
    result = build(source_copy)
    assert result.returncode == 0, result.stderr
    assert 'WARNING: centidb._speedups could not be built' in result.stderr
    assert not list((source_copy / 'centidb').glob('_speedups*.so'))
    check = subprocess.run(
        [sys.executable, '-c', IMPORT_FROM_COPY + 'import centidb.keylib as k; print(k.IMPL)'],
        cwd=source_copy, capture_output=True, text=True,
        env=clean_environ())
    assert check.stdout.strip() == 'python'
    assert 'RuntimeWarning' in check.stderr and 'CENTIDB_NO_SPEEDUPS=1' in check.stderr


def test_failed_compile_is_an_error_when_speedups_required(source_copy):
    result = build(source_copy, CENTIDB_REQUIRE_SPEEDUPS='1')
    assert result.returncode != 0
    check = subprocess.run(
        [sys.executable, '-c', IMPORT_FROM_COPY + 'import centidb.keylib'], cwd=source_copy,
        capture_output=True, text=True,
        env=dict(clean_environ(), CENTIDB_REQUIRE_SPEEDUPS='1'))
    assert check.returncode != 0
    assert 'cannot be imported' in check.stderr


def test_built_package_ships_its_types(source_copy):
    """py.typed (PEP 561) and the compiled twin's stub are package data.

    ``build_py`` lays out the pure part of a wheel: what it copies is what
    an install holds besides the extension.
    """
    result = subprocess.run(
        [sys.executable, 'setup.py', 'build_py', '-d', 'typed-build'], cwd=source_copy,
        env=dict(clean_environ(), CC='false'), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    built = source_copy / 'typed-build' / 'centidb'
    assert (built / 'py.typed').is_file()
    assert (built / '_speedups.pyi').is_file()


def test_the_source_distribution_holds_every_build_input():
    """MANIFEST.in takes each file Cython reads (.pyx, .pxi, .pxd) and the
    stub into an sdist, whose build would otherwise fail or lose speed."""
    import fnmatch
    with open(os.path.join(ROOT, 'MANIFEST.in')) as f:
        patterns = [line.split()[2:] for line in f
                    if line.split()[:2] == ['recursive-include', 'centidb']]
    patterns = [pattern for line in patterns for pattern in line]
    inputs = []
    for directory, subdirectories, names in os.walk(os.path.join(ROOT, 'centidb')):
        subdirectories[:] = [name for name in subdirectories if name != '__pycache__']
        inputs += [name for name in names if name.endswith(('.pyx', '.pxi', '.pxd', '.pyi'))]
    assert any(name.endswith('.pxd') for name in inputs)
    missing = [name for name in inputs
               if not any(fnmatch.fnmatch(name, pattern) for pattern in patterns)]
    assert missing == []
