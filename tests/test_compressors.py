"""Writing refuses a value its packer could not unpack when reading it back.

A store's ``max_unpacked_size`` bounds what a built-in packer (zlib, lz4,
zstd, snappy) unpacks on reading; a value that encodes to more would be
stored but never read. Packing one raises
:class:`~centidb.errors.ValueTooLargeError`, naming the size and the limit,
and nothing is written. The plain packer decompresses nothing, so it has no limit.
"""

import pytest

import centidb
from centidb import encodings
from centidb.errors import ValueTooLargeError

LIMIT = 4096


def blob(size):
    """A value the msgpack encoder encodes to exactly `size` bytes (a bin 16 header is 3)."""
    return bytes(size - 3)


@pytest.fixture
def store():
    with centidb.open('memory', max_unpacked_size=LIMIT) as store:
        yield store


@pytest.mark.parametrize('name', ['zlib', 'lz4', 'zstd', 'snappy'])
def test_each_packer_refuses_more_than_its_limit(name):
    packer = {p.name: p for p in encodings.make_packers(LIMIT)}.get(name)
    if packer is None:
        pytest.skip(f'{name} is not installed')
    assert packer.decode(packer.encode(bytes(LIMIT))) == bytes(LIMIT)
    with pytest.raises(ValueTooLargeError, match=f'{LIMIT + 1} bytes, more than the {LIMIT} '
                                                 f'bytes .*max_unpacked_size.*{name}'):
        packer.encode(bytes(LIMIT + 1))
    assert isinstance(ValueTooLargeError('x'), ValueError)


def test_a_put_past_the_limit_writes_nothing(store):
    coll = store.collection('c', packer=encodings.ZLIB_PACKER)
    assert coll.packer is not encodings.ZLIB_PACKER     # the store's own, with its limit
    coll.put(blob(LIMIT), key=1)
    assert coll.get(1) == blob(LIMIT)
    before = list(store.engine.items())
    with pytest.raises(ValueTooLargeError, match=f'encodes to {LIMIT + 1} bytes, more than '
                                                 f'the {LIMIT} bytes'):
        coll.put(blob(LIMIT + 1), key=2)
    with pytest.raises(ValueTooLargeError):
        coll.put(blob(LIMIT + 1), key=1)                # replacing a record
    assert list(store.engine.items()) == before
    assert coll.get(1) == blob(LIMIT) and coll.get(2) is None
    assert store.verify() == []


def test_put_many_past_the_limit_writes_nothing(store):
    coll = store.collection('c', key_func=lambda rec: rec[0], packer=encodings.ZLIB_PACKER)
    coll.add_index('size', lambda rec: len(rec[1]))
    coll.put((0, b'kept'))
    before = list(store.engine.items())
    with pytest.raises(ValueTooLargeError, match=f'more than the {LIMIT} bytes'):
        coll.put_many([(1, b'small'), (2, bytes(LIMIT)), (3, b'small')])
    assert list(store.engine.items()) == before
    with store.begin(write=True) as txn:
        with pytest.raises(ValueTooLargeError):
            coll.put_many([(4, b'small'), (5, bytes(LIMIT))], txn=txn)
        coll.put((6, b'after'), txn=txn)                # the transaction is still usable
    assert [key for key, in coll.keys()] == [0, 6]
    assert store.verify() == []


def test_a_batch_past_the_limit_writes_nothing(store):
    coll = store.collection('c', packer=encodings.ZLIB_PACKER)
    for i in range(8):
        coll.put(blob(1000), key=i)
    before = list(store.engine.items())
    with pytest.raises(ValueTooLargeError, match=f'more than the {LIMIT} bytes'):
        coll.batch(packer=store.add_encoder(encodings.ZLIB_PACKER))
    assert list(store.engine.items()) == before
    coll.batch(max_recs=3, packer=store.add_encoder(encodings.ZLIB_PACKER))
    assert [coll.get(i) for i in range(8)] == [blob(1000)] * 8
    assert store.verify() == []


def test_the_plain_packer_has_no_limit(store):
    coll = store.collection('c')
    coll.put(blob(4 * LIMIT), key=1)
    assert coll.get(1) == blob(4 * LIMIT)


def test_the_default_limit_applies_to_the_module_packers():
    with centidb.open('memory') as store:
        coll = store.collection('c', packer=encodings.ZLIB_PACKER)
        assert coll.packer is encodings.ZLIB_PACKER
        coll.put(blob(LIMIT + 1), key=1)
        assert coll.get(1) == blob(LIMIT + 1)


def test_put_with_the_module_packer_uses_the_stores_own(store):
    """put(packer=ZLIB_PACKER) packs with the store's zlib, bounded by its limit."""
    coll = store.collection('c')
    coll.put(blob(LIMIT), key=1, packer=encodings.ZLIB_PACKER)
    assert coll.get(1) == blob(LIMIT)
    before = list(store.engine.items())
    with pytest.raises(ValueTooLargeError, match=f'more than the {LIMIT} bytes'):
        coll.put(blob(LIMIT + 1), key=2, packer=encodings.ZLIB_PACKER)
    with store.begin(write=True) as txn:
        with pytest.raises(ValueTooLargeError, match=f'more than the {LIMIT} bytes'):
            coll.put(blob(LIMIT + 1), key=2, packer=encodings.ZLIB_PACKER, txn=txn)
    assert list(store.engine.items()) == before
    assert coll.get(2) is None and store.verify() == []


def test_batch_with_the_default_packer_uses_the_stores_own(store):
    """batch()'s default packer is the module's ZLIB_PACKER: the store's zlib packs."""
    coll = store.collection('c')
    for i in range(8):
        coll.put(blob(1000), key=i)
    before = list(store.engine.items())
    with pytest.raises(ValueTooLargeError, match=f'more than the {LIMIT} bytes'):
        coll.batch()
    with pytest.raises(ValueTooLargeError, match=f'more than the {LIMIT} bytes'):
        coll.batch(packer=encodings.ZLIB_PACKER)
    assert list(store.engine.items()) == before
    assert coll.batch(max_recs=3)[1] == 3
    assert [coll.get(i) for i in range(8)] == [blob(1000)] * 8
    assert store.verify() == []


def _impostor():
    """An Encoder named 'zlib' that packs with another function."""
    return encodings.Encoder('zlib', lambda data: data[::-1], lambda data: data[::-1])


@pytest.mark.parametrize('how', ['put', 'batch'])
def test_a_builtin_packer_name_always_means_the_builtin_packer(how):
    """Records are read with the store's packer of the name their header holds.

    An ``Encoder`` with a built-in name but other functions must not write
    bytes that packer cannot read: the store's own packer of that name is used.
    """
    with centidb.open('memory') as store:
        coll = store.collection('c')
        if how == 'put':
            coll.put({'v': 'x' * 100}, key=1, packer=_impostor())
            coll.put({'v': 'y' * 100}, key=2, packer=_impostor())
        else:
            coll.put({'v': 'x' * 100}, key=1)
            coll.put({'v': 'y' * 100}, key=2)
            assert coll.batch(packer=_impostor())[1] == 1
        assert coll.get(1) == {'v': 'x' * 100} and coll.get(2) == {'v': 'y' * 100}
        assert store.verify() == []
