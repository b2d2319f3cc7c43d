"""MemoryEngine internals: its replaced-values history and its readers."""

from centidb.engines import MemoryEngine

from engine_helpers import fill


def test_memory_engine_history_is_versioned_and_dropped():
    eng = MemoryEngine()
    eng.put(b'k', b'v0')
    r0 = eng.begin()
    eng.put(b'k', b'v1')
    r1 = eng.begin()
    eng.delete(b'k')
    r2 = eng.begin()
    eng.put(b'k', b'v3')
    assert [r.get(b'k') for r in (r0, r1, r2)] == [b'v0', b'v1', None]
    assert [list(r.keys()) for r in (r0, r1, r2)] == [[b'k'], [b'k'], []]
    assert eng.get(b'k') == b'v3'
    assert len(eng._history[b'k']) == 3
    for reader in (r0, r1):
        reader.abort()
    assert eng._history  # r2 still needs it
    r2.commit()
    assert not eng._history and not eng._readers
    eng.put(b'k', b'v4')  # with no reader open nothing is recorded
    assert not eng._history


def test_memory_engine_iterator_releases_its_reader():
    eng = MemoryEngine()
    fill(eng, [(b'a', b'1'), (b'b', b'2')])
    it = eng.items()
    assert next(it) == (b'a', b'1')
    assert sum(eng._readers.values()) == 1
    it.close()
    assert not eng._readers
    list(eng.keys())
    assert not eng._readers


def test_memory_engine_forgotten_transaction_is_released():
    eng = MemoryEngine()
    eng.begin(write=True).put(b'k', b'v')  # never committed, then collected
    eng.begin()
    assert not eng._readers
    eng.put(b'k', b'w')  # the writer lock was released
    assert eng.get(b'k') == b'w'


def test_memory_engine_unchecked_getter_keeps_the_snapshot():
    eng = MemoryEngine()
    fill(eng, [(b'a', b'1'), (b'b', b'2')])
    reader = eng.begin()
    get = reader.fast.get
    assert get(b'a') == b'1' and get(b'c') is None
    eng.put(b'a', b'changed')
    eng.delete(b'b')
    eng.put(b'c', b'3')
    assert [get(key) for key in (b'a', b'b', b'c')] == [b'1', b'2', None]
    assert reader.first(b'a\x00') == (b'b', b'2')    # deleted since: from the history
    assert reader.first(hi=b'c', reverse=True) == (b'b', b'2')
    reader.commit()
    assert reader.fast.get is None
    with eng.begin() as current:
        assert current.first(b'a\x00') == (b'c', b'3')
        assert current.first(b'c\x00') is None
        assert current.first(hi=b'c', reverse=True) == (b'a', b'changed')


def test_memory_engine_writer_getter_follows_its_writes():
    eng = MemoryEngine()
    fill(eng, [(b'a', b'1'), (b'b', b'2')])
    with eng.begin(write=True) as txn:
        assert txn.first(b'a\x00') == (b'b', b'2')   # nothing pending yet
        txn.put(b'a', b'new')
        txn.delete(b'b')
        get = txn.fast.get
        assert [get(b'a'), get(b'b')] == [b'new', None]
        assert list(txn.keys()) == [b'a']   # the writes move to a sorted table
        txn.put(b'c', b'3')
        assert [txn.fast.get(key) for key in (b'a', b'b', b'c')] == [b'new', None, b'3']
    assert txn.fast.get is None
    assert list(eng.items()) == [(b'a', b'new'), (b'c', b'3')]


def test_memory_engine_large_commit_with_deletes_and_a_reader():
    # A commit of more keys than a tenth of the data: one bulk update.
    eng = MemoryEngine()
    old = {b'%04d' % i: b'old' for i in range(0, 1000, 2)}
    fill(eng, old.items())
    reader = eng.begin()
    with eng.begin(write=True) as txn:
        for i in range(1000):
            if i % 4 == 0:
                txn.delete(b'%04d' % i)
            else:
                txn.put(b'%04d' % i, b'new')
    new = {b'%04d' % i: b'new' for i in range(1000) if i % 4}
    assert list(eng.items()) == sorted(new.items())
    assert list(reader.items()) == sorted(old.items())
    assert reader.fast.get(b'0000') == b'old' and reader.fast.get(b'0001') is None
    reader.abort()
    assert not eng._history


def test_memory_engine_first_seeks_across_sublists():
    # Enough keys for several of SortedList's sublists, which the seek reads.
    eng = MemoryEngine()
    keys = [b'%05d' % i for i in range(0, 20000, 3)]
    fill(eng, [(key, key) for key in keys])
    bounds = [None, b'0', b'00000', b'00001', b'06000', b'06001', b'19998', b'19999', b'2']
    with eng.begin() as txn:
        for lo in bounds:
            for hi in bounds:
                for reverse in (False, True):
                    want = [k for k in keys if (lo is None or k >= lo) and (hi is None or k < hi)]
                    if reverse:
                        want.reverse()
                    assert txn.first(lo, hi, reverse) == ((want[0], want[0]) if want else None)


def test_memory_read_transaction_seek_cursor_reads_its_snapshot():
    """The cursor seeks the keys as of begin(), before and after later commits, until the end."""
    eng = MemoryEngine()
    fill(eng, [(b'b', b'1'), (b'd', b'2')])
    with eng.begin(write=True) as txn:
        assert txn.fast.seek_cursor is None     # seeks must see its pending writes
    txn = eng.begin()
    cursor = txn.fast.seek_cursor
    assert cursor.set_range(b'a') and cursor.key() == b'b'
    assert cursor.set_range(b'c') and cursor.key() == b'd'
    assert not cursor.set_range(b'e')
    eng.put(b'c', b'3')         # later commits: a key added, one deleted
    eng.delete(b'd')
    assert cursor.set_range(b'c') and cursor.key() == b'd'
    assert cursor.set_range(b'b') and cursor.key() == b'b'
    assert not cursor.set_range(b'd\x00')
    txn.abort()
    assert txn.fast.seek_cursor is None
    with eng.begin() as fresh:
        assert fresh.fast.seek_cursor.set_range(b'b') and fresh.fast.seek_cursor.key() == b'b'
        assert fresh.fast.seek_cursor.set_range(b'c') and fresh.fast.seek_cursor.key() == b'c'
        assert not fresh.fast.seek_cursor.set_range(b'd')
