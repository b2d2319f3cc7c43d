"""centidb.cli, the ``centidb`` command line, run as ``python -m centidb`` on real stores.

Every subcommand runs in a subprocess with a timeout, on LMDB and on
LevelDB stores built through the Python API. The package uses only public
names of the rest of centidb, and reads the catalog through
:func:`centidb.catalog.read_metadata`; its old module paths are aliases.
"""

import ast
import datetime
import decimal
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

import centidb
from centidb import encodings, keylib

ENGINES = {'lmdb': ('LmdbEngine', 'path'), 'leveldb': ('PlyvelEngine', 'name')}
TIMEOUT = 120

APP = '''
def setup(store):
    people = store.collection('people', key_func=lambda r: (r['name'],))
    people.add_index('by_age', lambda r: [(r['age'],)])
    people.add_index('by_email', lambda r: [(r['email'],)], unique=True)
'''

PEOPLE = [
    {'name': 'ann', 'age': 30, 'email': 'ann@x', 'raw': b'\x00\xff', 'big': 2 ** 70,
     'when': datetime.datetime(2020, 1, 2, 3, 4, 5, 6), 'id': uuid.UUID(int=7),
     'price': decimal.Decimal('1.10'), 'pair': (1, 'a'), 'day': datetime.date(1999, 12, 31)},
    {'name': 'bob', 'age': 40, 'email': 'bob@x', 'nan': -0.0, 'inf': float('inf')},
    {'name': 'cy', 'age': 40, 'email': 'cy@x', 'tags': ['a', {'$not': 'a tag'}]},
]


def open_store(path, engine, create=False):
    name, arg = ENGINES[engine]
    options = {arg: str(path)}
    if engine == 'leveldb':
        options['create_if_missing'] = create
    return centidb.open(name, **options)


def setup_app(store):
    people = store.collection('people', key_func=lambda r: (r['name'],))
    people.add_index('by_age', lambda r: [(r['age'],)])
    people.add_index('by_email', lambda r: [(r['email'],)], unique=True)
    return people


def make_store(path, engine):
    with open_store(path, engine, create=True) as store:
        setup_app(store).put_many(PEOPLE)
        log = store.collection('log')
        log.put_many(['one', b'two', {'n': 3}])


def contents(path, engine):
    """``{collection: [(key, value), ...]}`` and the counters, read through the API."""
    with open_store(path, engine) as store:
        setup_app(store)
        found = {name: list(store.collection(name).items()) for name in store.collections()}
        found['counter log:key'] = store.counter('log:key', 0)
        return found


def cli(*args, cwd, stdin=None, check=None):
    """Run ``python -m centidb *args``; return the finished process."""
    result = subprocess.run([sys.executable, '-m', 'centidb', *map(str, args)], cwd=cwd,
                            input=stdin, capture_output=True, text=True, timeout=TIMEOUT)
    if check is not None:
        assert result.returncode == check, (result.stdout, result.stderr)
    return result


@pytest.fixture(params=sorted(ENGINES))
def engine(request):
    return request.param


@pytest.fixture
def work(tmp_path):
    (tmp_path / 'peopleapp.py').write_text(APP)
    return tmp_path


@pytest.fixture
def store_path(work, engine):
    path = work / f'db-{engine}'
    make_store(path, engine)
    return path


def lines(text):
    return [json.loads(line) for line in text.splitlines()]


# --- reading ----------------------------------------------------------------------------

def test_info(work, store_path, engine):
    text = cli('info', store_path, cwd=work, check=0).stdout
    assert 'format centidb version 1' in text
    assert 'collection people: 3 records, key key_func, encoder msgpack, packer plain' in text
    assert '  index by_age: a function\n  index by_email: a function, unique\n' in text
    assert 'counter log:key = 4' in text
    [info] = lines(cli('info', store_path, '--json', cwd=work, check=0).stdout)
    assert info['engine'] == ENGINES[engine][0] and info['size'] > 0
    people = {coll['name']: coll for coll in info['collections']}['people']
    assert people['indexes'] == [{'name': 'by_age', 'unique': False, 'fields': None},
                                 {'name': 'by_email', 'unique': True, 'fields': None}]
    assert info['counters'] == {'log:key': 4}


