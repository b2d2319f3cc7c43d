"""Engines by short name, as the command line's ``--engine``, and ``path=`` everywhere.

``centidb.open('lmdb', path=...)`` works as ``centidb --engine lmdb`` does:
both read :data:`centidb.engines.ENGINE_ALIASES` (the command line's side is
in test_cli_common.py). Every engine on disk takes
its directory as ``path=``; LevelDB's older ``name=`` still works.
"""

import pytest

import centidb
from centidb.engines import (
    ENGINE_ALIASES,
    LmdbEngine,
    MemoryEngine,
    PlyvelEngine,
    get_engine_class,
)


@pytest.mark.parametrize('name, cls', [
    ('lmdb', LmdbEngine), ('LMDB', LmdbEngine), ('leveldb', PlyvelEngine),
    ('LevelDB', PlyvelEngine), ('plyvel', PlyvelEngine), ('memory', MemoryEngine),
    ('LmdbEngine', LmdbEngine), ('PlyvelEngine', PlyvelEngine),
])
def test_short_and_class_names_find_the_engine(name, cls):
    assert get_engine_class(name) is cls


def test_etcd_by_short_name_is_the_optional_engine():
    try:
        cls = get_engine_class('EtcdEngine')
    except ImportError:
        pytest.skip('the etcd extra is not installed')
    assert get_engine_class('etcd') is cls


def test_unknown_names_list_the_short_names():
    with pytest.raises(ValueError, match="'sqlite'.*lmdb, leveldb.*LmdbEngine"):
        get_engine_class('sqlite')


@pytest.mark.parametrize('name, options', [
    ('lmdb', {}), ('leveldb', {'create_if_missing': True}),
    ('LmdbEngine', {}), ('PlyvelEngine', {'create_if_missing': True}),
])
def test_open_by_name_with_path(tmp_path, name, options):
    path = tmp_path / 'store'
    with centidb.open(name, path=str(path), **options) as store:
        store.collection('c').put({'a': 1})
        assert type(store.engine) is get_engine_class(name)
    with centidb.open(name, path=path) as store:        # a PathLike too
        assert list(store.collection('c').values()) == [{'a': 1}]


def test_memory_by_short_name():
    with centidb.open('memory') as store:
        assert type(store.engine) is MemoryEngine


def test_leveldb_keeps_name_as_an_alias_of_path(tmp_path):
    with PlyvelEngine(name=str(tmp_path / 'x'), create_if_missing=True) as engine:
        engine.put(b'k', b'v')
        assert engine.path == str(tmp_path / 'x')
    with PlyvelEngine(tmp_path / 'x') as engine:
        assert engine.get(b'k') == b'v'
    with pytest.raises(TypeError, match='path='):
        PlyvelEngine(path=str(tmp_path / 'x'), name=str(tmp_path / 'x'))
    with pytest.raises(TypeError, match='path='):
        PlyvelEngine()
