"""Whole-element prefixes, startswith, keyword-only options, group_counts()
and counting without decoding, on every engine (the mapping protocol is in
``test_collection_mapping.py``).
"""

import inspect

import pytest

from centidb import keylib
from centidb.collection import Collection
from centidb.index import Index
from centidb.keylib import Desc

from engine_helpers import EVENTS, events


# --- prefix= matches whole elements; startswith= matches strings --------------

def test_prefix_matches_whole_elements_in_keys_and_indexes(store):
    coll = events(store)
    assert list(coll.keys(prefix='libc6')) == [('libc6', 1), ('libc6', 2)]
    assert list(coll.keys(prefix=('libc6',))) == [('libc6', 1), ('libc6', 2)]
    assert list(coll.keys(prefix=('libc6', 2))) == [('libc6', 2)]
    assert list(coll.keys(prefix='libc')) == [('libc', 9)]
    assert coll.count(prefix='lib') == 0
    pkg = coll.indices['pkg']
    assert list(pkg.keys(prefix='libc6')) == [('libc6', 1), ('libc6', 2)]
    assert pkg.count(prefix='libc6-dev') == 3
    assert [r['n'] for r in coll.indices['pkg_n'].values(prefix='libc6-dev')] == [1, 2, 3]


def test_startswith_matches_the_start_of_the_last_element(store):
    coll = events(store)
    assert coll.count(startswith='libc6') == 5
    assert coll.count(startswith='lib') == 6
    assert list(coll.keys(startswith='libc6', reverse=True, max=1)) == [('libc6-dev', 3)]
    assert coll.indices['pkg'].count(startswith='libc') == 6
    assert coll.indices['pkg_n'].count(startswith=('libc6', )) == 5
    # Both bounds apply together, as do lo and hi.
    assert list(coll.keys(startswith='libc6', prefix='libc6')) == [('libc6', 1), ('libc6', 2)]
    assert list(coll.keys(startswith='libc', lo=('libc6', 2), hi='libc6-dev')) == [('libc6', 2)]


def test_prefix_does_not_match_equal_numbers_of_another_type(store):
    coll = store.collection('nums', key_func=lambda r: r)
    for value in (1, True, 1.0, 1.5, (1, 'x'), 2):
        coll.put(value)
    assert list(coll.keys(prefix=1)) == [(1,), (1, 'x')]
    assert list(coll.keys(prefix=True)) == [(True,)]
    assert list(coll.keys(prefix=1.0)) == [(1.0,)]


def test_prefix_with_desc_and_bytes_elements(store):
    coll = store.collection('desc', key_func=lambda r: (Desc(r[0]), r[1]))
    for value in [('ab', 1), ('abc', 2), (b'ab', 3), ('a', 4)]:
        coll.put(value)
    assert list(coll.keys(prefix=Desc('ab'))) == [(Desc('ab'), 1)]
    assert sorted(k[1] for k in coll.keys(startswith=Desc('ab'))) == [1, 2]
    assert list(coll.keys(prefix=Desc(b'ab'))) == [(Desc(b'ab'), 3)]


def test_startswith_refuses_a_non_string_last_element(store):
    coll = events(store)
    with pytest.raises(TypeError, match='startswith'):
        coll.count(startswith=('libc6', 1))
    with pytest.raises(ValueError, match='startswith'):
        list(coll.keys(startswith=()))
    with pytest.raises(TypeError, match='startswith'):
        coll.indices['pkg'].find(startswith=3)


# --- one parameter order, options keyword-only -------------------------------

QUERY_METHODS = [(Collection, name) for name in ('items', 'keys', 'values', 'count', 'find',
                                                   'group_counts', 'batch')] + \
                [(Index, name) for name in ('pairs', 'tups', 'keys', 'items', 'values',
                                            'count', 'find', 'group_counts')]
ORDER = ['lo', 'hi', 'prefix', 'startswith', 'reverse', 'max', 'include', 'txn']


