"""centidb._nocython: what the PURE_MODE modules import as ``cython`` when Cython is missing.

An install without Cython (a wheel's pure part, or a checkout without the
build requirements) still runs every PURE_MODE module from its source; the
checks run in a child process where ``import cython`` fails.
"""

import json
import os
import subprocess
import sys

from centidb import _nocython, impl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = '''
import json, sys
sys.modules['cython'] = None            # import cython raises ImportError
import centidb
from centidb import impl, keylib
from centidb.records import record
modules = {name: sys.modules[name] for name in impl.PURE_MODE}
store = centidb.open('ListEngine')
coll = store.collection('c', key_func=lambda rec: rec['k'])
coll.add_index('tag', lambda rec: rec['tag'])
coll.put({'k': 1, 'tag': 'a'})
print(json.dumps({
    'files': [module.__file__.endswith('.py') for module in modules.values()],
    'cython': sorted({getattr(module, 'cython', None).__name__ for module in modules.values()
                      if hasattr(module, 'cython')}),
    'pack_entry': record.pack_entry is keylib.pack_entry,
    'get': coll.indices['tag'].get('a'),
}))
'''


def test_it_says_the_code_is_not_compiled():
    assert _nocython.compiled is False


def test_the_sources_run_where_cython_cannot_be_imported():
    env = dict(os.environ, CENTIDB_NO_SPEEDUPS='1', PYTHONPATH=ROOT)
    env.pop('CENTIDB_REQUIRE_SPEEDUPS', None)
    run = subprocess.run([sys.executable, '-c', CHILD], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found['files'] == [True] * len(impl.PURE_MODE)
    assert found['cython'] == ['centidb._nocython']
    assert found['pack_entry'] is True and found['get'] == {'k': 1, 'tag': 'a'}
