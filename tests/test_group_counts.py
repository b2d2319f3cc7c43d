"""centidb.keylib.count_groups, the loop of group_counts(): pure and compiled agree.

The compiled twin compares the engine keys after a group's first as bytes
with a bound cut from that first key, where the pure code packs the decoded
group again; the two must give the same groups for every kind of element,
short keys, ``reverse`` and ``max``. A corrupt engine key that starts a group
raises the error of the collection or index (its ``_group_of``); one inside
a group is counted, never decoded. The public behaviour is also tested in
test_query_api.py and, against a model, test_collection_stateful.py.
"""

import datetime
import inspect
import math
import random
import uuid

import pytest

from centidb import impl, keylib, query
from centidb.errors import CorruptKeyError
from centidb.keyformat import KEY_SEP, TAG_BYTES, TAG_STR
from centidb.keylib import Desc

PURE = keylib.PYTHON.count_groups
TWIN = getattr(impl.compiled_module(), 'count_groups', None)
IMPLEMENTATIONS = [pytest.param(PURE, id='pure'),
                   pytest.param(TWIN, id='twin', marks=pytest.mark.skipif(
                       TWIN is None, reason='centidb._speedups is not built'))]
PREFIX = b'\x10'

ELEMENTS = [None, False, True, -2 ** 70, -257, -1, 0, 1, 255, 2 ** 64, 2 ** 70, -0.0, 0.5,
            1.5, -1.25, math.inf, -math.inf, math.nan, 1e300, '', '\x00', 'a', 'a\x00', 'ab', '\uffff',
            '\ud800', b'', b'\x00', b'\xff', b'\xff\xff', Desc('a'), Desc(1), Desc(b''),
            datetime.datetime(2020, 1, 2, 3, 4, 5, 6),
            datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc),
            uuid.UUID(int=0), uuid.UUID(int=2 ** 128 - 1)]