@pytest.mark.parametrize('cls,name', QUERY_METHODS)
def test_query_options_after_lo_hi_are_keyword_only_in_one_order(cls, name):
    params = inspect.signature(getattr(cls, name)).parameters
    positional = [p for p in params.values()
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in positional][-2:] == ['lo', 'hi']
    keyword_only = [p.name for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    shared = [n for n in keyword_only if n in ORDER]
    assert shared == [n for n in ORDER if n in shared]
    assert {'prefix', 'startswith', 'txn'} <= set(keyword_only)


def test_positional_options_are_refused(store):
    coll = events(store)
    with pytest.raises(TypeError):
        coll.keys(None, None, 'libc6')
    with pytest.raises(TypeError):
        coll.get(('libc6', 1), None, None)
    with pytest.raises(TypeError):
        coll.indices['pkg'].count(None, None, 'libc6')


def test_get_options_are_keyword_only():
    params = inspect.signature(Collection.get).parameters
    assert [p.name for p in params.values()
            if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD] == ['self', 'key', 'default']


# --- group_counts() --------------------------------------------------------------

def test_group_counts_of_keys_and_index_tuples(store):
    coll = events(store)
    expected = [(('libc',), 1), (('libc6',), 2), (('libc6-dev',), 3), (('zlib',), 1)]
    assert coll.group_counts() == expected
    assert coll.indices['pkg'].group_counts() == expected
    assert coll.indices['pkg_n'].group_counts() == expected
    assert coll.group_counts(reverse=True) == expected[::-1]
    assert coll.group_counts(max=2) == expected[:2]
    assert coll.group_counts(max=0) == []
    assert coll.group_counts(reverse=True, max=1) == [(('zlib',), 1)]
    assert coll.group_counts(startswith='libc6') == expected[1:3]
    assert coll.group_counts(lo=('libc6', 2)) == [(('libc6',), 1)] + expected[2:]
    assert coll.indices['pkg_n'].group_counts(2, prefix='libc6') == [
        (('libc6', 1), 1), (('libc6', 2), 1)]


def test_group_counts_keeps_a_short_key_apart_from_its_extensions(store):
    coll = store.collection('mixed', key_func=lambda r: r)
    for key in [('a',), ('a', 1), ('a', 1, 'x'), ('a', 1, 'y'), ('a', 2), ('b',)]:
        coll.put(key)
    expected = [(('a',), 1), (('a', 1), 3), (('a', 2), 1), (('b',), 1)]
    assert coll.group_counts(2) == expected
    assert coll.group_counts(2, reverse=True) == expected[::-1]
    assert coll.group_counts(1) == [(('a',), 5), (('b',), 1)]
    index = coll.add_index('same', lambda r: r)
    assert index.group_counts(2) == expected
    assert index.group_counts(2, reverse=True) == expected[::-1]


def test_group_counts_reads_batched_records(store):
    coll = events(store)
    coll.batch(max_recs=3)
    assert coll.group_counts() == [(('libc',), 1), (('libc6',), 2), (('libc6-dev',), 3),
                                   (('zlib',), 1)]
    assert coll.count() == len(EVENTS)


@pytest.mark.parametrize('size,error', [(0, ValueError), (-1, ValueError), ('1', TypeError),
                                        (1.0, TypeError)])
def test_group_counts_checks_size(store, size, error):
    coll = events(store)
    with pytest.raises(error, match='size'):
        coll.group_counts(size)


def test_group_counts_in_a_write_transaction_sees_its_writes(store):
    coll = events(store)
    with store.begin(write=True) as txn:
        coll.put({'pkg': 'zlib', 'n': 2}, txn=txn)
        assert coll.group_counts(txn=txn)[-1] == (('zlib',), 2)
        assert coll.indices['pkg'].group_counts()[-1] == (('zlib',), 2)   # joins txn
        txn.abort()
    assert coll.group_counts()[-1] == (('zlib',), 1)


# --- counting and key-only reads never decode values --------------------------

def test_count_keys_and_group_counts_never_decode(store, monkeypatch):
    coll = events(store)
    records = coll.records

    def refuse(*args):
        raise AssertionError('a value was decoded')
    monkeypatch.setattr(records, 'decode', refuse)
    monkeypatch.setattr(records, 'decoded', refuse)
    monkeypatch.setattr(coll.encoder, 'decode', refuse, raising=False)
    assert coll.count() == len(EVENTS) == len(coll)
    assert len(list(coll.keys())) == len(EVENTS)
    assert list(coll) == sorted(coll.keys())
    assert coll.indices['pkg'].count() == len(EVENTS)
    assert len(list(coll.indices['pkg'].keys())) == len(EVENTS)
    assert len(coll.group_counts()) == 4
    assert ('libc6', 1) in coll and 'zlib' in coll.indices['pkg'] and bool(coll)


def test_prefix_range_is_one_byte_range_under_a_collection_prefix():
    lo, hi = keylib.prefix_range(('libc6',), b'\x15')
    assert lo == keylib.packs(('libc6',), b'\x15') and hi == lo + b'\x80'
    assert lo <= keylib.packs(('libc6', 1), b'\x15') < hi
    assert not lo <= keylib.packs(('libc6-dev',), b'\x15') < hi
