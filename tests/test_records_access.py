"""How a collection's records are read (:mod:`centidb.records.access`), on every engine.

The read paths decode stored values, whatever packer wrote them, and name
the record (collection and key) whose value cannot be decoded; they find
records inside batches, also batches another store on the same engine made
after this one opened the collection; ``get_many`` keeps the order of its
keys. Index reads through entries are in ``test_index.py``.
"""

import pytest

import centidb
from centidb import encodings, keylib
from centidb.errors import CorruptKeyError as CorruptKeyError_, CorruptRecordError

from stores import open_store


def store_raw(store, coll, key, stored):
    """Write `stored` as the record under `key`, as damage would."""
    with store.engine.begin(write=True) as etxn:
        etxn.put(keylib.packs(key, coll.prefix), stored)


def people(store):
    coll = store.collection('people', key_func=lambda p: p['name'])
    coll.add_index('city', lambda p: p['city'])
    coll.put_many([{'name': 'ann', 'city': 'Leeds'}, {'name': 'bob', 'city': 'York'}])
    return coll


READS = {
    'get': lambda coll: coll.get('bob'),
    'get rec': lambda coll: coll.get('bob', rec=True),
    'get_many': lambda coll: coll.get_many(['ann', 'bob']),
    'items': lambda coll: list(coll.items()),
    'values': lambda coll: list(coll.values()),
    'index get': lambda coll: coll.indices['city'].get('York'),
    'index values': lambda coll: list(coll.indices['city'].values()),
}


@pytest.mark.parametrize('read', sorted(READS))
def test_every_read_names_the_record_it_cannot_decode(store, read):
    coll = people(store)
    header = store.engine.get(keylib.packs(('bob',), coll.prefix))[:1]
    store_raw(store, coll, ('bob',), header + b'\xc1')     # 0xc1: never valid msgpack
    with pytest.raises(CorruptRecordError,
                       match=r"collection 'people': the record under key \('bob',\) "
                             r'cannot be decoded') as info:
        READS[read](coll)
    assert info.value.__cause__ is not None


def test_an_empty_stored_value_is_a_corrupt_record(store):
    coll = people(store)
    store_raw(store, coll, ('ann',), b'')
    with pytest.raises(CorruptRecordError, match=r"\('ann',\).*the stored value is empty"):
        coll.get('ann')
    assert coll.get('bob') == {'name': 'bob', 'city': 'York'}


def test_a_packer_id_the_store_never_numbered_makes_the_record_unreadable(store):
    coll = people(store)
    store_raw(store, coll, ('ann',), b'\xfa' + b'data')
    with pytest.raises(CorruptRecordError, match=r"\('ann',\) cannot be read: its header names "
                                                 r'packer id 250, which the store never'):
        coll.get('ann')


@pytest.mark.parametrize('packer', [encodings.PLAIN_PACKER, encodings.ZLIB_PACKER])
def test_records_read_back_whatever_packer_wrote_them(store, packer):
    coll = store.collection('docs', packer=packer)
    value = {'text': 'abc' * 100, 'n': [1, 2.5, None]}
    coll.put(value, key=1)
    coll.put(value, key=2, packer=encodings.ZLIB_PACKER)
    coll.put(value, key=3, packer=encodings.PLAIN_PACKER)
    assert coll.get_many([1, 2, 3]) == [value] * 3
    raw = coll.encoder.encode(value)
    assert [coll.get(k, encoded=True) for k in (1, 2, 3)] == [raw] * 3


def test_get_many_keeps_the_order_of_its_keys_and_gives_the_default_for_missing(store):
    coll = people(store)
    assert coll.get_many(['bob', 'zed', 'ann'], default='-') == [
        {'name': 'bob', 'city': 'York'}, '-', {'name': 'ann', 'city': 'Leeds'}]
    coll.batch()
    assert coll.get_many(['zed', 'ann', 'bob']) == [
        None, {'name': 'ann', 'city': 'Leeds'}, {'name': 'bob', 'city': 'York'}]


def test_get_rec_gives_a_record_a_later_put_updates(store):
    coll = people(store)
    rec = coll.get('ann', rec=True)
    assert (rec.key, rec.data) == (('ann',), {'name': 'ann', 'city': 'Leeds'})
    rec.data['city'] = 'Hull'
    coll.put(rec)
    assert coll.indices['city'].get('Hull') == rec.data
    assert coll.indices['city'].get('Leeds') is None