def test_get_keys_scan(work, store_path):
    got = lines(cli('get', store_path, 'people', '["ann"]', cwd=work, check=0).stdout)
    assert got[0]['raw'] == {'$bytes': 'AP8='} and got[0]['big'] == {'$int': str(2 ** 70)}
    assert cli('get', store_path, 'people', '["zed"]', cwd=work, check=1).stdout == ''
    keys = lines(cli('keys', store_path, 'people', cwd=work, check=0).stdout)
    assert keys == [['ann'], ['bob'], ['cy']]
    keys = lines(cli('keys', store_path, 'people', '--lo', '["b"]', '--reverse', '--limit', 1,
                     cwd=work, check=0).stdout)
    assert keys == [['cy']]
    assert lines(cli('keys', store_path, 'people', '--startswith', '["b"]',
                     cwd=work, check=0).stdout) == [['bob']]
    scanned = lines(cli('scan', store_path, 'log', '--hi', '[3]', cwd=work, check=0).stdout)
    assert scanned == [{'key': [1], 'value': 'one'}, {'key': [2], 'value': {'$bytes': 'dHdv'}}]


def test_usage_and_store_errors(work, store_path):
    assert cli('frob', cwd=work).returncode == 2
    assert cli('keys', store_path, 'people', '--lo', 'not json', cwd=work).returncode == 2
    assert cli('info', work / 'missing', cwd=work).returncode == 3
    assert cli('keys', store_path, 'nosuch', cwd=work).returncode == 3
    assert cli('info', store_path, '--app', 'nosuchmodule:f', cwd=work).returncode == 4
    assert cli('info', store_path, '--engine', 'nosuch', cwd=work).returncode == 2


def test_pickle_needs_allow_pickle(work, engine):
    path = work / 'pickled'
    with open_store(path, engine, create=True) as store:
        store.add_encoder(encodings.PICKLE_ENCODER)
        store.collection('p', encoder=encodings.PICKLE_ENCODER).put({'x': 1})
    refused = cli('scan', path, 'p', cwd=work, check=3)
    assert 'pickle' in refused.stderr
    allowed = cli('scan', path, 'p', '--allow-pickle', cwd=work, check=0)
    assert lines(allowed.stdout) == [{'key': [1], 'value': {'x': 1}}]


# --- checking ---------------------------------------------------------------------------

def test_verify_sound_and_damaged(work, store_path, engine):
    assert cli('verify', store_path, '--app', 'peopleapp:setup', cwd=work,
               check=0).stdout == ''
    with open_store(store_path, engine) as store:
        prefix = store.collection('people').prefix
        store.engine.delete(prefix + keylib.packs(('bob',)))
    damaged = cli('verify', store_path, '--app', 'peopleapp:setup', cwd=work, check=1)
    problems = damaged.stdout.splitlines()
    assert problems and all("collection 'people'" in line for line in problems)
    assert any("'bob'" in line for line in problems)


def test_reindex_needs_the_app(work, store_path):
    assert cli('reindex', store_path, 'people', cwd=work).returncode == 2
    cli('reindex', store_path, 'people', '--app', 'peopleapp:setup', cwd=work, check=0)
    cli('reindex', store_path, 'people', 'by_age', '--app', 'peopleapp:setup', cwd=work,
        check=0)


# --- dump and load ----------------------------------------------------------------------

def test_dump_load_between_engines(work, store_path, engine):
    other = 'leveldb' if engine == 'lmdb' else 'lmdb'
    dump = cli('dump', store_path, cwd=work, check=0).stdout
    target = work / 'loaded'
    assert cli('load', target, '--engine', other, cwd=work, stdin=dump).returncode == 2
    for _ in range(2):      # loading again changes nothing
        cli('load', target, '-', '--engine', other, '--app', 'peopleapp:setup',
            '--batch', 2, cwd=work, stdin=dump, check=0)
    assert contents(target, other) == contents(store_path, engine)
    again = cli('dump', target, '--app', 'peopleapp:setup', cwd=work, check=0).stdout
    assert again == dump
    cli('verify', target, '--app', 'peopleapp:setup', cwd=work, check=0)


