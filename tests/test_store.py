"""Tutorial-style walk through the document API, on every engine."""

import operator

import pytest

import centidb
from centidb import encodings, errors

from stores import ENGINE_NAMES, open_store


@pytest.fixture(params=ENGINE_NAMES)
def store(request, tmp_path):
    store = open_store(request.param, tmp_path)
    yield store
    store.close()


PEOPLE = [
    {'name': 'undergrown', 'location': 'UNDERGROWN', 'tags': ['a', 'b']},
    {'name': 'ash', 'location': 'LONDON', 'tags': ['b']},
    {'name': 'birch', 'location': 'LONDON', 'tags': []},
    {'name': 'cedar', 'location': 'PARIS', 'tags': None},
]


def people(store):
    coll = store.collection('people', key_func=operator.itemgetter('name', 'location'))
    coll.add_index('location', lambda p: p['location'])
    coll.add_index('tags', lambda p: p['tags'])
    coll.add_index('rev_name', lambda p: p['name'][::-1])
    for person in PEOPLE:
        coll.put(person)
    return coll


def test_published_example_runs_unchanged(tmp_path):
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
    found = list(coll.indices['rev_name'].values(prefix='nworg'))
    assert [p['name'] for p in found] == ['undergrown']
    store.close()


def test_keys_and_reads(store):
    coll = people(store)
    assert coll.get(('ash', 'LONDON'))['tags'] == ['b']
    assert coll.get(('nobody', 'X')) is None
    assert coll.get(('nobody', 'X'), default=0) == 0
    assert list(coll.keys()) == sorted((p['name'], p['location']) for p in PEOPLE)
    assert len(coll) == 4 and coll.count() == 4
    assert coll.get_many([('ash', 'LONDON'), ('x', 'y')], default='-')[1] == '-'
    record = coll.get(('ash', 'LONDON'), rec=True)
    assert isinstance(record, centidb.Record) and record.key == ('ash', 'LONDON')
    raw = coll.get(('ash', 'LONDON'), raw=True)
    assert encodings.make_msgpack_encoder().unpack(raw)['name'] == 'ash'


def test_query_parameters(store):
    coll = people(store)
    keys = sorted((p['name'], p['location']) for p in PEOPLE)
    assert list(coll.keys(reverse=True)) == keys[::-1]
    assert list(coll.keys(lo='b')) == keys[1:]
    assert list(coll.keys(hi='birch')) == keys[:1]
    assert list(coll.keys(hi=('birch', 'LONDON'), include=True)) == keys[:2]
    assert list(coll.keys(prefix='ce')) == [('cedar', 'PARIS')]
    assert list(coll.keys(prefix=('ash', 'LONDON'))) == [('ash', 'LONDON')]
    assert list(coll.keys(max=2, reverse=True)) == keys[::-1][:2]
    assert list(coll.keys(max=0)) == []
    assert coll.count(lo='b', hi='c') == 1
    assert coll.find(prefix='b')['name'] == 'birch'
    assert coll.find(prefix='zzz', default='none') == 'none'
    assert [k for k, _ in coll.items(lo='a', hi='b')] == [('ash', 'LONDON')]
    assert [v['name'] for v in coll.values(prefix='u')] == ['undergrown']


def test_falsy_bounds_are_real_bounds(store):
    coll = store.collection('nums', key_func=lambda r: r['n'])
    for n in (-2, -1, 0, 1, 2):
        coll.put({'n': n})
    assert [k[0] for k in coll.keys(lo=0)] == [0, 1, 2]
    assert [k[0] for k in coll.keys(hi=0)] == [-2, -1]
    assert [k[0] for k in coll.keys(hi=0, include=True)] == [-2, -1, 0]
    texts = store.collection('texts', key_func=lambda r: r)
    for t in ('', 'a', 'b'):
        texts.put(t)
    assert list(texts.keys(lo='')) == [('',), ('a',), ('b',)]
    assert list(texts.keys(hi='')) == []
    assert list(texts.keys(prefix='')) == [('',), ('a',), ('b',)]


def test_indexes(store):
    coll = people(store)
    location = coll.indices['location']
    tags = coll.indices['tags']
    assert location.get('LONDON')['name'] == 'ash'
    assert location.has('PARIS') and not location.has('ROME')
    assert location.get('ROME', default='none') == 'none'
    assert list(location.tups()) == [('LONDON',), ('LONDON',), ('PARIS',), ('UNDERGROWN',)]
    assert list(location.keys(prefix='LONDON')) == [('ash', 'LONDON'), ('birch', 'LONDON')]
    assert [p['name'] for p in location.values(reverse=True, max=2)] == ['undergrown', 'cedar']
    assert list(tags.pairs()) == [(('a',), ('undergrown', 'UNDERGROWN')),
                                  (('b',), ('ash', 'LONDON')),
                                  (('b',), ('undergrown', 'UNDERGROWN'))]
    assert tags.count() == 3 and tags.count(lo='b') == 2
    assert [t for t, _ in tags.items(hi='b', include=True)] == [('a',), ('b',), ('b',)]
    assert coll.indices['rev_name'].find(prefix='hc')['name'] == 'birch'


