"""centidb._nocython: what the compiled-as-is modules import as ``cython`` without Cython."""

from centidb import _nocython


def test_it_says_the_code_is_not_compiled():
    assert _nocython.compiled is False


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
