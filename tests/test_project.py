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
                           "[(('ops',), ('smith', 'ann'))]"]


def test_every_subpackage_is_packaged():
    """pyproject.toml lists each package directory of centidb, or an install lacks it."""
    listed = re.search(r'^packages = \[(.*)\]$', read('pyproject.toml'), re.M).group(1)
    packages = {name.strip().strip('"') for name in listed.split(',')}
    found = {os.path.relpath(directory, ROOT).replace(os.sep, '.')
             for directory, _, names in os.walk(os.path.join(ROOT, 'centidb'))
             if '__init__.py' in names}
    assert found == packages and {'centidb.cli', 'centidb.models'} <= found


#: Packages whose every module has a test file named after it.
MIRRORED_PACKAGES = ('cli', 'models')


def test_the_modules_of_the_mirrored_packages_have_their_test_files():
    """``centidb/cli/dump.py`` is tested in ``tests/test_cli_dump.py``; the package's
    ``__init__.py`` in ``tests/test_cli.py``."""
    missing = []
    for package in MIRRORED_PACKAGES:
        for name in sorted(os.listdir(os.path.join(ROOT, 'centidb', package))):
            if name.endswith('.py'):
                stem = package if name == '__init__.py' else f'{package}_{name[:-3]}'
                if not os.path.exists(os.path.join(ROOT, 'tests', f'test_{stem}.py')):
                    missing.append(f'tests/test_{stem}.py')
    assert missing == []