@pytest.mark.parametrize('name', ['PlyvelEngine', 'LmdbEngine'])
def test_records_another_store_batched_after_this_one_opened_them_are_read(tmp_path, name):
    store = open_store(name, tmp_path)
    coll = people(store)
    assert coll.get('ann') is not None                # opened and read, unbatched
    other = centidb.Store(store.engine)
    same = other.collection('people', key_func=lambda p: p['name'])
    same.add_index('city', lambda p: p['city'])
    same.batch()
    assert coll.get('ann') == {'name': 'ann', 'city': 'Leeds'}
    assert coll.get_many(['bob', 'ann']) == [{'name': 'bob', 'city': 'York'},
                                             {'name': 'ann', 'city': 'Leeds'}]
    assert [key for key, _ in coll.items()] == [('ann',), ('bob',)]
    assert 'bob' in coll and coll.indices['city'].get('York')['name'] == 'bob'
    store.close()


def test_a_missing_record_gives_the_default_batched_or_not(store):
    coll = people(store)
    assert coll.get('zed') is None and coll.get('zed', 'dflt') == 'dflt'
    assert coll.indices['city'].get('Rome', 'dflt', rec=True) == 'dflt'
    coll.batch()
    assert coll.get('zed', 'dflt') == 'dflt'
    assert coll.get('bob') == {'name': 'bob', 'city': 'York'}
    assert coll.get('ann', rec=True).data == {'name': 'ann', 'city': 'Leeds'}


def test_a_damaged_value_of_a_collection_with_checksums_is_named(store):
    from centidb.errors import ChecksumError
    store.checksums = True
    coll = people(store)
    assert coll.checksum
    key_bytes = keylib.packs(('bob',), coll.prefix)
    stored = store.engine.get(key_bytes)
    store_raw(store, coll, ('bob',), stored[:1] + bytes([stored[1] ^ 1]) + stored[2:])
    for read in (lambda: coll.get('bob'), lambda: coll.get('bob', encoded=True)):
        with pytest.raises(ChecksumError, match=r"collection 'people': the record under key "
                                                r"\('bob',\) is damaged"):
            read()
    assert coll.get('ann', encoded=True) == coll.encoder.encode({'name': 'ann', 'city': 'Leeds'})


def test_a_record_key_that_cannot_be_decoded_is_named(store):
    from centidb.errors import CorruptKeyError
    coll = people(store)
    with store.engine.begin(write=True) as etxn:
        etxn.put(coll.prefix + b'\xff\xff', etxn.get(keylib.packs(('ann',), coll.prefix)))
    with pytest.raises(CorruptKeyError, match="collection 'people': a record key is corrupt"):
        list(coll.keys())


def test_index_reads_split_each_entry_into_index_tuple_and_record_key(store):
    coll = people(store)
    by_city = coll.indices['city']
    coll.put({'name': 'cy', 'city': 'Leeds'})
    assert list(by_city.pairs()) == [(('Leeds',), ('ann',)), (('Leeds',), ('cy',)),
                                     (('York',), ('bob',))]
    assert list(by_city.keys('Leeds', 'York')) == [('ann',), ('cy',)]
    assert [p['name'] for p in by_city.values(reverse=True)] == ['bob', 'cy', 'ann']
    assert by_city.has('York') and 'Leeds' in by_city and not by_city.has('Rome')
    with store.engine.begin(write=True) as etxn:      # an entry without a record key
        etxn.put(keylib.packs(('Zurich',), by_city.prefix), b'')
    with pytest.raises(CorruptKeyError_, match='does not hold an index tuple and a record key'):
        list(by_city.pairs())
    assert by_city.get('Zurich') is None                  # no entry of the form it seeks
    with store.engine.begin(write=True) as etxn:          # tuple, key, and one part more
        etxn.delete(keylib.packs(('Zurich',), by_city.prefix))
        etxn.put(keylib.packs(('Zurich',), by_city.prefix) + bytes([keylib.KEY_SEP])
                 + keylib.packs(('x',)) + bytes([keylib.KEY_SEP]) + keylib.packs(('y',)), b'')
    for read in (lambda: by_city.get('Zurich', rec=True), lambda: list(by_city.pairs())):
        with pytest.raises(CorruptKeyError_, match='does not hold an index tuple and a record'):
            read()
    for read in (lambda: by_city.get('Zurich'), lambda: list(by_city.values())):
        with pytest.raises(CorruptKeyError_):
            read()


