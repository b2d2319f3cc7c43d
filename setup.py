"""Build script: declares the optional compiled key codec, nothing else.

Project metadata lives in pyproject.toml. If the extension cannot be built,
centidb installs as pure Python with a loud warning, unless the environment
variable CENTIDB_REQUIRE_SPEEDUPS=1 is set, which makes that a failure.
"""

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


class OptionalBuildExt(build_ext):
    """build_ext that degrades to pure Python unless speedups are required."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # compiler missing, Cython failure, ...
            if REQUIRE_SPEEDUPS:
                raise
            warn_pure_python(exc)


def extensions():
    """Return the extension list (empty when Cython is unavailable)."""
    try:
        from Cython.Build import cythonize
    except ImportError as exc:
        if REQUIRE_SPEEDUPS:
            raise
        warn_pure_python(exc)
        return []
    return cythonize(
        [Extension('centidb._speedups', ['centidb/_speedups.pyx'])],
        compiler_directives={'language_level': 3},
        quiet=True,
    )


setup(ext_modules=extensions(), cmdclass={'build_ext': OptionalBuildExt})
