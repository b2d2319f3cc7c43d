"""centidb.records: the record write and read paths, and parity of their twins.

Every test here compares the pure-Python classes (``records.PYTHON``) with
the compiled twins, so the module is skipped when the twins are not built.
"""

from unittest import mock

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from centidb import impl, keylib
from centidb.records import record as records
from centidb.errors import CentiError
import strategies

FAST = impl.compiled_module()
pytestmark = pytest.mark.skipif(FAST is None, reason='centidb._speedups is not built')
PURE = records.PYTHON


def outcome(func, *args):
    try:
        return 'ok', func(*args)
    except Exception as exc:  # the type is what is compared
        return 'error', type(exc)


def twin():
    return FAST.index_entries


index_results = (st.none() | strategies.elements | strategies.keys
                 | st.lists(strategies.elements | strategies.keys, max_size=4))


@given(st.lists(st.tuples(index_results, st.binary(max_size=3)), max_size=4),
       st.binary(max_size=6))
def test_index_entries_same_bytes(results, tail):
    specs = tuple((lambda data, result=result: result, prefix) for result, prefix in results)
    expected = PURE.index_entries(specs, None, tail)
    assert twin()(specs, None, tail) == expected
    assert len(expected) == sum(0 if r is None else len(r) if type(r) is list else 1
                                for r, _ in results)


def test_index_entries_same_exceptions():
    def boom(data):
        raise KeyError('no field')

    cases = [
        (((boom, b'p'),), b''),
        (((lambda d: object(), b'p'),), b''),
        (((lambda d: [1, [2]], b'p'),), b''),
        (((lambda d: 1, 'not bytes'),), b''),
        (((lambda d: 1, b'p'),), 'not bytes'),
        (((lambda d: 1,),), b''),
    ]
    for specs, tail in cases:
        pure = outcome(PURE.index_entries, specs, {}, tail)
        fast = outcome(twin(), specs, {}, tail)
        assert pure[0] == 'error' and pure == fast, (specs, pure, fast)


def test_index_entries_matches_packs_of_lists():
    specs = ((lambda d: d['tags'], b'\x1c\x05'), (lambda d: (d['a'], d['b']), b'\x1c\x06'))
    data = {'tags': ['x', ('y', 1)], 'a': 1, 'b': None}
    tail = b'\x01' + keylib.packs(('rec', 7))
    expected = [keylib.packs([('x',), ('rec', 7)], b'\x1c\x05'),
                keylib.packs([('y', 1), ('rec', 7)], b'\x1c\x05'),
                keylib.packs([(1, None), ('rec', 7)], b'\x1c\x06')]
    assert PURE.index_entries(specs, data, tail) == expected
    assert twin()(specs, data, tail) == expected


# --- RecordWriter and RecordReader: the put and get hot paths ------------------

def _twin_store(twins, limit, engine='ListEngine', path=None, checksum=True):
    """A store on `engine` (at `path`, but for ListEngine) whose collection
    'c' uses the writer and reader of `twins`; keys of at most `limit` bytes;
    stored values with checksums or not."""
    import centidb
    if engine == 'ListEngine':
        store = centidb.open(engine)
    else:
        store = centidb.open(engine, path=path, sync=False)
    store.engine.max_key_size = limit
    with mock.patch.object(records, 'RecordWriter', twins.RecordWriter), \
            mock.patch.object(records, 'RecordReader', twins.RecordReader):
        coll = store.collection('c', key_func=lambda rec: rec['k'], checksum=checksum)
        coll.add_index('tag', lambda rec: rec['tag'])
        coll.add_index('size', lambda rec: len(rec['k']) if isinstance(rec['k'], tuple) else 1)
    assert type(coll.records.writer) is twins.RecordWriter
    assert type(coll.records.reader) is twins.RecordReader
    return store, coll


def _apply_in(txn, coll, held, op):
    """One operation in `txn`. 'update' puts back a Record it reads and keeps
    the Record put returns in `held`, 'hold' keeps a Record it reads there;
    'put_held' puts that one back, later in the transaction or in a later one."""
    kind, args = op
    if kind == 'put':
        value, key, blind = args
        return coll.put(value, key=key, blind=blind, txn=txn).key
    if kind == 'delete':
        deleted = coll.delete(args, txn=txn)   # each twin's own Record class
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
def test_record_writer_and_reader_twins_agree(checksum, ops, limit):
    """Same results, same exceptions (a centidb error's message too) and the
    same engine bytes, with and without checksums.

    Blind puts over existing keys followed by deletes leave entries that
    point at missing records, and damaged values fail their checksums, so
    the error paths are compared too."""
    pure = _twin_store(PURE, limit, checksum=checksum)
    fast = _twin_store(FAST, limit, checksum=checksum)
    try:
        for op in ops:
            assert messages(_apply, *pure, op) == messages(_apply, *fast, op), op
        assert list(pure[0].engine.items()) == list(fast[0].engine.items())
    finally:
        pure[0].close()
        fast[0].close()


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
def test_record_twins_agree_on_records_put_back(engine, txns, tmp_path_factory):
    """Same results, exception types and engine bytes when records read are
    put back: at once (the writer reuses what the read found and, on LMDB,
    replaces a record in one lookup), after other writes, or in a later
    transaction (when it must read the stored version again)."""
    base = tmp_path_factory.mktemp('twins')
    pure = _twin_store(PURE, 40, engine, str(base / 'pure'))
    fast = _twin_store(FAST, 40, engine, str(base / 'fast'))
    pure_held, fast_held = {}, {}
    try:
        for ops in txns:
            with pure[0].begin(write=True) as pure_txn, fast[0].begin(write=True) as fast_txn:
                for op in ops:
                    assert (outcome(_apply_in, pure_txn, pure[1], pure_held, op)
                            == outcome(_apply_in, fast_txn, fast[1], fast_held, op)), op
        assert list(pure[0].engine.items()) == list(fast[0].engine.items())
    finally:
        pure[0].close()
        fast[0].close()


