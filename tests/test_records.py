"""The record layer as a package: what ``centidb.records`` offers the layers above."""

import centidb
from centidb import keylib, records
from centidb.records import reader, record


def test_the_package_offers_the_record_modules_names():
    for name in records.__all__:
        module = reader if name == 'RecordReader' else record
        assert getattr(records, name) is getattr(module, name)


def test_the_package_record_is_the_public_record():
    assert records.Record is centidb.Record


def test_a_record_put_and_read_through_the_package_names():
    store = centidb.open('MemoryEngine')
    coll = store.collection('people', key_func=lambda data: data['name'])
    got = coll.put({'name': 'ann', 'age': 3})
    assert isinstance(got, records.Record)
    assert records.as_key(got.key) == ('ann',)
    assert coll.get('ann', rec=True) == got
    assert records.index_entries(((lambda data: data['age'], b'\x01'),), got.data, b'') == [
        keylib.packs((3,), b'\x01')]
