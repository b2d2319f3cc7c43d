"""Hostile values: nesting depth, decompression bombs and fuzzed stored bytes.

Whatever a program gives ``put()`` and whatever bytes a store holds, the
only outcomes allowed are the right value or an exception from
:mod:`centidb.errors` (or ``TypeError``/``ValueError`` for a value of the
wrong type given to ``put()``): never a crash, a hang or a bare Python error.
"""

import threading
import tracemalloc
import zlib

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import centidb
from centidb import encodings, keylib
from centidb.errors import CentiError, CorruptRecordError, ValueTooDeepError

from stores import DISK_ENGINE_NAMES, contents, open_store

MAX = encodings.MAX_DEPTH


def nested_tuples(depth, leaf=1):
    """`leaf` inside `depth` tuples: ``((1,),)`` has depth 2."""
    value = leaf
    for _ in range(depth):
        value = (value,)
    return value


def mixed(depth):
    """Lists, tuples and dicts taking turns, `depth` deep."""
    value = 'leaf'
    for level in range(depth):
        value = ([value] if level % 4 == 0 else (value,) if level % 4 == 1 else
                 {'k': value} if level % 4 == 2 else {'x': 1, 0: value})
    return value


def crafted_tuples(depth):
    """msgpack bytes of a list holding `depth` tuples (extension type 1)
    nested in each other, made by hand as an attacker would; the innermost
    tuple is empty."""
    data = b'\x90'
    for _ in range(depth):
        size = len(data)
        header = (b'\xd4\x01' if size == 1 else b'\xd5\x01' if size == 2 else
                  b'\xc7' + bytes([size]) + b'\x01' if size < 256 else
                  b'\xc8' + size.to_bytes(2, 'big') + b'\x01' if size < 65536 else
                  b'\xc9' + size.to_bytes(4, 'big') + b'\x01')
        data = b'\x91' + header + data
    return data


def store_raw(store, coll, key, stored):
    """Write `stored` (header byte and the packer's output) as the record under `key`."""
    with store.engine.begin(write=True) as etxn:
        etxn.put(keylib.packs(key, coll.prefix), stored)


@pytest.fixture(params=DISK_ENGINE_NAMES)
def disk_store(request, tmp_path):
    store = open_store(request.param, tmp_path)
    yield store
    store.close()


# --- depth -------------------------------------------------------------------

@pytest.mark.parametrize('make', [nested_tuples, mixed])
def test_put_refuses_values_nested_deeper_than_max_depth(disk_store, make):
    coll = disk_store.collection('c')
    coll.put(make(MAX), key=1)
    assert coll.get(1) == make(MAX)
    before = contents(disk_store)
    with pytest.raises(ValueTooDeepError, match=r'more than 100 levels .*MAX_DEPTH') as info:
        coll.put(make(MAX + 1), key=2)
    assert isinstance(info.value, ValueError)
    assert contents(disk_store) == before
    assert coll.get(2) is None
    with pytest.raises(ValueTooDeepError):
        coll.put(make(1000), key=2)


def test_depth_counts_dict_keys_and_subclasses():
    class Row(tuple):
        pass
    encode = encodings.make_msgpack_encoder().encode
    key = nested_tuples(MAX - 1)
    encode({key: 1})
    with pytest.raises(ValueTooDeepError):
        encode({(key,): 1})
    encode(Row([nested_tuples(MAX - 1)]))
    with pytest.raises(ValueTooDeepError):
        encode(Row([nested_tuples(MAX)]))
    loop = []
    loop.append(loop)
    with pytest.raises(ValueTooDeepError):
        encode(loop)


def test_a_deep_value_read_back_in_a_small_thread(disk_store):
    """The deepest value put() takes decodes in a thread with a 320 KB stack."""
    coll = disk_store.collection('c')
    coll.put(nested_tuples(MAX), key=1)
    got = []
    old = threading.stack_size(320 * 1024)
    try:
        thread = threading.Thread(target=lambda: got.append(coll.get(1)))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(old)
    assert got == [nested_tuples(MAX)]


@pytest.mark.parametrize('depth', [MAX + 1, 400, 5000])
def test_crafted_deep_tuples_raise_corrupt_record(disk_store, depth):
    coll = disk_store.collection('c')
    plain = bytes([disk_store._catalog.encoder_id(encodings.PLAIN_PACKER)])
    store_raw(disk_store, coll, 1, plain + crafted_tuples(depth))
    for read in (lambda: coll.get(1), lambda: list(coll.items()),
                 lambda: list(coll.values())):
        with pytest.raises(CorruptRecordError, match=r'tuples nested more than 100 deep'):
            read()
    problems = disk_store.verify()
    assert problems and 'tuples nested more than 100 deep' in str(problems)


