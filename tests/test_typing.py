"""Static types: ``mypy --strict`` passes on the package, and on a user's program.

The package ships ``py.typed`` (PEP 561) and a stub of its compiled twin,
``centidb/_speedups.pyi``. mypy's settings are in ``pyproject.toml``
(``[tool.mypy]``); its cache is ``.mypy_cache/`` at the top of the tree.

* The package, with ``tests/typing_twins.py`` (which checks that the stub's
  signatures agree with the pure functions'), passes ``mypy --strict``.
* The stub matches the built extension (mypy's ``stubtest``).
* ``tests/typing_user.py``, a program using the everyday API, passes
  ``mypy --strict`` as a user would run it: centidb is followed but its own
  errors are not reported (``follow_imports = silent``, as for an installed
  package), so what fails is an untyped call or a wrong type in the program.
* So does the tutorial's code (``docs/tutorial.rst``), as one module.
* So does ``tests/typing_models.py``, a program with models: mypy knows
  each model's fields (``dataclass_transform``), and a field given a value
  of the wrong type is reported.
"""

import ast
import doctest
import os
import re
import subprocess
import sys
import textwrap

import pytest

import typing_models
import typing_user
from centidb import impl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, '.mypy_cache')

#: A user's mypy configuration: strict, and silent about errors inside
#: centidb, as mypy is about an installed package.
USER_CONFIG = """\
[mypy]
strict = True
follow_imports = silent
"""


#: The test extra installs mypy 2, which runs on Python 3.10 and later.
needs_mypy = pytest.mark.skipif(sys.version_info < (3, 10),
                                reason='mypy 2 runs on Python 3.10 and later')


def run(*args, timeout=300):
    """Run ``python -m <args>`` in the top directory; return the finished process."""
    return subprocess.run([sys.executable, '-m', *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def report(result):
    return f'exit code {result.returncode}\n{result.stdout}{result.stderr}'


@needs_mypy
def test_package_passes_mypy_strict():
    result = run('mypy', '--strict', '--cache-dir', CACHE, 'centidb',
                 os.path.join('tests', 'typing_twins.py'))
    assert result.returncode == 0, report(result)


@needs_mypy
@pytest.mark.skipif(impl.compiled_module() is None, reason='centidb._speedups is not built')
def test_stub_matches_the_compiled_twin():
    result = run('mypy.stubtest', '--mypy-config-file', 'pyproject.toml', 'centidb._speedups')
    assert result.returncode == 0, report(result)


def test_annotated_modules_defer_annotations():
    """Annotations are strings: free at call time, and ``X | None`` works on 3.9."""
    missing = []
    for directory, subdirectories, names in os.walk(os.path.join(ROOT, 'centidb')):
        subdirectories[:] = [name for name in subdirectories if name != '__pycache__']
        for name in names:
            if not name.endswith('.py'):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding='utf-8') as fp:
                tree = ast.parse(fp.read())
            annotated = any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and (node.returns is not None
                                 or any(a.annotation is not None for a in node.args.args))
                            for node in ast.walk(tree))
            deferred = any(isinstance(node, ast.ImportFrom) and node.module == '__future__'
                           and any(a.name == 'annotations' for a in node.names)
                           for node in tree.body)
            if annotated and not deferred:
                missing.append(os.path.relpath(path, ROOT))
    assert missing == [], 'add "from __future__ import annotations" to these'


def test_user_program_runs():
    assert typing_user.main()[-1] == 'count: 2'


def user_mypy(tmp_path, path):
    """Run mypy on `path` with :data:`USER_CONFIG`; return the finished process."""
    config = tmp_path / 'mypy.ini'
    config.write_text(USER_CONFIG + f'mypy_path = {ROOT}\n')
    return run('mypy', '--config-file', str(config), '--cache-dir', os.path.join(CACHE, 'user'),
               str(path))


@needs_mypy
def test_user_program_passes_mypy_strict(tmp_path):
    result = user_mypy(tmp_path, os.path.join('tests', 'typing_user.py'))
    assert result.returncode == 0, report(result)


