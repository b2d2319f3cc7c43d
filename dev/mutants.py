"""Mutation testing of one centidb module against the tests that cover it.

Usage (from the repository root)::

    .venv/bin/python dev/mutants.py keylib                  # every mutant
    .venv/bin/python dev/mutants.py batches --sample 60     # 60 of them, seed 0
    .venv/bin/python dev/mutants.py keylib --list           # list, run nothing
    .venv/bin/python dev/mutants.py keylib --lines 250-300  # only those lines
    .venv/bin/python dev/mutants.py batches --only encode_batch,decode_batch
    .venv/bin/python dev/mutants.py writing --only KeySource  # Class.method

Each mutant changes one thing in a copy of the module: an arithmetic, bitwise
or augmented-assignment operator, a comparison, ``and``/``or``, a ``not``
or unary minus dropped, an ``if``/``while`` condition negated, a number
+/-1, ``True``/``False`` swapped, a string or bytes literal changed, or a
returned value replaced by ``None``. Docstrings, ``__all__``, f-strings, type
annotations, the test of an ``if TYPE_CHECKING:`` (it chooses what the type
checker reads: the pure-mode modules import ``cython`` or its stand-in
``centidb._nocython`` there, whose ``compiled`` is False either way) and the
arguments of ``raise`` (error messages and the offsets
they quote) are left alone unless ``--messages`` is given: they are
diagnostics, and the tests pin exception types, not every word of every
message. (The modules use ``from __future__ import annotations``: their
annotations never run.)

The tests run in pure-Python mode (``CENTIDB_NO_SPEEDUPS=1``), one pytest
process per mutant with ``-x``, in throw-away copies of ``centidb/`` (the
built twin included, so parity tests compare against it) and ``tests/``
under ``.mutants/`` (one per job; git ignores it). A mutant is
*killed* when pytest fails, *timed out* when it runs past ``--timeout``,
and *survived* otherwise. The unmutated module (as ``ast.unparse`` writes
it) must pass first. Surviving mutants are listed as ``file:line`` and the
change; the list is also written to ``.mutants/<module>.txt``.
"""

import argparse
import ast
import glob
import os
import random
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, '.mutants')

#: module name -> (source file, test files; globs allowed), its own test file first.
MODULES = {
    'keylib': ('centidb/keylib.py', ['tests/test_keylib.py', 'tests/test_keylib*.py']),
    'batches': ('centidb/batches.py', ['tests/test_batches.py', 'tests/test_batches*.py']),
    'records': ('centidb/records/record.py', [
        'tests/test_records_record.py', 'tests/test_collection*.py', 'tests/test_index.py',
        'tests/test_store_verify.py']),
    'reader': ('centidb/records/reader.py', [
        'tests/test_records_reader.py', 'tests/test_records_record.py', 'tests/test_collection*.py',
        'tests/test_index.py', 'tests/test_store_verify.py']),
    'entry': ('centidb/records/entry.py', [
        'tests/test_records_entry.py', 'tests/test_records_record.py', 'tests/test_collection*.py',
        'tests/test_index.py']),
    'access': ('centidb/records/access.py', [
        'tests/test_records_access.py', 'tests/test_records_writing.py',
        'tests/test_records_record.py', 'tests/test_collection*.py',
        'tests/test_index.py', 'tests/test_store_verify.py', 'tests/test_bulk.py',
        'tests/test_unique.py', 'tests/test_hooks.py']),
    'entries': ('centidb/records/entries.py', [
        'tests/test_records_entries.py', 'tests/test_index.py', 'tests/test_unique.py']),
    'writing': ('centidb/records/writing.py', [
        'tests/test_records_writing.py', 'tests/test_records_record.py', 'tests/test_collection*.py',
        'tests/test_bulk.py', 'tests/test_hooks.py']),
    'savepoint': ('centidb/records/savepoint.py', [
        'tests/test_records_savepoint.py', 'tests/test_bulk.py']),
    'kernel': ('centidb/records/kernel.py', [
        'tests/test_records_kernel.py', 'tests/test_records_record.py']),
    'fastpath': ('centidb/records/fastpath.py', [
        'tests/test_records_fastpath.py', 'tests/test_records_record.py']),
    'limits': ('centidb/records/limits.py', [
        'tests/test_records_limits.py', 'tests/test_bulk.py']),
}

