"""centidb.records.entry: Collection.get/put and Index.get, where they start."""

import pytest

import centidb
from centidb import impl, keylib
from centidb.collection import Collection
from centidb.index import Index
from centidb.records import entry


def test_the_collection_and_index_methods_are_the_entry_points():
    assert entry.__file__.endswith('.py') == (impl.COMPILED is None)
    assert Collection.get is entry.collection_get
    assert Collection.put is entry.collection_put
    assert Index.get is entry.index_get


def test_put_outside_a_transaction_commits_one_of_its_own_and_joins_an_open_one():
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    record = coll.put({'k': 1})
    assert record.key == (1,) and coll.get(1) == {'k': 1}
    with store.begin(write=True) as txn:
        coll.put({'k': 2})
        assert coll.get(2, txn=txn) == {'k': 2}
        txn.abort()
    assert coll.get(2) is None
    store.close()


def test_index_get_with_rec_or_without_txn_takes_get_many():
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    coll.put({'k': 1, 'tag': 'a'})
    assert tags.get('a') == {'k': 1, 'tag': 'a'}
    assert tags.get('a', rec=True).key == (1,)
    assert tags.get('zz', 'none') == 'none'
    with store.begin() as txn:
        assert tags.get('a', txn=txn) == {'k': 1, 'tag': 'a'}
        assert tags.get('zz', 'none', txn=txn) == 'none'
    store.close()


@pytest.mark.parametrize('checksum', [False, True], ids=['plain', 'checksum'])
def test_get_in_a_transaction_answers_each_option_as_outside_one(checksum):
    """Collection.get given txn= takes the reader for a value or a Record;
    encoded= (or raw=) still gives the encoder's bytes, a missing key the
    default."""
    from centidb import encodings
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'], checksum=checksum)
    value = {'k': 1, 'v': 'x'}
    coll.put(value)
    encoded = encodings.make_msgpack_encoder().encode(value)
    outside = [coll.get(1), coll.get(1, encoded=True), coll.get(1, raw=True),
               coll.get(1, rec=True).data, coll.get(2, default='none', encoded=True)]
    assert outside == [value, encoded, encoded, value, 'none']
    with store.begin() as txn:
        assert [coll.get(1, txn=txn), coll.get(1, encoded=True, txn=txn),
                coll.get(1, raw=True, txn=txn), coll.get(1, rec=True, txn=txn).data,
                coll.get(2, default='none', encoded=True, txn=txn)] == outside
    store.close()


def test_put_returns_the_stored_record_on_the_writers_path_and_the_general_one():
    """The writer's path (key_func, no packer) and the general one (a packer
    given, or counter keys) each store the value once and return its Record;
    a put is not blind unless asked, so the old index entry goes."""
    import zlib

    from centidb import encodings
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    log = store.collection('log')
    with store.begin(write=True) as txn:
        fast = txn.engine_txn.fast
        before = fast.writes
        record = coll.put({'k': 1, 'tag': 'a'}, txn=txn)
        assert (record.key, record.data) == ((1,), {'k': 1, 'tag': 'a'})
        assert fast.writes - before == 2        # the record and its one entry, once
    record = coll.put({'k': 1, 'tag': 'b'})
    assert [tup for tup, _ in tags.items()] == [('b',)]
    record = coll.put({'k': 2, 'tag': 'z' * 50}, packer=encodings.ZLIB_PACKER)
    assert (record.key, record.data) == ((2,), {'k': 2, 'tag': 'z' * 50})
    stored = store.engine.get(keylib.packs((2,), coll.prefix))
    assert zlib.decompress(stored[1:]) == coll.get(2, encoded=True)
    assert coll.get(2) == {'k': 2, 'tag': 'z' * 50}
    assert log.put({'n': 1}).key == (1,) and log.put({'n': 2}).key == (2,)
    assert list(log.items()) == [((1,), {'n': 1}), ((2,), {'n': 2})]
    store.close()
