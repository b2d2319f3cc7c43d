"""merge_overlay: pending writes merged over a snapshot; the write log behind it.

The in-memory and LevelDB write transactions keep their writes in one dict
(key -> latest value or TOMBSTONE): what a pending write costs, deletes of
keys only this transaction wrote, sorting on the first iteration, and the
commit taking the writes away.
"""

import sys
import tracemalloc

import pytest
from sortedcontainers import SortedDict

from centidb.engines import TOMBSTONE, MemoryEngine, PlyvelEngine, merge_overlay


def test_merge_overlay_directly():
    overlay = SortedDict({b'b': b'B', b'c': TOMBSTONE, b'e': b'E'})
    base = [(b'a', b'1'), (b'c', b'3'), (b'd', b'4')]
    assert list(merge_overlay(overlay, iter(base))) == \
        [(b'a', b'1'), (b'b', b'B'), (b'd', b'4'), (b'e', b'E')]
    assert list(merge_overlay(overlay, iter(base[::-1][:2]), hi=b'e',
                              reverse=True)) == [(b'd', b'4'), (b'b', b'B')]


# --- the pending writes of a write transaction (MemoryEngine, PlyvelEngine) --------------


@pytest.fixture(params=['memory', 'plyvel'])
def logged(request, tmp_path):
    """An engine whose write transactions keep their writes in memory."""
    if request.param == 'memory':
        eng = MemoryEngine()
    else:
        pytest.importorskip('plyvel')
        eng = PlyvelEngine(tmp_path / 'db', create_if_missing=True)
    yield eng
    eng.close()


def test_a_pending_write_costs_its_key_and_value_and_a_table_entry(logged):
    """No tuple or log entry per write: the objects passed, plus the dict's slot."""
    n = 20000
    keys = [b'key%08d' % i for i in range(n)]
    with logged.begin(write=True) as txn:
        tracemalloc.start()
        try:
            for i, key in enumerate(keys):
                if i % 2:
                    txn.put(key, b'v' * 90 + key)
                else:
                    txn._put_many([(key, b'w' * 90 + key)])
            held, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        value_size = sys.getsizeof(b'v' * 90 + keys[0])
        per_write = held / n
        assert per_write < value_size + 48, per_write     # a tuple and a list slot: 64 more
        assert txn.get(keys[1]) == b'v' * 90 + keys[1]
    assert logged.get(keys[0]) == b'w' * 90 + keys[0]
    assert sum(1 for _ in logged.keys()) == n


def test_a_key_put_and_deleted_in_one_transaction_leaves_no_trace(logged):
    logged.put(b'old', b'1')
    with logged.begin(write=True) as txn:
        txn.put(b'new', b'2')
        txn.put(b'old', b'3')
        it = txn.items()
        assert next(it) == (b'new', b'2')
        txn.delete(b'new')          # only ever pending: forgotten, not a tombstone
        txn.delete(b'old')          # committed: a tombstone hides it
        txn.delete(b'never')        # neither: a tombstone, which commits as nothing
        assert dict(txn._pending) == {b'old': TOMBSTONE, b'never': TOMBSTONE}
        assert list(it) == [] and txn.get(b'new') is None and txn.get(b'old') is None
        txn.put(b'new', b'4')
        assert list(txn.items()) == [(b'new', b'4')]
    assert list(logged.items()) == [(b'new', b'4')]


def test_iterating_sorts_the_pending_writes_once_and_later_writes_join_them(logged):
    with logged.begin(write=True) as txn:
        txn._put_many([(b'c', b'3'), (b'a', b'1')])
        it = txn.keys()
        assert next(it) == b'a'
        assert type(txn._pending) is SortedDict
        txn.writes += 2
        txn._fast_put_many([(b'b', b'2'), (b'd', b'4')])
        txn.put(b'e', b'5')
        assert list(it) == [b'b', b'c', b'd', b'e']
        assert list(txn.keys(reverse=True)) == [b'e', b'd', b'c', b'b', b'a']
    assert [key for key, _ in logged.items()] == [b'a', b'b', b'c', b'd', b'e']


def test_commit_takes_the_pending_writes_away(logged):
    txn = logged.begin(write=True)
    txn.put(b'k', b'v')
    txn.delete(b'gone')
    txn.commit()
    assert txn._pending is None and txn._fast_put_many is None
    assert list(logged.items()) == [(b'k', b'v')]
