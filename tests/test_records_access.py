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
