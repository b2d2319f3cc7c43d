"""centidb.records: the record write and read paths, and parity of their twins.

Every test here compares the pure-Python classes (``records.PYTHON``) with
the compiled twins, so the module is skipped when the twins are not built.
"""

from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from centidb import impl, keylib, records
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

def _twin_store(twins, limit):
    """A store whose collection 'c' uses the writer and reader of `twins`."""
    import centidb
    store = centidb.open('ListEngine')
    store.engine.max_key_size = limit
    with mock.patch.object(records, 'RecordWriter', twins.RecordWriter), \
            mock.patch.object(records, 'RecordReader', twins.RecordReader):
        coll = store.collection('c', key_func=lambda rec: rec['k'])
        coll.add_index('tag', lambda rec: rec['tag'])
        coll.add_index('size', lambda rec: len(rec['k']) if isinstance(rec['k'], tuple) else 1)
    assert type(coll.records.writer) is twins.RecordWriter
    assert type(coll.records.reader) is twins.RecordReader
    return store, coll


def _apply(store, coll, op):
    kind, args = op
    with store.begin(write=kind == 'put') as txn:
        if kind == 'put':
            value, key, blind = args
            return coll.put(value, key=key, blind=blind, txn=txn).key
        if kind == 'delete':
            return coll.delete(args, txn=txn)
        if kind == 'get':
            return coll.get(args, default='missing', txn=txn)
        if kind == 'scan':
            index = coll.indices['tag']
            return (list(index.items(txn=txn)), list(index.values(reverse=True, txn=txn)),
                    list(index.values(lo=args, max=2, txn=txn)))
        return coll.indices['tag'].get(args, default='missing', txn=txn)


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
    st.tuples(st.just('index'), st.integers(0, 3) | st.text(max_size=2))), max_size=12)


@given(operations, st.sampled_from([None, 40]))
def test_record_writer_and_reader_twins_agree(ops, limit):
    """Same results, same exception types and the same engine bytes.

    Blind puts over existing keys followed by deletes leave entries that
    point at missing records, so the error paths are compared too."""
    pure = _twin_store(PURE, limit)
    fast = _twin_store(FAST, limit)
    try:
        for op in ops:
            assert outcome(_apply, *pure, op) == outcome(_apply, *fast, op), op
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
            writes = etxn.writes
            assert counted.records.writer.write(txn, record, (5,), False) is None
        with mock.patch.object(records, 'RecordWriter', twins.RecordWriter):
            counted.batch()
        assert type(counted.records.writer) is twins.RecordWriter
        with store.begin(write=True) as txn:
            assert counted.records.writer.write(txn, {'a': 2}, (6,), False) is None
            assert calls == [] and txn.engine_txn.writes == 0
        assert writes == 2
        store.close()
