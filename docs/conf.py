"""Sphinx configuration for centidb's documentation.

``tests/test_docs.py`` builds these pages with ``-W`` (html) and runs every
example in them (``-b doctest``), in both passes of ``dev/test.sh``.
"""

import os
import sys

sys.path.insert(0, os.path.abspath('..'))


def _flag(name):
    return os.environ.get(name, '').strip() not in ('', '0')


# The key codec the examples run on. Under either switch the build uses what
# the switch asks for, so the doctest build of the test pass with
# CENTIDB_REQUIRE_SPEEDUPS=1 runs the compiled codec and the pass with
# CENTIDB_NO_SPEEDUPS=1 runs pure Python (forcing pure here would make
# centidb.keylib refuse to import in the first pass: the two switches
# exclude each other). With neither switch, a hand build uses pure Python,
# so a missing extension does not warn. The API reference reads the same
# either way: the twin's public functions carry the pure docstrings.
if not (_flag('CENTIDB_NO_SPEEDUPS') or _flag('CENTIDB_REQUIRE_SPEEDUPS')):
    os.environ['CENTIDB_NO_SPEEDUPS'] = '1'

import centidb  # noqa: E402 - after the codec switch above

project = 'centidb'
author = 'centidb developers'
release = version = centidb.__version__

extensions = ['sphinx.ext.autodoc', 'sphinx.ext.doctest']
exclude_patterns = ['_build']

autodoc_member_order = 'bysource'
autodoc_default_options = {'members': True, 'undoc-members': True}

# Bare ``>>>`` paragraphs run too: tests/test_docs.py fails a page that
# holds Python code the doctest build does not run.
doctest_test_doctest_blocks = 'default'
