"""Every public name has a docstring that documents its parameters.

The API reference is autodoc of these docstrings, written with Sphinx field
lists: ``:param name:``, ``:returns:``, ``:raises Error:``. This walks the
public modules the way autodoc does (names without a leading underscore,
defined in the centidb package; public methods and properties of public
classes, inherited ones included) and checks that each has a docstring and
that each parameter has a ``:param name:`` field (for ``__init__``, in the
class docstring).

The key codec functions may be compiled twins (see :mod:`centidb.keylib`):
the docstrings checked for them are the pure module's, reached through
``keylib.PYTHON``, never the copy the chooser puts on the twin. The modules
Cython compiles from their own source (:data:`centidb.impl.PURE_MODE`) are
walked in their source version, which holds the documentation. The twins,
and the compiled modules' copies of the docstrings, are checked separately.
"""

import importlib
import inspect
import pkgutil
import re
import sys

import pytest

import centidb
from centidb import (
    batches, catalog, collinfo, checksums, compressors, metarecords, cli, collection, dumpfile, dumpformat, encodings, engines, errors, expr, fieldpaths, where, impl, index, keyformat, hooks, keylib, models, msgpackcodec, query, store, txn,
)
from centidb import records as records_package
from centidb.records import (
    access, entries, entry, fastpath, kernel, limits, reader, record as records, savepoint,
    writing,
)
from centidb.store import admin, verify
from centidb.cli import commands as cli_commands, common as cli_common, dump as cli_dump
from centidb.models import fields, model, index as modelindex

# The modules of the engines package, each checked where it defines names.
ENGINE_MODULES = [importlib.import_module(f'{engines.__name__}.{info.name}')
                  for info in pkgutil.iter_modules(engines.__path__)]

# The modules kept as aliases of moved ones (docs/architecture.rst): each
# name is checked in the module defining it.
ALIASES = [importlib.import_module(f'centidb.{name}') for name in
           ('model', 'modelindex', 'fields', 'cli_common', 'cli_commands', 'cli_dump', 'verify')]

MODULES = [centidb, cli, cli_commands, cli_dump, cli_common,
           models, model, modelindex, fields, store, admin, hooks, verify, catalog, metarecords, collection,
           collinfo,
           index, expr, fieldpaths, query, where, access, entries, writing,
           savepoint, limits, records_package, records, reader, entry, kernel, fastpath, txn,
           impl, checksums, compressors,
           engines, *ENGINE_MODULES, encodings, msgpackcodec, dumpformat, dumpfile, keylib, keyformat, errors, batches]

#: Twin functions and the pure function holding their documentation.
PURE = {
    (keylib, 'packs'): keylib.PYTHON.packs,
    (keylib, 'unpacks'): keylib.PYTHON.unpacks,
    (keylib, 'unpacks_list'): keylib.PYTHON.unpacks_list,
}


def pure_version(module, name, obj):
    """The pure-Python object behind a public name that may be a twin.

    Besides :data:`PURE`, a module with twins keeps the pure versions in its
    ``PYTHON`` namespace (for example ``keylib.PYTHON.count_groups``).
    """
    if (module, name) in PURE:
        return PURE[module, name]
    return getattr(getattr(module, 'PYTHON', None), name, obj)


def source_of(module):
    """`module`, or its source version if Cython compiles it (PURE_MODE)."""
    if module.__name__ in impl.PURE_MODE:
        return impl.source_version(module.__name__)
    return module

_DOCUMENTABLE = (staticmethod, classmethod, property)


def _is_ours(obj):
    return getattr(obj, '__module__', '').startswith('centidb')


def public_objects():
    """Yield ``(qualified name, object, class or None)`` for every public name.

    A name is checked in the module that defines it, not where it is
    imported or re-exported.
    """
    for module in map(source_of, MODULES):
        yield module.__name__, module, None
        seen = set()
        for name, obj in sorted(vars(module).items()):
            if name.startswith('_') or not (inspect.isclass(obj) or callable(obj)):
                continue
            obj = pure_version(module, name, obj)
            if getattr(obj, '__module__', None) != module.__name__ or id(obj) in seen:
                continue    # imported, or a second name (x_python) for one object
            seen.add(id(obj))
            yield f'{module.__name__}.{name}', obj, None
            if inspect.isclass(obj):
                yield from _public_members(f'{module.__name__}.{name}', obj)