def test_record_writer_declines_the_uncommon_cases():
    """Before calling user code: a Record, no key and no key_func, a batched
    collection, an inexact encoder; the general put handles those."""
    import centidb
    from centidb import encodings
    for twins in (PURE, FAST):
        calls = []
        store = centidb.open('ListEngine')
        with mock.patch.object(records, 'RecordWriter', twins.RecordWriter):
            counted = store.collection('counted')
            counted.add_index('x', lambda rec: calls.append(rec))
            as_json = store.collection('json', key_func=lambda rec: calls.append(rec) or 1,
                                       encoder=encodings.make_json_encoder())
        with store.begin(write=True) as txn:
            etxn = txn.engine_txn
            assert counted.records.writer.write(txn, {'a': 1}, None, False) is None
            assert as_json.records.writer.write(txn, {'a': 1}, None, False) is None
            record = counted.put({'a': 1}, txn=txn)
            calls.clear()
            writes = etxn.fast.writes
            assert counted.records.writer.write(txn, record, (5,), False) is None
        with mock.patch.object(records, 'RecordWriter', twins.RecordWriter):
            counted.batch()
        assert type(counted.records.writer) is twins.RecordWriter
        with store.begin(write=True) as txn:
            assert counted.records.writer.write(txn, {'a': 2}, (6,), False) is None
            assert calls == [] and txn.engine_txn.fast.writes == 0
        assert writes == 2
        store.close()


WRITER_ARGS = ('coll', 'txns', 'txn_class', 'usable', 'prefix', 'encode', 'compress', 'header',
               'key_func', 'specs', 'indexes', 'limit', 'old_entries', 'too_long', 'record_class',
               'counted', 'plain_id', 'decode_plain', 'checksum')


def _writer_like(twins, writer, **changes):
    """A ``twins.RecordWriter`` made with `writer`'s arguments, some changed."""
    args = {name: getattr(writer, name) for name in WRITER_ARGS}
    args.update(changes)
    return twins.RecordWriter(*(args[name] for name in WRITER_ARGS))


def test_record_writer_calls_too_long_only_past_the_limit():
    """A key or index entry of exactly `limit` bytes is written without
    calling `too_long` (which raises, as documented); one byte less of limit
    calls it with the key, the key bytes and every entry, having written
    nothing. write() returns the stored Record."""
    import centidb
    for twins in (PURE, FAST):
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
            writer = _writer_like(twins, coll.records.writer, limit=limit, too_long=too_long)
            with store.begin(write=True) as txn:
                record = writer.write(txn, value, None, False)
            assert (record.key, record.data, record._entries) == (('kk',), value, written)
            assert store.engine.get(key_bytes) == record._stored
            assert coll.get('kk') == value and calls == []
        for value, limit in ((short, len(key_bytes) - 1), (long_tag, len(entries[0]) - 1)):
            writer = _writer_like(twins, coll.records.writer, limit=limit, too_long=too_long)
            before = list(store.engine.items())
            with store.begin(write=True) as txn:
                with pytest.raises(ValueError, match='too long'):
                    writer.write(txn, value, None, False)
            assert calls.pop() == (('kk',), key_bytes, coll.records.entries(value, tail))
            assert list(store.engine.items()) == before
        store.close()


def test_records_put_takes_a_record_of_the_active_class_or_the_pure_one():
    """The general put (packer=, counter keys) stores a Record's data under
    its key whether it is of the active class or the pure one. Patching
    ``records.Record`` makes the compiled class the active one, as in
    speedups mode."""
    import centidb
    from centidb import encodings
    for active in (FAST.Record, PURE.Record):
        with mock.patch.object(records, 'Record', active):
            store = centidb.open('ListEngine')
            log = store.collection('log')
            coll = store.collection('c', key_func=lambda rec: rec['k'])
            for cls in dict.fromkeys([active, PURE.Record]):
                for target, put in ((log, log.put),
                                    (coll, lambda rec: coll.put(rec, packer=encodings.ZLIB_PACKER))):
                    stored = put(cls(target, {'k': 0, 'cls': cls.__module__}, ('r', cls.__module__)))
                    assert type(stored) is active and stored.key == ('r', cls.__module__)
                    assert target.get(('r', cls.__module__)) == {'k': 0, 'cls': cls.__module__}
            store.close()


