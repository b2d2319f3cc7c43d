"""Batch compression: edge cases, layout, limits and reopening, on every engine.

The stateful test (test_collection_stateful.py) interleaves batch() with
puts, deletes and reads against a model; these tests pin down the cases the
issue names explicitly. The last section tests the batch format functions of
:mod:`centidb.batches` directly: exact bytes, size limits, and every
truncated or malformed value raising ``CorruptRecordError``.
"""

import zlib

import pytest

import centidb
from centidb import batches, encodings, errors, keylib

from stores import ENGINE_NAMES, open_store


@pytest.fixture(params=ENGINE_NAMES)
def store(request, tmp_path):
    store = open_store(request.param, tmp_path)
    yield store
    store.close()


def make(store, keys, name='c'):
    coll = store.collection(name, key_func=lambda r: tuple(r['k']))
    coll.add_index('tag', lambda r: r['tag'])
    for key in keys:
        coll.put({'k': list(key), 'tag': str(key)})
    return coll


def physical(store, coll):
    """The collection's physical records: ('batch', members) or ('plain', key)."""
    lo, hi = keylib.prefix_range((), coll.prefix)
    out = []
    for key_bytes, stored in store.engine.items(lo, hi):
        if batches.is_batch(stored):
            last, first = keylib.unpacks_list(key_bytes, coll.prefix)
            out.append(('batch', first, last))
        else:
            out.append(('plain', keylib.unpacks(key_bytes, coll.prefix)))
    return out


def test_keys_of_different_lengths_keep_their_order(store):
    coll = make(store, [(1,), (2,), (2, 5), (3,)])
    assert coll.batch(hi=(2, 5)) == (2, 1, (2,))
    assert physical(store, coll) == [('batch', (1,), (2,)), ('plain', (2, 5)), ('plain', (3,))]
    keys = [(1,), (2,), (2, 5), (3,)]
    assert list(coll.keys()) == keys
    assert list(coll.keys(reverse=True)) == keys[::-1]
    assert list(coll.keys(prefix=2)) == [(2,), (2, 5)]
    assert list(coll.keys(prefix=2, reverse=True)) == [(2, 5), (2,)]
    assert list(coll.keys(hi=(2,), include=True, reverse=True)) == [(2,), (1,)]
    assert list(coll.keys(lo=(2,), max=2)) == [(2,), (2, 5)]
    assert coll.get((2,))['tag'] == '(2,)' and coll.get((2, 5))['tag'] == '(2, 5)'
    assert coll.count(lo=(1, 0), hi=(3,)) == 2


def test_batch_of_one_record(store):
    coll = make(store, [('a',), ('b',)])
    assert coll.batch(hi='b', max_recs=1) == (1, 1, ('a',))
    assert physical(store, coll)[0] == ('batch', ('a',), ('a',))
    assert coll.get('a')['tag'] == "('a',)"
    assert list(coll.keys(reverse=True)) == [('b',), ('a',)]


def test_adjacent_batches_and_straddling_queries(store):
    keys = [(n,) for n in range(10)]
    coll = make(store, keys)
    assert coll.batch(max_recs=3) == (10, 4, (9,))
    assert [p[0] for p in physical(store, coll)] == ['batch'] * 4
    for lo in range(-1, 11):
        for hi in range(lo, 12):
            expected = [(n,) for n in range(10) if lo <= n < hi]
            assert list(coll.keys(lo=lo, hi=hi)) == expected
            assert list(coll.keys(lo=lo, hi=hi, reverse=True)) == expected[::-1]
            assert coll.count(lo=lo, hi=hi) == len(expected)
    assert [r['k'] for r in coll.indices['tag'].values(startswith='(4')] == [[4]]
    assert [r['k'] for r in coll.indices['tag'].values(prefix='(4')] == []


def test_empty_range_batches_nothing(store):
    coll = make(store, [(1,), (2,)])
    before = list(store.engine.items())
    assert coll.batch(lo=5, hi=9) == (0, 0, None)
    assert coll.batch(prefix='nothing') == (0, 0, None)
    assert list(store.engine.items()) == before


def test_batch_never_crosses_a_collection_boundary(store):
    first = make(store, [(1,), (2,)], name='first')
    second = make(store, [(1,), (2,)], name='second')
    assert first.batch() == (2, 1, (2,))
    assert [p[0] for p in physical(store, second)] == ['plain', 'plain']
    assert list(second.keys()) == [(1,), (2,)]
    assert second.batch() == (2, 1, (2,))
    assert list(first.values()) == [{'k': [1], 'tag': '(1,)'}, {'k': [2], 'tag': '(2,)'}]