def test_the_decoder_refuses_crafted_depth_directly():
    decode = encodings.make_msgpack_encoder().decode
    assert decode(crafted_tuples(MAX - 1)) == [nested_tuples(MAX - 2, ())]
    for depth in (MAX, MAX + 1, 20000):
        with pytest.raises(ValueError, match='MAX_DEPTH'):
            decode(crafted_tuples(depth))
    with pytest.raises(ValueError):                 # msgpack's own limit, no recursion
        decode(b'\x91' * 100000 + b'\xc0')


def test_heap_levels_find_truncated_and_extra_bytes():
    """Tuples below the first level are decoded by an Unpacker: a truncated or
    overlong payload there is refused as unpackb refuses it at the first."""
    decode = encodings.make_msgpack_encoder().decode
    inner = msgpack.ExtType(1, b'\x92\x01')                      # truncated array
    with pytest.raises(ValueError, match='incomplete'):
        decode(msgpack.packb(msgpack.ExtType(1, msgpack.packb([inner]))))
    extra = msgpack.ExtType(1, b'\x91\x01\x02')                  # a byte too many
    with pytest.raises(ValueError):
        decode(msgpack.packb(msgpack.ExtType(1, msgpack.packb([extra]))))
    empty = msgpack.ExtType(1, b'')
    with pytest.raises(ValueError):
        decode(msgpack.packb(msgpack.ExtType(1, msgpack.packb([empty]))))


def test_json_encoder_depth():
    coll_encoder = encodings.make_json_encoder()
    assert coll_encoder.decode(coll_encoder.encode([[[1]]])) == [[[1]]]
    with pytest.raises(ValueTooDeepError):
        coll_encoder.encode(nested_tuples(MAX + 1))
    with pytest.raises(ValueError, match='too deeply'):
        coll_encoder.decode(b'[' * 100000 + b']' * 100000)
    store = centidb.open('ListEngine')
    coll = store.collection('j', encoder=coll_encoder)
    store_raw(store, coll, 1, bytes([store._catalog.encoder_id(encodings.PLAIN_PACKER)])
              + b'[' * 100000 + b']' * 100000)
    with pytest.raises(CorruptRecordError, match='too deeply'):
        coll.get(1)


# --- decompression bombs -------------------------------------------------------

MIB = 1024 * 1024


