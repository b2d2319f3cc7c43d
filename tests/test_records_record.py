"""centidb.records.record: Record, index_entries, and the common-case writer and reader.

The module is written once and, when centidb is built, compiled by Cython
as it is; the suite runs once per mode, so each test here checks whichever
runs. Each is checked against an independent oracle:

* :func:`index_entries` against :func:`keylib.packs` of each index tuple,
  followed by the tail;
* :class:`RecordWriter` (``write`` and ``write_many``) against the general
  put of :class:`centidb.records.access.Records`, in a second store whose
  writer declines every put (``usable`` False): the same results, the same
  exceptions (a centidb error's message too) and the same engine bytes;
* :class:`RecordReader` (``get``, ``Index.get`` and index scans) against
  the stored bytes read back by the general path: the entries
  ``Index.pairs`` finds, each record's engine value decoded by
  ``Records.decoded``.
"""

import zlib
from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import centidb
from centidb import impl, keylib
from centidb.records import reader, record as records
from centidb.errors import CentiError, UnsupportedKeyTypeError
import strategies
from engine_helpers import counting_engine

#: The active classes, kept before any test patches the module.
RecordWriter = records.RecordWriter
RecordReader = reader.RecordReader


def outcome(func, *args):
    try:
        return 'ok', func(*args)
    except Exception as exc:  # the type is what is compared
        return 'error', type(exc)


def test_the_module_is_compiled_exactly_when_the_codec_is():
    """So each pass of the suite tests one of the two forms."""
    assert records.__file__.endswith('.py') == (impl.COMPILED is None)
    assert records.index_entries.__module__ == 'centidb.records.record'


# --- index_entries ---------------------------------------------------------------

def packed_entries(results, tail):
    """The oracle: each index function's result as index tuples, packed by keylib.packs."""
    expected = []
    for result, prefix in results:
        items = [] if result is None else result if type(result) is list else [result]
        for item in items:
            tup = tuple(item) if isinstance(item, tuple) else (item,)
            expected.append(keylib.packs(tup, prefix) + tail)
    return expected


index_results = (st.none() | strategies.elements | strategies.keys
                 | st.lists(strategies.elements | strategies.keys, max_size=4))


@given(st.lists(st.tuples(index_results, st.binary(max_size=3)), max_size=4),
       st.binary(max_size=6))
@example([(['x', ('y', 1)], b'\x1c\x05'), ((1, None), b'\x1c\x06'), (None, b'\x1c\x07')],
         b'\x01' + keylib.packs(('rec', 7)))
def test_index_entries_are_the_packed_index_tuples_and_the_tail(results, tail):
    specs = tuple((lambda data, result=result: result, prefix) for result, prefix in results)
    entries = records.index_entries(specs, {'the': 'record'}, tail)
    assert entries == packed_entries(results, tail)
    assert all(type(entry) is bytes for entry in entries)


def test_index_entries_pass_the_record_to_each_function_in_order():
    seen = []
    specs = ((lambda d: seen.append(('a', d)) or d['tags'], b'\x1c\x05'),
             (lambda d: seen.append(('b', d)) or (d['a'], d['b']), b'\x1c\x06'))
    data = {'tags': ['x', ('y', 1)], 'a': 1, 'b': None}
    tail = b'\x01' + keylib.packs(('rec', 7))
    assert records.index_entries(specs, data, tail) == [
        keylib.packs([('x',), ('rec', 7)], b'\x1c\x05'),
        keylib.packs([('y', 1), ('rec', 7)], b'\x1c\x05'),
        keylib.packs([(1, None), ('rec', 7)], b'\x1c\x06')]
    assert seen == [('a', data), ('b', data)]
    assert records.index_entries(specs, data, b'') == [
        keylib.packs(('x',), b'\x1c\x05'), keylib.packs(('y', 1), b'\x1c\x05'),
        keylib.packs((1, None), b'\x1c\x06')]
    assert records.index_entries((), data, tail) == []


def test_index_entries_raise_what_their_arguments_call_for():
    def boom(data):
        raise KeyError('no field')

    cases = [
        (((boom, b'p'),), b'', KeyError),                         # the index function's own
        (((lambda d: object(), b'p'),), b'', UnsupportedKeyTypeError),
        (((lambda d: [1, [2]], b'p'),), b'', UnsupportedKeyTypeError),   # a list in a list
        (((lambda d: 1, 'not bytes'),), b'', TypeError),
        (((lambda d: 1, b'p'),), 'not bytes', TypeError),
        (((lambda d: 1,),), b'', ValueError),
        (((lambda d: 1, b'p', b'q'),), b'', ValueError),
    ]
    for specs, tail, error in cases:
        assert outcome(records.index_entries, specs, {}, tail) == ('error', error), specs


def test_index_entries_refuse_a_prefix_that_is_not_bytes():
    """None included: compiled, a ``bytes`` argument would take None too."""
    for prefix in (None, 'p', bytearray(b'p')):
        assert outcome(records.index_entries, ((lambda d: 1, prefix),), {}, b'') == (
            'error', TypeError), prefix


# --- plain_body and decoded_body ----------------------------------------------------

