"""``len(coll)`` and ``coll.count()``: keys only when the collection holds no batch.

A collection whose stored metadata (read in the counting transaction) says
it never held a batch is counted by the engine, keys alone; one that holds
batches is counted record by record through them. The batch flag is read
from the store, not from this process's cache, so another store object (or
process) that batched the collection meanwhile is seen.
"""

import collections

import pytest

import centidb
from centidb.engines import MemoryEngine, WrapperEngine, WrapperTransaction


class ValueReadsTransaction(WrapperTransaction):
    """Counts the calls that read values (pairs), by name."""

    def _note(self, name):
        self.engine.reads[name] += 1

    def _items(self, lo, hi, reverse):
        self._note('items')
        return super()._items(lo, hi, reverse)

    def _item_chunks(self, lo, hi, reverse):
        self._note('item_chunks')
        return self.inner.item_chunks(lo, hi, reverse)

    def first(self, lo=None, hi=None, reverse=False):
        self._note('first')
        return super().first(lo, hi, reverse)


class ValueReadsEngine(WrapperEngine):
    transaction_class = ValueReadsTransaction

    def __init__(self, inner):
        super().__init__(inner)
        self.reads = collections.Counter()


@pytest.fixture
def pair():
    """Two stores on one engine, the first counting its value reads."""
    inner = MemoryEngine()
    engine = ValueReadsEngine(inner)
    one = centidb.Store(engine)
    two = centidb.Store(inner)
    yield one, two, engine
    one.close()


def fill(coll, n):
    coll.put_many({'id': i} for i in range(n))


def test_len_of_an_unbatched_collection_reads_no_value(pair):
    one, _, engine = pair
    coll = one.collection('c', key_func=lambda r: r['id'])
    fill(coll, 500)
    coll.add_index('id', lambda r: r['id'])
    engine.reads.clear()
    assert len(coll) == 500 and coll.count() == 500
    with one.begin() as txn:
        assert coll.count(txn=txn) == 500
    assert engine.reads == {}


def test_batches_are_counted_record_by_record(pair):
    one, _, _ = pair
    coll = one.collection('c', key_func=lambda r: r['id'])
    fill(coll, 500)
    found, made, _ = coll.batch(max_recs=64)
    assert found == 500 and made > 1
    assert len(coll) == 500 and coll.count() == 500
    assert coll.count(lo=100, hi=300) == 200 and coll.count(max=7) == 7


def test_batches_made_by_another_store_object_are_seen(pair):
    one, two, engine = pair
    coll = one.collection('c', key_func=lambda r: r['id'])
    fill(coll, 300)
    assert len(coll) == 300
    other = two.collection('c', key_func=lambda r: r['id'])
    assert other.batch(max_recs=100)[1] == 3
    engine.reads.clear()
    assert len(coll) == 300                     # 3 engine keys, 300 records
    assert engine.reads                         # read through the batches


def test_a_batch_made_in_the_counting_transaction_is_seen(pair):
    one, _, _ = pair
    coll = one.collection('c', key_func=lambda r: r['id'])
    fill(coll, 200)
    with one.begin(write=True) as txn:
        assert coll.count(txn=txn) == 200
        coll.batch(max_recs=50, txn=txn)
        assert coll.count(txn=txn) == 200 and len(coll) == 200
        coll.put({'id': 1000}, txn=txn)
        assert len(coll) == 201
        txn.abort()
    assert len(coll) == 200 and coll.count() == 200


def test_an_empty_collection(pair):
    one, _, _ = pair
    coll = one.collection('c')
    assert len(coll) == 0 and not coll
    coll.put({'a': 1})
    assert len(coll) == 1
