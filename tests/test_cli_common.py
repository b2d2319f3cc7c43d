"""centidb.cli.common: engine names, options, opening stores and apps, output.

What every subcommand shares, called directly: the engine names ``--engine``
takes, ``--option`` parsing, finding a store's engine from its files,
opening a store (and failing with :class:`~centidb.cli.common.CliError`
and the documented exit status), loading the ``--app`` callable, and the
JSON Lines output.
"""

import io
import json

import pytest

import centidb
from centidb.cli import common
from centidb.cli.common import (
    EXIT_APP, EXIT_STORE, EXIT_USAGE, CliError, detect_engine, disk_size, engine_name,
    load_app, open_engine, open_store, parse_options, write_line,
)
from centidb.engines import ENGINE_ALIASES, LmdbEngine, PlyvelEngine


def test_the_command_line_uses_the_engine_names_of_centidb_open():
    assert common.ENGINE_ALIASES is ENGINE_ALIASES
    for alias, target in ENGINE_ALIASES.items():
        if target in common.FILE_ENGINES:
            assert engine_name(alias) == target
            assert engine_name(alias.upper()) == target
    for refused in ('memory', 'etcd', 'MemoryEngine'):
        with pytest.raises(CliError, match='lmdb, leveldb') as caught:
            engine_name(refused)
        assert caught.value.status == EXIT_USAGE


def test_parse_options_reads_json_or_keeps_the_string():
    assert parse_options(['map_size=1048576', 'sync=false', 'mode="x"', 'name=plain',
                          'empty=']) == {'map_size': 1048576, 'sync': False, 'mode': 'x',
                                         'name': 'plain', 'empty': ''}
    for bad in ('novalue', '=1'):
        with pytest.raises(CliError, match='key=value') as caught:
            parse_options([bad])
        assert caught.value.status == EXIT_USAGE


def test_detect_engine_from_the_files(tmp_path):
    centidb.open('LmdbEngine', path=str(tmp_path / 'l')).close()
    centidb.open('PlyvelEngine', path=str(tmp_path / 'p'), create_if_missing=True).close()
    (tmp_path / 'empty').mkdir()
    (tmp_path / 'file').write_text('x')
    assert detect_engine(str(tmp_path / 'l')) == 'LmdbEngine'
    assert detect_engine(str(tmp_path / 'p')) == 'PlyvelEngine'
    for other in ('empty', 'file', 'missing'):
        assert detect_engine(str(tmp_path / other)) is None


def test_open_engine_detects_creates_and_refuses(tmp_path):
    with pytest.raises(CliError, match='no such file') as caught:
        open_engine(str(tmp_path / 'missing'), None, {})
    assert caught.value.status == EXIT_STORE
    (tmp_path / 'empty').mkdir()
    with pytest.raises(CliError, match='no LMDB or LevelDB store'):
        open_engine(str(tmp_path / 'empty'), None, {})
    made = open_engine(str(tmp_path / 'new'), None, {}, create=True)
    assert isinstance(made, LmdbEngine)         # the default for a new store
    made.close()
    again = open_engine(str(tmp_path / 'new'), None, {})
    assert isinstance(again, LmdbEngine)
    again.close()
    level = open_engine(str(tmp_path / 'lvl'), 'leveldb', {}, create=True)
    assert isinstance(level, PlyvelEngine)
    level.close()
    with pytest.raises(CliError, match='bad engine option') as caught:
        open_engine(str(tmp_path / 'new'), 'lmdb', {'no_such_option': 1})
    assert caught.value.status == EXIT_USAGE


APP = '''
def setup(store):
    store.collection('things').put('x')

def broken(store):
    raise RuntimeError('no')

not_callable = 3
'''


def test_open_store_runs_the_app_and_reports_its_failures(tmp_path, monkeypatch):
    (tmp_path / 'cliapp.py').write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = str(tmp_path / 'db')
    with open_store(path, None, {}, app='cliapp:setup', create=True) as store:
        assert store.collections() == ['things']
    with pytest.raises(CliError, match=r'--app cliapp:broken: RuntimeError: no') as caught:
        open_store(path, None, {}, app='cliapp:broken')
    assert caught.value.status == EXIT_APP
    with open_store(path, None, {}) as store:       # closed after the failure: opens again
        assert list(store.collection('things').values()) == ['x']


def test_load_app_names_what_is_wrong(tmp_path, monkeypatch):
    (tmp_path / 'cliapp.py').write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_app('cliapp:setup').__name__ == 'setup'
    for spec, message in (('no_such_module_here', 'cannot import'),
                          ('cliapp', "no 'app'"), ('cliapp:missing', "no 'missing'"),
                          ('cliapp:not_callable', 'not callable')):
        with pytest.raises(CliError, match=message) as caught:
            load_app(spec)
        assert caught.value.status == EXIT_APP


def test_disk_size_and_write_line(tmp_path):
    (tmp_path / 'a').write_bytes(b'12345')
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'b').write_bytes(b'123')
    assert disk_size(str(tmp_path)) == 8 and disk_size(str(tmp_path / 'a')) == 5
    out = io.StringIO()
    write_line(out, {'k': ['é', 1]})
    write_line(out, None)
    assert out.getvalue() == '{"k":["é",1]}\nnull\n'
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [{'k': ['é', 1]}, None]
