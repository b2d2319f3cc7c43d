"""Count the ``_private`` names each module uses but does not define.

Usage: ``python dev/private_names.py [PATH ...] [--list]`` (default PATH:
``centidb``; a directory is searched for ``.py`` files). For each file it
finds the names with one leading underscore (not dunders) that the file
uses and does not define:

* imported: ``from centidb.x import _name``;
* read or written as an attribute, ``anything._name``, where the file
  defines no ``_name`` of its own.

A file defines a name with a top-level ``def``, ``class`` or assignment, a
``def`` or assignment in a class body, or an assignment to ``x._name``. The
bodies of ``Protocol`` classes and ``if TYPE_CHECKING:`` blocks do not
count as definitions: they describe another module's attributes. The
public methods of named tuples (``_replace``, ``_asdict``, ``_fields``,
``_make``) are not counted.

It prints one line per file that uses any (uses, distinct names, and the
names with ``--list``), then the totals: uses, and distinct
``(file, name)`` pairs. The AST is read, nothing is imported.
"""

from __future__ import annotations

import ast
import os
import sys
from collections import Counter

#: Named tuples' public API, which happens to start with an underscore.
NAMEDTUPLE_API = frozenset({'_replace', '_asdict', '_fields', '_make', '_field_defaults'})


def is_private(name: str) -> bool:
    """True for ``_name``, false for ``__dunder__`` names and ``_`` itself.

    :param name: an identifier.
    """
    return (name.startswith('_') and not name.startswith('__') and len(name) > 1
            and name not in NAMEDTUPLE_API)


def _is_protocol(node: ast.ClassDef) -> bool:
    return any((isinstance(base, ast.Name) and base.id == 'Protocol')
               or (isinstance(base, ast.Attribute) and base.attr == 'Protocol')
               or (isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name)
                   and base.value.id == 'Protocol')
               for base in node.bases)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return ((isinstance(test, ast.Name) and test.id == 'TYPE_CHECKING')
            or (isinstance(test, ast.Attribute) and test.attr == 'TYPE_CHECKING'))


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def defined_names(tree: ast.Module) -> set[str]:
    """The private names `tree` defines (see the module docstring).

    :param tree: a parsed module.
    """
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ClassDef) and _is_protocol(node):
            found.add(node.name)
            return
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        for target in _targets(node):
            for part in ast.walk(target):
                if isinstance(part, ast.Name):
                    found.add(part.id)
                elif isinstance(part, ast.Attribute):
                    found.add(part.attr)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {name for name in found if is_private(name)}


def foreign_uses(path: str) -> Counter[str]:
    """How often the file at `path` uses each private name it does not define.

    :param path: a ``.py`` file.
    """
    with open(path, encoding='utf-8') as fp:
        tree = ast.parse(fp.read(), path)
    own = defined_names(tree)
    uses: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or '').startswith('centidb'):
            uses.update(alias.name for alias in node.names if is_private(alias.name))
        elif isinstance(node, ast.Attribute) and is_private(node.attr) and node.attr not in own:
            uses[node.attr] += 1
    return uses


def python_files(paths: list[str]) -> list[str]:
    """The ``.py`` files named, or found under the directories named.

    :param paths: files and directories.
    """
    files = []
    for path in paths:
        if os.path.isdir(path):
            for directory, subdirectories, names in os.walk(path):
                subdirectories[:] = sorted(d for d in subdirectories if d != '__pycache__')
                files += [os.path.join(directory, name) for name in sorted(names)
                          if name.endswith('.py')]
        else:
            files.append(path)
    return files


def main(argv: list[str]) -> int:
    """Print the report for the paths in `argv`; return 0.

    :param argv: paths, and ``--list`` to print the names too.
    """
    show = '--list' in argv
    paths = [arg for arg in argv if arg != '--list'] or ['centidb']
    total_uses = total_pairs = 0
    for path in python_files(paths):
        uses = foreign_uses(path)
        if uses:
            total_uses += sum(uses.values())
            total_pairs += len(uses)
            names = ' ' + ', '.join(sorted(uses)) if show else ''
            print(f'{path}: {sum(uses.values())} uses of {len(uses)} names{names}')
    print(f'total: {total_uses} uses of {total_pairs} (file, name) pairs')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
