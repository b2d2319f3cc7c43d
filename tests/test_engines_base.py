"""The engine base classes: what a new engine gets by implementing the eight methods.

:mod:`centidb.engines.base` checks arguments and state, serializes writers,
counts ``writes``, derives ``keys()``, ``first()``, ``count()``,
``delete_range()`` and the chunked reads from ``_items``, runs the
engine-level methods as transactions, and ends open transactions on
``close()`` ("Write your own engine" in ``docs/engines.rst``). These tests
use the smallest engine the contract allows, which implements nothing else;
the built-in engines are held to the same contract in
``test_engine_contract.py``.
"""

import threading

import pytest

import centidb
from centidb.engines import Engine, EngineTransaction, MemoryEngine
from centidb.engines.base import MAX_CHUNK, chunked
from centidb.errors import EngineClosedError, TransactionError


class SmallEngine(Engine):
    """Implements only ``_begin`` and ``_close``; records the transactions it began."""

    def __init__(self):
        super().__init__()
        self.data = {}
        self.begun = []

    def _begin(self, write):
        txn = SmallTransaction(self, write)
        self.begun.append(txn)
        return txn

    def _close(self):
        self.data = None


class SmallTransaction(EngineTransaction):
    """Implements only the six methods the base class asks for."""

    fail_commit = False

    def __init__(self, engine, write):
        super().__init__(engine, write)
        self.data = dict(engine.data)
        self.ended = None

    def _get(self, key):
        return self.data.get(key)

    def _put(self, key, value):
        self.data[key] = value

    def _delete(self, key):
        self.data.pop(key, None)

    def _items(self, lo, hi, reverse):
        # Seek past the last key at every step: sees writes made between steps.
        last = None
        while True:
            keys = sorted(k for k in self.data if (lo is None or k >= lo)
                          and (hi is None or k < hi))
            if last is not None:
                keys = [k for k in keys if (k < last if reverse else k > last)]
            if not keys:
                return
            last = keys[-1] if reverse else keys[0]
            yield last, self.data[last]

    def _commit(self):
        self.ended = 'commit'
        if self.fail_commit:
            raise OSError('disk on fire')
        if self.write:
            self.engine.data = self.data

    def _abort(self):
        self.ended = 'abort'


@pytest.fixture
def small():
    engine = SmallEngine()
    yield engine
    engine.close()


def filled(engine, n=5):
    with engine.begin(write=True) as txn:
        for i in range(1, n + 1):
            txn.put(bytes([i]), b'v%d' % i)
    return engine


# --- argument checks ---------------------------------------------------------------------

@pytest.mark.parametrize('call, error', [
    (lambda txn: txn.get('a'), TypeError),
    (lambda txn: txn.get(b''), ValueError),
    (lambda txn: txn.get(bytearray(b'a')), TypeError),
    (lambda txn: txn.put(b'a', 'v'), TypeError),
    (lambda txn: txn.put(b'', b'v'), ValueError),
    (lambda txn: txn.delete(1), TypeError),
    (lambda txn: txn.get_many([b'a', b'']), ValueError),
    (lambda txn: list(txn.items('a')), TypeError),
    (lambda txn: list(txn.keys(None, 1)), TypeError),
    (lambda txn: txn.count(b'a', 'b'), TypeError),
    (lambda txn: txn.delete_range(1, None), TypeError),
    (lambda txn: list(txn.item_chunks(None, 'z')), TypeError),
])
def test_bad_arguments_raise_before_the_engine_is_called(small, call, error):
    with small.begin(write=True) as txn:
        with pytest.raises(error):
            call(txn)
        assert txn.writes == 0 and txn.data == {}


def test_a_read_only_transaction_refuses_writes(small):
    filled(small)
    with small.begin() as txn:
        for call in (lambda: txn.put(b'x', b'y'), lambda: txn.delete(b'\x01'),
                     lambda: txn.delete_range(None, None)):
            with pytest.raises(TransactionError, match='read-only'):
                call()
        assert txn.get(b'\x01') == b'v1'
    assert small.get(b'x') is None


# --- what the base derives from _items -----------------------------------------------