def test_plain_body_is_the_bytes_between_the_header_and_the_trailer():
    """Hand-made stored values: header byte 5, body b'abc', then (with
    checksums) the CRC-32 of the header and body, little-endian."""
    trailer = zlib.crc32(b'\x05abc').to_bytes(4, 'little')
    assert records.plain_body(b'\x05abc', 5, False) == b'abc'
    assert records.plain_body(b'\x05abc' + trailer, 5, True) == b'abc'
    assert records.plain_body(b'\x05abc' + trailer, 5, False) == b'abc' + trailer
    assert records.plain_body(b'\x05', 5, False) == b''
    assert records.plain_body(b'\x05' + zlib.crc32(b'\x05').to_bytes(4, 'little'), 5,
                              True) == b''


def test_plain_body_is_none_unless_the_plain_packer_stored_it_intact():
    trailer = zlib.crc32(b'\x05abc').to_bytes(4, 'little')
    damaged = bytes([trailer[0] ^ 1]) + trailer[1:]
    cases = [
        (b'', 5, False), (b'', 0, False),               # no header byte
        (bytes(4), 0, True),                             # a trailer alone (CRC-32 of b'' is 0)
        (b'\x06abc', 5, False),                          # another packer's header
        (b'\x06abc' + zlib.crc32(b'\x06abc').to_bytes(4, 'little'), 5, True),
        (b'\x05abc' + damaged, 5, True),                 # the trailer does not match
        (b'\x05abc', 5, True),                           # no trailer at all
        (bytearray(b'\x05abc'), 5, False),              # not bytes
        (memoryview(b'\x05abc'), 5, False), (None, 5, False),
    ]
    for stored, plain_id, checksum in cases:
        assert records.plain_body(stored, plain_id, checksum) is None, (stored, checksum)


def test_decoded_body_calls_the_decoder_given():
    from centidb import encodings
    msgpack = encodings.make_msgpack_encoder()
    assert records.decoded_body(msgpack.decode, b'\x92\x01\xa1x') == [1, 'x']
    assert records.decoded_body(lambda body: ('decoded', body), b'ab') == ('decoded', b'ab')


def test_an_exact_encoder_other_than_msgpack_takes_the_common_put():
    """Pickle (exact): the writer encodes with it, and decodes the stored
    version with it to find the index entries a put replaces."""
    import pickle
    from centidb import encodings
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'], encoder=encodings.PICKLE_ENCODER)
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    assert type(coll.records.writer) is RecordWriter and coll.records.writer.usable
    with store.begin(write=True) as txn:
        assert coll.put({'k': 1, 'tag': 'a'}, txn=txn).data == {'k': 1, 'tag': 'a'}
        coll.put({'k': 1, 'tag': 'b'}, txn=txn)
    stored = store.engine.get(keylib.packs((1,), coll.prefix))
    assert pickle.loads(stored[1:]) == {'k': 1, 'tag': 'b'}
    assert [tup for tup, _ in tags.items()] == [('b',)]
    assert tags.get('a') is None and coll.get(1) == {'k': 1, 'tag': 'b'}
    store.close()


# --- RecordWriter and RecordReader: the put and get hot paths ------------------

def declining_writer(coll, txns, txn_class, usable, *args):
    """A RecordWriter made as the collection makes it, but declining every put."""
    return RecordWriter(coll, txns, txn_class, False, *args)


def _store(general, limit, engine='ListEngine', path=None, checksum=True):
    """A store on `engine` (at `path`, but for ListEngine) whose collection
    'c' has two indexes; keys of at most `limit` bytes; stored values with
    checksums or not. With `general`, its writer declines every put, so
    puts take the general path."""
    if engine == 'ListEngine':
        store = centidb.open(engine)
    else:
        store = centidb.open(engine, path=path, sync=False)
    store.engine.max_key_size = limit
    with mock.patch.object(records, 'RecordWriter',
                           declining_writer if general else RecordWriter):
        coll = store.collection('c', key_func=lambda rec: rec['k'], checksum=checksum)
        coll.add_index('tag', lambda rec: rec['tag'])
        coll.add_index('size', lambda rec: len(rec['k']) if isinstance(rec['k'], tuple) else 1)
    writer = coll.records.writer
    assert type(writer) is RecordWriter and writer.usable is not general
    assert type(coll.records.reader) is RecordReader
    return store, coll


def _stores(limit, engine='ListEngine', base=None, checksum=True):
    """The store under test (its writer does the common cases) and its oracle."""
    return [_store(general, limit, engine, None if base is None else str(base / name), checksum)
            for general, name in ((False, 'fast'), (True, 'general'))]


def _read(txn, coll, key_bytes):
    """The general read of the record under `key_bytes`: its engine value decoded."""
    stored = txn.engine_txn.get(key_bytes)
    return None if stored is None else coll.records.decoded(key_bytes, stored)


def _entries_read(txn, coll, pairs):
    """``(index tuple, value)`` of each of `pairs` (index tuple, record key), read
    by the general path; raising, as the reader does, at an entry naming no record."""
    for tup, key in pairs:
        found = _read(txn, coll, keylib.packs(key, coll.prefix))
        if found is None:
            raise coll.records.missing_record_error('tag', key)
        yield tup, found