def test_common_case_put_takes_a_pure_record_as_the_general_put_does():
    """Regression: with speedups active, the common-case writer took a pure
    Record for a plain value (msgpack cannot store it)."""
    import centidb
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda rec: rec['k'])
    assert coll.put(PURE.Record(coll, {'k': 1}, (5,))).key == (5,)
    assert coll.get(5) == {'k': 1}
    store.close()


# --- RecordReader: how many engine reads a read takes -------------------------

def _counting_engine(fast):
    """A MemoryEngine wrapper logging each get, seek and (if `fast`) unchecked get."""
    from centidb.engines import MemoryEngine, WrapperEngine, WrapperTransaction

    class Txn(WrapperTransaction):
        def __init__(self, engine, inner):
            super().__init__(engine, inner)
            if fast:
                self.fast.get = lambda key: engine.calls.append('fast_get') or inner.get(key)

        def get(self, key):
            self.engine.calls.append('get')
            return super().get(key)

        def get_many(self, keys):
            self.engine.calls.append('get_many')
            return super().get_many(keys)

        def first(self, lo=None, hi=None, reverse=False):
            self.engine.calls.append('first')
            return super().first(lo, hi, reverse)

    class Engine(WrapperEngine):
        transaction_class = Txn
        calls = []

    return Engine(MemoryEngine())


@pytest.mark.parametrize('fast', [True, False], ids=['fast_get', 'get'])
def test_record_reader_reads_a_plain_record_once(fast):
    """Both twins read a plain record with one engine read (the unchecked
    getter when the transaction has one and the key is no longer than the
    engine's limit) and look in batches only when it misses; an index get
    adds one seek to find the entry. An index scan without the unchecked
    getter reads each chunk's records with one get_many."""
    import centidb
    read = 'fast_get' if fast else 'get'
    for twins in (PURE, FAST):
        engine = _counting_engine(fast)
        engine.max_key_size = 40
        store = centidb.Store(engine)
        with mock.patch.object(records, 'RecordReader', twins.RecordReader):
            coll = store.collection('c', key_func=lambda rec: rec['k'])
            tags = coll.add_index('tag', lambda rec: rec['tag'])
        assert type(coll.records.reader) is twins.RecordReader
        longest = next(('k' * n,) for n in range(40)
                       if len(keylib.packs(('k' * n,), coll.prefix)) == 40)
        coll.put({'k': 1, 'tag': 'a'})
        coll.put({'k': longest, 'tag': None})
        for call, result, expected in (
                (lambda txn: coll.get(1, txn=txn), {'k': 1, 'tag': 'a'}, [read]),
                (lambda txn: coll.get(longest, txn=txn), {'k': longest, 'tag': None}, [read]),
                (lambda txn: coll.get(9, txn=txn), None, [read, 'first']),
                (lambda txn: coll.get(longest[0] + 'k', txn=txn), None, ['get', 'first']),
                (lambda txn: tags.get('a', txn=txn), {'k': 1, 'tag': 'a'}, ['first', read]),
                (lambda txn: list(tags.values(txn=txn)), [{'k': 1, 'tag': 'a'}],
                 ['fast_get' if fast else 'get_many'])):
            with store.begin() as txn:
                engine.calls = []
                assert call(txn) == result
                assert engine.calls == expected
        store.close()


@pytest.mark.parametrize('blind', [False, True])
def test_the_twin_write_many_hands_the_engine_pairs_the_collector_does_not_walk(blind):
    """Its pairs hold only bytes, so it takes them off the garbage collector's
    lists as it makes them (the pure version cannot); the bytes are the same."""
    import gc
    stores = [_twin_store(twins, None) for twins in (PURE, FAST)]
    handed = []
    try:
        for store, coll in stores:
            with store.begin(write=True) as txn:
                etxn = txn.engine_txn
                put_many = etxn._put_many
                etxn._put_many = lambda pairs: (handed.append(pairs), put_many(pairs))
                coll.put_many([{'k': n, 'tag': [n % 3, 'x']} for n in range(50)],
                              txn=txn, blind=blind)
        assert handed[0] == handed[1] and len(handed[1]) == 200   # a record, 3 entries
        assert not any(map(gc.is_tracked, handed[1]))
        assert list(stores[0][0].engine.items()) == list(stores[1][0].engine.items())
    finally:
        for store, _ in stores:
            store.close()


# --- RecordWriter.write_many and Record, through the public API ---------------------
# These run the active implementation (compiled or pure, as the pass says).


def _store_with_index(name='c', **options):
    import centidb
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
    import centidb
    engine = _counting_engine(fast)
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
