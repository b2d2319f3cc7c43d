"""The documentation builds without warnings, and every example in it runs.

Sphinx runs in subprocesses with this process's environment, so the build
follows the codec switch of the current pass of ``dev/test.sh``
(``docs/conf.py`` only forces pure Python when neither switch is set): the
doctests run on the compiled codec in the first pass and on pure Python in
the second. Builds go to a temporary directory.
"""

import doctest
import html.parser
import importlib
import inspect
import os
import pickle
import re
import subprocess
import sys
import textwrap

import pytest
from docutils import nodes

import centidb
from centidb import keylib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, 'docs')

# Pages whose examples carry the narrative: each must hold tested examples.
EXAMPLE_PAGES = ['index', 'tutorial', 'models', 'concepts', 'encoders', 'engines']
# Modules the API reference documents, with every public name.
API_MODULES = ['cli', 'cli.commands', 'cli.dump', 'cli.common', 'models', 'models.model',
               'models.index', 'models.fields',
               'store', 'store.admin', 'store.verify', 'hooks', 'collection', 'collinfo', 'index', 'where', 'expr', 'fieldpaths', 'query', 'records.access', 'records.entries', 'records.writing',
               'records.savepoint', 'records.limits', 'records.record', 'catalog', 'txn',
               'impl', 'keylib', 'keyformat', 'encodings', 'dumpformat', 'dumpfile', 'engines', 'engines.etcd',
               'engines.etcd_client', 'engines.paths', 'batches', 'errors']
# Languages a code block may declare without being run: shell and plain text.
UNTESTED_LANGUAGES = {'console', 'shell-session', 'sh', 'bash', 'shell', 'text', 'none'}


def sphinx(builder, source, out, doctrees):
    """Run one Sphinx build; return the finished process."""
    command = [sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-q',
               '-b', builder, '-d', str(doctrees), str(source), str(out)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=dict(os.environ))


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    """The html and doctest builds of docs/, sharing one doctree directory."""
    base = tmp_path_factory.mktemp('docs')
    doctrees = base / 'doctrees'
    html_build = sphinx('html', DOCS, base / 'html', doctrees)
    doctest_build = sphinx('doctest', DOCS, base / 'doctest', doctrees)
    return {'html': html_build, 'doctest': doctest_build, 'base': base,
            'doctrees': doctrees}


def test_html_build_has_no_warnings(built):
    result = built['html']
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'WARNING' not in result.stderr, result.stderr


def test_every_example_passes(built):
    result = built['doctest']
    report = (built['base'] / 'doctest' / 'output.txt').read_text()
    assert result.returncode == 0, report + result.stderr
    summary = report.split('Doctest summary', 1)[1]
    assert re.search(r'^\s+0 failures in tests$', summary, re.M), summary
    assert re.search(r'^\s+0 failures in setup code$', summary, re.M), summary
    assert re.search(r'^\s+0 failures in cleanup code$', summary, re.M), summary
    assert int(re.search(r'^\s+(\d+) tests$', summary, re.M).group(1)) >= 100
    for page in EXAMPLE_PAGES:
        assert f'Document: {page}\n' in report, f'{page}.rst ran no example'


def load_doctree(doctrees, docname):
    with open(os.path.join(doctrees, docname + '.doctree'), 'rb') as fp:
        return pickle.load(fp)


# Doctree nodes that hold code: test directives that show their code become
# literal blocks, hidden ones (testsetup, testcleanup) comments.
CODE_NODES = (nodes.literal_block, nodes.comment, nodes.doctest_block)


def untested_code(doctrees, source_dir):
    """List the code on the pages in `source_dir` that the doctest build skips.

    Checked: every literal block written on a page (not in a docstring that
    autodoc pulls in) is a ``testcode``/``testoutput``/``doctest`` block, a
    block in a shell or text language, or a plain ``::`` block of ``$ ``
    shell lines; no test is skipped; and every ``testcode`` block is
    followed by a ``testoutput`` block, so what it prints is checked.
    Bare ``>>>`` paragraphs are run by the doctest build, so they pass.
    """
    problems = []
    for name in sorted(os.listdir(source_dir)):
        if not name.endswith('.rst'):
            continue
        docname = name[:-4]
        page = os.path.join(source_dir, name)
        doctree = load_doctree(doctrees, docname)
        tests = []
        for node in doctree.findall(lambda n: isinstance(n, CODE_NODES)):
            if node.source != page:
                continue
            where = f'{name}:{node.line}'
            if isinstance(node, nodes.doctest_block):
                if '+SKIP' in node.astext():
                    problems.append(f'{where}: a skipped example')
                continue
            kind = node.get('testnodetype')
            if kind is not None:
                if (node.get('skipif') or node.get('options', {}).get(doctest.SKIP)
                        or '+SKIP' in node.get('test', node.astext())):
                    problems.append(f'{where}: a skipped example')
                if kind in ('testcode', 'testoutput'):
                    tests.append((kind, where))
                continue
            if isinstance(node, nodes.comment):
                continue
            language = node.get('language')
            if language in UNTESTED_LANGUAGES:
                continue
            lines = [line for line in node.astext().splitlines() if line.strip()]
            if language is None and lines and all(line.startswith('$ ') for line in lines):
                continue
            problems.append(f'{where}: code that no test runs ({language or "::"} block)')
        for (kind, where), following in zip(tests, tests[1:] + [(None, None)]):
            if kind == 'testcode' and following[0] != 'testoutput':
                problems.append(f'{where}: a testcode block without testoutput')
    return problems