def _public_members(prefix, cls):
    for name in sorted(dir(cls)):
        if name.startswith('_') and name != '__init__':
            continue
        owner = next(klass for klass in cls.__mro__ if name in vars(klass))
        if not _is_ours(owner):
            continue
        attr = vars(owner)[name]
        if isinstance(attr, _DOCUMENTABLE):
            attr = attr.fget if isinstance(attr, property) else attr.__func__
        module = getattr(attr, '__module__', None)
        if not inspect.isfunction(attr) and module in impl.PURE_MODE:
            # A function of a compiled module (``get = collection_get``):
            # check its source version.
            attr = getattr(impl.source_version(module), attr.__name__)
        if not inspect.isfunction(attr):
            continue    # data attributes are documented with ``#:`` comments
        yield f'{prefix}.{name}', attr, cls


PUBLIC = list(public_objects())


def documented_params(doc):
    """The names in ``:param name:`` and ``:param type name:`` fields."""
    return set(re.findall(r'^\s*:param (?:[\w.\[\], ]+ )?(\w+):', doc or '', re.M))


def checked_params(func):
    """Parameters a docstring must document.

    That is all but self/cls, *args, **kwargs and private ones (leading
    underscore).
    """
    params = inspect.signature(func).parameters.values()
    return [param.name for param in params
            if param.name not in ('self', 'cls') and not param.name.startswith('_')
            and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)]


def test_the_walk_finds_the_api():
    names = {name for name, _, _ in PUBLIC}
    for expected in ('centidb.store.open', 'centidb.store.Store.collection',
                     'centidb.collection.Collection.put',
                     'centidb.collection.Collection.get',       # compiled when built
                     'centidb.index.Index.get',
                     'centidb.collection.Collection.find',      # inherited
                     'centidb.engines.base.EngineTransaction.state',  # a property
                     'centidb.engines.lmdb.LmdbEngine.__init__',
                     'centidb.engines.get_engine_class',
                     'centidb.keylib.packs', 'centidb.records.record.index_entries',
                     'centidb.batches.decode_batch', 'centidb.errors.CorruptKeyError',
                     'centidb.keyformat.Desc.__init__'):
        assert expected in names
    assert not any(name.endswith('.__repr__') for name in names)


def test_every_public_module_is_checked():
    modules = {info.name for info in pkgutil.walk_packages(centidb.__path__, 'centidb.')
               if not any(part.startswith('_') for part in info.name.split('.'))}
    assert modules <= {module.__name__ for module in MODULES + ALIASES}


@pytest.mark.parametrize('alias', ALIASES, ids=[m.__name__ for m in ALIASES])
def test_an_alias_module_says_what_it_aliases(alias):
    assert alias.__doc__.startswith('Alias of :mod:`centidb.')


# __init__ is documented in its class docstring.
DOCUMENTED = [(name, obj) for name, obj, _ in PUBLIC if not name.endswith('.__init__')]
FUNCTIONS = [entry for entry in PUBLIC if inspect.isfunction(entry[1])]


@pytest.mark.parametrize('name, obj', DOCUMENTED, ids=[name for name, _ in DOCUMENTED])
def test_has_docstring(name, obj):
    doc = obj.__doc__       # not inspect.getdoc(), which inherits a class's
    assert doc and doc.strip(), f'{name} has no docstring'
    lines = doc.strip().splitlines()
    assert len(lines) == 1 or not lines[1].strip(), (
        f'{name}: the docstring must start with a one-line summary')


@pytest.mark.parametrize('name, obj, cls', FUNCTIONS, ids=[name for name, _, _ in FUNCTIONS])
def test_parameters_are_documented(name, obj, cls):
    if name.endswith('.__init__'):
        doc = (cls.__doc__ or '') + (obj.__doc__ or '')
    else:
        doc = obj.__doc__
    missing = [param for param in checked_params(obj)
               if param not in documented_params(doc)]
    assert not missing, f'{name}: no :param: field for {missing}'


def test_documented_params_exist():
    """A ``:param x:`` field names a real parameter (catches stale docs)."""
    stale = []
    for name, obj, cls in FUNCTIONS:
        doc = obj.__doc__
        if name.endswith('.__init__'):
            doc = cls.__doc__
        params = inspect.signature(obj).parameters
        stale += [f'{name}: {param}' for param in documented_params(doc) - set(params)]
    assert not stale


