"""Savepoints: writes through an engine transaction that can be rolled back (:mod:`centidb.records.savepoint`).

A :class:`~centidb.records.savepoint.Savepoint` remembers the value each key held
before its first write through it, and :meth:`roll_back` puts those back;
reads pass straight through; it offers none of the engine's unchecked calls;
on an engine with commit limits it refuses a write past them before making
it. ``Collection.put_many`` runs its general path through one, so a record
that fails undoes the records before it. (Two more savepoint tests run on
every engine in ``test_engine_contract.py``: ``get_many`` and range
deletes.)
"""

import pytest

import centidb
from centidb.encodings import make_json_encoder
from centidb.engines import MemoryEngine, WrapperEngine
from centidb.errors import LimitExceededError
from centidb.records.savepoint import Savepoint

from engine_helpers import engine  # noqa: F401 - a fixture

CALLS = ('get', 'put_many', 'put', 'replace', 'delete',
         'seek_cursor')


def fill(engine):
    with engine.begin(write=True) as txn:
        for i in range(1, 6):
            txn.put(bytes([i]), b'v%d' % i)
    return dict(engine.items())


def test_roll_back_puts_back_what_each_key_held_before_the_savepoint(engine):
    before = fill(engine)
    with engine.begin(write=True) as txn:
        txn.put(b'\x09', b'before the savepoint')
        outside = dict(txn.items())
        savepoint = Savepoint(txn)
        savepoint.put(b'\x01', b'first')
        savepoint.put(b'\x01', b'second')          # the first value is the one kept
        savepoint.put(b'\x07', b'new')
        savepoint.delete(b'\x02')
        savepoint.delete(b'\x08')                  # missing: stays missing
        savepoint._put_many([(b'\x03', b'many'), (b'\x0a', b'')])
        assert savepoint.get(b'\x01') == b'second' and txn.get(b'\x07') == b'new'
        assert savepoint.get(b'\x02') is None and savepoint.record_count == 1
        savepoint.roll_back()
        assert dict(txn.items()) == outside
        savepoint.roll_back()                      # nothing left to put back
        assert dict(txn.items()) == outside
    assert dict(engine.items()) == {**before, b'\x09': b'before the savepoint'}


def test_reads_pass_through_and_see_the_savepoints_writes(engine):
    fill(engine)
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn, 'my writes')
        assert savepoint.engine is engine and savepoint.state == 'open'
        savepoint.put(b'\x02\x00', b'x')
        assert savepoint.writes == txn.writes
        assert savepoint.get_many([b'\x01', b'\x02\x00', b'\x0f']) == [b'v1', b'x', None]
        assert list(savepoint.keys(b'\x02', b'\x03')) == [b'\x02', b'\x02\x00']
        assert list(savepoint.items(b'\x04', reverse=True)) == [(b'\x05', b'v5'),
                                                                (b'\x04', b'v4')]
        assert savepoint.first(b'\x02\x01') == (b'\x03', b'v3')
        assert savepoint.count() == 6 and savepoint.count(b'\x03') == 3
        chunks = list(savepoint.item_chunks(None, b'\x03'))
        assert [pair for chunk in chunks for pair in chunk] == list(txn.items(None, b'\x03'))
        assert [k for chunk in savepoint.key_chunks(b'\x04') for k in chunk] == [b'\x04',
                                                                                b'\x05']
        assert [k for chunk in savepoint.key_chunks(b'\x04', None, True)
                for k in chunk] == [b'\x05', b'\x04']
        txn.abort()
    with pytest.raises(centidb.errors.TransactionError):    # its transaction has ended
        savepoint.get(b'\x01')


def test_roll_back_puts_back_a_whole_range_deleted_through_it(engine):
    before = fill(engine)
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn)
        savepoint.delete_range(None, None)
        assert txn.count() == 0 and set(savepoint.saved) == set(before)
        savepoint.roll_back()
        assert dict(txn.items()) == before


def test_a_savepoint_offers_none_of_the_unchecked_calls(engine):
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn)
        assert [getattr(savepoint.fast, name) for name in CALLS] == [None] * len(CALLS)
        # Its own: a Record read through it is not taken for one read in txn.
        assert savepoint.fast is not txn.fast


def test_roll_back_after_the_transaction_ended_does_nothing(engine):
    fill(engine)
    txn = engine.begin(write=True)
    savepoint = Savepoint(txn)
    savepoint.put(b'\x01', b'changed')
    txn.commit()
    savepoint.roll_back()
    assert engine.get(b'\x01') == b'changed'


