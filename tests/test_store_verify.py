"""centidb.store.verify: Store.verify() finds what is wrong, and Collection.reindex() repairs indexes."""

import json

import pytest

import centidb
from centidb import batches, checksums, keylib, metarecords
from centidb.errors import CorruptRecordError, UnknownIndexError
from centidb.store.verify import Problem, key_problem
from stores import ENGINE_NAMES, open_store


@pytest.fixture(params=ENGINE_NAMES)
def store(request, tmp_path):
    with open_store(request.param, tmp_path) as store:
        yield store


def fill(store, n=30):
    people = store.collection('people', key_func=lambda r: r['id'])
    people.add_index('city', lambda r: r['city'])
    people.add_index('tags', lambda r: r['tags'])
    log = store.collection('log')
    log.add_index('level', lambda r: r['level'])
    for i in range(n):
        people.put({'id': i, 'city': f'c{i % 4}', 'tags': [i % 2, i % 3]})
        log.put({'level': i % 5})
    return people, log


def messages(problems):
    return [str(problem) for problem in problems]


def test_a_sound_store_has_no_problems(store):
    people, log = fill(store)
    assert store.verify() == []
    people.batch(max_recs=7)
    log.batch(prefix=(), max_recs=3)
    assert store.verify() == []


def test_an_empty_store_is_sound(store):
    assert store.verify() == []


def test_problems_name_collection_and_key(store):
    people, _ = fill(store)
    store.engine.put(keylib.packs((3,), people.prefix), b'')
    problems = store.verify()
    assert problems == [Problem('people', (3,), 'the stored value is empty')]
    assert str(problems[0]) == "collection 'people', key (3,): the stored value is empty"


def test_undecodable_record_is_reported_and_reads_raise(store):
    people, _ = fill(store)
    key_bytes = keylib.packs((4,), people.prefix)
    bad = store.engine.get(key_bytes)[:1] + b'\xc1\xc1'
    store.engine.put(key_bytes, checksums.seal(bad) if people.checksum else bad)
    problems = store.verify()
    assert len(problems) == 1
    assert problems[0].collection == 'people' and problems[0].key == (4,)
    assert 'cannot be decoded' in problems[0].message
    with pytest.raises(CorruptRecordError, match=r"'people'.*\(4,\)"):
        people.get(4)
    with pytest.raises(CorruptRecordError, match=r'\(4,\)'):
        list(people.values())


def test_entry_pointing_at_missing_record(store):
    people, _ = fill(store)
    city = people.indices['city']
    store.engine.put(keylib.packs([('c9',), (99,)], city.prefix), b'')
    problems = store.verify()
    assert [(p.collection, p.key) for p in problems] == [('people', (99,))]
    assert "index 'city'" in problems[0].message and 'missing record' in problems[0].message


def test_missing_and_stale_entries_of_added_indexes(store):
    people, _ = fill(store)
    city = people.indices['city']
    store.engine.delete(keylib.packs([('c1',), (5,)], city.prefix))
    store.engine.put(keylib.packs([('c3',), (6,)], city.prefix), b'')   # 6 is in c2
    found = sorted(messages(store.verify()))
    assert found == [
        "collection 'people', key (5,): index 'city': the record has no entry for ('c1',)",
        "collection 'people', key (6,): index 'city': a stale entry for ('c3',) (the "
        "record does not make it)",
    ]
    people.reindex('city')
    assert store.verify() == []


def test_reindex_needs_an_added_index(store):
    people, _ = fill(store)
    with pytest.raises(UnknownIndexError, match='nope'):
        people.reindex('nope')


def test_unbound_index_entries_are_checked_one_way(tmp_path):
    path = str(tmp_path / 'db.lmdb')
    with centidb.open('LmdbEngine', path=path) as store:
        people, _ = fill(store)
        city_prefix = people.indices['city'].prefix
        # A stale entry: only an added index can tell.
        store.engine.put(keylib.packs([('c3',), (6,)], city_prefix), b'')
    with centidb.open('LmdbEngine', path=path) as store:
        store.collection('people')       # no add_index: both indexes unbound
        assert store.verify() == []
        store.engine.put(keylib.packs([('c0',), (77,)], city_prefix), b'')
        assert [p.key for p in store.verify()] == [(77,)]


def test_counter_below_an_auto_key(store):
    _, log = fill(store, n=5)
    with store.begin(write=True) as txn:
        txn.engine_txn.put(keylib.packs((0, 'counter', 'log:key')), keylib.packs(3))
    problems = store.verify()
    assert [(p.collection, p.key) for p in problems] == [('log', (5,))]
    assert "counter 'log:key' (3)" in problems[0].message


def test_orphaned_prefix_and_corrupt_metadata(store):
    fill(store, n=3)
    store.engine.put(keylib.packs((500, 'x')), b'1')
    store.engine.put(keylib.packs((0, 'collection', 'bad')), b'{not json')
    found = messages(store.verify())
    assert any('prefix id 500' in message for message in found)
    assert any("collection 'bad'" in message and 'unreadable' in message for message in found)


def test_broken_batch_is_reported(store):
    people, _ = fill(store)
    people.batch(max_recs=10)
    key_bytes, stored = next((k, v) for k, v in store.engine.items(*keylib.prefix_range(
        (), people.prefix)) if batches.is_batch(v))
    store.engine.put(key_bytes, stored[:3] + b'garbage')
    problems = store.verify()
    assert problems and all(p.collection == 'people' for p in problems)
    assert any('batch cannot be read' in p.message for p in problems)