def _constants(module):
    """Public names in ``__all__`` that are plain data (not functions or classes)."""
    for name in getattr(module, '__all__', ()):
        if name.startswith('_'):
            continue
        value = getattr(module, name)
        if not (inspect.isclass(value) or callable(value) or inspect.ismodule(value)):
            yield name


@pytest.mark.parametrize('module', MODULES, ids=[m.__name__ for m in MODULES])
def test_public_constants_have_doc_comments(module):
    """Constants are documented by a ``#:`` comment just above them."""
    source = impl.source_version(module.__name__) if module.__name__ in impl.PURE_MODE else module
    lines = inspect.getsource(source).splitlines()
    names = set(_constants(module))
    if module is keyformat:
        names = set(keyformat.FORMAT_CONSTANTS) | {'FORMAT_CONSTANTS'}
    undocumented = []
    for name in names:
        # NAME = ..., or annotated: NAME: type = ...
        pattern = re.compile(rf'^\s*(?:\w+, )*{name}(?:, \w+)*(?:: [^=]+)? = ')
        index = next((i for i, line in enumerate(lines) if pattern.match(line)), None)
        assert index is not None, f'{module.__name__}.{name} is not assigned'
        comment = index - 1
        while comment >= 0 and lines[comment].lstrip().startswith('#:'):
            comment -= 1
        if comment == index - 1:
            undocumented.append(name)
    assert not undocumented, f'{module.__name__}: no #: comment for {sorted(undocumented)}'


# --- the compiled twins -----------------------------------------------------

def test_active_functions_carry_the_pure_docstrings():
    """Whichever codec is active, what users call shows the pure docs."""
    for (module, name), pure in PURE.items():
        active = getattr(module, name)
        assert active.__doc__ == pure.__doc__, f'{module.__name__}.{name}'


def test_twins_have_docstrings_and_matching_signatures():
    twins = keylib.available_implementations().get('speedups')
    if twins is None:
        pytest.skip('the compiled twin is not built')
    pure = keylib.PYTHON
    for name in ('packs', 'unpacks', 'unpacks_list'):
        twin = getattr(twins, name)
        doc = twin.__doc__ or ''
        # Active, the chooser copied the pure docstring onto the twin;
        # inactive, the twin's own docstring names the function it mirrors.
        if keylib.IMPL == 'speedups':
            assert doc == getattr(pure, name).__doc__
        else:
            assert f'keylib.{name}' in doc
        # binding=True gives the twin a signature autodoc and help() can show.
        assert (list(inspect.signature(twin).parameters)
                == list(inspect.signature(getattr(pure, name)).parameters))


def _compiled_and_source(name):
    """``(qualified name, compiled object, source object)`` for each public
    function, class and public method of the PURE_MODE module `name`."""
    source, active = impl.source_version(name), sys.modules[name]
    for attr, obj in vars(source).items():
        if attr.startswith('_') or not callable(obj) or getattr(obj, '__module__', None) != name:
            continue
        compiled = getattr(active, attr, None)
        if compiled is None:
            # A C function of the .pxd (not public once compiled), never an exported name.
            assert attr not in getattr(source, '__all__', ()), f'{name}.{attr} is not compiled'
            continue
        yield f'{name}.{attr}', compiled, obj
        if inspect.isclass(obj):
            for method, func in vars(obj).items():
                if inspect.isfunction(func) and not method.startswith('_'):
                    yield f'{name}.{attr}.{method}', getattr(compiled, method), func


@pytest.mark.parametrize('name', impl.PURE_MODE)
def test_compiled_modules_carry_their_sources_docstrings_and_signatures(name):
    """help() on a compiled module shows its source's documentation, and the
    same parameters (a class's constructor aside: Cython gives none)."""
    if sys.modules[name].__file__.endswith('.py'):
        pytest.skip('the active module is its source')
    checked = 0
    for qualified, compiled, source in _compiled_and_source(name):
        if source.__doc__ is None:
            assert compiled.__doc__ is None, qualified
        else:
            # As written: no signature line is embedded (setup.py).
            assert inspect.cleandoc(compiled.__doc__) == inspect.cleandoc(source.__doc__), qualified
        if not inspect.isclass(source):
            assert (list(inspect.signature(compiled).parameters)
                    == list(inspect.signature(source).parameters)), qualified
        checked += 1
    assert checked >= 3     # entry.py has three public functions
