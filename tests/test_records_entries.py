"""centidb.records.entries: finding, splitting, deleting and replacing index entries.

Checked on the in-memory engine: the functions take an engine transaction
and an index's prefix and nothing else of the store.
"""

import pytest

from centidb import keylib
from centidb.engines import MemoryEngine
from centidb.records.entries import (
    ASIDE, corrupt_entry_error, delete_prefix, delete_stale, first_entry, replace_entries,
    split_entries,
)
from centidb.errors import CorruptKeyError
from centidb.records.record import ENTRY_SEP

PREFIX = keylib.packs(9)


def entry(tup, key, prefix=PREFIX):
    """The engine key of the entry for index tuple `tup` and record key `key`."""
    return keylib.packs(tup, prefix) + ENTRY_SEP + keylib.packs(key)


@pytest.fixture
def etxn():
    """A write transaction of a fresh in-memory engine holding three entries."""
    engine = MemoryEngine()
    txn = engine.begin(write=True)
    for tup, key in [(('a',), (1,)), (('a',), (2,)), (('b',), (3,))]:
        txn.put(entry(tup, key), b'')
    txn.put(keylib.packs(10), b'another prefix')
    yield txn
    if txn.state == 'open':
        txn.abort()


def keys_under(etxn, prefix):
    return list(etxn.keys(prefix, keylib.next_prefix(prefix)))


def test_split_entries_gives_index_tuple_and_record_key_in_order(etxn):
    lo, hi = keylib.prefix_range((), PREFIX)
    assert list(split_entries(etxn, PREFIX, lo, hi, False)) == [
        (('a',), (1,)), (('a',), (2,)), (('b',), (3,))]
    assert list(split_entries(etxn, PREFIX, lo, hi, True))[0] == (('b',), (3,))


def test_split_entries_names_an_entry_without_a_record_key(etxn):
    bad = keylib.packs(('c',), PREFIX)
    etxn.put(bad, b'')
    lo, hi = keylib.prefix_range((), PREFIX)
    with pytest.raises(CorruptKeyError, match='does not hold'):
        list(split_entries(etxn, PREFIX, lo, hi, False))
    assert isinstance(corrupt_entry_error(bad), CorruptKeyError)


def test_first_entry_finds_the_lowest_record_key_of_a_tuple(etxn):
    assert first_entry(etxn, PREFIX, ('a',)) == entry(('a',), (1,))
    assert first_entry(etxn, PREFIX, ('b',)) == entry(('b',), (3,))
    assert first_entry(etxn, PREFIX, ('ab',)) is None


def test_delete_stale_deletes_only_the_entries_the_new_version_lacks(etxn):
    old = [entry(('a',), (1,)), entry(('b',), (3,))]
    delete_stale(etxn, old, [entry(('b',), (3,))])
    assert keys_under(etxn, PREFIX) == [entry(('a',), (2,)), entry(('b',), (3,))]
    delete_stale(etxn, None, [])
    delete_stale(etxn, [], [])
    assert len(keys_under(etxn, PREFIX)) == 2


def test_replace_entries_makes_the_aside_entries_the_index(etxn):
    aside = PREFIX + ASIDE
    for tup, key in [(('a',), (2,)), (('c',), (4,))]:
        etxn.put(entry(tup, key, aside), b'')
    before = etxn.writes
    replace_entries(etxn, PREFIX, aside)
    assert keys_under(etxn, PREFIX) == [entry(('a',), (2,)), entry(('c',), (4,))]
    assert keys_under(etxn, aside) == []
    assert [etxn.get(key) for key in keys_under(etxn, PREFIX)] == [b'', b'']
    # Two stale entries deleted, one written, two aside deleted; ('a', 2) untouched.
    assert etxn.writes - before == 5


def test_delete_prefix_deletes_every_key_under_the_prefix_only(etxn):
    delete_prefix(etxn, PREFIX)
    assert keys_under(etxn, PREFIX) == []
    assert etxn.get(keylib.packs(10)) == b'another prefix'
