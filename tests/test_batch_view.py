"""centidb.batches.BatchView: reads and writes through a collection's batches, on every engine.

Iterators that survive puts, deletes and ``batch()`` made by their own
transaction; batch keys too long for LMDB; writes into a batch whose packer
is not registered; another process's batches; the exact edges of
``batch()`` (``max_bytes``, member keys of 65535 bytes, LMDB's batch key
limit, ranges ending at a batch) and of splitting a batch on a put or
delete. The batch format and
``Collection.batch()`` edge cases are in ``test_batches.py``; the randomized
comparison with a dict model is ``test_batch_differential.py``.
"""

import os
import subprocess
import sys

import pytest

from centidb import batches, encodings, errors, keylib

from stores import contents, list_store, open_store


def filled(store, n=6, name='c'):
    coll = store.collection(name)
    for i in range(n):
        coll.put(i, key=i)
    return coll


# --- iterators consumed while the same thread writes -------------------------
# The engine promises an iterator resumes after the last key it yielded.
# _logical_forward/_logical_reverse kept a decoded member list of the current
# batch while the physical cursor sat on the batch key; a split/rewrite
# writes new batch keys that sort after it (same last member, later first
# member), so the cursor visited them again.

def test_put_into_current_batch_while_iterating_does_not_repeat_records(store):
    """Regression: a put splitting the batch being iterated made the
    iterator yield the records after it again (0..5, then 3, 4, 5)."""
    coll = filled(store)
    coll.batch()
    with store.begin(write=True):
        seen = []
        for key in coll.keys():
            seen.append(key)
            if key == (2,):
                coll.put('new', key=2)
    assert seen == [(n,) for n in range(6)]


def test_rebatching_while_iterating_does_not_repeat_records(store):
    """Regression: batch() over batches being iterated made the iterator
    yield records 0 and 1 again."""
    coll = filled(store)
    coll.batch(max_recs=2)
    with store.begin(write=True):
        it = coll.keys()
        assert [next(it), next(it)] == [(0,), (1,)]
        coll.batch()
        assert list(it) == [(n,) for n in range(2, 6)]


def test_iterator_made_before_the_first_batch_survives_it(store):
    """Regression: _logical_items picked raw.items() because _batched was
    still False; the batch key then reached unpacks(): CorruptKeyError
    "holds 2 keys"."""
    coll = filled(store)
    with store.begin(write=True):
        it = coll.keys()
        assert next(it) == (0,)
        coll.batch(lo=2)
        assert list(it) == [(n,) for n in range(1, 6)]


def test_reverse_iteration_does_not_yield_a_record_deleted_ahead(store):
    """Regression: a reverse iterator yielded a record its own transaction
    had deleted from the batch ahead of it (from its stale member list)."""
    coll = filled(store)
    coll.batch()
    with store.begin(write=True):
        seen = []
        for key in coll.keys(reverse=True):
            seen.append(key)
            if key == (4,):
                coll.delete(2)
    assert (2,) not in seen


# --- LMDB key size: batch keys hold two member keys --------------------------
# batch_key() = prefix + last + SEP + first was never checked against
# engine.max_key_size (511 on LMDB): _write_run (via _batch and _split_batch).

def lmdb(tmp_path):
    return open_store('LmdbEngine', tmp_path)


def test_lmdb_put_and_delete_in_a_batched_collection_with_long_keys(tmp_path):
    """Regression: a put splitting a batch wrote the batch key long+'aaaaa'
    (over 511 bytes) and raised EngineError."""
    store = lmdb(tmp_path)
    coll = store.collection('c')
    long = 'b' * 440                       # 506 bytes packed: a legal key
    for key in ['aaaaa', long, 'c']:
        coll.put(key, key=key)
    coll.batch()                            # batch key 'c'+'aaaaa' is short
    coll.put('x', key='bz')                 # the split writes batch long+'aaaaa'
    coll.delete('c')
    assert list(coll.keys()) == [('aaaaa',), (long,), ('bz',)]
    store.close()


def test_lmdb_batch_of_long_keys_fails_clearly_or_leaves_them_plain(tmp_path):
    """Regression: batch() of records whose batch key would exceed 511 bytes
    raised EngineError (a key of 694 bytes)."""
    store = lmdb(tmp_path)
    coll = store.collection('c')
    for i in range(3):
        coll.put(i, key=('y' * 300, i))
    coll.batch()
    assert coll.count() == 3
    store.close()


