"""centidb.msgpackcodec: one value packed and unpacked, and the depth limit.

The module is written once and runs from its source or compiled from it:
each test runs on both (the compiled one where it is built), against fixed
bytes and values. ``may_nest_deeper`` is the kernel's: its Python form and
the compiled one are both checked against a plain count.
"""

import threading

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from centidb import impl, msgpackcodec

SOURCE = impl.source_version('centidb.msgpackcodec')
BUILT = impl.compiled_version('centidb.msgpackcodec')
_NOT_BUILT = pytest.mark.skipif(BUILT is None, reason='centidb.msgpackcodec is not compiled')
MODULES = [pytest.param(SOURCE, id='source'), pytest.param(BUILT, id='compiled', marks=_NOT_BUILT)]
KERNEL = getattr(impl.compiled_module(), 'may_nest_deeper', None)
COUNTERS = [pytest.param(SOURCE._python_may_nest_deeper, id='python'),
            pytest.param(KERNEL, id='kernel', marks=pytest.mark.skipif(
                KERNEL is None, reason='centidb._speedups is not built'))]
OPENING = {*range(0x80, 0xA0), 0xC7, 0xC8, 0xC9, *range(0xD4, 0xD9), 0xDC, 0xDD, 0xDE, 0xDF}


class TooDeep(Exception):
    pass


def nested_lists(depth):
    value = 0
    for _ in range(depth):
        value = [value]
    return value


def packer():
    return msgpack.Packer(use_bin_type=True, strict_types=True)


def surrogates(value):
    return msgpack.packb(value, use_bin_type=True, unicode_errors='surrogatepass')


def test_the_active_module_is_compiled_exactly_when_the_codec_is():
    assert msgpackcodec.__file__.endswith('.py') == (impl.COMPILED is None)
    assert msgpackcodec.may_nest_deeper is (
        msgpackcodec._python_may_nest_deeper if impl.COMPILED is None else KERNEL)


@pytest.mark.parametrize('mod', MODULES)
def test_encode_gives_msgpack_bytes(mod):
    encode = mod.msgpack_encoder(packer, surrogates, 5, TooDeep)
    assert type(encode) is mod.MsgpackEncode
    assert encode({'a': [1, 2]}) == b'\x81\xa1a\x92\x01\x02'
    assert encode.run('hé') == b'\xa3h\xc3\xa9'
    assert encode(b'\x00') == b'\xc4\x01\x00'
    assert encode('\ud800') == b'\xa3\xed\xa0\x80'      # through pack_surrogates
    with pytest.raises(TypeError):
        encode({1, 2})
    assert encode(7) == b'\x07'     # the packer still works after a failure


@pytest.mark.parametrize('mod', MODULES)
def test_decode_gives_the_value(mod):
    decode = mod.msgpack_decoder(msgpack.unpackb, msgpack.ExtType)
    assert type(decode) is mod.MsgpackDecode
    assert decode(b'\x81\xa1a\x92\x01\x02') == {'a': [1, 2]}
    assert decode.run(b'\x81\x01\xc0') == {1: None}     # not only str keys
    assert decode(b'\xa3\xed\xa0\x80') == '\ud800'
    assert decode(b'\xd4\x07\x01') == msgpack.ExtType(7, b'\x01')
    with pytest.raises(ValueError, match='not UTF-8'):
        decode(b'\xa2\xff\xfe')


@pytest.mark.parametrize('mod', MODULES)
def test_the_encoder_refuses_a_value_nested_deeper_than_its_limit(mod):
    encode = mod.msgpack_encoder(packer, surrogates, 3, TooDeep)
    assert encode(nested_lists(3)) == b'\x91\x91\x91\x00'
    for deep in (nested_lists(4), {'a': {'b': ({},)}}, {(((),),): 1}, [0] * 20 + [nested_lists(3)]):
        with pytest.raises(TooDeep):
            encode(deep)
    assert encode([0] * 20) == b'\xdc\x00\x14' + b'\x00' * 20
    assert encode({str(i): [] for i in range(20)})[:3] == b'\xde\x00\x14'


@pytest.mark.parametrize('mod', MODULES)
def test_the_decoder_refuses_stored_data_nested_deeper_than_its_limit(mod):
    decode = mod.msgpack_decoder(msgpack.unpackb, msgpack.ExtType, 3, TooDeep)
    assert decode(b'\x91\x91\x91\x00') == nested_lists(3)
    with pytest.raises(TooDeep):
        decode(b'\x91\x91\x91\x91\x00')
    with pytest.raises(TooDeep):
        decode(b'\x81\xa1a\x91\x91\x91\x00')      # the dict is a level
    assert mod.msgpack_decoder(msgpack.unpackb, msgpack.ExtType)(b'\x91' * 50 + b'\x00') \
        == nested_lists(50)                             # no limit


@pytest.mark.parametrize('mod', MODULES)
def test_check_nested_counts_every_kind_of_container(mod):
    class Items(list):
        pass

    for value, depth in [([], 1), ((1, 2), 1), ({}, 1), ([[], ()], 2), ({'a': {'b': 1}}, 2),
                         ({(1,): 2}, 2), (Items([Items([1])]), 2), (list(range(40)), 1),
                         ({i: i for i in range(40)}, 1), ([1] * 30 + [[[2]]], 3),
                         ({i: i for i in range(30)} | {'x': ([],)}, 3),
                         (dict.fromkeys([((i,),) for i in range(30)]), 3)]:
        mod.check_nested(value, depth, TooDeep)
        with pytest.raises(TooDeep):
            mod.check_nested(value, depth - 1, TooDeep)


@pytest.mark.parametrize('mod', MODULES)
def test_each_thread_packs_with_a_packer_of_its_own(mod):
    made = []

    def make_packer():
        made.append(threading.get_ident())
        return packer()

    encode = mod.msgpack_encoder(make_packer, surrogates, 5, TooDeep)
    results = []
    both = threading.Barrier(2)     # both threads alive at once: two thread ids

    def write(wait=True):
        results.append([encode([i, 'x']) for i in range(3)])
        if wait:
            both.wait()
            results.append([encode([i, 'x']) for i in range(3)])

    write(wait=False)
    threads = [threading.Thread(target=write) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    write(wait=False)
    assert results == [[b'\x92' + bytes([i]) + b'\xa1x' for i in range(3)]] * 6
    assert len(made) == 3 and len(set(made)) == 3 and made[0] == threading.get_ident()


@pytest.mark.parametrize('count', COUNTERS)
def test_may_nest_deeper_counts_the_bytes_that_can_open_a_container(count):
    assert count(b'\x91' * 3, 3) is False and count(b'\x91' * 4, 3) is True
    assert count(b'\xa1' * 100, 3) is False     # high bit set, opens nothing
    assert count(b'\x00' * 99 + b'\xdf' * 4, 3) is True
    assert count(b'\x80' * 4, 4) is False
    assert count(bytearray(b'\xc7\xc9\xd4\xd8'), 3) is True
    assert count(memoryview(b'\xdc\xdd\xde\xdf\xc6'), 3) is True
    assert count(b'\xc6\xca\xd9\xdb\xe0\xff' * 10, 3) is False


@pytest.mark.parametrize('count', COUNTERS)
@given(st.binary(max_size=300), st.integers(0, 120))
def test_may_nest_deeper_agrees_with_a_plain_count(count, data, max_depth):
    assert count(data, max_depth) == (sum(byte in OPENING for byte in data) > max_depth)