def test_model_program_runs():
    assert typing_models.main()[-1] == 'deleted: True, count: 1'


@needs_mypy
def test_model_program_passes_mypy_strict(tmp_path):
    result = user_mypy(tmp_path, os.path.join('tests', 'typing_models.py'))
    assert result.returncode == 0, report(result)


@needs_mypy
def test_mypy_reports_a_wrong_field_type(tmp_path):
    program = tmp_path / 'wrong_fields.py'
    program.write_text(textwrap.dedent('''\
        import centidb

        class Book(centidb.Model, collection='books', key='isbn'):
            isbn: str
            year: int = 0

        Book(isbn='1', year=1999)
        Book(isbn=1)
        Book(isbn='2', year='1999')
        Book('3')
        Book(year=2000)
        found = Book.get('1')
        title: str = found.isbn if found is not None else ''
        year: str = found.year if found is not None else ''
        '''))
    result = user_mypy(tmp_path, program)
    # (line, message), without the error code, which mypy versions name differently.
    errors = [(int(line.split(':')[1]), re.sub(r'  \[[\w-]+\]$', '', line.split(': error: ')[1]))
              for line in result.stdout.splitlines() if ': error: ' in line]
    assert errors == [
        (8, 'Argument "isbn" to "Book" has incompatible type "int"; expected "str"'),
        (9, 'Argument "year" to "Book" has incompatible type "str"; expected "int"'),
        (10, 'Too many positional arguments for "Book"'),
        (11, 'Missing named argument "isbn" for "Book"'),
        (14, 'Incompatible types in assignment (expression has type "int | str", variable '
             'has type "str")'),
    ], report(result)


#: A directive whose content is Python the doctest build runs.
_CODE_DIRECTIVE = re.compile(r'^( *)\.\. (testsetup|testcode|doctest)::')


def page_code(text):
    """The Python code of an rst page's testsetup, testcode and doctest blocks, in order.

    A doctest block gives the source of its examples (``>>>`` and ``...``
    lines); an expression whose value the page shows is left as a statement.
    """
    lines = text.splitlines()
    parser = doctest.DocTestParser()
    blocks = []
    i = 0
    while i < len(lines):
        match = _CODE_DIRECTIVE.match(lines[i])
        i += 1
        if match is None:
            continue
        indent = len(match.group(1))
        body = []
        while i < len(lines) and (not lines[i].strip()
                                  or len(lines[i]) - len(lines[i].lstrip(' ')) > indent):
            body.append(lines[i])
            i += 1
        content = textwrap.dedent('\n'.join(body)).strip('\n').splitlines()
        while content and content[0].startswith(':'):     # the directive's options
            content.pop(0)
        code = '\n'.join(content).strip('\n') + '\n'
        if match.group(2) == 'doctest':
            code = ''.join(example.source for example in parser.get_examples(code))
        blocks.append(f'# --- {match.group(2)} block, line {i - len(body)} of the page\n{code}')
    return '\n'.join(blocks)


def test_page_code_takes_directives_and_doctest_sources():
    text = textwrap.dedent("""\
        Intro::

           not_python = 1

        .. testcode::
           :hide:

           x = 1

        .. testoutput::

           1

        .. doctest::

           >>> for y in (1, 2):
           ...     print(y)
           1
           2
           >>> x + 1
           2
        """)
    code = page_code(text)
    assert 'not_python' not in code and ':hide:' not in code and 'print(y)' in code
    assert [line for line in code.splitlines() if not line.startswith('#')] == [
        'x = 1', '', 'for y in (1, 2):', '    print(y)', 'x + 1']


@needs_mypy
def test_tutorial_code_passes_mypy_strict(tmp_path):
    with open(os.path.join(ROOT, 'docs', 'tutorial.rst'), encoding='utf-8') as fp:
        code = page_code(fp.read())
    assert 'store.collection(' in code
    module = tmp_path / 'tutorial_code.py'
    module.write_text(code)
    result = user_mypy(tmp_path, module)
    assert result.returncode == 0, report(result) + '\n' + code