def test_lmdb_failed_batch_inside_a_transaction_does_not_lose_records(tmp_path):
    """Regression: a batch() failing on a too-long batch key inside a
    caller's transaction had already deleted the records it was batching:
    the caller handled the error, committed, and all 3 records were gone."""
    store = lmdb(tmp_path)
    coll = store.collection('c')
    for i in range(3):
        coll.put(i, key=('y' * 300, i))
    with store.begin(write=True):
        try:
            coll.batch()
        except Exception:
            pass                            # the caller handles the error ...
    assert coll.count() == 3                # ... and keeps its records
    store.close()


# --- missing packer on writes ------------------------------------------------

@pytest.mark.parametrize('op', ['put', 'delete'])
def test_write_into_batch_with_missing_packer_names_it(op, tmp_path):
    """Regression: _split_batch did self.store._packers_by_id[packer_id]:
    a bare KeyError instead of UnknownEncoderError naming the packer."""
    reverse = encodings.Encoder('reverse', lambda b: b[::-1], lambda b: b[::-1])
    store = open_store('LmdbEngine', tmp_path)
    coll = filled(store, 4)
    store.add_encoder(reverse)
    coll.batch(packer=reverse)
    store.close()
    store = open_store('LmdbEngine', tmp_path)
    coll = store.collection('c')
    with pytest.raises(errors.UnknownEncoderError, match='reverse'):
        if op == 'put':
            coll.put('x', key=(1, 5))
        else:
            coll.delete(2)
    store.close()


# --- the batched flag is cached when a store opens ---------------------------

def test_lmdb_store_open_in_another_process_sees_batches(tmp_path):
    """Regression: the batched flag was read once from the metadata, so a store
    opened before another process batched missed every batched record. Reads
    now look in batches when a plain read misses, and writes reload the
    metadata first."""
    store = lmdb(tmp_path)
    coll = filled(store, 4)
    code = ('import centidb; s = centidb.open("LmdbEngine", path=%r); '
            's.collection("c").batch(); s.close()' % str(tmp_path / 'db.lmdb'))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, '-c', code], check=True, env=env)
    assert coll.get(1) == 1                 # was None
    assert list(coll.keys()) == [(n,) for n in range(4)]   # was CorruptKeyError
    with store.begin() as txn:
        assert coll.get(2, txn=txn) == 2
    coll.put(10, key=(1, 5))                # splits the batch: it knows now
    coll.delete(2)
    assert list(coll.keys()) == [(0,), (1,), (1, 5), (3,)]
    assert store.verify() == []
    store.close()


# --- the exact edges of batch(), split and the restarting iterators ----------
# Each test pins one boundary of BatchView (found by mutation testing,
# dev/mutants.py batches): the physical layout after each call is compared
# exactly, not only what reads return.

def layout(store, coll, txn=None):
    """The collection's physical records in engine order (as `txn` sees them):
    a key tuple for a plain record, a list of member key tuples for a batch."""
    view = coll.records.view
    source = store.engine if txn is None else txn.engine_txn
    out = []
    for key_bytes, stored in source.items(view.prefix, view.end):
        if batches.is_batch(stored):
            out.append([keylib.unpacks(k, coll.prefix) for k, _ in view.members(stored)])
        else:
            out.append(keylib.unpacks(key_bytes, coll.prefix))
    return out


def stored_values(store, coll):
    """{key tuple: stored value} of the collection, batch members included."""
    view = coll.records.view
    with store.begin() as txn:
        return {keylib.unpacks(k, coll.prefix): v
                for k, v in view.items(txn.engine_txn, view.prefix, view.end, False)}


