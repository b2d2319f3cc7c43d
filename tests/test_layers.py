"""The package's layering: every import points down, none forms a cycle.

Each module of centidb has a layer (``LAYERS``, lowest first). A module may
import only modules of strictly lower layers, counting imports anywhere in
the file (inside functions too); inside the engines package, modules import
only the ones listed before them. A package named in ``PACKAGES`` has one
layer as a whole: its modules may import each other (without a cycle), and
none imports anything above the package. The compiled twin's sources are
checked too. A new module must be given its layer here (or belong to a
package of ``PACKAGES``), or the test fails.
"""

import ast
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'centidb')

#: Lowest first; modules on one line share a layer and may not import each other.
LAYERS = [
    ['errors', 'keyformat', 'checksums', '_nocython', 'fieldpaths'],
    ['_speedups'],
    ['impl'],
    ['keylib', 'compressors', 'msgpackcodec'],
    ['encodings', 'dumpformat', 'expr'],
    ['dumpfile'],
    ['engines.fastcalls'],
    ['engines.base', 'engines.paths', 'engines.lmdbmeta', 'engines.leveldbfiles'],
    ['engines.writelog', 'engines.etcd_client'],
    ['engines.memory', 'engines.leveldb', 'engines.lmdb', 'engines.wrappers', 'engines.etcd'],
    ['engines'],
    ['metarecords'],
    ['txn'],
    ['catalog', 'batches'],
    ['records'],                    # the record layer (a package)
    ['query'],
    ['index'],
    ['where'],
    ['hooks', 'collinfo'],
    ['collection'],
    ['store'],                      # Store: admin (the open collections), verify
    ['models'],                     # Model: fields, index declarations, the model
    ['cli'],                        # the command line
    ['model', 'modelindex', 'fields', 'cli_common', 'cli_commands', 'cli_dump', 'verify'],  # aliases
    ['__main__'],                   # python -m centidb
    [''],   # the package's __init__: re-exports only
]

#: Packages ranked as a whole: their modules share the package's layer.
PACKAGES = ['cli', 'models', 'records', 'store']


def unit(module):
    """The name `module` is ranked under: its package's if that is in :data:`PACKAGES`."""
    for package in PACKAGES:
        if module == package or module.startswith(package + '.'):
            return package
    return module


RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def module_files():
    """``{module name relative to centidb: path}`` for every source file."""
    found = {}
    for directory, subdirectories, names in os.walk(ROOT):
        subdirectories[:] = [name for name in subdirectories if name != '__pycache__']
        package = os.path.relpath(directory, ROOT).replace(os.sep, '.').strip('.')
        for name in names:
            if name == '__init__.py':
                found[package] = os.path.join(directory, name)
            elif name.endswith('.py'):
                path = os.path.join(directory, name)
                # A module Cython compiles as it is: its .pxd's cimports count too.
                pxd = path[:-len('.py')] + '.pxd'
                found['.'.join(filter(None, [package, name[:-3]]))] = (
                    [path, pxd] if os.path.exists(pxd) else path)
            elif name.endswith(('.pyx', '.pxi')):
                # The included files are parts of the one compiled module.
                found.setdefault('_speedups', [])
    found['_speedups'] = [os.path.join(ROOT, name) for name in sorted(os.listdir(ROOT))
                          if name.endswith(('.pyx', '.pxi')) or name == '_speedups.pxd']
    return found


def _resolve(dotted, names, known):
    """Modules named by ``from centidb.<dotted> import names`` (or ``import``)."""
    base = dotted[len('centidb'):].lstrip('.')
    targets = []
    for name in names or [None]:
        candidate = '.'.join(filter(None, [base, name]))
        targets.append(candidate if name and candidate in known else base)
    return targets


def imports_of(paths, known):
    """The centidb modules a module's files import, anywhere in them."""
    found = set()
    for path in paths if isinstance(paths, list) else [paths]:
        with open(path, encoding='utf-8') as fp:
            source = fp.read()
        if path.endswith('.py'):
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.ImportFrom) and node.module and (
                        node.module == 'centidb' or node.module.startswith('centidb.')):
                    found.update(_resolve(node.module, [a.name for a in node.names], known))
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name.startswith('centidb'):
                            found.update(_resolve(alias.name, None, known))
        else:
            for match in re.finditer(r'^\s*(?:from|c?import)\s+(centidb[\w.]*)'
                                     r'(?:\s+c?import\s+([\w, ]+))?', source, re.M):
                names = [n.strip() for n in (match.group(2) or '').split(',') if n.strip()]
                found.update(_resolve(match.group(1), names, known))
    return found


MODULES = module_files()


def test_every_module_has_a_layer():
    units = {unit(module) for module in MODULES}
    assert units <= set(RANK), sorted(units - set(RANK))


def upward_imports(module, paths):
    """The modules that `module` (its source at `paths`) imports and may not."""
    return sorted(target for target in imports_of(paths, MODULES)
                  if unit(target) != unit(module)
                  and RANK.get(unit(target), -1) >= RANK[unit(module)])


@pytest.mark.parametrize('module', sorted(MODULES))
def test_imports_point_down(module):
    upward = upward_imports(module, MODULES[module])
    assert not upward, f'centidb.{module} imports {upward}, which are not below it'


def cycle_in(graph):
    """A list of nodes forming a cycle in `graph` (``{node: successors}``), or None."""
    done, path = set(), []

    def visit(node):
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        path.append(node)
        for successor in sorted(graph.get(node, ())):
            found = visit(successor)
            if found:
                return found
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        found = visit(node)
        if found:
            return found
    return None


@pytest.mark.parametrize('package', PACKAGES)
def test_the_modules_of_a_package_import_each_other_without_a_cycle(package):
    inside = {module for module in MODULES if unit(module) == package}
    graph = {module: {target for target in imports_of(MODULES[module], MODULES)
                      if target in inside and target != module}
             for module in inside}
    assert cycle_in(graph) is None


def test_a_cycle_is_found():
    assert cycle_in({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert cycle_in({'a': {'b'}, 'b': {'c'}, 'c': set()}) is None


def test_a_package_importing_upward_is_caught(tmp_path):
    """A module inside a ranked package may import its package's modules, nothing above."""
    source = tmp_path / 'probe.py'
    source.write_text('from centidb.models.model import Model\n'
                      'def later():\n    from centidb.cli.common import CliError\n')
    assert upward_imports('models.probe', str(source)) == ['cli.common']
    assert upward_imports('cli.probe', str(source)) == []
    assert upward_imports('store', str(source)) == ['cli.common', 'models.model']


def test_the_compiled_twin_imports_only_the_bottom_layer():
    assert imports_of(MODULES['_speedups'], MODULES) <= {'errors', 'keyformat'}


def test_the_package_init_only_reexports():
    with open(MODULES[''], encoding='utf-8') as fp:
        tree = ast.parse(fp.read())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {'Expr', 'ImportFrom', 'Import', 'Assign'}, kinds