def test_verify_joins_the_open_write_transaction(store):
    people, _ = fill(store, n=3)
    with store.begin(write=True):
        people.put({'id': 50, 'city': 'x', 'tags': []}, blind=True)
        assert store.verify() == []


def test_verify_reports_progress_per_collection_in_name_order(store):
    for name in ('b', 'a', 'c'):
        store.collection(name).put({'x': 1})
    seen = []
    assert store.verify(progress=seen.append) == []
    assert seen == ['a', 'b', 'c']


# --- damage verify() used to miss ---------------------------------------------------

def _meta(store, *key):
    with store.engine.begin() as etxn:
        return metarecords.read_record(etxn, *key)


def test_two_collections_with_one_prefix_id(store):
    """Regression: the check built {id: name}, so the duplicate collapsed."""
    people, log = fill(store, n=3)
    info = dict(_meta(store, 'collection', 'log'), id=people.coll_id)
    store.engine.put(keylib.packs((0, 'collection', 'log')), json.dumps(info).encode())
    found = messages(store.verify())
    assert any(f"prefix id {people.coll_id} is used by collection 'log' and collection "
               f"'people'" in message for message in found), found


def test_an_index_and_a_collection_with_one_prefix_id(store):
    people, log = fill(store, n=3)
    level = _meta(store, 'index', log.coll_id, 'level')['id']
    info = dict(_meta(store, 'collection', 'people'), id=level)
    store.engine.put(keylib.packs((0, 'collection', 'people')), json.dumps(info).encode())
    assert any(f'prefix id {level} is used by' in message
               for message in messages(store.verify()))


def test_an_index_entry_holding_a_value(store):
    people, _ = fill(store, n=3)
    entry = next(iter(store.engine.keys(*keylib.prefix_range(
        (), people.indices['city'].prefix))))
    store.engine.put(entry, b'surprise')
    problems = store.verify()
    assert [(p.collection, p.message) for p in problems] == [
        ('people', "index 'city': the entry for ('c0',) holds a value (8 bytes), "
                   "not nothing")]


@pytest.mark.parametrize('key, value, words', [
    ((0, 'format'), b'{"format": "centidb", "version": true}', "'version' is True"),
    ((0, 'sys', 'generation'), keylib.packs(2 ** 2000), 'metadata generation'),
    ((0, 'sys', 'prefix'), keylib.packs(-4), 'prefix counter'),
])
def test_malformed_format_and_sys_records(store, key, value, words):
    """Regression: a format version of true and a generation of 2**2000 were accepted."""
    fill(store, n=2)
    store.engine.put(keylib.packs(key), value)
    found = messages(store.verify())
    assert len(found) == 1 and words in found[0], found


def test_a_record_stored_under_a_key_its_key_func_does_not_give(store):
    """Regression: a hand-edited dump loaded such a record cleanly; it could
    neither be found by its key nor saved again."""
    people, _ = fill(store, n=3)
    people.put({'id': 2, 'city': 'c2', 'tags': []}, key=99)
    people.delete(2)
    problems = store.verify()
    assert [(p.collection, p.key) for p in problems] == [('people', (99,))]
    assert 'its key function gives (2,)' in problems[0].message
    people.batch(max_recs=10)
    assert [(p.collection, p.key) for p in store.verify()] == [('people', (99,))]


def test_key_problem():
    store = centidb.open('ListEngine')
    keyed = store.collection('keyed', key_func=lambda rec: rec['id'])
    assert key_problem(keyed, (1,), {'id': 1}) is None
    assert 'gives (2,)' in key_problem(keyed, (1,), {'id': 2})
    assert 'raised KeyError' in key_problem(keyed, (1,), {})
    assert key_problem(store.collection('auto'), (5,), 'x') is None


def test_batches_in_a_collection_whose_metadata_says_none(store):
    people, _ = fill(store, n=6)
    people.batch(max_recs=3)
    assert store.verify() == []
    info = _meta(store, 'collection', 'people')
    del info['batched']
    store.engine.put(keylib.packs((0, 'collection', 'people')), json.dumps(info).encode())
    problems = [p for p in centidb.Store(store.engine).verify() if 'batched' in p.message]
    assert len(problems) == 1 and problems[0].collection == 'people'


def test_undecodable_keys_in_the_metadata_space(store):
    """Keys starting with the element 0's byte, then bytes no key holds: reported."""
    fill(store, n=2)
    junk = keylib.packs(0) + b'\xff\x00'
    store.engine.put(junk, b'x')
    found = [p for p in store.verify() if 'cannot be decoded' in p.message]
    assert len(found) == 1 and repr(junk) in found[0].message


def test_a_counter_too_long_to_print(store):
    """Regression: reporting a counter of -2**20000 raised ValueError (repr's digit limit)."""
    _, log = fill(store, n=2)
    store.engine.put(keylib.packs((0, 'counter', 'log:key')), keylib.packs(-2 ** 20000))
    assert messages(store.verify()) == [
        "collection 'log', key (2,): the counter 'log:key' (<an int of 20001 bits>) "
        "would hand out this key again"]
