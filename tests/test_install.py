"""The installed package is visible to a user's tools, not only to Python.

``dev/setup.sh`` installs centidb in editable mode; the default editable
mode (an import hook) hides the package from mypy, which reports
``import-not-found``. Here a user's mypy, run on a small script in a
directory outside the checkout, must find centidb and its types.
"""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: mypy's cache for this test (a user's settings; kept between runs, for speed).
CACHE = os.path.join(ROOT, '.mypy_cache', 'user')

SCRIPT = """\
import centidb

store = centidb.open('memory')
coll = store.collection('people')
reveal_type(coll)
"""


@pytest.mark.skipif(sys.version_info < (3, 10), reason='mypy 2 runs on Python 3.10 and later')
def test_a_users_mypy_outside_the_checkout_sees_centidb(tmp_path):
    assert not str(tmp_path).startswith(ROOT)
    (tmp_path / 'app.py').write_text(SCRIPT)
    (tmp_path / 'mypy.ini').write_text(textwrap.dedent("""\
        [mypy]
        follow_imports = silent
        """))
    env = {key: value for key, value in os.environ.items()
           if key not in ('PYTHONPATH', 'MYPYPATH')}
    result = subprocess.run(
        [sys.executable, '-m', 'mypy', '--cache-dir', CACHE, 'app.py'],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    output = result.stdout + result.stderr
    assert 'import-not-found' not in output and 'import-untyped' not in output, output
    assert 'Revealed type is "centidb.collection.Collection"' in output, output