def test_update_and_delete_maintain_indexes(store):
    coll = people(store)
    tags = coll.indices['tags']
    coll.put({'name': 'ash', 'location': 'LONDON', 'tags': ['c', 'c', 'a']})
    assert list(tags.pairs(prefix='b')) == [(('b',), ('undergrown', 'UNDERGROWN'))]
    assert sorted(tags.tups()) == [('a',), ('a',), ('b',), ('c',)]
    deleted = coll.delete(('undergrown', 'UNDERGROWN'))
    assert deleted.data['tags'] == ['a', 'b']
    assert coll.delete(('undergrown', 'UNDERGROWN')) is None
    assert list(tags.tups()) == [('a',), ('c',)]
    record = coll.get(('ash', 'LONDON'), rec=True)
    record.data['tags'] = []
    coll.put(record)
    assert list(tags.tups()) == []
    coll.delete(coll.get(('birch', 'LONDON'), rec=True))
    assert coll.get(('birch', 'LONDON')) is None


def test_compound_and_none_index_values(store):
    coll = store.collection('c', key_func=lambda r: r['id'])
    pair = coll.add_index('pair', lambda r: (r['a'], r['b']) if r['a'] else None)
    coll.put({'id': 1, 'a': 'x', 'b': 2})
    coll.put({'id': 2, 'a': None, 'b': 3})
    coll.put({'id': 3, 'a': 'x', 'b': 1})
    assert list(pair.pairs()) == [(('x', 1), (3,)), (('x', 2), (1,))]
    assert pair.get(('x', 2))['id'] == 1


def test_auto_increment_keys(store):
    coll = store.collection('log')
    assert coll.put('first').key == (1,)
    assert coll.put('second').key == (2,)
    assert coll.put('explicit', key=10).key == (10,)
    assert coll.put('third').key == (3,)
    assert list(coll.values()) == ['first', 'second', 'third', 'explicit']


def test_txn_key_func(store):
    coll = store.collection('t', txn_key_func=lambda txn, rec: store.count('ids', txn=txn))
    with store.begin(write=True) as txn:
        assert coll.put('a', txn=txn).key == (1,)
        assert coll.put('b', txn=txn).key == (2,)
    assert store.count('ids', n=0) == 3


def test_transactions_commit_abort_and_read_own_writes(store):
    coll = people(store)
    with store.begin(write=True) as txn:
        coll.put({'name': 'elm', 'location': 'OSLO', 'tags': ['z']}, txn=txn)
        assert coll.get(('elm', 'OSLO'), txn=txn)['name'] == 'elm'
        assert coll.indices['tags'].get('z', txn=txn)['name'] == 'elm'
        # Calls without txn= join this thread's open write transaction.
        assert coll.get(('elm', 'OSLO'))['name'] == 'elm'
    assert coll.get(('elm', 'OSLO')) is not None
    with pytest.raises(RuntimeError):
        with store.begin(write=True) as txn:
            coll.delete(('ash', 'LONDON'), txn=txn)
            coll.put({'name': 'fir', 'location': 'OSLO', 'tags': []})
            raise RuntimeError('roll back')
    assert coll.get(('ash', 'LONDON')) is not None
    assert coll.get(('fir', 'OSLO')) is None
    txn = store.begin(write=True)
    coll.put({'name': 'gum', 'location': 'OSLO', 'tags': []}, txn=txn)
    txn.abort()
    assert coll.get(('gum', 'OSLO')) is None


def test_read_transaction_is_a_snapshot(store):
    coll = people(store)
    with store.begin() as snapshot:
        coll.put({'name': 'holly', 'location': 'ROME', 'tags': ['b']})
        assert coll.get(('holly', 'ROME'), txn=snapshot) is None
        assert coll.indices['tags'].count(txn=snapshot) == 3
    assert coll.indices['tags'].count() == 4


def test_nested_write_begin_raises_clearly(store):
    with store.begin(write=True):
        with pytest.raises(errors.TransactionError, match='already has a write'):
            store.begin(write=True)
        with store.begin() as reader:   # a read transaction is fine
            assert reader.write is False


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


def test_packers_and_custom_encoders(store):
    reverse = encodings.Encoder('reverse', lambda b: b[::-1], lambda b: b[::-1])
    store.add_encoder(reverse)
    coll = store.collection('packed', key_func=lambda r: r['k'], packer=encodings.ZLIB_PACKER)
    coll.put({'k': 1, 'text': 'x' * 1000})
    coll.put({'k': 2, 'text': 'y'}, packer=reverse)
    if encodings.LZ4_PACKER is not None:
        coll.put({'k': 3, 'text': 'z' * 50}, packer=encodings.LZ4_PACKER)
    assert coll.get(1)['text'] == 'x' * 1000
    assert coll.get(2)['text'] == 'y'
    json_coll = store.collection('json', encoder=encodings.make_json_encoder())
    json_coll.put({'tuple': (1, 2)})
    assert json_coll.get(1) == {'tuple': [1, 2]}
    pickled = store.collection('pickled', encoder=encodings.PICKLE_ENCODER)
    pickled.put({'tuple': (1, 2)})
    assert pickled.get(1) == {'tuple': (1, 2)}


