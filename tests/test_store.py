"""centidb.store: ``open()``, ``Store`` construction, counters and the store's lifecycle.

Collections, indexes, transactions and the catalog have their own test
files (``test_collection.py``, ``test_index.py``, ``test_txn.py``,
``test_catalog.py``).
"""

import operator

import pytest

import centidb
from centidb.encodings import Encoder
from centidb.engines import ListEngine
from centidb.errors import EngineClosedError, StoreFormatError

from stores import ENGINE_NAMES, by_id, contents, fails_cleanly, tag_of


def test_published_example_runs_with_startswith(tmp_path):
    # The 2013 example's prefix='nworg' matched part of a string; that is
    # spelled startswith= since prefix= matches whole elements.
    store = centidb.open('PlyvelEngine', name=str(tmp_path / 'test.ldb'),
                         create_if_missing=True)
    encoder = centidb.encodings.make_msgpack_encoder()
    coll = store.collection('stuff', encoder=encoder,
                            key_func=operator.itemgetter('name', 'location'))
    coll.add_index('rev_name', lambda p: p['name'][::-1])
    coll.add_index('rev_location', lambda p: p['location'][::-1])
    rec = coll.put({'stub': '...', 'name': 'undergrown', 'location': 'UNDERGROWN'},
                   blind=True)
    assert rec.key == ('undergrown', 'UNDERGROWN')
    assert coll.get(('undergrown', 'UNDERGROWN'))['stub'] == '...'
    found = list(coll.indices['rev_name'].values(startswith='nworg'))
    assert [p['name'] for p in found] == ['undergrown']
    store.close()


# --- open() and Store() ------------------------------------------------------

def test_open_unknown_engine():
    with pytest.raises(ValueError, match='NoSuchEngine') as info:
        centidb.open('NoSuchEngine')
    for name in ENGINE_NAMES:
        assert name in str(info.value)
    with pytest.raises(TypeError):
        centidb.open(42)


@pytest.mark.parametrize('not_an_engine', [None, 'ListEngine', ListEngine, {}])
def test_store_of_non_engine(not_an_engine):
    with pytest.raises(TypeError, match='Engine'):
        centidb.Store(not_an_engine)


def test_open_closes_engine_on_format_error(tmp_path):
    path = str(tmp_path / 'lmdb')
    engine = centidb.engines.LmdbEngine(path)
    engine.put(b'foreign', b'data')
    engine.close()
    with pytest.raises(StoreFormatError):
        centidb.open('LmdbEngine', path=path)
    # The failed open closed its engine, so the database can be opened again.
    engine = centidb.engines.LmdbEngine(path)
    assert list(engine.items()) == [(b'foreign', b'data')]
    engine.close()


# --- counters ----------------------------------------------------------------

def test_counters(store):
    assert store.count('hits') == 1
    assert store.count('hits') == 2
    assert store.count('hits', n=10) == 3
    assert store.count('hits', n=0) == 13
    assert store.count('other', init=100) == 100
    with pytest.raises(ValueError):
        with store.begin(write=True) as txn:
            store.count('hits', txn=txn)
            raise ValueError
    assert store.count('hits', n=0) == 13


@pytest.mark.parametrize('kwargs, exc', [
    ({'name': 1}, TypeError), ({'name': ('a',)}, TypeError),
    ({'name': 'c', 'n': '1'}, TypeError), ({'name': 'c', 'n': 1.0}, TypeError),
    ({'name': 'c', 'n': True}, TypeError), ({'name': 'c', 'init': None}, TypeError),
    ({'name': 'c', 'init': 2.5}, TypeError),
])
def test_counter_bad_arguments(store, kwargs, exc):
    store.count('c')
    fails_cleanly(store, exc, lambda: store.count(**kwargs))
    assert store.count('c', n=0) == 2


# --- closing -----------------------------------------------------------------

def test_store_is_a_context_manager_and_refuses_use_after_close(tmp_path):
    with centidb.open('ListEngine') as store:
        coll = store.collection('x')
        coll.put('v')
    with pytest.raises(EngineClosedError):
        coll.get(1)
    with pytest.raises(EngineClosedError):
        store.collection('y')


def test_closed_store(reopen):
    store = reopen()
    docs = store.collection('docs', key_func=by_id)
    tags = docs.add_index('tag', tag_of)
    docs.put({'id': 1, 'tag': 'a'})
    before = contents(store)
    txn = store.begin()
    store.close()
    for call in (lambda: docs.put({'id': 2}),
                 lambda: docs.delete(1),
                 lambda: docs.get(1),
                 lambda: list(docs.items()),
                 lambda: len(docs),
                 lambda: list(tags.pairs()),
                 lambda: tags.get('a'),
                 lambda: docs.add_index('new', tag_of),
                 lambda: docs.drop_index('tag'),
                 lambda: store.collection('other'),
                 lambda: store.count('c'),
                 lambda: store.begin(),
                 lambda: store.begin(write=True),
                 lambda: store.add_encoder(Encoder('e', bytes, bytes))):
        with pytest.raises(EngineClosedError):
            call()
    with pytest.raises(EngineClosedError):
        docs.get(1, txn=txn)
    store.close()  # closing twice is fine
    with reopen() as store:
        assert contents(store) == before