def _oracle_read(txn, coll, op):
    """What a read `op` of _apply_in must return, by the general path."""
    kind, args = op
    index = coll.indices['tag']
    if kind == 'get':
        found = _read(txn, coll, keylib.packs(records.as_key(args), coll.prefix))
        return 'missing' if found is None else found
    if kind == 'index':
        tup = records.as_key(args)
        exact = (pair for pair in index.pairs(prefix=tup, txn=txn) if len(pair[0]) == len(tup))
        first = next(_entries_read(txn, coll, exact), None)
        return 'missing' if first is None else first[1]
    assert kind == 'scan'
    return (list(_entries_read(txn, coll, index.pairs(txn=txn))),
            [value for _, value in _entries_read(txn, coll, index.pairs(reverse=True, txn=txn))],
            [value for _, value in _entries_read(txn, coll, index.pairs(lo=args, max=2,
                                                                       txn=txn))])


READS = ('get', 'index', 'scan')


def _apply_in(txn, coll, held, op):
    """One operation in `txn`. 'update' puts back a Record it reads and keeps
    the Record put returns in `held`, 'hold' keeps a Record it reads there;
    'put_held' puts that one back, later in the transaction or in a later one."""
    kind, args = op
    if kind == 'put':
        value, key, blind = args
        return coll.put(value, key=key, blind=blind, txn=txn).key
    if kind == 'delete':
        deleted = coll.delete(args, txn=txn)
        return None if deleted is None else (deleted.key, deleted.data)
    if kind == 'get':
        return coll.get(args, default='missing', txn=txn)
    if kind == 'scan':
        index = coll.indices['tag']
        return (list(index.items(txn=txn)), list(index.values(reverse=True, txn=txn)),
                list(index.values(lo=args, max=2, txn=txn)))
    if kind == 'index':
        return coll.indices['tag'].get(args, default='missing', txn=txn)
    if kind == 'hold':
        held['record'] = coll.get(args, rec=True, txn=txn)
        return held['record'] is None
    if kind == 'damage':
        # One bit of a stored value flipped; only checksums make every read
        # of it fail (without, it may decode to anything, NaN included).
        key, bit = args
        key_bytes = keylib.packs(records.as_key(key), coll.prefix)
        stored = txn.engine_txn.get(key_bytes)
        if stored is None or not coll.checksum:
            return None
        damaged = bytearray(stored)
        damaged[bit // 8 % len(stored)] ^= 1 << (bit % 8)
        txn.engine_txn.put(key_bytes, bytes(damaged))
        return len(stored)
    key, tag, rekey, blind = args     # 'update' or 'put_held'
    record = coll.get(key, rec=True, txn=txn) if kind == 'update' else held.get('record')
    if record is None:
        return 'missing'
    record.data['tag'] = tag
    if rekey is not None:
        record.key = rekey      # a Record may be moved to another key
    held['record'] = coll.put(record, blind=blind, txn=txn)
    return held['record'].key


def _apply(store, coll, op):
    """One operation in a transaction of its own."""
    with store.begin(write=op[0] in ('put', 'delete', 'damage')) as txn:
        return _apply_in(txn, coll, {}, op)


def _oracle(store, coll, op):
    with store.begin() as txn:
        return _oracle_read(txn, coll, op)


small_keys = st.one_of(st.integers(-3, 3), st.text(max_size=3),
                       st.tuples(st.integers(0, 2), st.text(max_size=60)))
tags = st.one_of(st.none(), st.integers(0, 3), st.lists(st.integers(0, 3), max_size=3),
                 st.just(object()), st.text(max_size=60))
values = st.fixed_dictionaries({'k': small_keys, 'tag': tags,
                                 'v': st.one_of(st.integers(), st.just({1, 2}))})
operations = st.lists(st.one_of(
    st.tuples(st.just('put'), st.tuples(values, st.none() | small_keys, st.booleans())),
    st.tuples(st.just('get'), small_keys),
    st.tuples(st.just('delete'), small_keys),
    st.tuples(st.just('scan'), st.integers(0, 3)),
    st.tuples(st.just('damage'), st.tuples(small_keys, st.integers(0, 2 ** 16))),
    st.tuples(st.just('index'), st.integers(0, 3) | st.text(max_size=2))), max_size=12)


def messages(func, *args):
    """`func`'s result, or the type and message of the centidb error it raised."""
    try:
        return 'ok', func(*args)
    except CentiError as exc:
        return 'error', type(exc), str(exc)
    except Exception as exc:  # the type is what is compared
        return 'error', type(exc)


@pytest.mark.parametrize('checksum', [True, False], ids=['checksum', 'plain'])
@given(ops=operations, limit=st.sampled_from([None, 40]))
@example(ops=[('put', ({'k': 1, 'tag': 0, 'v': 0}, None, False)), ('damage', (1, 12)),
              ('get', 1), ('scan', 0), ('index', 0),
              ('put', ({'k': 1, 'tag': 1, 'v': 0}, None, False)), ('delete', 1)], limit=None)
@example(ops=[('put', ({'k': 1, 'tag': [0, 1], 'v': 0}, None, False)),
              ('put', ({'k': 1, 'tag': 2, 'v': 0}, None, True)), ('delete', 1),
              ('scan', 0), ('index', 0), ('index', 2)], limit=None)
def test_record_writer_and_reader_agree_with_the_general_paths(checksum, ops, limit):
    """Writes: the same results, exceptions (a centidb error's message too)
    and engine bytes as the general put; reads: what the general path reads
    from the stored bytes. With and without checksums.

    Blind puts over existing keys followed by deletes leave entries that
    point at missing records, and damaged values fail their checksums, so
    the error paths are compared too."""
    (store, coll), (general, general_coll) = _stores(limit, checksum=checksum)
    try:
        for op in ops:
            result = messages(_apply, store, coll, op)
            assert result == messages(_apply, general, general_coll, op), op
            if op[0] in READS:
                assert result == messages(_oracle, store, coll, op), op
        assert list(store.engine.items()) == list(general.engine.items())
    finally:
        store.close()
        general.close()


# Few keys and tags, so that reads find what earlier writes stored and
# puts replace each other's entries.
few_keys = st.sampled_from([0, 1, 'a'])
few_tags = st.sampled_from([None, 0, 1, 'x', [0, 1], object()])
puts = st.tuples(st.just('put'), st.tuples(
    st.fixed_dictionaries({'k': few_keys, 'tag': few_tags, 'v': st.integers(0, 3)}),
    st.none(), st.booleans()))
updates = st.tuples(st.sampled_from(['update', 'put_held']), st.tuples(
    few_keys, few_tags, st.none() | st.none() | few_keys, st.booleans()))
txn_ops = st.lists(st.lists(st.one_of(
    puts, puts, updates, updates, st.tuples(st.just('hold'), few_keys),
    st.tuples(st.just('delete'), few_keys), st.tuples(st.just('get'), few_keys)),
    min_size=1, max_size=8), min_size=1, max_size=4)
_PUT_0 = ('put', ({'k': 0, 'tag': 0, 'v': 0}, None, False))
_PUT_X = ('put', ({'k': 0, 'tag': 'x', 'v': 0}, None, False))


@pytest.mark.parametrize('engine', ['ListEngine', 'LmdbEngine'])
@given(txns=txn_ops)
# The stored version changed after the Record was read: by a write in the
# same transaction, or by another transaction.
@example(txns=[[_PUT_0], [('update', (0, 1, None, False)), _PUT_X,
                          ('put_held', (0, 0, None, False))]])
@example(txns=[[_PUT_0], [('hold', 0)], [_PUT_X], [('put_held', (0, 1, None, False))]])
def test_records_put_back_agree_with_the_general_put(engine, txns, tmp_path_factory):
    """The same results, exception types and engine bytes as the general put
    when records read are put back: at once (the writer reuses what the read
    found and, on LMDB, replaces a record in one lookup), after other writes,
    or in a later transaction (when it must read the stored version again);
    gets read what the general path reads."""
    (store, coll), (general, general_coll) = _stores(
        40, engine, tmp_path_factory.mktemp('paths'))
    held, general_held = {}, {}
    try:
        for ops in txns:
            with store.begin(write=True) as txn, general.begin(write=True) as general_txn:
                for op in ops:
                    result = outcome(_apply_in, txn, coll, held, op)
                    assert result == outcome(_apply_in, general_txn, general_coll,
                                             general_held, op), op
                    if op[0] in READS:
                        assert result == outcome(_oracle_read, txn, coll, op), op
        assert list(store.engine.items()) == list(general.engine.items())
    finally:
        store.close()
        general.close()


def test_record_writer_declines_the_uncommon_cases():
    """Before calling user code: a Record of another collection or index
    set, no key and no key_func, a batched collection, an inexact encoder,
    counter keys; the general put handles those."""
    from centidb import encodings
    calls = []
    store = centidb.open('ListEngine')
    counted = store.collection('counted')
    counted.add_index('x', lambda rec: calls.append(rec))
    keyed = store.collection('keyed', key_func=lambda rec: calls.append(rec) or 1)
    as_json = store.collection('json', key_func=lambda rec: calls.append(rec) or 1,
                               encoder=encodings.make_json_encoder())
    with store.begin(write=True) as txn:
        etxn = txn.engine_txn
        assert counted.records.writer.write(txn, {'a': 1}, None, False) is None
        assert counted.records.writer.write(txn, {'a': 1}, (3,), False) is None
        assert as_json.records.writer.write(txn, {'a': 1}, None, False) is None
        assert keyed.records.writer.write(txn, records.Record(counted, {'a': 1}, (4,)),
                                          None, False) is None
        record = counted.put({'a': 1}, txn=txn)
        calls.clear()
        writes = etxn.fast.writes
        assert counted.records.writer.write(txn, record, (5,), False) is None
        assert calls == [] and etxn.fast.writes == writes == 2
    keyed.put({'b': 0}, key=(7,))
    keyed.put({'b': 1}, key=(8,))
    keyed.batch()
    assert type(keyed.records.writer) is RecordWriter and not keyed.records.writer.usable
    with store.begin(write=True) as txn:
        assert keyed.records.writer.write(txn, {'a': 2}, (6,), False) is None
        assert calls == [] and txn.engine_txn.fast.writes == 0
    store.close()


WRITER_ARGS = ('coll', 'txns', 'txn_class', 'usable', 'prefix', 'encode', 'compress', 'header',
               'key_func', 'specs', 'indexes', 'limit', 'old_entries', 'too_long',
               'auto_key', 'plain_id', 'decode_plain', 'checksum')


def _writer_like(writer, **changes):
    """A RecordWriter made with `writer`'s arguments, some changed."""
    args = {name: getattr(writer, name) for name in WRITER_ARGS}
    args.update(changes)
    return RecordWriter(*(args[name] for name in WRITER_ARGS))


def test_a_writer_keeps_its_arguments():
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'], checksum=True)
    coll.add_index('tag', lambda rec: rec['tag'])
    writer = coll.records.writer
    copy = _writer_like(writer)
    assert [getattr(copy, name) for name in WRITER_ARGS] == [
        getattr(writer, name) for name in WRITER_ARGS]
    assert (writer.coll, writer.prefix, writer.usable, writer.auto_key, writer.checksum) == (
        coll, coll.prefix, True, False, True)
    assert writer.specs == coll.records.specs and writer.limit is None
    store.close()


def test_record_writer_calls_too_long_only_past_the_limit():
    """A key or index entry of exactly `limit` bytes is written without
    calling `too_long` (which raises, as documented); one byte less of limit
    calls it with the key, the key bytes and every entry, having written
    nothing. write() returns the stored Record."""
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    coll.add_index('tag', lambda rec: rec['tag'])
    calls = []

    def too_long(*args):
        calls.append(args)
        raise ValueError('too long')

    key_bytes = keylib.packs(('kk',), coll.prefix)
    tail = coll.records.entry_tail(key_bytes)
    short, long_tag = {'k': 'kk', 'tag': None}, {'k': 'kk', 'tag': 'a' * 20}
    entries = coll.records.entries(long_tag, tail)
    assert len(entries) == 1 and len(entries[0]) > len(key_bytes)
    for value, limit, written in ((short, len(key_bytes), []),
                                  (long_tag, len(entries[0]), entries)):
        writer = _writer_like(coll.records.writer, limit=limit, too_long=too_long)
        with store.begin(write=True) as txn:
            record = writer.write(txn, value, None, False)
        assert (record.key, record.data, record._entries) == (('kk',), value, written)
        assert store.engine.get(key_bytes) == record._stored
        assert coll.get('kk') == value and calls == []
    for value, limit in ((short, len(key_bytes) - 1), (long_tag, len(entries[0]) - 1)):
        writer = _writer_like(coll.records.writer, limit=limit, too_long=too_long)
        before = list(store.engine.items())
        with store.begin(write=True) as txn:
            with pytest.raises(ValueError, match='too long'):
                writer.write(txn, value, None, False)
        assert calls.pop() == (('kk',), key_bytes, coll.records.entries(value, tail))
        assert list(store.engine.items()) == before
    store.close()


def test_the_general_put_takes_a_record():
    """The general put (packer=, counter keys) stores a Record's data under
    its key and returns a Record of the one class."""
    from centidb import encodings
    store = centidb.open('ListEngine')
    log = store.collection('log')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    for target, put in ((log, log.put),
                        (coll, lambda rec: coll.put(rec, packer=encodings.ZLIB_PACKER))):
        stored = put(records.Record(target, {'k': 0, 'n': target.name}, ('r', 1)))
        assert type(stored) is records.Record and stored.key == ('r', 1)
        assert target.get(('r', 1)) == {'k': 0, 'n': target.name}
    store.close()


@pytest.mark.parametrize('general', [False, True], ids=['common', 'general'])
def test_a_new_record_put_is_stored_under_its_key(general):
    """A Record made by the caller (not read): its data under its key, on either path."""
    store, coll = _store(general, None)
    assert coll.put(records.Record(coll, {'k': 1, 'tag': 0, 'v': 0}, (5,))).key == (5,)
    assert coll.get(5) == {'k': 1, 'tag': 0, 'v': 0}
    assert coll.indices['tag'].get(0) == {'k': 1, 'tag': 0, 'v': 0}
    store.close()


@pytest.mark.parametrize('blind', [False, True])
def test_write_many_hands_the_engine_every_pair_in_one_call(blind):
    """write_many makes every pair first, then writes them with one call of
    the engine's bulk put: the pairs, all bytes, hold what the general
    put_many stores."""
    (store, coll), (general, _) = stores = _stores(None)
    handed = []
    try:
        before = set(store.engine.items())
        for each, each_coll in stores:
            with each.begin(write=True) as txn:
                etxn = txn.engine_txn
                put_many = etxn._put_many
                etxn._put_many = lambda pairs: (handed.append(pairs), put_many(pairs))
                each_coll.put_many([{'k': n, 'tag': [n % 3, 'x']} for n in range(50)],
                                   txn=txn, blind=blind)
        pairs = handed[0]
        assert len(pairs) == 200 and len(handed) > 1    # a record and 3 entries, each
        assert all(type(key) is bytes and type(value) is bytes for key, value in pairs)
        assert set(pairs) == set(store.engine.items()) - before
        assert list(store.engine.items()) == list(general.engine.items())
    finally:
        store.close()
        general.close()


# --- RecordWriter.write_many and Record, through the public API ---------------------


def _store_with_index(name='c', **options):
    store = centidb.open('LmdbEngine', path=options.pop('path')) if 'path' in options \
        else centidb.open('ListEngine')
    coll = store.collection(name, **options)
    by_w = coll.add_index('w', lambda r: r['w'])
    return store, coll, by_w


@pytest.mark.parametrize('blind', [False, True])
def test_put_many_numbers_counter_keys_one_after_another(blind):
    store, coll, _ = _store_with_index()
    assert coll.put_many([{'w': i} for i in range(5)], blind=blind) == [(1,), (2,), (3,), (4,), (5,)]
    assert coll.put_many([{'w': 9}], blind=blind) == [(6,)]
    assert [key for key in coll.keys()] == [(n,) for n in range(1, 7)]
    assert store.verify() == []


def test_put_many_over_stored_records_drops_their_old_index_entries():
    store, coll, by_w = _store_with_index(key_func=lambda r: r['k'])
    coll.put_many([{'k': k, 'w': f'old{k}'} for k in range(6)])
    coll.put_many([{'k': k, 'w': f'new{k}'} for k in range(2, 4)])
    assert [by_w.get(f'old{k}') for k in range(6)] == [
        {'k': 0, 'w': 'old0'}, {'k': 1, 'w': 'old1'}, None, None,
        {'k': 4, 'w': 'old4'}, {'k': 5, 'w': 'old5'}]
    assert by_w.get('new2') == {'k': 2, 'w': 'new2'} and by_w.get('new3') == {'k': 3, 'w': 'new3'}
    assert by_w.count() == 6 and store.verify() == []


def test_put_many_of_one_key_twice_keeps_only_the_last_versions_entries():
    store, coll, by_w = _store_with_index(key_func=lambda r: r['k'])
    coll.put_many([{'k': 1, 'w': 'a'}, {'k': 2, 'w': 'b'}, {'k': 1, 'w': 'c'},
                   {'k': 3, 'w': 'd'}])
    assert [rec for rec in coll.values()] == [{'k': 1, 'w': 'c'}, {'k': 2, 'w': 'b'},
                                               {'k': 3, 'w': 'd'}]
    assert by_w.get('a') is None and by_w.get('c') == {'k': 1, 'w': 'c'}
    assert [tup for tup, _ in by_w.items()] == [('b',), ('c',), ('d',)]
    # Stored before: the repeated key's stored entries go too.
    coll.put_many([{'k': 2, 'w': 'e'}, {'k': 2, 'w': 'f'}, {'k': 9, 'w': 'g'}])
    assert [tup for tup, _ in by_w.items()] == [('c',), ('d',), ('f',), ('g',)]
    assert store.verify() == []


def test_put_many_refuses_an_index_entry_longer_than_the_engine_allows(tmp_path):
    store, coll, by_w = _store_with_index(key_func=lambda r: r['k'], path=str(tmp_path / 'db'))
    limit = store.engine.max_key_size
    with pytest.raises(ValueError):
        coll.put_many([{'k': 1, 'w': 'x'}, {'k': 2, 'w': 'y' * limit}])
    with pytest.raises(ValueError):
        coll.put_many([{'k': 'z' * limit, 'w': 'x'}])
    assert coll.count() == 0 and by_w.count() == 0
    coll.put_many([{'k': 1, 'w': 'x'}])
    assert by_w.get('x') == {'k': 1, 'w': 'x'}
    store.close()


def test_a_record_shows_its_collection_key_and_value_and_compares_by_them():
    store, coll, _ = _store_with_index(key_func=lambda r: r['k'])
    other = store.collection('d', key_func=lambda r: r['k'])
    rec = coll.put({'k': 1, 'w': 'a'})
    assert repr(rec) == "<Record c:(1,) {'k': 1, 'w': 'a'}>"
    assert repr(records.Record(None, 5)) == '<Record None:None 5>'
    assert rec == coll.get(1, rec=True)
    assert rec != coll.put({'k': 1, 'w': 'b'})                    # another value
    assert rec != other.put({'k': 1, 'w': 'a'})                  # another collection
    assert rec != coll.put({'k': 2, 'w': 'a'})                   # another key
    assert (rec == 5) is False and (rec != 5) is True            # not a Record: unequal
    with pytest.raises(TypeError):
        hash(rec)


def _exactly(length, prefix, tail=b''):
    """A key tuple that packs under `prefix`, then `tail`, to exactly `length` bytes."""
    for n in range(length):
        for last in ((), (0,), (300,), (70000,), (b'',), (b'', 0)):
            key = ('k' * n,) + last
            if len(keylib.packs(key, prefix)) + len(tail) == length:
                return key
    raise AssertionError(f'no key packs to {length} bytes')


def test_put_many_takes_keys_and_entries_exactly_as_long_as_the_engine_allows(tmp_path):
    store, coll, by_w = _store_with_index(key_func=lambda r: r['k'], path=str(tmp_path / 'db'))
    limit = store.engine.max_key_size
    key = _exactly(limit, coll.prefix)
    value = _exactly(limit, by_w.prefix, b'\x01' + keylib.packs((1,)))
    # (w None: no index entry, which would hold the long key again)
    assert coll.put_many([{'k': key, 'w': None}, {'k': 1, 'w': value}]) == [key, (1,)]
    assert by_w.get(value) == {'k': 1, 'w': value}
    assert coll.get(key) == {'k': key, 'w': None}
    store.close()


@pytest.mark.parametrize('fast', [True, False], ids=['fast_get', 'get'])
def test_put_many_reads_stored_records_only_when_its_key_range_holds_some(fast):
    """One seek over the range of the call's keys; stored versions are read
    (by the unchecked getter, else with one get_many) only if it finds one."""
    engine = counting_engine(fast)
    store = centidb.Store(engine)
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    coll.add_index('w', lambda rec: rec['w'])
    coll.put_many([{'k': k, 'w': k} for k in (1, 2, 3)])       # below the next call's keys
    def record_reads():     # the write transaction's metadata check is a 'get'
        return [call for call in engine.calls if call != 'get']

    engine.calls = []
    coll.put_many([{'k': k, 'w': k} for k in (10, 12, 11)])
    assert record_reads() == ['first']
    engine.calls = []
    coll.put_many([{'k': k, 'w': -k} for k in (11, 20)])
    assert record_reads() == (['first', 'fast_get', 'fast_get'] if fast
                              else ['first', 'get_many'])
    assert store.verify() == []
    store.close()


def test_write_takes_a_record_read_from_its_collection_and_index_set_only():
    """A Record read from the collection is written by the writer itself; one
    read before an index was added (another index set) is declined, and the
    general put then gives the new index its entry."""
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    coll.add_index('tag', lambda rec: rec['tag'])
    coll.put({'k': 1, 'tag': 'a', 'w': 'x'})
    with store.begin(write=True) as txn:
        record = coll.get(1, rec=True, txn=txn)
        record.data['tag'] = 'b'
        written = coll.records.writer.write(txn, record, None, False)
    assert written.key == (1,) and written.data == {'k': 1, 'tag': 'b', 'w': 'x'}
    assert [tup for tup, _ in coll.indices['tag'].items()] == [('b',)]
    record = coll.get(1, rec=True)
    coll.add_index('w', lambda rec: rec['w'])
    with store.begin(write=True) as txn:
        assert coll.records.writer.write(txn, record, None, False) is None
    coll.put(record)
    assert coll.indices['w'].get('x') == {'k': 1, 'tag': 'b', 'w': 'x'}
    store.close()


def test_a_record_moved_to_a_key_holding_the_same_bytes_drops_that_keys_entries():
    """Records 1 and 2 store the same bytes; record 1, read, moved to key 2
    and changed, replaces record 2: record 2's entry goes, record 1's stays."""
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    coll.put({'k': 0, 'tag': 'a'}, key=1)
    coll.put({'k': 0, 'tag': 'a'}, key=2)
    with store.begin(write=True) as txn:
        record = coll.get(1, rec=True, txn=txn)
        record.key = (2,)
        record.data['tag'] = 'b'
        coll.put(record, txn=txn)
    assert [(tup, key) for tup, key in tags.pairs()] == [(('a',), (1,)), (('b',), (2,))]
    store.close()


def test_a_put_over_a_damaged_record_writes_nothing_after_a_one_lookup_replace(tmp_path):
    """On LMDB the writer replaces the record in one lookup before it reads
    the old version's entries; when that read fails (a damaged record), the
    old bytes go back: the transaction goes on with nothing written."""
    from centidb.errors import ChecksumError
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'), sync=False)
    coll = store.collection('c', key_func=lambda rec: rec['k'], checksum=True)
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    coll.put({'k': 1, 'tag': 'a'})
    key_bytes = keylib.packs((1,), coll.prefix)
    with store.begin(write=True) as txn:
        assert txn.engine_txn.fast.replace is not None
        damaged = bytearray(txn.engine_txn.get(key_bytes))
        damaged[2] ^= 1
        txn.engine_txn.put(key_bytes, bytes(damaged))
    before = list(store.engine.items())
    with store.begin(write=True) as txn:
        with pytest.raises(ChecksumError):
            coll.put({'k': 1, 'tag': 'b'}, txn=txn)
        assert txn.engine_txn.get(key_bytes) == bytes(damaged)
    assert list(store.engine.items()) == before
    assert [tup for tup, _ in tags.pairs()] == [('a',)]
    store.close()


def test_write_many_keys_values_from_the_first_id_given():
    """A counted collection: write_many keys the values (first_id,),
    (first_id + 1,), ... with no key function."""
    store = centidb.open('ListEngine')
    coll = store.collection('log')
    coll.add_index('tag', lambda rec: rec['tag'])
    with store.begin(write=True) as txn:
        keys = coll.records.writer.write_many(txn.engine_txn, [{'tag': 'a'}, {'tag': 'b'}],
                                              False, 7)
    assert keys == [(7,), (8,)]
    assert list(coll.items()) == [((7,), {'tag': 'a'}), ((8,), {'tag': 'b'})]
    assert [(tup, key) for tup, key in coll.indices['tag'].pairs()] == [
        (('a',), (7,)), (('b',), (8,))]
    store.close()


def test_a_blind_put_many_over_a_stored_record_leaves_its_old_entries():
    """As documented for blind: the stored version is not read, so its
    index entries that the new one lacks stay (pointing at the new record)."""
    store, coll, by_w = _store_with_index(key_func=lambda r: r['k'])
    coll.put_many([{'k': 1, 'w': 'a'}])
    coll.put_many([{'k': 1, 'w': 'b'}], blind=True)
    assert [(tup, key) for tup, key in by_w.pairs()] == [(('a',), (1,)), (('b',), (1,))]
    store.close()


@pytest.mark.parametrize('fast', [True, False], ids=['fast_get', 'get'])
def test_put_many_of_a_key_twice_over_an_empty_range_reads_nothing(fast):
    engine = counting_engine(fast)
    store = centidb.Store(engine)
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    w = coll.add_index('w', lambda rec: rec['w'])
    engine.calls = []
    coll.put_many([{'k': 1, 'w': 'a'}, {'k': 2, 'w': 'b'}, {'k': 1, 'w': 'c'}])
    assert [call for call in engine.calls if call != 'get'] == ['first']
    assert [(tup, key) for tup, key in w.pairs()] == [(('b',), (2,)), (('c',), (1,))]
    store.close()


def test_write_many_declines_the_uncommon_cases_having_called_nothing():
    """An inexact encoder, or no key function and no first id, or a Record
    among the values: None, before any user code runs."""
    from centidb import encodings
    calls = []
    store = centidb.open('ListEngine')
    as_json = store.collection('json', key_func=lambda rec: calls.append(rec) or 1,
                               encoder=encodings.make_json_encoder())
    counted = store.collection('counted')
    keyed = store.collection('keyed', key_func=lambda rec: calls.append(rec) or 1)
    with store.begin(write=True) as txn:
        etxn = txn.engine_txn
        assert not as_json.records.writer.usable
        assert as_json.records.writer.write_many(etxn, [{'a': 1}], False, None) is None
        assert as_json.records.writer.write_many(etxn, [{'a': 1}], False, 1) is None
        assert counted.records.writer.write_many(etxn, [{'a': 1}], False, None) is None
        assert keyed.records.writer.write_many(
            etxn, [{'a': 1}, records.Record(keyed, {'a': 2})], False, None) is None
        assert calls == [] and list(etxn.items()) == list(store.engine.items())
    assert as_json.count() == counted.count() == keyed.count() == 0
    store.close()


def test_write_decodes_a_plainly_packed_old_version_itself():
    """The old version's entries: a plainly packed one is decoded inline with
    decode_plain; one packed otherwise, or any with no decode_plain, goes to
    old_entries; one that decode_plain cannot decode too (which raises the
    collection's error)."""
    from centidb import encodings
    from centidb.errors import CorruptRecordError
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    asked = []

    def old_entries(old, tail):
        asked.append(old)
        return coll.records.old_entries(old, tail)

    writer = _writer_like(coll.records.writer, old_entries=old_entries)
    no_decode = _writer_like(coll.records.writer, old_entries=old_entries, decode_plain=None)
    key_bytes = keylib.packs((1,), coll.prefix)
    for each, packer, tag, expect_asked in ((writer, None, 'a', False),
                                            (writer, encodings.ZLIB_PACKER, 'b', True),
                                            (no_decode, None, 'c', True)):
        coll.put({'k': 1, 'tag': 'old'}, packer=packer)
        old = store.engine.get(key_bytes)
        with store.begin(write=True) as txn:
            each.write(txn, {'k': 1, 'tag': tag}, None, False)
        assert [tup for tup, _ in tags.pairs()] == [(tag,)]
        assert asked == ([old] if expect_asked else [])
        asked.clear()
    with store.begin(write=True) as txn:    # the plain header, then no msgpack
        txn.engine_txn.put(key_bytes, bytes([coll.records.writer.plain_id, 0xc1]))
    with store.begin(write=True) as txn:
        with pytest.raises(CorruptRecordError):
            writer.write(txn, {'k': 1, 'tag': 'd'}, None, False)
    assert asked == [bytes([coll.records.writer.plain_id, 0xc1])]
    store.close()


def test_a_put_without_index_entries_over_a_version_with_some_drops_them():
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    tags = coll.add_index('tag', lambda rec: rec['tag'])
    coll.put({'k': 1, 'tag': 'a'})
    coll.put({'k': 1, 'tag': None})
    assert list(tags.pairs()) == [] and coll.get(1) == {'k': 1, 'tag': None}
    store.close()


def test_write_many_calls_too_long_only_past_the_limit():
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    calls = []

    def too_long(*args):
        calls.append(args)
        raise ValueError('too long')

    key_bytes = keylib.packs(('kk',), coll.prefix)
    writer = _writer_like(coll.records.writer, limit=len(key_bytes), too_long=too_long)
    with store.begin(write=True) as txn:
        assert writer.write_many(txn.engine_txn, [{'k': 'kk'}], False, None) == [('kk',)]
    assert calls == [] and coll.get('kk') == {'k': 'kk'}
    writer = _writer_like(coll.records.writer, limit=len(key_bytes) - 1, too_long=too_long)
    with store.begin(write=True) as txn:
        with pytest.raises(ValueError, match='too long'):
            writer.write_many(txn.engine_txn, [{'k': 'kk'}], False, None)
    assert calls == [(('kk',), key_bytes, [])]
    store.close()