def test_max_bytes_is_a_limit_reached_exactly_not_exceeded(store):
    # Every record: a 2-byte packed key and a 7-byte encoded value (9 bytes).
    coll = store.collection('c')
    for n in range(1, 5):
        coll.put('abcdef', key=n)
    assert len(keylib.packs((1,))) == 2 and len(coll.get(1, encoded=True)) == 7
    assert coll.batch(max_bytes=18) == (4, 2, (4,))
    assert layout(store, coll) == [[(1,), (2,)], [(3,), (4,)]]
    assert coll.batch(max_bytes=17) == (4, 4, (4,))
    assert layout(store, coll) == [[(1,)], [(2,)], [(3,)], [(4,)]]
    assert coll.batch(max_bytes=27) == (4, 2, (4,))
    assert layout(store, coll) == [[(1,), (2,), (3,)], [(4,)]]
    assert list(coll.items()) == [((n,), 'abcdef') for n in range(1, 5)]


def test_member_keys_of_65535_bytes_batch_and_longer_ones_stay_plain():
    """A member key of exactly MAX_KEY_BYTES goes in a batch; one byte more
    stays a plain record (same key, same stored value), and max_bytes counts
    afresh after it; a long *value* does not keep a record plain."""
    store = list_store()
    coll = store.collection('c')
    longest, too_long = (b'x' * 57342,), (b'y' * 57343,)
    assert len(keylib.packs(longest)) == batches.MAX_KEY_BYTES
    assert len(keylib.packs(too_long)) == batches.MAX_KEY_BYTES + 1
    big = 'v' * 70000                           # a value longer than any member key
    for key, value in [((1,), 'a'), ((2,), big), (longest, 'x'),
                       (too_long, 'y'), ((b'z',), 'abcdef'), ((b'zz',), 'abcde')]:
        coll.put(value, key=key)
    too_long_bytes = keylib.packs(too_long, coll.prefix)
    plain = dict(contents(store))[too_long_bytes]
    z_bytes = 3 + 7 + 4 + 6                     # the (b'z',) and (b'zz',) records
    assert coll.batch(max_bytes=z_bytes) == (6, 4, (b'zz',))
    assert layout(store, coll) == [[(1,)], [(2,)], [longest], too_long, [(b'z',), (b'zz',)]]
    assert dict(contents(store))[too_long_bytes] == plain
    assert coll.batch(max_bytes=z_bytes - 1) == (6, 5, (b'zz',))
    assert layout(store, coll) == [[(1,)], [(2,)], [longest], too_long, [(b'z',)], [(b'zz',)]]
    assert coll.batch(hi=too_long) == (3, 1, (b'x' * 57342,))
    assert layout(store, coll)[0] == [(1,), (2,), longest]
    assert coll.get(too_long) == 'y' and coll.get((2,)) == big
    assert [k for k, _ in coll.items()] == [(1,), (2,), longest, too_long, (b'z',), (b'zz',)]
    store.close()


def _key_packing_to(size, fill):
    """A 1-tuple key of bytes `fill` repeated, packing to exactly `size` bytes."""
    for n in range(size):
        if len(keylib.packs((fill * n,))) == size:
            return (fill * n,)
    raise AssertionError(f'no key of {fill!r} packs to {size} bytes')