def test_put_and_delete_inside_a_batch(store):
    keys = [(n,) for n in range(6)]
    coll = make(store, keys)
    coll.batch()
    coll.put({'k': [3], 'tag': 'changed'})             # a member: split around it
    coll.put({'k': [2, 5], 'tag': 'new'}, blind=True)  # a new key inside the range
    coll.delete((0,))
    expected = [(1,), (2,), (2, 5), (3,), (4,), (5,)]
    assert list(coll.keys()) == expected
    assert list(coll.keys(reverse=True)) == expected[::-1]
    assert coll.get((3,))['tag'] == 'changed' and coll.get((2, 5))['tag'] == 'new'
    tags = coll.indices['tag']
    assert sorted(t for (t,), _ in tags.pairs()) == sorted(
        ['(1,)', '(2,)', 'new', 'changed', '(4,)', '(5,)'])
    assert tags.get('(4,)')['k'] == [4] and not tags.has('(3,)') and not tags.has('(0,)')


def test_limits_are_checked(store):
    coll = make(store, [(1,)])
    for kwargs in ({'max_recs': 0}, {'max_recs': batches.MAX_MEMBERS + 1},
                   {'max_bytes': 0}, {'max_bytes': batches.MAX_VALUE_BYTES + 1}):
        with pytest.raises(ValueError, match='batch format'):
            coll.batch(**kwargs)
    with pytest.raises(TypeError):
        coll.batch(max_recs='8')


def test_check_limits_accepts_exactly_the_range_the_format_holds():
    assert batches.check_limits(None, None) is None
    for max_recs, max_bytes in [(1, 1), (batches.MAX_MEMBERS, batches.MAX_VALUE_BYTES)]:
        assert batches.check_limits(max_recs, max_bytes) is None
        assert batches.check_limits(max_recs, None) is None
        assert batches.check_limits(None, max_bytes) is None
    for args, match in [((0, None), r'^max_recs=0 is outside .*: 1 to 65535$'),
                        ((65536, 1), r'^max_recs=65536 is outside'),
                        ((None, 0), r'^max_bytes=0 is outside .*: 1 to 4294967295$'),
                        ((1, 2 ** 32), r'^max_bytes=4294967296 is outside'),
                        ((1, -1), r'^max_bytes=-1 is outside')]:
        with pytest.raises(ValueError, match=match):
            batches.check_limits(*args)
    for args, match in [(('8', None), r"^max_recs must be an int or None, not 'str'$"),
                        ((True, None), r"^max_recs must be an int or None, not 'bool'$"),
                        ((None, 1.0), r"^max_bytes must be an int or None, not 'float'$")]:
        with pytest.raises(TypeError, match=match):
            batches.check_limits(*args)


def test_largest_limits_are_accepted_by_batch(store):
    coll = make(store, [(1,), (2,)])
    most = {'max_recs': batches.MAX_MEMBERS, 'max_bytes': batches.MAX_VALUE_BYTES}
    assert coll.batch(**most) == (2, 1, (2,))
    assert coll.batch(max_recs=1, max_bytes=1) == (2, 2, (2,))
    assert physical(store, coll) == [('batch', (1,), (1,)), ('batch', (2,), (2,))]


def test_max_bytes_bounds_each_batch(store):
    coll = make(store, [(n,) for n in range(20)])
    found, made, last = coll.batch(max_bytes=100)
    assert found == 20 and made > 1
    for key_bytes, stored in store.engine.items(*keylib.prefix_range((), coll.prefix)):
        if batches.is_batch(stored):
            members = coll.records.view.encoded_members(stored)
            assert len(members) == 1 or sum(len(k) + len(v) for k, v in members) <= 100
    assert [k for (k,) in coll.keys()] == list(range(20))


def test_compression_shrinks_similar_records(tmp_path):
    store = centidb.open('ListEngine')
    coll = store.collection('feed')
    for n in range(64):
        coll.put({'title': 'A fairly long and repetitive title', 'body': 'lorem ipsum ' * 20,
                  'n': n})
    size = lambda: sum(len(k) + len(v) for k, v in store.engine.items(
        *keylib.prefix_range((), coll.prefix)))
    before = size()
    coll.batch(max_recs=64)
    assert size() * 5 < before
    assert [v['n'] for v in coll.values()] == list(range(64))


