"""The mapping protocol of a collection, on every engine.

``key in coll``, ``coll[key]``, ``coll[key] = value``, ``del coll[key]``,
``iter(coll)``, ``len(coll)`` and ``bool(coll)``, each in a transaction of
its own or in the thread's write transaction.
"""

import pytest

from engine_helpers import EVENTS, events


def test_collection_mapping_protocol(store):
    coll = events(store)
    assert ('libc6', 1) in coll
    assert ('libc6', 3) not in coll
    assert coll[('libc6', 2)] == {'pkg': 'libc6', 'n': 2}
    with pytest.raises(KeyError) as info:
        coll[('libc6', 3)]
    assert info.value.args == (('libc6', 3),)
    assert list(iter(coll)) == list(coll.keys())
    assert len(coll) == len(EVENTS)
    coll[('zlib', 7)] = {'pkg': 'zlib', 'n': 7}
    assert coll.indices['pkg'].count(prefix='zlib') == 2
    del coll[('zlib', 7)]
    assert coll.indices['pkg'].count(prefix='zlib') == 1
    with pytest.raises(KeyError):
        del coll[('zlib', 7)]
    assert 'libc6' in coll.indices['pkg'] and 'libc7' not in coll.indices['pkg']


def test_bare_values_and_empty_collections(store):
    coll = store.collection('bare', key_func=lambda r: r['k'])
    assert not coll and len(coll) == 0 and list(coll) == []
    coll.put({'k': 5})
    assert coll and 5 in coll and (5,) in coll and 6 not in coll
    assert coll[5] == {'k': 5}


def test_mapping_protocol_joins_the_threads_write_transaction(store):
    coll = events(store)
    with store.begin(write=True) as txn:
        coll.put({'pkg': 'new', 'n': 1}, txn=txn)
        assert ('new', 1) in coll and coll[('new', 1)]['n'] == 1
        del coll[('new', 1)]
        assert ('new', 1) not in coll
        coll[('new', 2)] = {'pkg': 'new', 'n': 2}
        txn.abort()
    assert ('new', 2) not in coll and len(coll) == len(EVENTS)


def test_contains_finds_records_inside_batches(store):
    coll = events(store)
    coll.batch()
    assert all(key in coll for key in EVENTS)
    assert ('libc6', 3) not in coll
    assert coll[('libc6-dev', 2)]['n'] == 2
    del coll[('libc6-dev', 2)]
    assert ('libc6-dev', 2) not in coll and len(coll) == len(EVENTS) - 1


def test_bare_keys_are_one_element_tuples_and_missing_ones_raise_key_error_as_given(store):
    coll = store.collection('plain')
    coll['x'] = 1
    coll[('y', 2)] = 2
    assert list(coll.items()) == [(('x',), 1), (('y', 2), 2)]
    assert coll['x'] == coll[('x',)] == 1 and list(coll) == [('x',), ('y', 2)]
    for missing in ('z', ('y', 3)):
        with pytest.raises(KeyError) as info:
            coll[missing]
        assert info.value.args == (missing,)
        with pytest.raises(KeyError):
            del coll[missing]
    del coll['x']
    del coll[('y', 2)]
    assert not coll and len(coll) == 0 and list(coll) == []


def test_a_key_that_cannot_be_encoded_raises_a_centidb_error(store):
    from centidb.errors import UnsupportedKeyTypeError
    coll = store.collection('plain')
    for call in (lambda: coll[object()], lambda: object() in coll,
                 lambda: coll.__setitem__(object(), 1), lambda: coll.__delitem__(object())):
        with pytest.raises(UnsupportedKeyTypeError):
            call()
    assert len(coll) == 0