# --- mutation operators ----------------------------------------------------------

_BINOP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
          ast.FloorDiv: ast.Mult, ast.Mod: ast.Mult, ast.Pow: ast.Mult,
          ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.BitOr: ast.BitAnd,
          ast.BitAnd: ast.BitOr, ast.BitXor: ast.BitOr}
_CMPOP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
          ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
          ast.In: ast.NotIn, ast.NotIn: ast.In}
_BOOLOP = {ast.And: ast.Or, ast.Or: ast.And}


def _constant_variants(value):
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1]
    if isinstance(value, float):
        return [value + 1.0]
    if isinstance(value, str):
        return [value + 'XX']
    if isinstance(value, bytes):
        return [value + b'XX']
    return []


def _mutations(node, parent_field):
    """Yield (kind, argument) for each mutation of `node` alone."""
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOP:
        yield 'op', _BINOP[type(node.op)]
    elif isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            if type(op) in _CMPOP:
                yield 'cmp', (index, _CMPOP[type(op)])
    elif isinstance(node, ast.BoolOp):
        yield 'op', _BOOLOP[type(node.op)]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not, ast.Invert)):
        yield 'unwrap', None
    elif isinstance(node, ast.Constant):
        for value in _constant_variants(node.value):
            yield 'const', value
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield 'return', None
    if parent_field == 'test':
        simple = isinstance(node, ast.Compare) and len(node.ops) == 1
        if not simple and not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            yield 'negate', None


def _skipped_nodes(tree, messages):
    """Ids of nodes never mutated: docstrings, __all__, f-strings, annotations, TYPE_CHECKING, raise arguments."""
    skip = set()

    def skip_all(node):
        skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if getattr(node, 'returns', None) is not None:
            skip_all(node.returns)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip_all(body[0])
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == '__all__' for t in node.targets):
            skip_all(node)
        elif isinstance(node, ast.JoinedStr):
            skip_all(node)
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == 'TYPE_CHECKING':
            skip_all(node.test)     # which import the type checker reads, not behaviour
            skip.add(id(node))
        elif isinstance(node, ast.arg) and node.annotation is not None:
            skip_all(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            skip_all(node.annotation)
        elif isinstance(node, ast.Raise) and not messages:
            if isinstance(node.exc, ast.Call):
                for arg in node.exc.args + node.exc.keywords:
                    skip_all(arg)
            if node.cause is not None:
                skip_all(node.cause)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == 'warn' and not messages):
            for arg in node.args[:1]:
                skip_all(arg)
    return skip


def _sites(tree, messages):
    """Return [(node index in ast.walk order, kind, argument)] for `tree`."""
    parents = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            for child in (value if isinstance(value, list) else [value]):
                if isinstance(child, ast.AST):
                    parents[id(child)] = field
    skip = _skipped_nodes(tree, messages)
    sites = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) not in skip:
            for kind, arg in _mutations(node, parents.get(id(node))):
                sites.append((index, kind, arg))
    return sites


def _replace(tree, old, new):
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[[i for i, v in enumerate(value) if v is old][0]] = new
                return
    raise AssertionError('node not found')