def index_tuples(seed, n=300):
    """Index tuples of 0 to 3 edge-skewed elements, drawn with repeats."""
    rnd = random.Random(seed)
    pool = [tuple(rnd.choice(ELEMENTS) for _ in range(rnd.randrange(4))) for _ in range(n // 4)]
    return [rnd.choice(pool) for _ in range(n)]


def engine_keys(tuples, parts):
    """Sorted engine keys: index entries (``parts == 2``) or record keys (1)."""
    if parts == 2:
        return sorted({keylib.packs([tup, (i,)], PREFIX) for i, tup in enumerate(tuples)})
    return sorted({keylib.packs(tup, PREFIX) for tup in tuples})


def chunks_of(keys, seed):
    """`keys` in lists of random lengths, as key_chunks gives them."""
    rnd = random.Random(seed)
    pairs, chunks = list(keys), []
    while pairs:
        cut = rnd.randrange(1, 40)
        chunks.append(pairs[:cut])
        del pairs[:cut]
    return chunks


def model(keys, parts, size):
    """Runs of equal leading elements of the first key of each engine key."""
    groups = []
    for key in keys:
        tup = keylib.unpacks_list(key, PREFIX)[0][:size]
        if groups and keylib.packs(groups[-1][0]) == keylib.packs(tup):
            groups[-1][1] += 1
        else:
            groups.append([tup, 1])
    return [(group, n) for group, n in groups]


def refuse(key, size):
    raise AssertionError(f'group_of called for a valid key {key!r}')


@pytest.mark.parametrize('count_groups', IMPLEMENTATIONS)
@pytest.mark.parametrize('parts', [1, 2])
@pytest.mark.parametrize('seed', range(4))
def test_groups_of_every_kind_of_element(count_groups, parts, seed):
    keys = engine_keys(index_tuples(seed), parts)
    for size in (1, 2, 3):
        expected = model(keys, parts, size)
        for max in (None, 0, 1, 3):
            got = count_groups(chunks_of(keys, seed), PREFIX, size, False, max, parts, refuse)
            assert repr(got) == repr(expected[:max]), (size, max)
            got = count_groups(chunks_of(keys[::-1], seed), PREFIX, size, True, max, parts,
                               refuse)
            assert repr(got) == repr(model(keys[::-1], parts, size)[:max]), (size, max)


@pytest.mark.parametrize('count_groups', IMPLEMENTATIONS)
def test_a_short_key_is_a_group_apart_from_its_extensions(count_groups):
    tuples = [(), ('a',), ('a',), ('a', 1), ('a', 1, 'x'), ('a', 2), ('a\x00',), ('b',)]
    keys = engine_keys(tuples, 2)
    assert count_groups([keys], PREFIX, 2, False, None, 2, refuse) == [
        ((), 1), (('a',), 2), (('a', 1), 2), (('a', 2), 1), (('a\x00',), 1), (('b',), 1)]
    assert count_groups([keys[::-1]], PREFIX, 2, True, None, 2,
                        refuse) == [(('b',), 1), (('a\x00',), 1), (('a', 2), 1),
                                    (('a', 1), 2), (('a',), 2), ((), 1)]


def corrupt_keys():
    """Engine keys under PREFIX that do not hold an index tuple and a record key."""
    return [PREFIX + b'\x7f',                               # unknown tag
            keylib.packs(('a',), PREFIX),                   # no record key
            keylib.packs([('a',), (1,), (2,)], PREFIX),     # three keys
            keylib.packs([('a',), (1,)], PREFIX)[:-1],      # truncated record key
            keylib.packs(('a',), PREFIX)[:-1] + b'\x01']    # truncated index tuple


@pytest.mark.parametrize('count_groups', IMPLEMENTATIONS)
@pytest.mark.parametrize('corrupt', corrupt_keys())
def test_a_corrupt_key_starting_a_group_goes_to_group_of(count_groups, corrupt):
    def group_of(key, size):
        raise CorruptKeyError(f'corrupt: {key!r}')
    pairs = [keylib.packs([(' ',), (1,)], PREFIX), corrupt]
    with pytest.raises(CorruptKeyError, match='corrupt: '):
        count_groups([pairs], PREFIX, 1, False, None, 2, group_of)
    # A group_of that accepts the key after all gives its group.
    accepted = count_groups([pairs], PREFIX, 1, False, None, 2, lambda key, size: ('x',))
    assert accepted == [((' ',), 1), (('x',), 1)]


def string_elements(seed):
    """Str and bytes elements with raw 7-bit groups: every 1- and 2-byte
    payload, 3- and 4-byte payloads led by a multi-byte UTF-8 start, and
    random runs of groups (dangling, or with padding bits set)."""
    rnd = random.Random(seed)
    payloads = [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(256)
                                                    for b in range(0, 256, 3)]
    payloads += [bytes([rnd.randrange(0xC0, 0x100)] + [rnd.randrange(0x70, 0xD0)
                                                       for _ in range(rnd.randrange(2, 4))])
                 for _ in range(4000)]
    elements = []
    for payload in payloads:
        for tag in (TAG_STR, TAG_BYTES):
            out = bytearray([tag])
            keylib._pack7(payload, out)
            elements.append(bytes(out))
    elements += [bytes([rnd.choice((TAG_STR, TAG_BYTES))])
                 + bytes(rnd.randrange(0x80, 0x100) for _ in range(rnd.randrange(10)))
                 for _ in range(2000)]
    return elements


def decodes(key):
    try:
        keylib.PYTHON.unpacks_list(key, PREFIX)
    except CorruptKeyError:
        return False
    return True


@pytest.mark.parametrize('count_groups', IMPLEMENTATIONS)
@pytest.mark.parametrize('where', ['record key', 'past the group'])
def test_a_string_is_corrupt_exactly_when_the_decoder_says_so(count_groups, where):
    """Elements outside the group are checked, not decoded, by the twin:
    the keys it sends to group_of are exactly those the pure decoder
    refuses (bad UTF-8, a dangling 7-bit group, padding bits set)."""
    head = keylib.packs(('a',), PREFIX)
    tail = bytes([KEY_SEP]) + keylib.packs((1,))
    refused = []

    def group_of(key, size):
        refused.append(key)
        raise CorruptKeyError('refused')
    for element in string_elements(1):
        if where == 'record key':
            key = head + bytes([KEY_SEP]) + element
        else:
            key = head + element + tail
        if decodes(key):
            assert count_groups([[key]], PREFIX, 1, False, None, 2, group_of) == [(('a',), 1)]
        else:
            with pytest.raises(CorruptKeyError, match='refused'):
                count_groups([[key]], PREFIX, 1, False, None, 2, group_of)
            assert refused.pop() == key
    assert not refused


@pytest.mark.parametrize('count_groups', IMPLEMENTATIONS)
def test_a_corrupt_key_inside_a_group_is_counted_undecoded(count_groups):
    first = keylib.packs([('a',), (1,)], PREFIX)
    pairs = [first, first + b'\x7f', keylib.packs([('b',), (1,)], PREFIX)]
    assert count_groups([pairs], PREFIX, 1, False, None, 2, refuse) == [(('a',), 2), (('b',), 1)]


def test_the_twin_is_active_when_the_compiled_module_is():
    if impl.COMPILED is None:
        assert query.count_groups is PURE
    else:
        assert query.count_groups is TWIN and TWIN.__doc__ == PURE.__doc__
    if TWIN is not None:
        assert (list(inspect.signature(TWIN).parameters)
                == list(inspect.signature(PURE).parameters))


# --- through the public API, on every engine ------------------------------------

def indexed(store):
    coll = store.collection('c', key_func=lambda r: r['k'])
    index = coll.add_index('v', lambda r: r['v'])
    for k, v in enumerate('aab'):
        coll.put({'k': k, 'v': v})
    return coll, index


def put_raw(store, key, value=b''):
    with store.begin(write=True) as txn:
        txn.engine_txn.put(key, value)


@pytest.mark.parametrize('entry,error', [(('c',), 'does not hold an index tuple'),
                                         (b'\x7f', 'unknown tag')])
def test_a_corrupt_index_entry_starting_a_group_raises(store, entry, error):
    coll, index = indexed(store)
    tail = keylib.packs(entry) if isinstance(entry, tuple) else entry
    put_raw(store, index.prefix + tail)
    with pytest.raises(CorruptKeyError, match=error):
        index.group_counts()
    assert index.group_counts(hi='b') == [(('a',), 2)]


def test_a_corrupt_index_entry_inside_a_group_is_counted(store):
    coll, index = indexed(store)
    # Between the entries of records 0 and 1: neither first nor last.
    put_raw(store, keylib.packs([('a',), (0,)], index.prefix) + b'\x7f')
    assert index.group_counts() == [(('a',), 3), (('b',), 1)]
    assert index.group_counts(reverse=True) == [(('b',), 1), (('a',), 3)]


def test_a_corrupt_record_key_starting_a_group_raises_the_collection_error(store):
    coll, index = indexed(store)
    with store.begin() as txn:
        value = txn.engine_txn.get(keylib.packs(0, coll.prefix))
    put_raw(store, coll.prefix + b'\x7f', value)
    with pytest.raises(CorruptKeyError, match="collection 'c': a record key is corrupt"):
        coll.group_counts()


def test_groups_of_many_entries_span_chunks(store):
    coll = store.collection('many', key_func=lambda r: r['k'])
    index = coll.add_index('v', lambda r: (r['v'], r['k'] % 3))
    for start in range(0, 3000, 500):
        with store.begin(write=True) as txn:
            for k in range(start, start + 500):
                coll.put({'k': k, 'v': k // 700}, txn=txn)
    expected = [((v,), n) for v, n in ((0, 700), (1, 700), (2, 700), (3, 700), (4, 200))]
    assert index.group_counts() == expected
    assert index.group_counts(reverse=True) == expected[::-1]
    assert coll.group_counts(max=2) == [((0,), 1), ((1,), 1)]
    assert index.group_counts(2, max=4) == [((0, 0), 234), ((0, 1), 233), ((0, 2), 233),
                                            ((1, 0), 233)]
    assert sum(n for _, n in index.group_counts(2)) == 3000
    assert len(index.group_counts(2, reverse=True)) == 15