def zlib_bomb(size):
    """zlib data that decompresses to `size` zero bytes (about size / 1000 bytes)."""
    packer = zlib.compressobj(9)
    chunk = bytes(MIB)
    parts = [packer.compress(chunk) for _ in range(size // MIB)]
    parts.append(packer.compress(bytes(size % MIB)))
    return b''.join(parts) + packer.flush()


def peak_bytes(call):
    """Run `call()`; return the most memory Python allocated meanwhile."""
    import tracemalloc
    tracemalloc.start()
    try:
        call()
    except Exception:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_default_packers_refuse_to_unpack_more_than_the_limit():
    limit = encodings.MAX_UNPACKED_SIZE
    assert limit == 64 * MIB
    bomb = zlib_bomb(limit + 1)
    assert len(bomb) < limit // 500
    raised = []

    def decode():
        with pytest.raises(ValueError, match='more than 67108864 bytes.*max_unpacked_size'):
            encodings.ZLIB_PACKER.decode(bomb)
        raised.append(True)
    assert peak_bytes(decode) < limit + 4 * MIB
    assert raised
    assert encodings.ZLIB_PACKER.decode(zlib_bomb(3 * MIB + 5)) == bytes(3 * MIB + 5)


@pytest.mark.parametrize('name', ['zlib', 'lz4', 'zstd'])
def test_each_packer_stops_at_the_limit(name):
    packer = {p.name: p for p in encodings.make_packers(MIB)}.get(name)
    if packer is None:
        pytest.skip(f'{name} is not installed')
    for size in (0, 1, MIB):
        assert packer.decode(packer.encode(bytes(size))) == bytes(size)
    big = {p.name: p for p in encodings.make_packers()}[name].encode(bytes(16 * MIB))
    with pytest.raises(ValueError, match=f'more than {MIB} bytes'):
        packer.decode(big)
    assert peak_bytes(lambda: packer.decode(big)) < 3 * MIB


def test_crafted_size_headers_are_refused_before_allocating():
    lz4, zstd = encodings.LZ4_PACKER, encodings.ZSTD_PACKER
    if lz4 is not None:
        claim = (2 ** 31).to_bytes(4, 'little') + b'\x00' * 8
        assert peak_bytes(lambda: lz4.decode(claim)) < MIB
        with pytest.raises(ValueError, match='lz4 data decompresses to more than'):
            lz4.decode(claim)
    if zstd is not None:
        import zstandard
        frameless = zstandard.ZstdCompressor(write_content_size=False)
        stream = frameless.compressobj()
        data = stream.compress(bytes(2 * MIB)) + stream.flush()
        assert zstandard.frame_content_size(data) == -1
        small = {p.name: p for p in encodings.make_packers(MIB)}['zstd']
        with pytest.raises(ValueError, match=f'more than {MIB} bytes'):
            small.decode(data)
        assert zstd.decode(data) == bytes(2 * MIB)


def test_truncated_zlib_is_refused():
    data = zlib.compress(b'some record bytes' * 10)
    with pytest.raises(ValueError, match='truncated'):
        encodings.ZLIB_PACKER.decode(data[:-3])
    assert encodings.ZLIB_PACKER.decode(data + b'junk') == b'some record bytes' * 10


@pytest.mark.parametrize('bad', ['1', 0, -5, 2.0, None])
def test_max_unpacked_size_is_checked(bad):
    with pytest.raises((TypeError, ValueError), match='max_unpacked_size must'):
        centidb.open('ListEngine', max_unpacked_size=bad)


def test_a_store_option_bounds_records_and_batches(tmp_path):
    path = str(tmp_path / 'db.lmdb')
    store = centidb.open('LmdbEngine', path=path, sync=False)
    coll = store.collection('c', packer=encodings.ZLIB_PACKER)
    coll.put({'blob': bytes(3 * MIB)}, key=1)
    bomb = bytes([store._catalog.encoder_id(encodings.ZLIB_PACKER)]) + zlib_bomb(65 * MIB)
    store_raw(store, coll, 2, bomb)
    with pytest.raises(CorruptRecordError, match=r'under key \(2,\).*max_unpacked_size'):
        coll.get(2)
    assert coll.get(1) == {'blob': bytes(3 * MIB)}
    store.close()

    store = centidb.open('LmdbEngine', path=path, sync=False, max_unpacked_size=MIB)
    coll = store.collection('c')
    for read in (lambda: coll.get(1), lambda: list(coll.items())):
        with pytest.raises(CorruptRecordError, match=f'more than {MIB} bytes'):
            read()
    assert 'more than 1048576 bytes' in str(store.verify())
    store.close()

    store = centidb.open('LmdbEngine', path=path, sync=False)
    coll = store.collection('c')
    with store.engine.begin(write=True) as etxn:     # delete() decodes what it deletes
        etxn.delete(keylib.packs(2, coll.prefix))
    for i in range(3, 40):
        coll.put({'blob': bytes(64 * 1024), 'i': i}, key=i)
    coll.batch()
    assert coll.get(20) == {'blob': bytes(64 * 1024), 'i': 20}
    store.close()
    store = centidb.open('LmdbEngine', path=path, sync=False, max_unpacked_size=MIB)
    with pytest.raises(CorruptRecordError, match=f'more than {MIB} bytes'):
        store.collection('c').get(20)
    store.close()
    with centidb.open('LmdbEngine', path=path, sync=False) as store:
        assert store.collection('c').get(20)['i'] == 20      # nothing was lost


# --- fuzzing -------------------------------------------------------------------

import os  # noqa: E402  (the fuzzing section's own imports)
import sys  # noqa: E402

import strategies  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                'stress'))
import fault_values  # noqa: E402

scalars = st.one_of(st.none(), st.booleans(), strategies.ints, strategies.floats,
                    strategies.texts, strategies.binaries, strategies.datetimes,
                    strategies.uuids, st.dates(), st.decimals(places=None))
dict_keys = st.one_of(st.none(), st.booleans(), strategies.ints, strategies.texts,
                      strategies.binaries, strategies.uuids, st.dates(),
                      st.decimals(places=None, allow_nan=False),
                      st.tuples(strategies.ints, strategies.texts))
shallow = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
    st.dictionaries(dict_keys, inner, max_size=3)), max_leaves=12)
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope='module')
def fuzz_store():
    store = centidb.open('ListEngine', max_unpacked_size=64 * 1024)
    yield store
    store.close()


def wrapped(value, kinds):
    for kind in kinds:
        value = [value] if kind == 0 else (value,) if kind == 1 else {'k': value}
    return value


@FUZZ
@given(value=shallow, kinds=st.lists(st.integers(0, 2), max_size=MAX + 3),
       packer=st.sampled_from(['plain', 'zlib', 'zstd', 'lz4']))
