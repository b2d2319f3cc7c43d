"""``Store.remove_record()``: deleting a record whose stored bytes cannot be decoded.

``delete()`` decodes the old value to find its index entries, so it raises
:class:`~centidb.errors.CorruptRecordError` for a damaged record;
``remove_record()`` deletes the stored value as it is and the index entries
that point at its key, found by scanning the collection's indexes.
"""

import pytest

import centidb
from centidb import encodings, keylib
from centidb.errors import CorruptRecordError, UnknownCollectionError

UNDECODABLE = b'\x04\xc1'       # the plain packer's header, then a byte msgpack never uses


@pytest.fixture
def store():
    with centidb.open('memory') as store:
        yield store


def people(store):
    coll = store.collection('people', key_func=lambda r: r['id'])
    coll.add_index('city', lambda r: r['city'])
    coll.add_index('tags', lambda r: r['tags'])
    for i, city in enumerate(['Leeds', 'Bath', 'Leeds', 'York', 'Bath'], 1):
        coll.put({'id': i, 'city': city, 'tags': ['a', 'b'] if i % 2 else []})
    return coll


def damage(store, coll, key):
    with store.engine.begin(write=True) as etxn:
        etxn.put(keylib.packs(key, coll.prefix), UNDECODABLE)


def test_a_damaged_record_is_removed_with_its_index_entries(store):
    coll = people(store)
    damage(store, coll, (3,))
    with pytest.raises(CorruptRecordError, match=r'under key \(3,\)'):
        coll.delete(3)
    assert any(problem.key == (3,) for problem in store.verify())
    changes = []
    store.on_commit(changes.append)
    assert store.remove_record('people', 3) is True
    assert changes == [[centidb.Change('people', (3,), None)]]
    assert store.verify() == []
    assert coll.get(3) is None and [key for key, in coll.keys()] == [1, 2, 4, 5]
    assert list(coll.indices['city'].pairs()) == [
        (('Bath',), (2,)), (('Bath',), (5,)), (('Leeds',), (1,)), (('York',), (4,))]
    assert list(coll.indices['tags'].pairs()) == [
        (('a',), (1,)), (('a',), (5,)), (('b',), (1,)), (('b',), (5,))]
    assert store.remove_record('people', (3,)) is False        # nothing left to remove


def test_index_entries_pointing_at_a_missing_record_are_removed(store):
    coll = people(store)
    with store.engine.begin(write=True) as etxn:     # the record goes, its entries stay
        etxn.delete(keylib.packs((2,), coll.prefix))
    assert [p.key for p in store.verify()] == [(2,)]
    changes = []
    store.on_commit(changes.append)
    assert store.remove_record('people', 2) is False
    assert store.verify() == [] and changes == []
    assert [key for tup, key in coll.indices['city'].pairs() if tup == ('Bath',)] == [(5,)]


def test_an_explicit_transaction_commits_or_aborts_it(store):
    coll = people(store)
    damage(store, coll, (1,))
    with pytest.raises(RuntimeError):
        with store.begin(write=True) as txn:
            assert store.remove_record('people', 1, txn=txn) is True
            raise RuntimeError('abort')
    with pytest.raises(CorruptRecordError):
        coll.get(1)
    with store.begin(write=True) as txn:
        store.remove_record('people', 1, txn=txn)
    assert coll.get(1) is None and store.verify() == []


def test_a_record_in_a_batch_goes_only_with_its_whole_batch(store):
    coll = people(store)
    coll.put({'id': 9, 'city': 'Hull', 'tags': ['z']})
    coll.batch(lo=2, hi=5, packer=encodings.ZLIB_PACKER)
    assert coll.get(3)['city'] == 'Leeds' and store.verify() == []
    lo, hi = keylib.prefix_range((), coll.prefix)
    batch_keys = [key for key, _ in store.engine.items(lo, hi)
                  if len(keylib.unpacks_list(key, coll.prefix)) == 2]
    assert len(batch_keys) == 1
    with store.engine.begin(write=True) as etxn:        # damaged: no member can be read
        etxn.put(batch_keys[0], b'\x81\xff\xff\xff')
    with pytest.raises(CorruptRecordError):
        coll.delete(3)
    with pytest.raises(ValueError, match=r'key \(3,\) is in a batch with every record from '
                                         r'\(2,\) to \(4,\).*whole_batch=True'):
        store.remove_record('people', 3)
    assert store.remove_record('people', 3, whole_batch=True) is True
    assert [key for key, in coll.keys()] == [1, 5, 9]
    assert store.verify() == []
    assert sorted(key for _, key in coll.indices['city'].pairs()) == [(1,), (5,), (9,)]
    assert [key for _, key in coll.indices['tags'].pairs()] == [(1,), (5,), (1,), (5,), (9,)]


def test_names_and_keys_are_checked(store):
    people(store)
    with pytest.raises(UnknownCollectionError):
        store.remove_record('nobody', 1)
    with pytest.raises(TypeError):
        store.remove_record('', 1)
    with pytest.raises(TypeError):
        store.remove_record('people', object())


def test_delete_of_an_undecodable_record_names_remove_record(store):
    coll = people(store)
    damage(store, coll, (3,))
    with pytest.raises(CorruptRecordError, match=r"under key \(3,\) cannot be decoded.*"
                                                 r"store\.remove_record\('people', \(3,\)\)"):
        coll.delete(3)
    with pytest.raises(CorruptRecordError, match=r"store\.remove_record\('people', \(3,\)\)"):
        coll.delete_many([1, 3])
    assert coll.get(1) is not None                  # nothing was deleted
    assert store.remove_record('people', (3,)) is True
    assert store.verify() == []


def test_delete_in_a_damaged_batch_names_remove_record_with_whole_batch(store):
    coll = people(store)
    coll.batch(lo=2, hi=5, packer=encodings.ZLIB_PACKER)
    lo, hi = keylib.prefix_range((), coll.prefix)
    batch_key, = [key for key, _ in store.engine.items(lo, hi)
                  if len(keylib.unpacks_list(key, coll.prefix)) == 2]
    with store.engine.begin(write=True) as etxn:
        etxn.put(batch_key, b'\x81\xff\xff\xff')
    with pytest.raises(CorruptRecordError, match=r"store\.remove_record\('people', \(3,\), "
                                                 r"whole_batch=True\)"):
        coll.delete(3)
    with pytest.raises(CorruptRecordError, match=r"whole_batch=True"):
        coll.delete_many([3])