def test_no_page_has_untested_code(built):
    assert built['html'].returncode == 0
    assert untested_code(built['doctrees'], DOCS) == []


def test_untested_code_is_caught(tmp_path):
    """The check above finds each way a page can hold code no test runs."""
    source = tmp_path / 'src'
    source.mkdir()
    (source / 'conf.py').write_text("extensions = ['sphinx.ext.doctest']\n")
    (source / 'index.rst').write_text(textwrap.dedent("""\
        Page
        ====

        .. toctree::

           other

        Fine::

           $ pip install centidb

        .. code-block:: console

           $ python -m pytest

        >>> 1 + 1
        2

        .. testcode::

           print(3)

        .. testoutput::

           3

        Literal Python::

           import centidb

        .. code-block:: python

           print('never run')

        .. doctest::
           :skipif: True

           >>> 1
           1

        .. doctest::

           >>> print('later')  # doctest: +SKIP
           later

        .. testoutput::
           :options: +SKIP

           whatever

        .. testcode::

           x = 1

        >>> print('bare')  # doctest: +SKIP
        bare
        """))
    (source / 'other.rst').write_text(textwrap.dedent("""\
        Other
        =====

        .. sourcecode:: pycon

           >>> 2
           2
        """))
    result = sphinx('html', source, tmp_path / 'out', tmp_path / 'doctrees')
    assert result.returncode == 0, result.stderr
    problems = untested_code(tmp_path / 'doctrees', source)
    assert [re.sub(r':\d+:', ':', p) for p in problems] == [
        'index.rst: code that no test runs (:: block)',
        'index.rst: code that no test runs (python block)',
        'index.rst: a skipped example',
        'index.rst: a skipped example',
        'index.rst: a skipped example',
        'index.rst: a skipped example',
        'index.rst: a testcode block without testoutput',
        'other.rst: code that no test runs (pycon block)',
    ]


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == 'id':
                self.ids.add(value)


def public_names(module):
    """``__all__``, or else the public names `module` itself defines."""
    if hasattr(module, '__all__'):
        return list(module.__all__)
    return [name for name, value in vars(module).items()
            if not name.startswith('_') and not inspect.ismodule(value)
            and getattr(value, '__module__', module.__name__) == module.__name__]


def test_api_reference_lists_every_public_name(built):
    """Each public name has an entry, under its own module or another one.

    A re-export (``centidb.Store``, ``keyformat.Desc`` shown as
    ``keylib.Desc``) counts when the same object is documented elsewhere.
    """
    assert built['html'].returncode == 0
    parser = _Ids()
    parser.feed((built['base'] / 'html' / 'api.html').read_text())
    modules = [centidb] + [importlib.import_module(f'centidb.{name}') for name in API_MODULES]
    missing = []
    for module in modules:
        for name in public_names(module):
            if name == '__version__':
                continue
            value = getattr(module, name)
            homes = [f'{other.__name__}.{name}' for other in modules
                     if getattr(other, name, None) is value]
            if not any(home in parser.ids for home in homes):
                missing.append(f'{module.__name__}.{name}')
    assert missing == []


def test_docs_build_uses_this_passes_codec():
    """docs/conf.py keeps a codec switch that is set, else forces pure Python."""
    probe = ("exec(open('conf.py').read())\n"
             "import centidb.keylib\n"
             "print(centidb.keylib.IMPL)\n")
    result = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True,
                            timeout=60, cwd=DOCS, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    switched = any(os.environ.get(name, '').strip() not in ('', '0')
                   for name in ('CENTIDB_NO_SPEEDUPS', 'CENTIDB_REQUIRE_SPEEDUPS'))
    assert result.stdout.strip() == (keylib.IMPL if switched else 'python')