def test_fuzz_put_get_exact_or_too_deep(fuzz_store, value, kinds, packer):
    coll = fuzz_store.collection('values')
    value = wrapped(value, kinds)
    packer = next((p for p in encodings.BUILTIN_ENCODERS if p.name == packer),
                  encodings.ZLIB_PACKER)
    if fault_values.depth(value) > MAX:
        with pytest.raises(ValueTooDeepError):
            coll.put(value, key=1, packer=packer)
        assert coll.get(1) is None
        return
    coll.put(value, key=1, packer=packer)
    got = coll.get(1)
    assert fault_values.exact(got) == fault_values.exact(value)
    assert fault_values.exact(dict(coll.items())[(1,)]) == fault_values.exact(value)
    coll.delete(1)


@FUZZ
@given(data=st.one_of(st.binary(max_size=300),
                      shallow.map(encodings.make_msgpack_encoder().encode),
                      st.builds(fault_values.mutate, st.randoms(use_true_random=False),
                                shallow.map(encodings.make_msgpack_encoder().encode)),
                      st.integers(0, 3000).map(crafted_tuples)),
       header=st.sampled_from(['plain', 'zlib', 'zstd', 'lz4', 'pack-zlib', 'batch', 'other']),
       encoder=st.sampled_from(['msgpack', 'json']))
def test_fuzz_stored_bytes_decode_or_raise_centidb_errors(fuzz_store, data, header, encoder):
    coll = fuzz_store.collection(encoder, encoder=(encodings.make_json_encoder()
                                                   if encoder == 'json' else None))
    ids = {p.name: fuzz_store._catalog.encoder_id(p) for p in encodings.BUILTIN_ENCODERS
           if p.name in ('plain', 'zlib', 'zstd', 'lz4')}
    if header == 'pack-zlib':
        stored = bytes([ids['zlib']]) + zlib.compress(data)
    elif header == 'batch':
        stored = bytes([0x80 | ids['zlib']]) + data
    elif header == 'other':
        stored = b'\x7f' + data
    else:
        stored = bytes([ids[header]]) + data
    store_raw(fuzz_store, coll, 1, stored)
    for read in (lambda: coll.get(1), lambda: list(coll.items())):
        try:
            read()
        except CentiError:
            pass
    assert isinstance(fuzz_store.verify(), list)


def test_the_value_campaign_runs_clean():
    result = fault_values.campaign(120, seed=30)
    assert result['cases'] == 120
    assert result['errors'] == []
    assert result['outcomes'].get('stored') and result['outcomes'].get('refused-deep', 0) >= 0
    assert result['peak_mb'] > 0


def test_a_value_campaign_can_start_at_any_case_and_stop_at_a_time():
    """Case 102909 of seed 1 is the 442-byte record of 88 tuples levels (see
    test_bytes_that_are_not_utf8_cost_one_pass_at_any_depth)."""
    result = fault_values.campaign(2, seed=1, first=102908)
    assert (result['cases'], result['first'], result['errors']) == (2, 102908, [])
    assert result['outcomes'].get('raw-get-CorruptRecordError') == 1
    assert fault_values.campaign(5, seed=1, until=0.0)['cases'] == 0


def test_crafted_deep_lists_are_refused_when_read():
    """Lists nested past MAX_DEPTH, with no tuple (msgpack's own parser takes
    up to 1,024), are refused too: put() never writes them, and what reads
    a value (a dump, an index function) need not recurse deeper."""
    decode = encodings.make_msgpack_encoder().decode
    assert decode(b'\x91' * MAX + b'\xc0') == wrapped(None, [0] * MAX)
    for data in (b'\x91' * (MAX + 1) + b'\xc0', b'\x81\xa1k' * (MAX + 1) + b'\xc0',
                 b'\x92\x01' * 1000 + b'\xc0'):
        with pytest.raises(ValueError, match='more than 100 levels deep') as info:
            decode(data)
        assert not isinstance(info.value, CentiError)     # read as CorruptRecordError
        with pytest.raises(ValueError, match='more than 100 levels deep'):
            decode(memoryview(data))
    store = centidb.open('ListEngine')
    coll = store.collection('c')
    store_raw(store, coll, 1, bytes([store._catalog.encoder_id(encodings.PLAIN_PACKER)])
              + b'\x91' * 1000 + b'\xc0')
    with pytest.raises(CorruptRecordError, match='more than 100 levels deep'):
        coll.get(1)
    wide = {f'k{i}': [[i]] for i in range(300)}          # many containers, shallow
    assert decode(encodings.make_msgpack_encoder().encode(wide)) == wide