def test_an_entry_naming_a_missing_record_is_named(store):
    from centidb.errors import IndexInconsistentError
    coll = people(store)
    with store.engine.begin(write=True) as etxn:
        etxn.delete(keylib.packs(('bob',), coll.prefix))
    for read in (lambda: coll.indices['city'].get('York'),
                 lambda: coll.indices['city'].get('York', rec=True)):
        with pytest.raises(IndexInconsistentError, match="index 'city' of collection 'people' "
                                                         r"points at missing record \('bob',\)"):
            read()


def test_an_index_is_filled_in_chunks_of_1000_records():
    store = centidb.open('MemoryEngine')
    coll = store.collection('nums')
    coll.put_many([{'n': n} for n in range(1001)])
    calls, seen = [], []

    def n_of(rec):
        seen.append(rec['n'])
        return rec['n']

    coll.add_index('n', n_of, progress=calls.append)   # as documented
    assert calls == [1000, 1]
    assert seen == list(range(1001))                   # records are read in key order
    assert [rec['n'] for rec in coll.indices['n'].values(999)] == [999, 1000]


def test_index_get_many_of_records_reads_the_first_record_of_each_tuple():
    from centidb.errors import IndexInconsistentError
    store = centidb.open('MemoryEngine')
    coll = people(store)
    coll.put({'name': 'al', 'city': 'York'})
    by_city = coll.indices['city']
    got = by_city.get_many(['York', 'Rome', 'Leeds'], default='-', rec=True)
    assert got[1] == '-'
    assert [(rec.key, rec.data) for rec in (got[0], got[2])] == [
        (('al',), {'name': 'al', 'city': 'York'}), (('ann',), {'name': 'ann', 'city': 'Leeds'})]
    got[0].data['city'] = 'Hull'
    coll.put(got[0])
    assert by_city.get_many(['York', 'Hull']) == [{'name': 'bob', 'city': 'York'},
                                                  {'name': 'al', 'city': 'Hull'}]
    assert by_city.get_many(['Hull', 'Rome'], rec=True)[1] is None
    with store.engine.begin(write=True) as etxn:          # tuple, key, and one part more
        etxn.put(keylib.packs(('Zurich',), by_city.prefix) + bytes([keylib.KEY_SEP])
                 + keylib.packs(('x',)) + bytes([keylib.KEY_SEP]) + keylib.packs(('y',)), b'')
    with pytest.raises(CorruptKeyError_, match='does not hold an index tuple and a record key'):
        by_city.get_many(['Zurich'], rec=True)
    with store.engine.begin(write=True) as etxn:
        etxn.delete(keylib.packs(('bob',), coll.prefix))
    with pytest.raises(IndexInconsistentError, match=r"index 'city' of collection 'people' "
                                                     r"points at missing record \('bob',\)"):
        by_city.get_many(['York'], rec=True)


@pytest.mark.parametrize('batched', [False, True])
def test_delete_and_delete_many_give_back_what_they_deleted(batched):
    store = centidb.open('MemoryEngine')
    coll = people(store)
    coll.put_many([{'name': 'cy', 'city': 'Ely'}, {'name': 'di', 'city': 'York'}])
    if batched:
        coll.batch()
    gone = coll.delete_many(['ann', 'zed', 'ann', 'bob'])
    assert [rec and (rec.key, rec.data) for rec in gone] == [
        (('ann',), {'name': 'ann', 'city': 'Leeds'}), None, None,
        (('bob',), {'name': 'bob', 'city': 'York'})]
    rec = coll.delete('cy')
    assert (rec.key, rec.data) == (('cy',), {'name': 'cy', 'city': 'Ely'})
    assert coll.delete('cy') is None and coll.delete_many(['cy']) == [None]
    assert list(coll.items()) == [(('di',), {'name': 'di', 'city': 'York'})]
    assert list(coll.indices['city'].pairs()) == [(('York',), ('di',))]


def general(store):
    """people(), with a before-write hook: every write takes the general path."""
    coll = people(store)
    coll.before_write(lambda key, value: None)
    return coll


def test_a_record_put_back_after_the_indexes_changed_keeps_every_entry_right():
    store = centidb.open('MemoryEngine')
    coll = people(store)
    rec = coll.get('ann', rec=True)
    initials = coll.add_index('initials', lambda p: p['name'][0] + p['city'][0])
    rec.data['city'] = 'Hull'
    coll.put(rec)
    assert list(initials.pairs()) == [(('aH',), ('ann',)), (('bY',), ('bob',))]
    assert list(coll.indices['city'].pairs()) == [(('Hull',), ('ann',)), (('York',), ('bob',))]


