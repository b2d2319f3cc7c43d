"""centidb.collinfo: a collection's stored metadata, as a session knows it.

``CollectionMeta`` answers which packers a collection's records may use and
whether it holds batches, and records a packer first used (undone with the
transaction that used it) and the first batch.
"""

import pytest

from centidb import encodings
from centidb.batches import PackerNotAllowed
from centidb.collinfo import CollectionMeta
from centidb.encodings import Encoder

from stores import list_store

LOUD = Encoder('loud', lambda data: data[::-1], lambda data: data[::-1])


def info_of(store, name):
    """The stored metadata ``dict`` of collection `name`."""
    with store.engine.begin() as etxn:
        return store._catalog.collection_info(etxn, name)


def meta_of(store, coll):
    """A fresh CollectionMeta of `coll`, from its stored metadata."""
    return CollectionMeta(store._catalog, coll.name, info_of(store, coll.name), coll.encoder,
                          coll.packer)


def unbatched(store, meta):
    with store.engine.begin() as etxn:
        return meta.unbatched(etxn)


def test_a_new_collection_allows_its_own_and_the_builtin_packers_only():
    store = list_store()
    coll = store.collection('docs')
    meta = meta_of(store, coll)
    assert meta.coll_id == coll.coll_id and meta.batched is False
    assert meta.packer_allowed('plain') and meta.packer_allowed('zlib')
    assert not meta.packer_allowed('loud')
    assert meta.new_packer(LOUD) is True
    assert meta.new_packer(encodings.ZLIB_PACKER) is False


def test_a_packer_first_used_is_recorded_and_undone_with_its_transaction():
    store = list_store()
    coll = store.collection('docs')
    store.add_encoder(LOUD)
    with pytest.raises(RuntimeError):
        with store.begin(write=True) as txn:
            coll.put({'a': 1}, key=1, packer=LOUD, txn=txn)
            raise RuntimeError('abort')
    assert coll.get(1) is None
    coll.put({'a': 2}, key=2, packer=LOUD)
    assert coll.get(2) == {'a': 2}
    assert meta_of(store, coll).packer_allowed('loud')


def test_a_collection_from_before_packers_were_recorded_refuses_a_new_one():
    store = list_store()
    coll = store.collection('docs')
    info = dict(info_of(store, 'docs'))
    del info['packers']
    meta = CollectionMeta(store._catalog, 'docs', info, coll.encoder, coll.packer)
    assert meta.packer_allowed('loud')                # any packer but the encoders
    assert not meta.packer_allowed('msgpack')
    with pytest.raises(ValueError, match='before collections recorded their packers'):
        meta.new_packer(Encoder('msgpack', bytes, bytes))


def test_packer_of_refuses_an_id_the_store_never_numbered():
    store = list_store()
    coll = store.collection('docs')
    with pytest.raises(PackerNotAllowed, match='never numbered'):
        meta_of(store, coll).packer_of(200)


def test_batching_is_recorded_and_seen_by_unbatched():
    store = list_store()
    coll = store.collection('docs')
    coll.put_many([{'n': n} for n in range(5)])
    meta = meta_of(store, coll)
    assert unbatched(store, meta)
    coll.batch()
    assert not unbatched(store, meta)     # read in the transaction
    meta.reload(info_of(store, 'docs'))
    assert meta.batched and not unbatched(store, meta)