def test_size_counts_the_bytes_written_through_it(engine):
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn)
        savepoint.put(b'ab', b'123')
        savepoint.put(b'ab', b'4')                 # overwrites count too
        savepoint.delete(b'cde')
        savepoint._put_many([(b'f', b'gh')])
        assert savepoint.size == 5 + 3 + 3 + 3
        txn.abort()


def limited(**limits):
    engine = WrapperEngine(MemoryEngine())
    for name, value in limits.items():
        setattr(engine, name, value)
    return engine


@pytest.mark.parametrize('limits, write', [
    ({'max_txn_ops': 3}, lambda sp: sp.put(b'd', b'')),
    ({'max_txn_ops': 3}, lambda sp: sp.delete(b'd')),
    ({'max_txn_ops': 3}, lambda sp: sp._put_many([(b'd', b''), (b'e', b'')])),
    ({'max_txn_bytes': 10}, lambda sp: sp.put(b'd', b'12345')),
])
def test_a_write_past_the_engines_commit_limits_is_refused_before_it_is_made(limits, write):
    engine = limited(**limits)
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn, 'these three')
        savepoint._put_many([(b'a', b'1')])
        savepoint._put_many([(b'b', b'2'), (b'c', b'3')])
        with pytest.raises(LimitExceededError, match=r'these three writes at least \d+ keys.*'
                                                     r'only the first 2 records fit'):
            write(savepoint)
        assert txn.get(b'd') is None and txn.count() == 3
        savepoint.roll_back()
        assert txn.count() == 0



def test_writes_that_reach_the_commit_limits_exactly_are_made():
    engine = limited(max_txn_ops=4, max_txn_bytes=10)
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn)
        writes = savepoint.writes
        savepoint._put_many([(b'a', b'1'), (b'b', b'2'), (b'c', b'3')])   # 3 keys, 6 bytes
        assert savepoint.writes == writes + 3     # what iterators reading ahead compare
        savepoint.put(b'd', b'123')                                         # 4 keys, 10 bytes
        assert (len(savepoint.saved), savepoint.size) == (4, 10) and txn.get(b'd') == b'123'
        with pytest.raises(LimitExceededError, match='^the savepoint writes at least'):
            savepoint.put(b'a', b'')                                        # 11 bytes
        txn.abort()

def test_rewriting_the_same_keys_does_not_count_them_again():
    engine = limited(max_txn_ops=2)
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn)
        for i in range(10):
            savepoint.put(b'a', b'%d' % i)
            savepoint.delete(b'b')
        assert txn.get(b'a') == b'9'


# --- through put_many's general path ----------------------------------------------------

def general(store):
    """A collection whose put_many takes the general path (JSON is not the common case)."""
    coll = store.collection('c', key_func=lambda r: r['id'], encoder=make_json_encoder())
    coll.add_index('tag', lambda r: r['tag'])
    return coll


def test_put_many_rolls_back_the_records_before_a_failing_one():
    store = centidb.Store(MemoryEngine())
    coll = general(store)
    coll.put({'id': 1, 'tag': 'old'})
    before = list(store.engine.items())
    records = [{'id': 1, 'tag': 'new'}, {'id': 2, 'tag': 'x'}, {'id': 3}]    # no 'tag'
    with store.begin(write=True) as txn:
        with pytest.raises(KeyError):
            coll.put_many(records, txn=txn)
        assert list(txn.engine_txn.items()) == before   # the transaction goes on as it was
        coll.put({'id': 4, 'tag': 'y'}, txn=txn)
    assert coll.get(1) == {'id': 1, 'tag': 'old'} and coll.get(2) is None
    assert coll.get(4) == {'id': 4, 'tag': 'y'}
    store.close()


def test_put_many_past_the_commit_limit_writes_nothing_and_says_how_many_fit():
    engine = limited(max_txn_ops=7)
    store = centidb.Store(engine)
    coll = general(store)
    before = list(engine.items())
    with pytest.raises(LimitExceededError, match=r"collection 'c': put_many\(\) of 5 records "
                                                 r'.*only the first 3 records fit'):
        coll.put_many([{'id': i, 'tag': 't'} for i in range(5)])
    assert list(engine.items()) == before
    assert coll.put_many([{'id': i, 'tag': 't'} for i in range(3)]) == [(0,), (1,), (2,)]
    store.close()