def test_a_record_put_back_after_its_stored_value_changed_keeps_every_entry_right():
    store = centidb.open('MemoryEngine')
    coll = general(store)
    rec = coll.get('ann', rec=True)
    coll.put({'name': 'ann', 'city': 'York'})
    rec.data['city'] = 'Hull'
    coll.put(rec)
    assert list(coll.indices['city'].pairs()) == [(('Hull',), ('ann',)), (('York',), ('bob',))]


def test_a_record_put_under_another_key_keeps_the_entries_of_both_right():
    store = centidb.open('MemoryEngine')
    coll = store.collection('tags')
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    coll.before_write(lambda key, value: None)
    coll.put({'tag': 'a'}, key=1)
    coll.put({'tag': 'a'}, key=2)             # stored exactly as the record under 1
    rec = coll.get(1, rec=True)
    rec.data = {'tag': 'b'}
    coll.put(rec, key=2)
    assert list(tags.pairs()) == [(('a',), (1,)), (('b',), (2,))]


def test_only_a_key_of_one_int_moves_the_counter_of_an_auto_keyed_collection():
    store = centidb.open('MemoryEngine')
    coll = store.collection('log')
    coll.put({}, key='x')
    coll.put({}, key=(9, 1))
    coll.put({}, key=(True,))
    assert coll.put({}).key == (1,)
    coll.put({}, key=5)
    assert coll.put({}).key == (6,)
    assert coll.put_many([{}, {}]) == [(7,), (8,)]
    assert coll.put({}).key == (9,)


def test_keys_and_entries_up_to_the_engines_longest_key_are_stored():
    from centidb.engines import MemoryEngine, WrapperEngine
    from centidb.records.record import ENTRY_SEP
    engine = WrapperEngine(MemoryEngine())
    store = centidb.Store(engine)
    coll = store.collection('people', key_func=lambda p: p['name'])
    city = coll.add_index('city', lambda p: p.get('city'))

    def entry_size(tup):
        return len(keylib.packs(tup, city.prefix) + ENTRY_SEP + keylib.packs(('ann',)))

    limit = entry_size(('Leeds',))
    engine.max_key_size = limit
    coll.before_write(lambda key, value: None)     # the general path, knowing the limit
    coll.put({'name': 'ann', 'city': 'Leeds'})     # its entry is as long as the engine allows
    longer = entry_size(('Leedsx',))
    assert longer > limit
    with pytest.raises(ValueError, match=rf"index 'city' entry for key \('ann',\) packs to "
                                         rf'{longer} bytes; the engine stores at most {limit}'):
        coll.put({'name': 'ann', 'city': 'Leedsx'})
    names = ['n' * size for size in range(limit)]
    name = next(name for name in names if len(keylib.packs((name,), coll.prefix)) == limit)
    coll.put({'name': name})                        # no entry; the key as long as allowed
    with pytest.raises(ValueError, match=rf"key \('{name}n+',\) of collection 'people' packs "
                                         rf'to \d+ bytes; the engine stores at most {limit}'):
        coll.put({'name': name + 'nn'})
    assert coll.get(name) == {'name': name} and city.get('Leeds')['name'] == 'ann'
    assert len(coll) == 2


def test_a_blind_put_of_the_general_path_leaves_the_old_entries():
    store = centidb.open('MemoryEngine')
    coll = general(store)
    coll.put({'name': 'ann', 'city': 'Hull'}, blind=True)       # as documented: no read
    assert list(coll.indices['city'].pairs()) == [
        (('Hull',), ('ann',)), (('Leeds',), ('ann',)), (('York',), ('bob',))]


def test_a_put_over_a_record_inside_a_batch_replaces_it():
    store = centidb.open('MemoryEngine')
    coll = people(store)
    coll.put({'name': 'cy', 'city': 'Ely'})
    coll.batch()
    coll.put({'name': 'bob', 'city': 'Hull'})
    assert list(coll.items()) == [(('ann',), {'name': 'ann', 'city': 'Leeds'}),
                                  (('bob',), {'name': 'bob', 'city': 'Hull'}),
                                  (('cy',), {'name': 'cy', 'city': 'Ely'})]
    assert list(coll.indices['city'].pairs()) == [
        (('Ely',), ('cy',)), (('Hull',), ('bob',)), (('Leeds',), ('ann',))]