def test_adding_an_index_to_existing_records_fills_it(store):
    coll = store.collection('late', key_func=lambda r: r['id'])
    for i in range(5):
        coll.put({'id': i, 'parity': i % 2})
    parity = coll.add_index('parity', lambda r: r['parity'])
    assert [k for _, k in parity.pairs(prefix=1)] == [(1,), (3,)]


def test_store_is_a_context_manager_and_refuses_use_after_close(tmp_path):
    with centidb.open('ListEngine') as store:
        coll = store.collection('x')
        coll.put('v')
    with pytest.raises(errors.EngineClosedError):
        coll.get(1)
    with pytest.raises(errors.EngineClosedError):
        store.collection('y')


@pytest.mark.parametrize('name', ['PlyvelEngine', 'LmdbEngine'])
def test_reopen_from_disk(name, tmp_path):
    reverse = encodings.Encoder('reverse', lambda b: b[::-1], lambda b: b[::-1])
    store = open_store(name, tmp_path)
    store.add_encoder(reverse)
    coll = store.collection('people', key_func=operator.itemgetter('name', 'location'),
                            encoder=encodings.make_json_encoder(), packer=reverse)
    coll.add_index('tags', lambda p: p['tags'])
    for person in PEOPLE:
        coll.put(person)
    logs = store.collection('log')
    logs.put('one')
    store.count('hits', n=5)
    store.close()

    store = open_store(name, tmp_path)
    with pytest.raises(errors.UnknownEncoderError, match='reverse'):
        store.collection('people')
    store.add_encoder(reverse)
    with pytest.raises(errors.EncoderMismatchError):
        store.collection('people', encoder=encodings.make_msgpack_encoder())
    coll = store.collection('people', key_func=operator.itemgetter('name', 'location'))
    assert coll.encoder.name == 'json' and coll.packer.name == 'reverse'
    assert coll.get(('ash', 'LONDON'))['tags'] == ['b']
    with pytest.raises(errors.IndexNotAddedError, match='tags'):
        coll.put({'name': 'x', 'location': 'y', 'tags': []})
    tags = coll.add_index('tags', lambda p: p['tags'])
    assert tags.count() == 3            # not rebuilt: the stored entries are used
    coll.put({'name': 'x', 'location': 'y', 'tags': ['q']})
    assert tags.get('q')['name'] == 'x'
    assert store.collection('log').put('two').key == (2,)
    assert store.count('hits', n=0) == 6
    store.close()


# --- regressions ------------------------------------------------------------------

def test_unregistered_custom_encoder_and_packer_register_themselves(store):
    rev = encodings.Encoder('rev', lambda b: b[::-1], lambda b: b[::-1])
    mine = encodings.Encoder('mine', lambda v: repr(v).encode(), lambda b: eval(b))
    coll = store.collection('c', encoder=mine, packer=rev)
    coll.put((1, 2))
    zlib_coll = store.collection('z')
    other = encodings.Encoder('other', lambda b: b[::-1], lambda b: b[::-1])
    zlib_coll.put('x', packer=other)                 # no transaction open: registers
    assert coll.get(1) == (1, 2) and zlib_coll.get(1) == 'x'
    late = encodings.Encoder('late', lambda b: b, lambda b: b)
    with store.begin(write=True) as txn:
        with pytest.raises(errors.UnknownEncoderError, match='add_encoder'):
            zlib_coll.put('y', packer=late, txn=txn)


def test_record_read_before_an_index_was_added_updates_it(store):
    coll = store.collection('c', key_func=lambda r: r['k'])
    coll.put({'k': 1, 't': 'x'})
    record = coll.get(1, rec=True)
    index = coll.add_index('t', lambda r: r['t'])
    record.data['t'] = 'y'
    coll.put(record)
    assert list(index.pairs()) == [(('y',), (1,))]


def test_record_from_another_collection_does_not_skip_the_old_read(store):
    a = store.collection('a', key_func=lambda r: r['k'])
    b = store.collection('b', key_func=lambda r: r['k'])
    index = b.add_index('t', lambda r: r['t'])
    record = a.put({'k': 1, 't': 'x'})
    b.put({'k': 1, 't': 'x'})
    record.data = {'k': 1, 't': 'y'}
    b.put(record)
    assert list(index.pairs()) == [(('y',), (1,))]


def test_ending_a_transaction_inside_its_block_is_fine(store):
    coll = store.collection('c')
    with store.begin(write=True) as txn:
        coll.put('kept', txn=txn)
        txn.commit()
    with store.begin(write=True) as txn:
        coll.put('dropped', txn=txn)
        txn.abort()
    assert list(coll.values()) == ['kept']


def test_abort_and_iterators_after_close_do_not_raise(tmp_path):
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'))
    coll = store.collection('c')
    coll.put('a')
    coll.put('b')
    txn = store.begin()
    iterator = coll.items()
    next(iterator)
    store.close()
    txn.abort()          # already ended by close(): nothing to do
    iterator.close()     # its read transaction too
