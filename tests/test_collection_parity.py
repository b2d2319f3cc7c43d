"""Parity of the document layer's hot helper and its compiled twin."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from centidb import collection, keylib
import strategies

FAST = keylib.available_implementations().get('speedups')
pytestmark = pytest.mark.skipif(FAST is None, reason='centidb._speedups is not built')


def outcome(func, *args):
    try:
        return 'ok', func(*args)
    except Exception as exc:  # the type is what is compared
        return 'error', type(exc)


def twin():
    from centidb import _speedups
    return _speedups.index_entries


index_results = (st.none() | strategies.elements | strategies.keys
                 | st.lists(strategies.elements | strategies.keys, max_size=4))


@given(st.lists(st.tuples(index_results, st.binary(max_size=3)), max_size=4),
       st.binary(max_size=6))
def test_index_entries_same_bytes(results, tail):
    specs = tuple((lambda data, result=result: result, prefix) for result, prefix in results)
    expected = collection.index_entries_python(specs, None, tail)
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
        pure = outcome(collection.index_entries_python, specs, {}, tail)
        fast = outcome(twin(), specs, {}, tail)
        assert pure[0] == 'error' and pure == fast, (specs, pure, fast)


def test_index_entries_matches_packs_of_lists():
    specs = ((lambda d: d['tags'], b'\x1c\x05'), (lambda d: (d['a'], d['b']), b'\x1c\x06'))
    data = {'tags': ['x', ('y', 1)], 'a': 1, 'b': None}
    tail = b'\x01' + keylib.packs(('rec', 7))
    expected = [keylib.packs([('x',), ('rec', 7)], b'\x1c\x05'),
                keylib.packs([('y', 1), ('rec', 7)], b'\x1c\x05'),
                keylib.packs([(1, None), ('rec', 7)], b'\x1c\x06')]
    assert collection.index_entries_python(specs, data, tail) == expected
    assert twin()(specs, data, tail) == expected