def test_lmdb_batch_key_of_exactly_max_key_size_is_written_as_a_batch(tmp_path):
    """A batch key of max_key_size bytes is a batch; one byte more leaves the
    records plain, exactly as they were, and counts no batch made."""
    store = lmdb(tmp_path)
    limit = store.engine.max_key_size
    for name, extra, made in [('fits', 0, 1), ('over', 1, 0)]:
        coll = store.collection(name)
        members = limit - len(coll.prefix) - 1              # both member keys, packed
        keys = [_key_packing_to(members // 2, b'a'),
                _key_packing_to(members - members // 2 + extra, b'b')]
        for key in keys:
            coll.put(key[0][:3], key=key)
        batch_key = batches.batch_key(coll.prefix, [(keylib.packs(k), b'') for k in keys])
        assert len(batch_key) == limit + extra
        before = contents(store)
        assert coll.batch() == (2, made, keys[1])
        if made:
            assert layout(store, coll) == [keys]
        else:
            assert layout(store, coll) == keys and contents(store) == before
        assert [v for _, v in coll.items()] == [b'aaa', b'bbb']
    store.close()


def test_batch_range_ends_at_the_first_member_of_a_batch(store):
    """A batch starting at hi is out of the range; one starting below it is
    rewritten whole, members at and after hi included."""
    coll = filled(store)
    coll.batch(max_recs=3)
    assert layout(store, coll) == [[(0,), (1,), (2,)], [(3,), (4,), (5,)]]
    assert coll.batch(hi=3) == (3, 1, (2,))
    assert layout(store, coll) == [[(0,), (1,), (2,)], [(3,), (4,), (5,)]]
    assert coll.batch(lo=1, hi=4, max_recs=4) == (6, 2, (5,))
    assert layout(store, coll) == [[(0,), (1,), (2,), (3,)], [(4,), (5,)]]
    assert list(coll.items()) == [((n,), n) for n in range(6)]


def test_put_and_delete_leave_a_lone_neighbour_plain_and_pairs_batched(store):
    coll = filled(store, 6)
    coll.batch(lo=1, hi=4)
    assert layout(store, coll) == [(0,), [(1,), (2,), (3,)], (4,), (5,)]
    coll.put('two', key=2)                      # a member: both sides are alone
    assert layout(store, coll) == [(0,), (1,), (2,), (3,), (4,), (5,)]
    coll.batch()
    coll.put('two', key=2)                      # two on each side: two batches
    assert layout(store, coll) == [[(0,), (1,)], (2,), [(3,), (4,), (5,)]]
    coll.put('half', key=(0, 5))                # not a member: splits around it
    assert layout(store, coll) == [(0,), (0, 5), (1,), (2,), [(3,), (4,), (5,)]]
    coll.delete(4)                              # rejoined as one batch
    assert layout(store, coll) == [(0,), (0, 5), (1,), (2,), [(3,), (5,)]]
    coll.delete(3)                              # the lone member left becomes plain
    assert layout(store, coll) == [(0,), (0, 5), (1,), (2,), (5,)]
    assert list(coll.items()) == [((0,), 0), ((0, 5), 'half'), ((1,), 1),
                                  ((2,), 'two'), ((5,), 5)]


def test_split_returns_the_stored_value_of_the_member_it_takes_out(store):
    """BatchView.split directly: Collection.put and delete ignore what it returns."""
    coll = filled(store, 5)
    before = stored_values(store, coll)
    coll.batch()
    view = coll.records.view
    at = lambda key: keylib.packs(key, coll.prefix)
    with store.begin(write=True) as txn:
        etxn = txn.engine_txn
        assert view.split(etxn, at((2,))) == before[(2,)]
        assert view.split(etxn, at((2,))) is None           # taken out: no batch covers it
        assert view.split(etxn, at((9,))) is None           # after every batch
        assert layout(store, coll, txn) == [[(0,), (1,)], [(3,), (4,)]]
        assert view.split(etxn, at((3,)), rejoin=True) == before[(3,)]
        assert view.split(etxn, at((0, 5))) is None         # covered, not a member
    assert layout(store, coll) == [(0,), (1,), (4,)]
    assert stored_values(store, coll) == {key: before[key] for key in [(0,), (1,), (4,)]}


@pytest.mark.parametrize('hi, write_at, deleted, expected', [
    (None, 5, 3, [5, 4, 2, 1, 0]),      # first member the scan yields from a batch
    (None, 4, 1, [5, 4, 3, 2, 0]),
    (5, 4, 2, [4, 3, 1, 0]),            # hi inside the batch: its lower members first
    (4, 3, 3, [3, 2, 1, 0]),            # deletes the member just yielded
])
def test_reverse_iteration_sees_each_delete_made_while_it_runs(store, hi, write_at, deleted,
                                                              expected):
    coll = filled(store)
    coll.batch()
    with store.begin(write=True):
        seen = []
        for (key,) in coll.keys(hi=hi, reverse=True):
            seen.append(key)
            if key == write_at:
                assert coll.delete(deleted) is not None
    assert seen == expected
    left = [n for n in range(6) if n != deleted]
    assert layout(store, coll) == [[(n,) for n in left]]


def test_forward_iteration_sees_each_delete_made_while_it_runs(store):
    coll = filled(store)
    coll.batch()
    with store.begin(write=True):
        seen = []
        for (key,) in coll.keys(lo=1):
            seen.append(key)
            if key == 1:
                coll.delete(3)
            elif key == 4:
                coll.put('five', key=5)
    assert seen == [1, 2, 4, 5]
    assert list(coll.items()) == [((0,), 0), ((1,), 1), ((2,), 2), ((4,), 4), ((5,), 'five')]