@pytest.mark.parametrize('name', ['PlyvelEngine', 'LmdbEngine'])
def test_reopen_reads_batches_or_names_the_missing_packer(name, tmp_path):
    reverse = encodings.Encoder('reverse', lambda b: b[::-1], lambda b: b[::-1])
    store = open_store(name, tmp_path)
    coll = make(store, [(n,) for n in range(5)])
    coll.batch(hi=3, packer=encodings.ZLIB_PACKER)
    store.add_encoder(reverse)
    coll.batch(lo=3, packer=reverse)
    store.close()

    store = open_store(name, tmp_path)
    coll = store.collection('c', key_func=lambda r: tuple(r['k']))
    assert coll.get((1,))['tag'] == '(1,)'           # zlib is built in
    with pytest.raises(errors.UnknownEncoderError, match='reverse'):
        coll.get((4,))
    store.add_encoder(reverse)
    assert [k for (k,) in coll.keys()] == [0, 1, 2, 3, 4]
    coll.add_index('tag', lambda r: r['tag'])
    coll.put({'k': [2], 'tag': 'after reopen'})       # writes still split batches
    assert coll.indices['tag'].get('after reopen')['k'] == [2]
    assert [k for (k,) in coll.keys(reverse=True)] == [4, 3, 2, 1, 0]
    store.close()


def test_batching_inside_a_transaction_rolls_back(store):
    coll = make(store, [(1,), (2,)])
    before = list(store.engine.items())
    with pytest.raises(RuntimeError):
        with store.begin(write=True) as txn:
            coll.batch(txn=txn)
            assert list(coll.keys(txn=txn)) == [(1,), (2,)]
            raise RuntimeError('roll back')
    assert list(store.engine.items()) == before


@pytest.mark.parametrize('name', ['PlyvelEngine', 'LmdbEngine'])
def test_reopen_after_a_rolled_back_batch_still_finds_later_batches(name, tmp_path):
    store = open_store(name, tmp_path)
    coll = make(store, [(n,) for n in range(4)])
    with pytest.raises(RuntimeError):
        with store.begin(write=True) as txn:
            coll.batch(txn=txn)
            raise RuntimeError('roll back')
    coll.batch()
    store.close()
    store = open_store(name, tmp_path)
    coll = store.collection('c', key_func=lambda r: tuple(r['k']))
    assert coll.get((1,))['k'] == [1]       # found inside the batch after reopening
    store.close()


# --- the batch format itself: exact bytes, limits and corruption, no store ----------

PLAIN = encodings.PLAIN_PACKER
# Three members with different key and value sizes, so that swapping first and
# last, or keys and values, or misplacing an offset changes the bytes.
MEMBERS = [(b'K1', b'v'), (b'K22', b'value2'), (b'K333', b'')]
ENCODED = (bytes([0x80 | 5]) + b'\x00\x03'                    # flag | packer id, count
           + b'\x00\x02' b'\x00\x00\x00\x01'                  # key and value sizes
           + b'\x00\x03' b'\x00\x00\x00\x06'
           + b'\x00\x04' b'\x00\x00\x00\x00'
           + b'K1K22K333' + b'vvalue2')                       # keys, then values


def test_batch_format_exact_bytes():
    assert batches.encode_batch(5, PLAIN, MEMBERS) == ENCODED
    assert batches.decode_batch(ENCODED, PLAIN, 'c') == MEMBERS
    assert batches.batch_key(b'P', MEMBERS) == b'PK333\x01K1'
    assert batches.batch_key(b'', MEMBERS[:1]) == b'K1\x01K1'
    assert batches.batch_packer_id(ENCODED) == 5
    assert batches.batch_packer_id(bytes([0xFF])) == 0x7F
    assert batches.batch_packer_id(bytes([0x80])) == 0
    assert batches.is_batch(ENCODED) is True
    assert batches.is_batch(bytes([0x80])) is True
    assert batches.is_batch(bytes([0x7F, 0xFF])) is False
    assert batches.is_batch(bytes([0x00])) is False
    assert batches.BATCH_FLAG == 0x80


def test_batch_format_compressed_payload_round_trips():
    members = [(bytes([0x1C, n]), b'value %d ' % n * 20) for n in range(50)]
    stored = batches.encode_batch(0x7F, encodings.ZLIB_PACKER, members)
    assert stored[:3] == b'\xff\x00\x32' and len(stored) < 1000
    assert batches.decode_batch(stored, encodings.ZLIB_PACKER, 'c') == members
    with pytest.raises(errors.CorruptRecordError, match="collection 'c' cannot be unpacked") as info:
        batches.decode_batch(stored[:3] + b'not zlib', encodings.ZLIB_PACKER, 'c')
    assert isinstance(info.value.__cause__, zlib.error)   # the packer's error is the cause