def test_dump_some_collections_to_a_file(work, store_path):
    out = work / 'log.jsonl'
    cli('dump', store_path, '-c', 'log', '-o', out, cwd=work, check=0)
    dumped = lines(out.read_text())
    assert [line['type'] for line in dumped] == ['header', 'collection', 'counter'] + \
        ['record'] * 3 + ['trailer']
    assert {line.get('collection', 'log') for line in dumped[1:]} == {'log'}
    assert cli('dump', store_path, '-c', 'nosuch', cwd=work).returncode == 3


# --- copies -----------------------------------------------------------------------------

def test_copy_to_another_engine_and_compact(work, store_path, engine):
    other = 'leveldb' if engine == 'lmdb' else 'lmdb'
    dest = work / 'copied'
    cli('copy', store_path, dest, '--engine', other, cwd=work, check=0)
    assert contents(dest, other) == contents(store_path, engine)
    assert cli('copy', store_path, dest, '--engine', other, cwd=work).returncode == 3
    cli('compact', store_path, cwd=work, check=0)
    offline = cli('compact', dest, '--offline', cwd=work, check=0)   # deprecated, ignored
    assert '--offline is deprecated and ignored' in offline.stderr
    assert contents(store_path, engine) == contents(dest, other)
    assert cli('verify', store_path, cwd=work).returncode == 0


def test_lmdb_compact_shrinks_the_file_and_keeps_every_record(work):
    path = work / 'big.lmdb'
    store = centidb.open('LmdbEngine', path=str(path))
    coll = store.collection('rows', key_func=lambda r: r['n'])
    coll.add_index('even', lambda r: r['n'] % 2 == 0)
    coll.put_many([{'n': n, 'pad': 'x' * 500} for n in range(3000)])
    coll.delete_many([(n,) for n in range(100, 3000)])
    store.close()
    before = os.path.getsize(path / 'data.mdb')
    cli('compact', path, cwd=work, check=0)
    assert os.path.getsize(path / 'data.mdb') < before / 4
    assert [p for p in path.iterdir() if p.name.startswith('.compact')] == []
    store = centidb.open('LmdbEngine', path=str(path))
    coll = store.collection('rows', key_func=lambda r: r['n'])
    coll.add_index('even', lambda r: r['n'] % 2 == 0)
    assert coll.count() == 100 and coll.indices['even'].count() == 100
    assert store.verify() == []
    store.close()


def test_backup(work, store_path, engine):
    dest = work / 'backup'
    cli('backup', store_path, dest, cwd=work, check=0)
    assert contents(dest, engine) == contents(store_path, engine)
    assert cli('backup', store_path, dest, cwd=work).returncode == 3


WRITER = '''
import os, sys, time
import centidb
store = centidb.open('LmdbEngine', path=sys.argv[1])
coll = store.collection('busy', key_func=lambda r: (r['n'],))
coll.add_index('by_mod', lambda r: [(r['n'] % 7,)])
deadline = time.monotonic() + 60
n = 0
while not os.path.exists(sys.argv[2]) and time.monotonic() < deadline:
    coll.put_many([{'n': n + i, 'pad': 'x' * 200} for i in range(50)])
    n += 50
    if n == 500:
        open(sys.argv[3], 'w').close()
store.close()
'''


def test_lmdb_backup_while_another_process_writes(work):
    path, dest = work / 'live', work / 'live-backup'
    stop, started = work / 'stop', work / 'started'
    (work / 'writer.py').write_text(textwrap.dedent(WRITER))
    writer = subprocess.Popen([sys.executable, 'writer.py', path, stop, started], cwd=work)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert writer.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        cli('backup', path, dest, cwd=work, check=0)
    finally:
        stop.touch()
        writer.wait(timeout=TIMEOUT)
    assert writer.returncode == 0
    app = ("def setup(store):\n"
           "    store.collection('busy', key_func=lambda r: (r['n'],)).add_index(\n"
           "        'by_mod', lambda r: [(r['n'] % 7,)])\n")
    (work / 'busyapp.py').write_text(app)
    cli('verify', dest, '--app', 'busyapp:setup', cwd=work, check=0)
    [info] = lines(cli('info', dest, '--json', cwd=work, check=0).stdout)
    [busy] = info['collections']
    assert busy['records'] >= 500 and busy['records'] % 50 == 0
    assert os.path.exists(dest / 'data.mdb')