def invalid_utf8_in_tuples(depth):
    """msgpack bytes of a ``str`` holding a byte no UTF-8 decoder takes
    (0xff, refused with lone surrogates allowed too), inside `depth` tuples."""
    return crafted_tuples_around(depth, b'\xa1\xff')


def crafted_tuples_around(depth, inner):
    """`inner` msgpack bytes inside `depth` tuples (extension type 1), by hand."""
    data = inner
    for _ in range(depth):
        size = len(data)
        header = (b'\xc7' + bytes([size]) + b'\x01' if size < 256 else
                  b'\xc8' + size.to_bytes(2, 'big') + b'\x01')
        data = b'\x91' + header + data
    return data


def decode_peak(data):
    """The error `data` raises in the msgpack decoder, and the peak of memory
    traced meanwhile, in bytes."""
    decode = encodings.make_msgpack_encoder().decode
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            decode(data)
        return info.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_bytes_that_are_not_utf8_cost_one_pass_at_any_depth():
    """A str whose bytes are not UTF-8, inside nested tuples: each level used
    to retry its payload with lone surrogates allowed, so the work tripled
    per level (9 levels: 88 MB traced; a 442-byte record of 88 levels,
    found by stress/fault_values.py, ran out of memory). Now the error is
    raised once, and memory grows only with the depth."""
    error, peak = decode_peak(invalid_utf8_in_tuples(9))
    assert peak < 4 * 1024 * 1024, f'decoding 9 levels peaked at {peak} bytes'
    assert "can't decode byte 0xff" in str(error)
    assert not isinstance(error, UnicodeDecodeError)     # outer levels must not retry
    error, peak = decode_peak(invalid_utf8_in_tuples(MAX))    # each level's parser: ~45 KB
    assert peak < 16 * 1024 * 1024, f'decoding {MAX} levels peaked at {peak} bytes'


def test_a_record_of_bytes_not_utf8_deep_in_tuples_is_corrupt():
    store = centidb.open('ListEngine')
    coll = store.collection('c')
    plain = bytes([store._catalog.encoder_id(encodings.PLAIN_PACKER)])
    store_raw(store, coll, 1, plain + invalid_utf8_in_tuples(MAX - 1))
    with pytest.raises(CorruptRecordError, match='not UTF-8'):
        coll.get(1)
    with pytest.raises(CorruptRecordError, match='not UTF-8'):
        list(coll.items())
    surrogate = encodings.make_msgpack_encoder().encode(nested_tuples(MAX - 1, '\ud800x'))
    store_raw(store, coll, 2, plain + surrogate)          # a lone surrogate still reads
    assert coll.get(2) == nested_tuples(MAX - 1, '\ud800x')
    store.close()


def decoded_peak(data):
    """The value the msgpack decoder makes of `data`, and the peak of memory traced meanwhile."""
    decode = encodings.make_msgpack_encoder().decode
    tracemalloc.start()
    try:
        return decode(data), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize('depth', [2, 50, MAX - 1])
def test_large_data_deep_in_tuples_decodes_with_a_copy_or_two(depth):
    """Each tuple level used to hold its payload twice while deeper levels
    decoded (1 MiB in 50 tuples: about 100 MB; MAX levels: 200 MB, so a few
    KB of zlib unpacking to 64 MiB could take 13 GB). Now a level lets its
    payload go before the tuples in it are decoded."""
    blob = os.urandom(1 << 20)
    value = nested_tuples(depth, [blob, 'x'])
    data = encodings.make_msgpack_encoder().encode(value)
    got, peak = decoded_peak(data)
    assert got == value
    assert peak < 8 * len(blob), f'decoding {depth} levels peaked at {peak} bytes'


def test_tuples_decoded_late_land_in_lists_and_dict_keys_and_values():
    inner = {(1, (2, 'a')): [(3, (4,)), {'k': ((5,), [(6,)])}], 'n': (), (7,): ((),)}
    for value in (nested_tuples(3, inner), nested_tuples(2, [inner, (inner,)]),
                  nested_tuples(MAX - 6, [(1,), {(2,): (3,)}])):
        codec = encodings.make_msgpack_encoder()
        assert codec.decode(codec.encode(value)) == value


def test_lists_nested_deep_inside_tuples_are_refused():
    # A tuple in 900 nested lists (msgpack refuses 1,024) inside two tuples.
    inner = b'\x91' * 900 + crafted_tuples_around(1, b'\x91\x01')
    with pytest.raises(ValueError, match='MAX_DEPTH'):
        encodings.make_msgpack_encoder().decode(crafted_tuples_around(2, inner))