def test_batch_of_empty_keys_and_values_is_exactly_its_table():
    stored = batches.encode_batch(0, PLAIN, [(b'', b'')])
    assert stored == b'\x80\x00\x01' + b'\x00' * 6
    assert batches.decode_batch(stored, PLAIN, 'c') == [(b'', b'')]


class _Sized(bytes):
    """bytes claiming another length, to reach the 4 GiB value limit cheaply."""

    def __new__(cls, data, size):
        self = super().__new__(cls, data)
        self.size = size
        return self

    def __len__(self):
        return self.size


def test_encode_batch_limits_on_members_keys_and_values():
    with pytest.raises(ValueError, match='1 to 65535 records, not 0'):
        batches.encode_batch(0, PLAIN, [])
    most = [(b'', b'')] * batches.MAX_MEMBERS
    assert batches.MAX_MEMBERS == 65535
    stored = batches.encode_batch(0, PLAIN, most)
    assert stored[:3] == b'\x80\xff\xff'
    assert len(batches.decode_batch(stored, PLAIN, 'c')) == 65535
    with pytest.raises(ValueError, match='not 65536'):
        batches.encode_batch(0, PLAIN, most + [(b'', b'')])

    assert batches.MAX_KEY_BYTES == 65535
    key = b'k' * 65535
    stored = batches.encode_batch(0, PLAIN, [(key, b'v')])
    assert stored[3:9] == b'\xff\xff\x00\x00\x00\x01'
    assert batches.decode_batch(stored, PLAIN, 'c') == [(key, b'v')]
    for members in ([(key + b'k', b'v')], [(b'a', b'v'), (key + b'k', b'v')]):
        with pytest.raises(ValueError, match='too large for the batch format'):
            batches.encode_batch(0, PLAIN, members)

    assert batches.MAX_VALUE_BYTES == 2 ** 32 - 1
    stored = batches.encode_batch(0, PLAIN, [(b'k', _Sized(b'v', 2 ** 32 - 1))])
    assert stored == b'\x80\x00\x01' b'\x00\x01\xff\xff\xff\xff' b'kv'
    for members in ([(b'k', _Sized(b'v', 2 ** 32))],
                    [(b'k', b'v'), (b'l', _Sized(b'v', 2 ** 32))]):
        with pytest.raises(ValueError, match='too large for the batch format'):
            batches.encode_batch(0, PLAIN, members)


@pytest.mark.parametrize('stored', [b'', b'\x80', b'\x80\x00'])
def test_decode_batch_too_short_for_a_header(stored):
    with pytest.raises(errors.CorruptRecordError, match="truncated batch in collection 'people'"):
        batches.decode_batch(stored, PLAIN, 'people')


@pytest.mark.parametrize('stored', [
    b'\x80\x00\x01',                                     # header only: no size table
    b'\x80\x00\x00',                                     # zero members
    b'\x80\x00\x00' + b'\x00' * 6,                       # zero members, spare bytes
    b'\x80\x00\x02' + b'\x00' * 6,                       # size table cut short
    b'\x80\x00\x02' + b'\x00' * 11,
    b'\x80\x00\x01' + b'\x00\x01\x00\x00\x00\x01' + b'k',       # value missing
    b'\x80\x00\x01' + b'\x00\x01\x00\x00\x00\x01' + b'kvx',     # one byte too many
    b'\x80\x00\x01' + b'\x00\x00\x00\x00\x00\x00' + b'x',
], ids=['no-table', 'zero', 'zero-with-bytes', 'short-table', 'short-table-11',
        'short-payload', 'long-payload', 'trailing-byte'])
def test_decode_batch_rejects_malformed_payloads(stored):
    with pytest.raises(errors.CorruptRecordError, match="malformed batch in collection 'people'"):
        batches.decode_batch(stored, PLAIN, 'people')


def test_every_truncation_or_extension_of_a_batch_raises():
    for cut in range(len(ENCODED)):
        with pytest.raises(errors.CorruptRecordError):
            batches.decode_batch(ENCODED[:cut], PLAIN, 'c')
    with pytest.raises(errors.CorruptRecordError):
        batches.decode_batch(ENCODED + b'\x00', PLAIN, 'c')
    # A count that disagrees with the size table (one more, one fewer member).
    for count in (b'\x00\x02', b'\x00\x04'):
        with pytest.raises(errors.CorruptRecordError):
            batches.decode_batch(ENCODED[:1] + count + ENCODED[3:], PLAIN, 'c')