def apply(source, site):
    """Return (mutated source, 'line:column', 'old -> new') for one site."""
    tree = ast.parse(source)
    index, kind, arg = site
    node = list(ast.walk(tree))[index]
    line = f'{node.lineno}:{node.col_offset + 1}'
    shown = node.value if isinstance(node, ast.Return) else node
    before = ast.unparse(shown)
    if kind == 'op':
        node.op = arg()
    elif kind == 'cmp':
        node.ops[arg[0]] = arg[1]()
    elif kind == 'const':
        node.value = arg
    elif kind == 'unwrap':
        _replace(tree, node, node.operand)
        shown = node.operand
    elif kind == 'negate':
        shown = ast.UnaryOp(op=ast.Not(), operand=node)
        _replace(tree, node, shown)
    elif kind == 'return':
        node.value = shown = ast.Constant(value=None)
    after = ast.unparse(shown)
    if isinstance(node, ast.Return):
        before, after = f'return {before}', f'return {after}'
    ast.fix_missing_locations(tree)
    return ast.unparse(tree), line, f'{_short(before)} -> {_short(after)}'


def _short(text, width=70):
    text = ' '.join(text.split())
    return text if len(text) <= width else text[:width - 3] + '...'


# --- running -------------------------------------------------------------------------

def _make_tree(dest):
    """Copy centidb/, tests/ and the pytest configuration into `dest`."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc', '.hypothesis', '*.c')
    for name in ('centidb', 'tests'):
        shutil.copytree(os.path.join(ROOT, name), os.path.join(dest, name), ignore=ignore)
    for name in ('pyproject.toml', 'setup.py', 'README.md'):
        if os.path.exists(os.path.join(ROOT, name)):
            shutil.copy(os.path.join(ROOT, name), dest)


def _env():
    env = dict(os.environ, CENTIDB_NO_SPEEDUPS='1', PYTHONDONTWRITEBYTECODE='1',
               HYPOTHESIS_PROFILE='ci', PYTHONHASHSEED='0')
    env.pop('CENTIDB_REQUIRE_SPEEDUPS', None)
    env.pop('PYTHONPATH', None)
    return env


def run_tests(tree_dir, rel_source, text, tests, timeout):
    """Write `text` as the module in `tree_dir`, run `tests`; return (status, seconds)."""
    with open(os.path.join(tree_dir, rel_source), 'w', encoding='utf-8') as fp:
        fp.write(text)
    shutil.rmtree(os.path.join(tree_dir, '.hypothesis'), ignore_errors=True)
    cmd = [sys.executable, '-m', 'pytest', '-x', '-q', '--no-header', '-p', 'no:cacheprovider',
           '-o', 'addopts=', *tests]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=tree_dir, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # the pytest run and any subprocess it started
        proc.communicate()
        return 'timeout', time.monotonic() - start, ''
    status = 'survived' if proc.returncode == 0 else 'killed'
    return status, time.monotonic() - start, output.decode('utf-8', 'replace')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('module', choices=sorted(MODULES))
    parser.add_argument('--sample', type=int, metavar='N', help='run N mutants chosen at random')
    parser.add_argument('--seed', type=int, default=0, help='seed for --sample (default 0)')
    parser.add_argument('--lines', metavar='A-B', help='only mutants on lines A to B')
    parser.add_argument('--only', metavar='NAME,...',
                        help='only mutants inside these top-level functions, classes or '
                             'assignments, or methods given as Class.method')
    parser.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    parser.add_argument('--timeout', type=float, help='seconds per mutant (default: 4 x baseline + 10)')
    parser.add_argument('--messages', action='store_true', help='also mutate raise arguments')
    parser.add_argument('--list', action='store_true', help='list the mutants, run nothing')
    args = parser.parse_args(argv)

    rel_source, patterns = MODULES[args.module]
    tests = []  # in table order: put the fastest, most telling tests first
    for pattern in patterns:
        if not glob.has_magic(pattern) and not os.path.exists(os.path.join(ROOT, pattern)):
            parser.error(f'{pattern} (a test file of {args.module}) does not exist')
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            if os.path.relpath(path, ROOT) not in tests:
                tests.append(os.path.relpath(path, ROOT))
    if not os.path.exists(os.path.join(ROOT, rel_source)):
        parser.error(f'{rel_source} does not exist')
    if not tests:
        parser.error(f'no test file matches {patterns}')
    with open(os.path.join(ROOT, rel_source), encoding='utf-8') as fp:
        source = fp.read()
    sites = _sites(ast.parse(source), args.messages)
    total = len(sites)
    if args.lines:
        lo, _, hi = args.lines.partition('-')
        nodes = list(ast.walk(ast.parse(source)))
        sites = [s for s in sites if int(lo) <= nodes[s[0]].lineno <= int(hi or lo)]
    if args.only:
        names = set(args.only.split(','))
        inside = set()
        for top in ast.parse(source).body:
            targets = [t.id for t in getattr(top, 'targets', []) if isinstance(t, ast.Name)]
            if getattr(top, 'name', None) in names or names.intersection(targets):
                inside.update(range(top.lineno, top.end_lineno + 1))
            elif isinstance(top, ast.ClassDef):
                for member in top.body:
                    if f'{top.name}.{getattr(member, "name", "")}' in names:
                        inside.update(range(member.lineno, member.end_lineno + 1))
        nodes = list(ast.walk(ast.parse(source)))
        sites = [s for s in sites if getattr(nodes[s[0]], 'lineno', 0) in inside]
    if args.sample is not None and args.sample < len(sites):
        sites = sorted(random.Random(args.seed).sample(sites, args.sample))
    mutants = [(site, *apply(source, site)) for site in sites]
    name = os.path.basename(rel_source)
    print(f'{rel_source}: {total} mutants, running {len(mutants)}'
          + (f' (sample, seed {args.seed})' if args.sample is not None else '')
          + f'; tests: {" ".join(tests)}')
    if args.list:
        for _, _, line, change in mutants:
            print(f'  {name}:{line}: {change}')
        return 0

    started = time.monotonic()
    jobs = max(1, min(args.jobs, len(mutants) or 1))
    trees = [os.path.join(WORK, args.module, f'job{i}') for i in range(jobs)]
    for tree_dir in trees:
        _make_tree(tree_dir)
    status, baseline, output = run_tests(trees[0], rel_source, ast.unparse(ast.parse(source)),
                                         tests, timeout=3600)
    if status != 'survived':
        print(output[-3000:])
        print('the tests fail on the unmutated module; fix that first')
        return 2
    timeout = args.timeout or 4 * baseline + 10
    print(f'baseline: tests pass in {baseline:.1f}s; timeout {timeout:.0f}s; {jobs} jobs')

    results = [None] * len(mutants)
    queue = list(range(len(mutants)))
    lock = threading.Lock()

    def worker(tree_dir):
        while True:
            with lock:
                if not queue:
                    return
                i = queue.pop(0)
            results[i] = run_tests(tree_dir, rel_source, mutants[i][1], tests, timeout)[0]
            with lock:
                done = sum(r is not None for r in results)
                if done % 25 == 0 or done == len(mutants):
                    print(f'  {done}/{len(mutants)} done, {time.monotonic() - started:.0f}s',
                          flush=True)

    threads = [threading.Thread(target=worker, args=(t,)) for t in trees]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    counts = {s: results.count(s) for s in ('killed', 'timeout', 'survived')}
    ran = len(mutants)
    score = 100.0 * (counts['killed'] + counts['timeout']) / ran if ran else 100.0
    survivors = [(m[2], m[3]) for m, r in zip(mutants, results) if r == 'survived']
    lines = [f'{name}: {ran} mutants run of {total}: killed {counts["killed"]}, '
             f'timeouts {counts["timeout"]}, survived {counts["survived"]}; '
             f'{score:.1f}% killed (timeouts count as killed); '
             f'{time.monotonic() - started:.0f}s']
    lines += [f'  survived {name}:{line}: {change}' for line, change in survivors]
    print('\n'.join(lines))
    with open(os.path.join(WORK, f'{args.module}.txt'), 'w', encoding='utf-8') as fp:
        fp.write('\n'.join(lines) + '\n')
    for tree_dir in trees:
        shutil.rmtree(tree_dir, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
