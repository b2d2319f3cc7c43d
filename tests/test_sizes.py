"""Size limits that keep the package readable: one concept per module.

Every module of the package stays under 800 lines and every class under 400;
a module that grows past them holds more than one concept (see
``docs/architecture.rst``).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / 'centidb'
MODULES = sorted(PACKAGE.rglob('*.py'))
MAX_MODULE_LINES = 800
MAX_CLASS_LINES = 400


def test_the_package_is_found():
    assert len(MODULES) > 20


@pytest.mark.parametrize('path', MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_and_class_sizes(path):
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f'{path.name} is over {MAX_MODULE_LINES} lines'
    big = [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(text))
           if isinstance(node, ast.ClassDef)
           and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES]
    assert big == [], f'classes over {MAX_CLASS_LINES} lines in {path.name}: {big}'