def test_keys_first_count_and_get_many_come_from_the_six_methods(small):
    filled(small)
    with small.begin() as txn:
        assert list(txn.keys()) == [bytes([i]) for i in range(1, 6)]
        assert list(txn.keys(b'\x02', b'\x04', reverse=True)) == [b'\x03', b'\x02']
        assert txn.first(b'\x03') == (b'\x03', b'v3')
        assert txn.first(None, b'\x03', reverse=True) == (b'\x02', b'v2')
        assert txn.first(b'\x09') is None
        assert txn.count() == 5 and txn.count(b'\x02', b'\x04') == 2
        assert txn.count(b'\x04', b'\x02') == 0       # an empty range
        assert list(txn.items(b'\x04', b'\x02')) == []
        assert txn.get_many([b'\x01', b'\x09', b'\x05']) == [b'v1', None, b'v5']


def test_delete_range_deletes_key_by_key_by_default(small):
    filled(small)
    with small.begin(write=True) as txn:
        txn.delete_range(b'\x02', b'\x04')
        txn.delete_range(b'\x05', b'\x01')            # empty: nothing
        assert list(txn.keys()) == [b'\x01', b'\x04', b'\x05']
        txn.delete_range(None, None)
        assert txn.count() == 0
    assert list(small.keys()) == []


def test_iterators_see_writes_made_between_their_steps(small):
    filled(small, 3)
    with small.begin(write=True) as txn:
        seen = []
        for key, _ in txn.items():
            seen.append(key)
            if key == b'\x01':
                txn.put(b'\x02\x00', b'new')
                txn.delete(b'\x03')
        assert seen == [b'\x01', b'\x02', b'\x02\x00']


@pytest.mark.parametrize('reverse', [False, True])
def test_chunked_reads_give_what_items_gives_in_growing_lists(reverse):
    engine = SmallEngine()
    with engine.begin(write=True) as txn:
        for i in range(3000):
            txn.put(i.to_bytes(2, 'big'), b'v')
    lo, hi = (10).to_bytes(2, 'big'), (2900).to_bytes(2, 'big')
    with engine.begin() as txn:
        chunks = list(txn.item_chunks(lo, hi, reverse))
        assert [pair for chunk in chunks for pair in chunk] == list(txn.items(lo, hi, reverse))
        sizes = [len(chunk) for chunk in chunks]
        assert sizes[0] < sizes[1] and max(sizes) == MAX_CHUNK and all(sizes)
        keys = [key for chunk in txn.key_chunks(lo, hi, reverse) for key in chunk]
        assert keys == list(txn.keys(lo, hi, reverse))
        assert list(txn.item_chunks(hi, lo)) == [] and list(txn.key_chunks(hi, lo)) == []
    engine.close()


@pytest.mark.parametrize('reverse, lo, hi, expected', [
    (False, None, b'\x04', [b'\x01', b'\x02', b'\x03']),
    (True, b'\x02', None, [b'\x05', b'\x04', b'\x03', b'\x02']),
    (False, None, None, [b'\x01', b'\x02', b'\x03', b'\x04', b'\x05']),
])
def test_chunked_stops_at_the_end_of_the_range(reverse, lo, hi, expected):
    pairs = [(bytes([i]), b'') for i in (range(5, 0, -1) if reverse else range(1, 6))]
    got = [key for chunk in chunked(iter(pairs), lo, hi, reverse) for key, _ in chunk]
    assert got == expected
    keys = [key for key, _ in pairs]
    assert [k for chunk in chunked(iter(keys), lo, hi, reverse, keys=True) for k in chunk] == expected


# --- writes and states ---------------------------------------------------------------

def test_writes_counts_every_put_and_delete_and_the_end(small):
    txn = small.begin(write=True)
    txn.put(b'a', b'1')
    txn.put(b'a', b'2')
    txn.delete(b'missing')
    assert txn.writes == 3
    txn.delete_range(b'a', b'b')
    moved = txn.writes
    assert moved > 3
    txn.commit()
    assert txn.writes > moved and txn.state == 'committed'


def test_commit_and_abort_end_the_transaction_once(small):
    txn = small.begin(write=True)
    txn.put(b'a', b'1')
    txn.commit()
    assert txn.ended == 'commit' and small.get(b'a') == b'1'
    with pytest.raises(TransactionError, match='already committed'):
        txn.commit()
    with pytest.raises(TransactionError, match='already committed'):
        txn.get(b'a')
    txn.abort()                                        # does nothing
    assert txn.ended == 'commit' and txn.state == 'committed'
    other = small.begin(write=True)
    other.put(b'b', b'2')
    other.abort()
    assert other.state == 'aborted' and small.get(b'b') is None
    assert repr(other) == '<SmallTransaction write aborted>'