@pytest.mark.parametrize('packer', [encodings.PLAIN_PACKER, encodings.ZLIB_PACKER])
def test_the_common_case_writer_packs_with_the_collections_packer(packer):
    store = centidb.open('MemoryEngine')
    coll = store.collection('docs', key_func=lambda rec: rec['id'], packer=packer)
    values = [{'id': i, 'text': 'abc' * 100} for i in range(3)]
    coll.put(values[0])
    coll.put_many(values[1:])
    assert coll.get_many([0, 1, 2]) == values
    stored = store.engine.get(keylib.packs((0,), coll.prefix))
    assert packer.decode(stored[1:]) == coll.encoder.encode(values[0])


def test_index_functions_see_a_record_as_a_json_encoder_reads_it_back():
    from centidb.encodings import make_json_encoder
    store = centidb.open('MemoryEngine')
    coll = store.collection('docs', key_func=lambda rec: rec['id'], encoder=make_json_encoder())
    tags = coll.add_index('tags', lambda rec: rec['tags'])    # a list: an entry per element
    coll.put({'id': 1, 'tags': ('a', 'b')})                     # JSON reads a tuple back as a list
    auto_keyed = store.collection('log', encoder=make_json_encoder())
    auto_tags = auto_keyed.add_index('tags', lambda rec: rec['tags'])
    auto_keyed.put({'tags': ('a', 'b')})
    assert list(tags.pairs()) == [(('a',), (1,)), (('b',), (1,))]
    assert list(auto_tags.pairs()) == [(('a',), (1,)), (('b',), (1,))]
    assert store.verify() == []


def test_a_common_case_put_waits_until_every_stored_index_is_added():
    from centidb.errors import IndexNotAddedError
    store = centidb.open('MemoryEngine')
    people(store).add_index('initial', lambda p: p['name'][0])
    other = centidb.Store(store.engine)
    same = other.collection('people', key_func=lambda p: p['name'])    # no index added
    for write in (lambda: same.put({'name': 'cy', 'city': 'Ely'}),
                  lambda: same.put_many([{'name': 'cy', 'city': 'Ely'}])):
        with pytest.raises(IndexNotAddedError, match="stored index.es. 'city', 'initial' that"):
            write()
    assert same.get('cy') is None and len(same) == 2


@pytest.mark.parametrize('delete', ['delete', 'delete_many'])
def test_deleting_a_record_inside_a_batch_keeps_the_others_in_one_batch(delete):
    store = centidb.open('MemoryEngine')
    coll = store.collection('nums')
    coll.put_many([{'n': n} for n in range(1, 6)])
    coll.batch()

    def physical_keys():
        lo, hi = keylib.prefix_range((), coll.prefix)
        return [key for key, _ in store.engine.items(lo, hi)]

    assert len(physical_keys()) == 1
    if delete == 'delete':
        assert coll.delete(3).data == {'n': 3}
    else:
        assert coll.delete_many([3])[0].data == {'n': 3}
    assert len(physical_keys()) == 1
    assert list(coll.items()) == [((n,), {'n': n}) for n in (1, 2, 4, 5)]


def test_deleting_a_record_that_cannot_be_decoded_names_the_call_that_deletes_it():
    from centidb.errors import CorruptRecordError
    store = centidb.open('MemoryEngine')
    coll = people(store)
    header = store.engine.get(keylib.packs(('bob',), coll.prefix))[:1]
    store_raw(store, coll, ('bob',), header + b'\xc1')
    with pytest.raises(CorruptRecordError, match=r"to delete it as it is stored, call "
                                                 r"store.remove_record\('people', \('bob',\)\)$"):
        coll.delete('bob')
    nums = store.collection('nums')
    nums.put_many([{'n': n} for n in range(1, 6)])
    nums.batch()
    lo, hi = keylib.prefix_range((), nums.prefix)
    [(batch_key, stored)] = store.engine.items(lo, hi)
    with store.engine.begin(write=True) as etxn:
        etxn.put(bytes(batch_key), bytes(stored)[:len(stored) // 2])
    with pytest.raises(CorruptRecordError,
                       match=r"call store.remove_record\('nums', \(3,\), whole_batch=True\), "
                             r'which deletes its whole batch$'):
        nums.delete_many([3])


@pytest.mark.parametrize('make', [people, general])
def test_a_put_over_a_record_that_cannot_be_decoded_names_it(make):
    store = centidb.open('MemoryEngine')
    coll = make(store)
    header = store.engine.get(keylib.packs(('bob',), coll.prefix))[:1]
    store_raw(store, coll, ('bob',), header + b'\xc1')
    with pytest.raises(CorruptRecordError, match=r"collection 'people': the record under key "
                                                 r"\('bob',\) cannot be decoded"):
        coll.put({'name': 'bob', 'city': 'Hull'})
