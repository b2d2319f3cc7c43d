"""Sphinx configuration for centidb's documentation."""

import os
import sys

sys.path.insert(0, os.path.abspath('..'))
# Document the pure-Python reference: it holds the docstrings.
os.environ.setdefault('CENTIDB_NO_SPEEDUPS', '1')

project = 'centidb'
author = 'centidb developers'
extensions = ['sphinx.ext.autodoc']
exclude_patterns = ['_build']
