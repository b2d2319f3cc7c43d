"""Checks that keep the README quick start, CI and packaging honest."""

import os
import re

from centidb import keylib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path):
    with open(os.path.join(ROOT, path), encoding='utf-8') as fp:
        return fp.read()


def quick_start_commands():
    section = read('README.md').split('## Quick start', 1)[1].split('\n## ', 1)[0]
    return [block.strip() for block in re.findall(r'```sh\n(.*?)```', section, re.S)]


def test_quick_start_has_exactly_two_commands():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert all('\n' not in command for command in commands)


def test_ci_runs_the_readme_test_command():
    test_command = quick_start_commands()[1]
    ci_lines = [line.strip() for line in read('.ci/run').splitlines()]
    assert test_command in ci_lines


def test_active_implementation_matches_environment():
    flag = os.environ.get('CENTIDB_NO_SPEEDUPS', '').strip() not in ('', '0')
    if flag:
        assert keylib.IMPL == 'python'
    if os.environ.get('CENTIDB_REQUIRE_SPEEDUPS', '').strip() not in ('', '0'):
        assert keylib.IMPL == 'speedups'
    assert keylib.IMPL in ('python', 'speedups')


def test_readme_example_runs(tmp_path, capsys):
    example = re.findall(r'```python\n(.*?)```', read('README.md'), re.S)[0]
    example = example.replace('/tmp/example.lmdb', str(tmp_path / 'example.lmdb'))
    exec(compile(example, 'README.md', 'exec'), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[1:] == ["[('smith', 'ann')]", '1 False', 'True Bath', 'dee',
                           "[(('ops',), ('smith', 'ann'))]", "[('smith', 'ann')]"]


def test_every_subpackage_is_packaged():
    """pyproject.toml lists each package directory of centidb, or an install lacks it."""
    listed = re.search(r'^packages = \[(.*)\]$', read('pyproject.toml'), re.M).group(1)
    packages = {name.strip().strip('"') for name in listed.split(',')}
    found = {os.path.relpath(directory, ROOT).replace(os.sep, '.')
             for directory, _, names in os.walk(os.path.join(ROOT, 'centidb'))
             if '__init__.py' in names}
    assert found == packages and {'centidb.cli', 'centidb.models', 'centidb.store'} <= found


#: Modules tested in ``tests/test_aliases.py``: the old module paths, and ``python -m``.
ALIASES = {'__main__', 'cli_commands', 'cli_common', 'cli_dump', 'fields', 'model', 'modelindex',
           'verify'}

#: Modules without a test file of their own name yet, and the files that test them.
TESTED_ELSEWHERE = {
}


def own_test_file(module='cli.dump'):
    """``tests/test_cli_dump.py`` for ``centidb/cli/dump.py``, ``test_cli.py`` for the
    package's ``__init__.py``, ``test_store.py`` for ``centidb/store.py``."""
    return f'test_{module.replace(".", "_")}.py'


def package_modules():
    """Every module of centidb as a dotted name below it (a package as its own name)."""
    found = []
    for directory, subdirectories, names in os.walk(os.path.join(ROOT, 'centidb')):
        subdirectories[:] = [name for name in subdirectories if name != '__pycache__']
        package = os.path.relpath(directory, os.path.join(ROOT, 'centidb')).replace(os.sep, '.')
        for name in names:
            if name.endswith('.py') and not (package == '.' and name == '__init__.py'):
                stem = None if name == '__init__.py' else name[:-3]
                found.append('.'.join(part for part in (package, stem) if part not in (None, '.')))
    return sorted(found)


def test_every_module_has_its_test_file():
    """Each module's tests are in a file named after it (see :func:`own_test_file`)."""
    modules = package_modules()
    assert {'store', 'cli', 'cli.dump', 'engines', 'engines.lmdb', 'models.fields'} <= set(modules)
    missing = [own_test_file(module) for module in modules
               if module not in ALIASES and module not in TESTED_ELSEWHERE
               and not os.path.exists(os.path.join(ROOT, 'tests', own_test_file(module)))]
    assert missing == []
    assert ALIASES | set(TESTED_ELSEWHERE) <= set(modules)
    named = [module for module in TESTED_ELSEWHERE
             if os.path.exists(os.path.join(ROOT, 'tests', own_test_file(module)))]
    assert named == [], 'these have their own test file now: drop them from TESTED_ELSEWHERE'
    assert all(os.path.exists(os.path.join(ROOT, 'tests', name))
               for name in [*TESTED_ELSEWHERE.values(), 'test_aliases.py'])


def _package_sources():
    for root, dirs, files in os.walk(os.path.join(ROOT, 'centidb')):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        for name in files:
            if name.endswith(('.py', '.pyx', '.pxi', '.pxd')):
                path = os.path.join(root, name)
                with open(path, encoding='utf-8') as fp:
                    yield os.path.relpath(path, ROOT), fp.read()


def test_every_glossary_entry_fits_on_one_line():
    section = read('docs/architecture.rst').split('\nGlossary\n', 1)[1]
    rule, _, rest = section.partition('\n=====')
    rows = rest.split('\n=====', 2)[1].split('\n', 1)[1].split('\n=====', 1)[0]
    words = [line[:23].strip() for line in rows.splitlines()]
    assert len(words) > 40 and all(words)       # no row continues onto a second line
    assert len(set(words)) == len(words)


def test_the_code_keeps_the_glossary_flag_and_verb_rules():
    """'stored' and 'count' never name a flag; 'packed with' is a packer's word misused."""
    import ast
    found = []
    for path, text in _package_sources():
        if 'packed with' in text or 'record packed' in text:
            found.append(f'{path}: "packed" for a packer\'s output')
        if not path.endswith('.py'):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.arg) and isinstance(node.annotation, ast.Name) \
                    and node.annotation.id == 'bool' \
                    and (node.arg in ('count', 'counted') or node.arg.startswith('stored')):
                found.append(f'{path}:{node.lineno}: flag {node.arg!r}')
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Compare):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id in ('stored', 'count'):
                        found.append(f'{path}:{node.lineno}: flag {target.id!r}')
    assert found == []
