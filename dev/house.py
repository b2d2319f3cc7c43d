"""Figures of the package's structure, for comparing two commits.

Usage: python dev/house.py [PACKAGE_DIR]   (default: centidb/ beside dev/)

Prints, from the source text alone (nothing is imported):

* lines per kind of file: ``.py``, ``.pyx``/``.pxi``, ``.pxd``, ``.pyi``;
* floors: each module (a subpackage counts as one) stands one floor above
  the highest module of the package it imports, anywhere in the file; the
  figure is the highest floor, and import cycles are listed;
* classes with mixins: classes with two or more bases, leaving out
  exceptions (an error class also deriving from a built-in error is the
  documented errors hierarchy, not a mixin) and ``Protocol``/``Generic``;
* private names used across modules, counted as ``dev/private_names.py``
  counts them (uses of ``_names`` a file does not define);
* the ``.pxi``/``.pyx`` lines that say ``Mirrors``.
"""

import ast
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from private_names import foreign_uses  # noqa: E402

PACKAGE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'centidb')
NAME = os.path.basename(os.path.normpath(PACKAGE))


def sources():
    """Every file of the package: ``{relative path: text}``."""
    found = {}
    for root, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if not d.startswith(('__pycache__', 'build'))]
        for name in files:
            if name.endswith(('.py', '.pyx', '.pxi', '.pxd', '.pyi')):
                path = os.path.join(root, name)
                with open(path, encoding='utf-8') as f:
                    found[os.path.relpath(path, PACKAGE)] = f.read()
    return found


def unit(rel):
    """The node a file belongs to: a top-level module, or a subpackage."""
    parts = rel.split(os.sep)
    if len(parts) > 1:
        return parts[0] + '/'
    return parts[0].rsplit('.', 1)[0]


def imports(tree):
    """The package's modules a tree imports, as dotted names below the package."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f'{node.module}.{a.name}' for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith(NAME + '.'):
                out.add(name[len(NAME) + 1:])
    return out


def main():
    """Print the figures."""
    files = sources()
    lines = {'.py': 0, '.pyx/.pxi': 0, '.pxd': 0, '.pyi': 0}
    for rel, text in files.items():
        ext = os.path.splitext(rel)[1]
        lines['.pyx/.pxi' if ext in ('.pyx', '.pxi') else ext] += text.count('\n')
    units = {unit(rel) for rel in files if rel.endswith('.py')}
    edges = {u: set() for u in units}
    mixins, trees = [], {}
    private = sum(sum(foreign_uses(os.path.join(PACKAGE, rel)).values())
                  for rel in files if rel.endswith('.py'))
    for rel, text in files.items():
        if not rel.endswith('.py'):
            continue
        tree = trees[rel] = ast.parse(text)
        here = unit(rel)
        for name in imports(tree):
            first = name.split('.')[0]
            target = first + '/' if first + '/' in units else first
            if target in units and target != here:
                edges[here].add(target)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                plain = [b for b in bases if not re.search(r'Protocol|Generic|NamedTuple', b)]
                is_error = any(re.search(r'Error|Exception|Warning', b) for b in bases)
                if len(plain) >= 2 and not is_error:
                    mixins.append(f'{rel}:{node.name}({", ".join(bases)})')
    floors, cycles = {}, []

    def floor(u, path=()):
        if u in path:
            cycles.append(' -> '.join(path[path.index(u):] + (u,)))
            return 0
        if u not in floors:
            floors[u] = 1 + max((floor(v, path + (u,)) for v in edges[u]), default=0)
        return floors[u]

    for u in sorted(units):
        floor(u)
    mirrors = sum(text.count('Mirrors') for rel, text in files.items()
                  if rel.endswith(('.pxi', '.pyx')) and 'keylib' not in rel)
    print(f'package: {PACKAGE}')
    for kind, n in lines.items():
        print(f'lines {kind}: {n}')
    print(f'modules and subpackages: {len(units)}')
    print(f'floors: {max(floors.values())}')
    print(f'import cycles: {len(set(cycles))}')
    print(f'classes with mixins: {len(mixins)}')
    for m in mixins:
        print(f'  {m}')
    print(f'private names used across modules: {private}')
    print(f'"Mirrors" in compiled sources other than the key codec: {mirrors}')
    for level in sorted(set(floors.values()), reverse=True):
        print(f'  floor {level:2}: {" ".join(sorted(u for u in floors if floors[u] == level))}')


if __name__ == '__main__':
    main()
