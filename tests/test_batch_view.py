"""centidb.batches.BatchView: reads and writes through a collection's batches, on every engine.

Iterators that survive puts, deletes and ``batch()`` made by their own
transaction; batch keys too long for LMDB; writes into a batch whose packer
is not registered; another process's batches. The batch format and
``Collection.batch()`` edge cases are in ``test_batches.py``; the randomized
comparison with a dict model is ``test_batch_differential.py``.
"""

import os
import subprocess
import sys

import pytest

from centidb import encodings, errors

from stores import open_store


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
