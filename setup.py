"""Build script: declares the optional compiled modules, nothing else.

``centidb._speedups`` (the key codec's twin and the other ``.pxi`` files),
and each module named in ``centidb.impl.PURE_MODE``, compiled by Cython from
its own ``.py`` source with the ``.pxd`` beside it; the build notes each such
source's SHA-256 in ``centidb/_compiled_sources.txt`` so that a compiled
module is never used with another version of its source. Project metadata
lives in pyproject.toml. If the extension cannot be built,
centidb installs as pure Python with a loud warning, unless the environment
variable CENTIDB_REQUIRE_SPEEDUPS=1 is set, which makes that a failure.
"""

import ast
import hashlib
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REQUIRE_SPEEDUPS = os.environ.get('CENTIDB_REQUIRE_SPEEDUPS', '').strip() not in ('', '0')


def warn_pure_python(reason):
    """Print a banner saying the package will run without its compiled codec."""
    line = '*' * 72
    sys.stderr.write(
        f'\n{line}\nWARNING: centidb._speedups could not be built: {reason}\n'
        'centidb will work in pure Python, several times slower.\n'
        'Set CENTIDB_REQUIRE_SPEEDUPS=1 to make this an error.\n'
        f'{line}\n\n')


HERE = os.path.dirname(os.path.abspath(__file__))


def pure_mode_modules():
    """The names in ``centidb.impl.PURE_MODE``, read without importing centidb."""
    with open(os.path.join(HERE, 'centidb', 'impl.py'), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], 'id', None) == 'PURE_MODE'):
            return ast.literal_eval(node.value)
    raise RuntimeError('centidb/impl.py defines no PURE_MODE')


def source_of(module):
    """The ``.py`` file of a module name, relative to the project root."""
    return os.path.join(*module.split('.')) + '.py'


class OptionalBuildExt(build_ext):
    """build_ext that degrades to pure Python unless speedups are required."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # compiler missing, Cython failure, ...
            if REQUIRE_SPEEDUPS:
                raise
            warn_pure_python(exc)
            return
        lines = []
        for module in pure_mode_modules():
            with open(os.path.join(HERE, source_of(module)), 'rb') as f:
                lines.append(f'{module} {hashlib.sha256(f.read()).hexdigest()}\n')
        package_dir = os.path.dirname(self.get_ext_fullpath('centidb._speedups'))
        os.makedirs(package_dir, exist_ok=True)
        with open(os.path.join(package_dir, '_compiled_sources.txt'), 'w',
                  encoding='ascii') as f:
            f.writelines(lines)


def extensions():
    """Return the extension list (empty when Cython is unavailable)."""
    try:
        from Cython.Build import cythonize
    except ImportError as exc:
        if REQUIRE_SPEEDUPS:
            raise
        warn_pure_python(exc)
        return []
    twins = cythonize(
        [Extension('centidb._speedups', ['centidb/_speedups.pyx'])],
        compiler_directives={'language_level': 3},
        quiet=True,
    )
    # The source stays Python: its annotations document, the .pxd types.
    pure_mode = cythonize(
        [Extension(module, [source_of(module)]) for module in pure_mode_modules()],
        compiler_directives={'language_level': 3, 'annotation_typing': False,
                             'binding': True},
        quiet=True,
    )
    return twins + pure_mode


setup(ext_modules=extensions(), cmdclass={'build_ext': OptionalBuildExt})
