"""The package's layering: every import points down, none forms a cycle.

Each module of centidb has a layer (``LAYERS``, lowest first). A module may
import only modules of strictly lower layers, counting imports anywhere in
the file (inside functions too); inside the engines package, modules import
only the ones listed before them. The compiled twin's sources are checked
too. A new module must be given its layer here, or the test fails.
"""

import ast
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'centidb')

#: Lowest first; modules on one line share a layer and may not import each other.
LAYERS = [
    ['errors', 'keyformat', 'checksums'],
    ['_speedups'],
    ['impl'],
    ['keylib'],
    ['encodings', 'dumpformat'],
    ['dumpfile'],
    ['engines.fastcalls'],
    ['engines.base', 'engines.paths', 'engines.lmdbmeta', 'engines.leveldbfiles'],
    ['engines.writelog', 'engines.etcd_client'],
    ['engines.memory', 'engines.leveldb', 'engines.lmdb', 'engines.wrappers', 'engines.etcd'],
    ['engines'],
    ['metarecords'],
    ['txn'],
    ['catalog', 'batches'],
    ['fastpath'],
    ['records'],
    ['limits'],
    ['savepoint'],
    ['writing'],
    ['access'],
    ['query'],
    ['index'],
    ['bulk', 'hooks', 'mapping'],
    ['collection'],
    ['verify', 'admin'],
    ['store'],
    ['fields'],
    ['modelindex'],
    ['model'],
    ['cli_common'],                 # the command line: shared parts,
    ['cli_commands'],               # the subcommands,
    ['cli_dump'],                   # dump and load,
    ['cli'],                        # the parser and main()
    ['__main__'],                   # python -m centidb
    [''],   # the package's __init__: re-exports only
]
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
                found['.'.join(filter(None, [package, name[:-3]]))] = os.path.join(directory, name)
            elif name.endswith(('.pyx', '.pxi')):
                # The included files are parts of the one compiled module.
                found.setdefault('_speedups', [])
    found['_speedups'] = [os.path.join(ROOT, name) for name in sorted(os.listdir(ROOT))
                          if name.endswith(('.pyx', '.pxi'))]
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
    assert set(MODULES) <= set(RANK), sorted(set(MODULES) - set(RANK))


@pytest.mark.parametrize('module', sorted(MODULES))
def test_imports_point_down(module):
    upward = sorted(target for target in imports_of(MODULES[module], MODULES)
                    if target != module and RANK.get(target, -1) >= RANK[module])
    assert not upward, f'centidb.{module} imports {upward}, which are not below it'


def test_the_compiled_twin_imports_only_the_bottom_layer():
    assert imports_of(MODULES['_speedups'], MODULES) <= {'errors', 'keyformat'}


def test_the_package_init_only_reexports():
    with open(MODULES[''], encoding='utf-8') as fp:
        tree = ast.parse(fp.read())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {'Expr', 'ImportFrom', 'Import', 'Assign'}, kinds