def test_a_failed_commit_aborts_and_frees_the_writer(small):
    txn = small.begin(write=True)
    txn.fail_commit = True
    txn.put(b'a', b'1')
    with pytest.raises(OSError, match='on fire'):
        txn.commit()
    assert txn.state == 'aborted' and small.get(b'a') is None
    small.put(b'a', b'2')                               # the writer lock was released
    assert small.get(b'a') == b'2'


def test_the_context_manager_commits_or_aborts(small):
    with small.begin(write=True) as txn:
        txn.put(b'a', b'1')
    assert txn.state == 'committed'
    with pytest.raises(KeyError):
        with small.begin(write=True) as txn:
            txn.put(b'b', b'1')
            raise KeyError('b')
    assert txn.state == 'aborted' and small.get(b'b') is None


def test_an_iterator_stops_when_its_transaction_ends(small):
    filled(small)
    txn = small.begin()
    items = txn.items()
    assert next(items) == (b'\x01', b'v1')
    txn.abort()
    with pytest.raises(TransactionError):
        next(items)


# --- the engine ------------------------------------------------------------------------

def test_one_writer_per_thread_and_writers_take_turns(small):
    txn = small.begin(write=True)
    with pytest.raises(TransactionError, match='already holds an open write transaction'):
        small.begin(write=True)
    with pytest.raises(TransactionError):
        small.put(b'a', b'1')                          # auto-commit needs the writer too
    reads = small.begin()                              # readers do not wait
    order = []

    def other_writer():
        with small.begin(write=True) as other:
            order.append('other')
            other.put(b'b', b'2')

    thread = threading.Thread(target=other_writer)
    thread.start()
    thread.join(0.05)
    order.append('first')
    txn.put(b'a', b'1')
    txn.commit()
    thread.join()
    reads.abort()
    assert order == ['first', 'other']
    assert list(small.items()) == [(b'a', b'1'), (b'b', b'2')]


def test_engine_level_methods_run_in_transactions_of_their_own(small):
    small.put(b'a', b'1')
    small.put(b'b', b'2')
    small.delete(b'b')
    assert small.get(b'a') == b'1' and small.first() == (b'a', b'1')
    assert all(txn.state == 'committed' for txn in small.begun if txn.write)
    keys = small.keys()
    assert next(keys) == b'a'
    held = small.begun[-1]
    assert held.state == 'open'                        # the iterator holds it
    keys.close()
    assert held.state == 'aborted'
    assert list(small.items(b'a', b'b')) == [(b'a', b'1')]
    with pytest.raises(TypeError):
        small.items('a')
    assert small.begun[-1].state == 'aborted'          # not left open


def test_close_ends_open_transactions_and_refuses_everything(small):
    filled(small)
    reader, writer = small.begin(), None
    items = reader.items()
    next(items)
    writer = small.begin(write=True)
    writer.put(b'x', b'y')
    small.close()
    assert small.closed and repr(small) == '<SmallEngine() closed>'
    assert reader.state == writer.state == 'closed'
    assert reader.ended == writer.ended == 'abort'
    for call in (lambda: reader.get(b'\x01'), lambda: next(items), lambda: small.begin(),
                 lambda: small.get(b'x'), writer.commit):
        with pytest.raises(EngineClosedError, match='closed'):
            call()
    writer.abort()                                     # it ended: nothing
    small.close()                                      # twice: nothing


def test_leaving_a_with_block_commits_a_transaction_the_engine_closed_and_raises(small):
    with pytest.raises(EngineClosedError):
        with small.begin(write=True) as txn:
            txn.put(b'a', b'1')
            small.close()


def test_an_unreferenced_open_transaction_is_aborted_and_frees_the_writer(small):
    txn = small.begin(write=True)
    txn.put(b'a', b'1')
    small.begun.clear()
    del txn
    small.put(b'b', b'2')
    assert list(small.keys()) == [b'b']


def test_a_store_runs_on_the_small_engine_as_on_the_memory_engine():
    results = []
    for engine in (SmallEngine(), MemoryEngine()):
        store = centidb.Store(engine)
        people = store.collection('people', key_func=lambda p: p['name'])
        by_city = people.add_index('city', lambda p: p['city'])
        people.put_many([{'name': n, 'city': c} for n, c in
                         [('ann', 'Leeds'), ('bob', 'York'), ('cy', 'Leeds')]])
        people.delete('bob')
        with store.begin(write=True) as txn:
            for key, person in people.items(txn=txn):
                people.put(dict(person, city='Hull'), txn=txn)
                people.delete('cy', txn=txn)
        results.append((list(people.items()), list(by_city.pairs()),
                        list(engine.items())))
        store.close()
    assert results[0] == results[1]