# --- the package --------------------------------------------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI_DIR = os.path.join(ROOT, 'centidb', 'cli')


def _private_names_tool():
    """dev/private_names.py, the count of private names used across modules."""
    spec = importlib.util.spec_from_file_location(
        'private_names', os.path.join(ROOT, 'dev', 'private_names.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cli_files():
    return sorted(os.path.join(CLI_DIR, name) for name in os.listdir(CLI_DIR)
                  if name.endswith('.py'))


def test_the_command_line_uses_no_private_name_of_another_module():
    tool = _private_names_tool()
    found = {os.path.basename(path): dict(tool.foreign_uses(path)) for path in _cli_files()}
    assert len(found) == 4
    assert all(uses == {} for uses in found.values()), found


def test_the_private_names_tool_finds_them(tmp_path):
    source = tmp_path / 'probe.py'
    source.write_text('from centidb.txn import _hidden\n'
                      'class Own:\n    def f(self):\n        self._mine = 1\n'
                      '        return self._mine, store._catalog, store._catalog\n')
    assert dict(_private_names_tool().foreign_uses(str(source))) == {'_hidden': 1,
                                                                    '_catalog': 2}


def test_the_command_line_reads_the_catalog_only_through_read_metadata():
    imported = {}
    for path in _cli_files():
        with open(path, encoding='utf-8') as fp:
            tree = ast.parse(fp.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or '').startswith('centidb'):
                for alias in node.names:
                    imported.setdefault(node.module, set()).add(alias.name)
    assert imported['centidb.catalog'] == {'read_metadata'}
    everything = set(imported) | {f'{module}.{name}' for module, names in imported.items()
                                  for name in names}
    assert not everything & {'centidb.metarecords', 'centidb.keylib', 'centidb.keyformat'}


# --- field indexes: stored definitions, no --app ---------------------------------------

def test_field_indexes_need_no_app(work, engine):
    path = work / f'fields-{engine}'
    with open_store(path, engine, create=True) as store:
        coll = store.collection('c', key_func=lambda r: r['k'])
        coll.add_index('city', fields='addr.city', unique=True)
        coll.add_index('tags', fields=('tags', 'k'))
        coll.put_many([{'k': 1, 'addr': {'city': 'Leeds'}, 'tags': ['a', 'b']},
                       {'k': 2, 'addr': {'city': 'York'}}])
    text = cli('info', path, cwd=work, check=0).stdout
    assert '  index city: fields addr.city, unique\n  index tags: fields tags, k\n' in text
    [info] = lines(cli('info', path, '--json', cwd=work, check=0).stdout)
    assert info['collections'][0]['indexes'] == [
        {'name': 'city', 'unique': True, 'fields': ['addr.city']},
        {'name': 'tags', 'unique': False, 'fields': ['tags', 'k']}]
    cli('verify', path, cwd=work, check=0)
    cli('reindex', path, 'c', cwd=work, check=0)
    dumped = cli('dump', path, cwd=work, check=0).stdout
    assert '"indexes":[{"name":"city","unique":true,"fields":["addr.city"]},' in dumped
    copy = work / f'copy-{engine}'
    cli('load', copy, '-', '--engine', engine, cwd=work, stdin=dumped, check=0)
    with open_store(copy, engine) as store:
        coll = store.collection('c')
        assert coll.indices['city'].fields == ('addr.city',) and coll.indices['city'].unique
        assert [tup for tup, _ in coll.indices['tags'].pairs()] == [('a', 1), ('b', 1)]
        assert coll.indices['city'].get('York') == {'k': 2, 'addr': {'city': 'York'}}
        assert store.verify() == []
