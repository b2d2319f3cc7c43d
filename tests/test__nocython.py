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


def test_locals_returns_the_function_itself():
    def scan(items):
        return [item * 2 for item in items]
    assert _nocython.locals(items=_nocython.Py_ssize_t, flag=_nocython.bint)(scan) is scan
    assert scan([1, 2]) == [2, 4]


def test_a_module_without_cython_imports_the_pure_names(monkeypatch):
    """With ``import cython`` failing, record.py falls back to this module and
    runs its pure-Python names."""
    import builtins
    import importlib.util
    import os

    from centidb.records import record
    real_import = builtins.__import__

    def no_cython(name, *args, **kwargs):
        if name == 'cython':
            raise ImportError('no Cython here')
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, '__import__', no_cython)
    path = os.path.join(os.path.dirname(_nocython.__file__), 'records', 'record.py')
    spec = importlib.util.spec_from_file_location('record_without_cython', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.cython is _nocython
    assert module.body_of(b'\x01abc\x00\x00\x00\x00', 4) == b'abc'
    assert module.rejoined(b'p', b'xyz', 1) == b'pyz'
    assert module.as_key(5) == (5,)
    assert record.as_key((1,)) == (1,)
