"""Record checksums (a CRC-32 trailer on each stored value) and packers per collection.

A collection that keeps checksums must never hand back a damaged value: each
read path raises :class:`~centidb.errors.ChecksumError` naming the
collection and the key, and ``verify()`` reports the record. A record whose
header names a packer its collection does not use is corrupt, whatever this
process has registered (pickle above all).
"""

import json
import os
import pickle
import subprocess
import sys

import pytest

import centidb
from centidb import checksums, encodings, keylib
from centidb.errors import ChecksumError, CorruptRecordError, StoreFormatError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLIPS = os.path.join(ROOT, 'stress', 'checksum_flips.py')


def list_store():
    return centidb.open('ListEngine')


def flipped(value, bit):
    data = bytearray(value)
    data[bit // 8] ^= 1 << (bit % 8)
    return bytes(data)


def meta_key(name):
    return keylib.packs((0, 'collection', name))


def test_stored_bytes_match_the_format_page():
    """docs/format.rst's example, byte for byte: header, msgpack, CRC-32 little-endian."""
    store = list_store()
    docs = store.collection('docs', checksum=True)
    docs.put('Example 42', key=1)
    stored = store.engine.get(keylib.packs(1, docs.prefix))
    golden = bytes.fromhex('04 aa 45 78 61 6d 70 6c 65 20 34 32 de 4b 61 be')
    assert stored == golden
    with open(os.path.join(ROOT, 'docs', 'format.rst'), encoding='utf-8') as fp:
        assert '04 aa 45 78 61 6d 70 6c 65 20 34 32 de 4b 61 be' in fp.read()
    assert checksums.opened(stored) == golden[:-4]
    assert json.loads(store.engine.get(meta_key('docs')))['checksum'] == 'crc32'


def _readers(coll, key):
    index = coll.indices['name']
    return {
        'get': lambda: coll.get(key),
        'get rec': lambda: coll.get(key, rec=True),
        'get raw': lambda: coll.get(key, raw=True),
        'get_many': lambda: coll.get_many([key]),
        'values': lambda: list(coll.values()),
        'items reversed': lambda: list(coll.items(reverse=True)),
        'index get': lambda: index.get('Example 42'),
        'index values': lambda: list(index.values()),
        'index items': lambda: list(index.items()),
        'put over it': lambda: coll.put({'id': 42, 'name': 'new'}),
        'put_many over it': lambda: coll.put_many([{'id': 42, 'name': 'new'}]),
        'delete': lambda: coll.delete(key),
    }


def test_every_bit_flip_raises_on_every_read_path():
    store = list_store()
    docs = store.collection('docs', key_func=lambda r: r['id'], checksum=True)
    docs.add_index('name', lambda r: r['name'])
    docs.put({'id': 41, 'name': 'Example 41'})
    docs.put({'id': 42, 'name': 'Example 42'})
    key_bytes = keylib.packs(42, docs.prefix)
    good = store.engine.get(key_bytes)
    for bit in range(len(good) * 8):
        store.engine.put(key_bytes, flipped(good, bit))
        for what, read in _readers(docs, (42,)).items():
            with pytest.raises(ChecksumError, match=r"^collection 'docs': the record under "
                                                    r"key \(42,\) is damaged") as info:
                read()
            assert isinstance(info.value, CorruptRecordError), what
        if bit % 16 == 0:
            problems = store.verify()
            assert [(p.collection, p.key) for p in problems if 'damaged' in p.message] == [
                ('docs', (42,))]
    store.engine.put(key_bytes, good)
    assert docs.get(42) == {'id': 42, 'name': 'Example 42'} and store.verify() == []


def test_a_damaged_batch_names_its_keys_and_intact_ones_read_right():
    store = list_store()
    coll = store.collection('c', key_func=lambda r: r['k'], checksum=True)
    coll.add_index('name', lambda r: r['name'])
    for k in range(10):
        coll.put({'k': k, 'name': f'n{k}'})
    found, made, _ = coll.batch(max_recs=5)
    assert (found, made) == (10, 2)
    assert store.verify() == []
    # A write inside a batch splits it: the plain records it writes are sealed too.
    coll.put({'k': 2, 'name': 'two'})
    coll.delete(7)
    assert store.verify() == []
    assert [r['name'] for r in coll.values()] == ['n0', 'n1', 'two', 'n3', 'n4', 'n5', 'n6',
                                                   'n8', 'n9']
    batches = [(k, v) for k, v in store.engine.items(*keylib.prefix_range((), coll.prefix))
               if v[0] & 0x80]
    assert batches and all(checksums.intact(v) for _, v in batches)
    key_bytes, value = batches[0]
    store.engine.put(key_bytes, flipped(value, 8 * (len(value) // 2)))
    members = [key for key in ((0,), (1,), (3,), (4,)) if key in
               [tuple(m) for m in keylib.unpacks_list(key_bytes, coll.prefix)]]
    for read in (lambda: coll.get(0), lambda: list(coll.values()),
                 lambda: coll.indices['name'].get('n0'), lambda: coll.put({'k': 1, 'name': 'x'})):
        with pytest.raises(ChecksumError, match=r"^collection 'c': the batch of keys .* is "
                                                r"damaged"):
            read()
    assert members  # the batch named holds the keys read above
    assert coll.get(9) == {'k': 9, 'name': 'n9'}
    problems = store.verify()
    assert problems and all(p.collection == 'c' for p in problems)
    assert any('is damaged' in p.message for p in problems)


def test_checksum_flip_campaign_finds_every_flip(tmp_path):
    """A short stress/checksum_flips.py: 50 bit flips in LMDB's data.mdb, all found."""
    result = subprocess.run(
        [sys.executable, FLIPS, '--flips', '50', '--seed', '3', '--dir', str(tmp_path)],
        capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'found 50/50' in result.stdout
    assert 'reads that returned a damaged record: 0' in result.stdout


def test_a_collection_without_checksums_keeps_the_old_format():
    store = list_store()
    plain = store.collection('plain', checksum=False)
    plain.put('Example 42', key=1)
    stored = store.engine.get(keylib.packs(1, plain.prefix))
    assert stored == bytes.fromhex('04 aa 45 78 61 6d 70 6c 65 20 34 32')
    assert 'checksum' not in json.loads(store.engine.get(meta_key('plain')))
    assert plain.checksum is False and plain.get(1) == 'Example 42'
    with pytest.raises(ValueError, match='without checksums'):
        store.collection('plain', checksum=True)
    assert store.checksums is False and store.collection('default').checksum is False
    store.checksums = True      # the recommended setup: new collections keep checksums
    assert store.collection('on').checksum is True
    assert store.collection('off', checksum=False).checksum is False
    with pytest.raises(ValueError, match='with checksums'):
        store.collection('on', checksum=False)


def test_checksums_are_an_option_of_open_and_store(tmp_path):
    """``open(..., checksums=True)`` (the recommended setup) and ``Store(engine, checksums=)``."""
    with centidb.open('lmdb', path=str(tmp_path / 'on'), checksums=True) as store:
        assert store.checksums is True
        on = store.collection('on')
        on.put('Example 42', key=1)
        assert on.checksum is True
        assert json.loads(store.engine.get(meta_key('on')))['checksum'] == 'crc32'
        assert checksums.intact(store.engine.get(keylib.packs(1, on.prefix)))
        assert store.collection('off', checksum=False).checksum is False
        store.checksums = False         # the attribute still decides afterwards
        assert store.collection('later').checksum is False
    with centidb.Store(centidb.engines.MemoryEngine(), checksums=True) as store:
        assert store.collection('c').checksum is True
    with centidb.open('memory') as store:
        assert store.checksums is False and store.collection('c').checksum is False
    with pytest.raises(TypeError):
        centidb.open('memory', True)    # keyword-only


def test_a_store_from_before_checksums_and_packer_lists_keeps_working(tmp_path):
    """Metadata without 'checksum' and 'packers', values without trailers."""
    path = str(tmp_path / 'old')
    store = centidb.open('LmdbEngine', path=path)
    reverse = encodings.Encoder('reverse', lambda b: b[::-1], lambda b: b[::-1])
    store.add_encoder(reverse)
    old = store.collection('old', key_func=lambda r: r['id'], checksum=False)
    old.put({'id': 1, 'v': 'plain'})
    old.put({'id': 2, 'v': 'reversed'}, packer=reverse)
    info = json.loads(store.engine.get(meta_key('old')))
    del info['packers']
    store.engine.put(meta_key('old'), json.dumps(info).encode())
    store.close()
    store = centidb.open('LmdbEngine', path=path)
    store.add_encoder(reverse)
    old = store.collection('old', key_func=lambda r: r['id'])
    assert old.checksum is False
    assert list(old.values()) == [{'id': 1, 'v': 'plain'}, {'id': 2, 'v': 'reversed'}]
    old.put({'id': 3, 'v': 'new'}, packer=reverse)
    assert store.engine.get(keylib.packs(3, old.prefix))[1:] == (
        encodings.make_msgpack_encoder().encode({'id': 3, 'v': 'new'})[::-1])
    assert store.verify() == []
    store.close()


@pytest.mark.parametrize('bad', ['crc64', 1, None])
def test_an_unknown_checksum_in_metadata_is_a_store_format_error(bad):
    store = list_store()
    store.collection('c')
    info = json.loads(store.engine.get(meta_key('c')))
    info['checksum'] = bad
    store.engine.put(meta_key('c'), json.dumps(info).encode())
    other = centidb.Store(store.engine)
    with pytest.raises(StoreFormatError, match="'c'.*checksum"):
        other.collection('c')


# --- packers per collection ---------------------------------------------------

RAN = []


def _ran():
    RAN.append('unpickled')
    return b''


class _Evil:
    def __reduce__(self):
        return _ran, ()


def _pickle_store(checksum, legacy=False):
    """A store where pickle is opted into for one collection, and a msgpack one."""
    store = list_store()
    store.collection('pickled', encoder=encodings.PICKLE_ENCODER).put({1, 2}, key=1)
    docs = store.collection('docs', checksum=checksum)
    docs.put('fine', key=1)
    if legacy:      # metadata from before collections recorded their packers
        info = json.loads(store.engine.get(meta_key('docs')))
        del info['packers']
        store.engine.put(meta_key('docs'), json.dumps(info).encode())
        store = centidb.Store(store.engine)
        store.add_encoder(encodings.PICKLE_ENCODER)
        docs = store.collection('docs')
    return store, docs


@pytest.mark.parametrize('checksum', [False, True], ids=['plain', 'checksum'])
@pytest.mark.parametrize('legacy', [False, True], ids=['new', 'legacy'])
@pytest.mark.parametrize('named', ['pickle', 'msgpack', 'json', 'unnumbered'])
def test_a_header_naming_another_packer_is_corrupt(checksum, legacy, named):
    store, docs = _pickle_store(checksum, legacy)
    catalog_ids = {name: store._catalog.encoder_id(encoder) for name, encoder in
                   (('pickle', encodings.PICKLE_ENCODER),
                    ('msgpack', encodings.make_msgpack_encoder()),
                    ('json', encodings.make_json_encoder()))}
    header = 99 if named == 'unnumbered' else catalog_ids[named]
    payload = pickle.dumps(_Evil())
    for value in (bytes([header]) + payload, bytes([0x80 | header]) + b'\x00\x01' + payload):
        store.engine.put(keylib.packs(2, docs.prefix), docs.records.seal(value))
        RAN.clear()
        for read in (lambda: docs.get(2), lambda: list(docs.values()),
                     lambda: docs.get(2, raw=True), lambda: docs.get_many([2])):
            with pytest.raises(CorruptRecordError, match=r"^collection 'docs': the (record|batch)"
                                                         r" .*2.* cannot be read") as info:
                read()
            assert 'add_encoder' not in str(info.value)
            assert 'trust' not in str(info.value)
        problems = store.verify()
        assert problems and all('add_encoder' not in p.message for p in problems)
        assert RAN == []
    assert docs.get(1) == 'fine'


def test_a_packer_given_to_put_or_batch_is_recorded_for_the_collection():
    store = list_store()
    reverse = store.add_encoder(encodings.Encoder('reverse', lambda b: b[::-1],
                                                  lambda b: b[::-1]))
    a = store.collection('a', key_func=lambda r: r['k'])
    b = store.collection('b', key_func=lambda r: r['k'])
    assert json.loads(store.engine.get(meta_key('a')))['packers'] == []
    a.put({'k': 1}, packer=reverse)
    assert json.loads(store.engine.get(meta_key('a')))['packers'] == ['reverse']
    with store.begin(write=True) as txn:
        b.put({'k': 1}, packer=reverse, txn=txn)
        txn.abort()
    assert json.loads(store.engine.get(meta_key('b')))['packers'] == []
    # b never took 'reverse': a record of b naming it is corrupt.
    stored = store.engine.get(keylib.packs(1, a.prefix))
    store.engine.put(keylib.packs(1, b.prefix), stored)
    with pytest.raises(CorruptRecordError, match="'b'.*'reverse', which is not a packer"):
        b.get(1)
    b.put({'k': 1})
    for k in range(2, 5):
        b.put({'k': k})
    b.batch(lo=2, packer=reverse)
    assert json.loads(store.engine.get(meta_key('b')))['packers'] == ['reverse']
    assert b.get(1) == {'k': 1} and [r['k'] for r in b.values()] == [1, 2, 3, 4]
    reopened = centidb.Store(store.engine)
    reopened.add_encoder(reverse)
    assert reopened.collection('a').get(1) == {'k': 1}


def test_a_collection_from_before_packer_lists_refuses_an_encoder_as_packer_writing_nothing():
    store = list_store()
    old = store.collection('old', checksum=False)
    old.put('kept', key=1)
    info = json.loads(store.engine.get(meta_key('old')))
    del info['packers']
    store.engine.put(meta_key('old'), json.dumps(info).encode())
    store = centidb.Store(store.engine)
    store.add_encoder(encodings.PICKLE_ENCODER)
    old = store.collection('old')
    before = list(store.engine.items())
    with store.begin(write=True) as txn:
        for call in (lambda: old.put('x', key=2, packer=encodings.PICKLE_ENCODER, txn=txn),
                     lambda: old.batch(packer=encodings.PICKLE_ENCODER, txn=txn)):
            with pytest.raises(ValueError, match="'old' was created before .*'pickle'"):
                call()
        old.put('y', key=3, txn=txn)
    after = dict(store.engine.items())
    assert keylib.packs(2, old.prefix) not in after
    assert after[meta_key('old')] == dict(before)[meta_key('old')]
    assert (old.get(1), old.get(2), old.get(3)) == ('kept', None, 'y')
