"""The engine contract (see :mod:`centidb.engines`), run on every engine.

The tests take the ``engine`` fixture, which runs each on every kind in
``engine_helpers.ENGINE_KINDS``: the in-memory engine (the reference), LevelDB,
LMDB, and a trace wrapper; the random-operations test checks each against a
plain dict. At the end: reopening the engines on disk, opening them on wrong
paths, and the registry.
"""

import gc
import os
import random
import shutil
import subprocess
import sys
import threading

import pytest

from centidb.engines import (
    ENGINES,
    OPTIONAL_ENGINES,
    Engine,
    EngineTransaction,
    FastCalls,
    ListEngine,
    LmdbEngine,
    MemoryEngine,
    PlyvelEngine,
    Transaction,
    get_engine_class,
)
from centidb.errors import (
    DatabaseCorruptError,
    DatabaseLockedError,
    DatabaseNotFoundError,
    DatabasePathError,
    DatabasePermissionError,
    EngineClosedError,
    EngineError,
    TransactionError,
)

from engine_helpers import engine, fill, make_engine  # noqa: F401 - a fixture


def test_item_chunks_hold_what_items_yields(engine):
    """item_chunks gives items' pairs in non-empty lists (key_chunks their
    keys, in lists of the same lengths), from a read
    transaction, and from a write transaction with and without pending
    writes; long ranges come in several lists."""
    model = {k: b'v' + k for k in RANGE_KEYS}
    model.update((b'm%04d' % i, b'%d' % i) for i in range(300))
    fill(engine, model.items())

    def check(txn, model):
        for lo in BOUNDS + [b'm0100', b'm0299\x00']:
            for hi in BOUNDS + [b'm0150']:
                for reverse in (False, True):
                    chunks = list(txn.item_chunks(lo, hi, reverse))
                    assert all(chunks), (lo, hi, reverse)
                    got = [pair for chunk in chunks for pair in chunk]
                    assert got == expected_items(model, lo, hi, reverse), (lo, hi, reverse)
                    key_chunks = list(txn.key_chunks(lo, hi, reverse))
                    assert [len(chunk) for chunk in key_chunks] == [len(c) for c in chunks]
                    assert [key for chunk in key_chunks for key in chunk] == [
                        key for key, _ in got], (lo, hi, reverse)
        assert len(list(txn.item_chunks())) > 1
    with engine.begin() as txn:
        check(txn, model)
    with engine.begin(write=True) as txn:
        check(txn, model)
        txn.put(b'm0100x', b'new')
        txn.delete(b'm0200')
        model[b'm0100x'] = b'new'
        del model[b'm0200']
        check(txn, model)


@pytest.mark.parametrize('reverse', [False, True])
def test_chunks_keep_the_snapshot_across_another_commit(engine, reverse):
    """A read transaction's item_chunks and key_chunks, begun before another
    transaction commits, go on yielding the snapshot after it."""
    model = {b'k%04d' % i: b'%d' % i for i in range(0, 600, 2)}
    fill(engine, model.items())
    expected = expected_items(model, None, None, reverse)
    with engine.begin() as txn:
        items, keys = txn.item_chunks(reverse=reverse), txn.key_chunks(reverse=reverse)
        got, got_keys = next(items), next(keys)
        with engine.begin(write=True) as writer:
            for i in range(0, 600, 3):
                writer.put(b'k%04d' % i, b'new')
            writer.delete(b'k0300')
            writer.delete(expected[-1][0])
        got += [pair for chunk in items for pair in chunk]
        got_keys += [key for chunk in keys for key in chunk]
    assert got == expected
    assert got_keys == [key for key, _ in expected]


def test_writes_changes_when_a_transaction_ends(engine):
    """Iterators that read ahead compare writes between steps: it changes
    with each write, and at commit or abort."""
    for end in ('commit', 'abort'):
        txn = engine.begin(write=True)
        before = txn.fast.writes
        txn.put(b'k', b'v')
        during = txn.fast.writes
        assert during != before
        getattr(txn, end)()
        assert txn.fast.writes != during
        with pytest.raises(TransactionError):
            txn.item_chunks()


def in_range(key, lo, hi):
    return (lo is None or key >= lo) and (hi is None or key < hi)


def begin_snapshot(engine):
    """A read transaction whose snapshot is taken now.

    Most engines take it at ``begin()``; one whose ``snapshot_at`` is
    ``'first read'`` (EtcdEngine) at the first read, so read once.
    """
    txn = engine.begin()
    if engine.snapshot_at == 'first read':
        txn.get(b'\x00pin')
    return txn


def expected_items(model, lo=None, hi=None, reverse=False):
    """What items(lo, hi, reverse) must yield for the dict ``model``."""
    keys = sorted((k for k in model if in_range(k, lo, hi)), reverse=reverse)
    return [(k, model[k]) for k in keys]


# --- basic operations -----------------------------------------------------

FAST_CALLS = ('get', 'put', 'put_many', 'replace', 'delete', 'seek_cursor')


def _reaches(start, target, limit=20000):
    """True if `target` is reachable from `start` through strong references."""
    seen, todo = {id(start)}, [start]
    while todo and len(seen) < limit:
        for ref in gc.get_referents(todo.pop()):
            if ref is target:
                return True
            if id(ref) not in seen and not isinstance(ref, (type, type(gc))):
                seen.add(id(ref))
                todo.append(ref)
    return False


def _check_fast_reads(txn, model):
    """Each read call of txn.fast, if offered, reads what get and first do."""
    fast = txn.fast
    if fast.get is not None:
        for key in (b'a', b'b', b'c', b'd', b'zz'):
            assert fast.get(key) == txn.get(key) == model.get(key), key
    if fast.seek_cursor is not None:
        for key in (b'a', b'aa', b'b', b'c', b'zz'):
            found = fast.seek_cursor.set_range(key)
            expected = txn.first(key)
            assert found == (expected is not None), key
            if found:
                assert fast.seek_cursor.key() == expected[0]


def test_fast_calls_keep_the_contract(engine):
    """Every transaction's ``fast`` is a FastCalls whose calls are None or do
    what the checked methods do, whose ``writes`` counts the writes (the
    caller adds them for the write calls), whose calls are all None once the
    transaction ended, and which holds no reference to the transaction."""
    fill(engine, [(b'a', b'1'), (b'c', b'3')])
    reader = engine.begin()
    fast = reader.fast
    assert isinstance(fast, FastCalls) and reader.writes == fast.writes
    assert (fast.put, fast.put_many, fast.replace, fast.delete) == (None,) * 4
    reader.first(b'a')     # an engine may offer its seek cursor from the first seek on
    _check_fast_reads(reader, {b'a': b'1', b'c': b'3'})
    assert not _reaches(fast, reader)
    writes = fast.writes
    reader.abort()
    assert fast.writes != writes
    assert [getattr(fast, name) for name in FAST_CALLS] == [None] * len(FAST_CALLS)

    txn = engine.begin(write=True)
    fast = txn.fast
    assert isinstance(fast, FastCalls) and fast is not reader.fast
    model = {b'a': b'1', b'c': b'3'}
    writes = fast.writes
    if fast.put is not None:
        fast.writes += 1
        assert fast.writes == writes + 1 and txn.writes == fast.writes
        fast.put(b'b', b'2')
    else:
        txn.put(b'b', b'2')
    model[b'b'] = b'2'
    if fast.put_many is not None:
        fast.writes += 2
        fast.put_many([(b'd', b'4'), (b'e', b'5')])
    else:
        txn._put_many([(b'd', b'4'), (b'e', b'5')])
    model.update({b'd': b'4', b'e': b'5'})
    if fast.replace is not None:
        fast.writes += 2
        assert fast.replace(b'a', b'x') == b'1'
        assert fast.replace(b'f', b'6') is None
    else:
        txn.put(b'a', b'x')
        txn.put(b'f', b'6')
    model.update({b'a': b'x', b'f': b'6'})
    if fast.delete is not None:
        fast.writes += 2
        fast.delete(b'c')
        fast.delete(b'nothing')
    else:
        txn.delete(b'c')
        txn.delete(b'nothing')
    del model[b'c']
    assert fast.writes == writes + 7
    txn.put(b'g', b'7')     # the checked methods count too
    txn.delete(b'g')
    assert fast.writes == writes + 9
    txn.first(b'a')
    _check_fast_reads(txn, model)
    assert not _reaches(fast, txn)
    txn.commit()
    assert fast.writes == writes + 10
    assert [getattr(fast, name) for name in FAST_CALLS] == [None] * len(FAST_CALLS)
    assert dict(engine.items()) == model


def test_an_engine_offering_no_fast_call_gets_an_empty_fast_calls():
    """The base class makes ``fast``: a third-party transaction that sets no
    call offers none, and still counts its writes there."""

    class Plain(EngineTransaction):
        def _get(self, key):
            return None

        def _put(self, key, value):
            pass

    txn = Plain(MemoryEngine(), True)
    assert [getattr(txn.fast, name) for name in FAST_CALLS] == [None] * len(FAST_CALLS)
    txn.put(b'k', b'v')
    assert txn.fast.writes == txn.writes == 1


def test_get_put_overwrite_delete(engine):
    assert engine.get(b'missing') is None
    engine.put(b'k', b'v1')
    assert engine.get(b'k') == b'v1'
    engine.put(b'k', b'v2')
    assert engine.get(b'k') == b'v2'
    engine.delete(b'k')
    assert engine.get(b'k') is None
    engine.delete(b'k')  # deleting a missing key is a no-op
    engine.delete(b'never-there')
    assert list(engine.items()) == []


def test_edge_keys_and_empty_values(engine):
    keys = [b'\x00', b'\x00\x00', b'\x01', b'a', b'\xff', b'\xff\xff']
    fill(engine, [(k, b'') if k == b'a' else (k, k + b'!') for k in keys])
    assert engine.get(b'\x00') == b'\x00!'
    assert engine.get(b'a') == b''
    assert engine.get(b'\xff\xff') == b'\xff\xff!'
    assert list(engine.keys()) == sorted(keys)
    assert list(engine.keys(reverse=True)) == sorted(keys, reverse=True)
    engine.delete(b'\x00')
    assert engine.get(b'\x00') is None
    assert list(engine.keys())[0] == b'\x00\x00'


def test_empty_key_is_rejected(engine):
    for call in (lambda: engine.put(b'', b'v'), lambda: engine.get(b''),
                 lambda: engine.delete(b'')):
        with pytest.raises(ValueError, match='empty'):
            call()
    with engine.begin(write=True) as txn:
        with pytest.raises(ValueError, match='empty'):
            txn.put(b'', b'v')
        txn.put(b'k', b'v')
    assert list(engine.items(lo=b'')) == [(b'k', b'v')]


RANGE_KEYS = [b'\x00', b'a', b'b', b'ba', b'c', b'\xff', b'\xff\xff']
BOUNDS = [None, b'', b'\x00', b'\x00\x00', b'a', b'aa', b'b', b'b\x00',
          b'ba', b'c', b'd', b'\xff', b'\xff\xff', b'\xff\xff\xff']


def test_items_and_keys_over_all_bounds(engine):
    model = {k: b'v' + k for k in RANGE_KEYS}
    fill(engine, model.items())
    with engine.begin() as txn:
        for lo in BOUNDS:
            for hi in BOUNDS:
                for reverse in (False, True):
                    want = expected_items(model, lo, hi, reverse)
                    got = list(txn.items(lo, hi, reverse))
                    assert got == want, (lo, hi, reverse)
                    assert list(txn.keys(lo, hi, reverse)) == \
                        [k for k, _ in want]
                    assert txn.first(lo, hi, reverse) == (want[0] if want else None)
                    assert txn.count(lo, hi) == len(want)
    # Engine-level iteration uses the same rules.
    assert list(engine.items(b'a', b'c')) == expected_items(model, b'a', b'c')
    assert list(engine.keys(hi=b'b', reverse=True)) == [b'a', b'\x00']
    assert engine.first(b'a\x00', reverse=False) == (b'b', b'vb')
    assert engine.first(hi=b'b', reverse=True) == (b'a', b'va')
    with engine.begin(write=True) as txn:       # a write transaction sees its writes
        txn.put(b'aa', b'new')
        txn.delete(b'b')
        assert txn.first(b'a\x00') == (b'aa', b'new')
        assert txn.first(b'ab') == (b'ba', b'vba')
        assert txn.count() == len(model) and txn.count(b'a', b'b') == 2


def test_empty_ranges(engine):
    fill(engine, [(b'a', b'1'), (b'b', b'2')])
    for reverse in (False, True):
        assert list(engine.items(b'a', b'a', reverse)) == []
        assert list(engine.items(b'b', b'a', reverse)) == []
        assert list(engine.items(b'aa', b'ab', reverse)) == []
        assert list(engine.items(b'c', None, reverse)) == []
        assert list(engine.items(None, b'a', reverse)) == []


def test_empty_engine_iterates_nothing(engine):
    assert list(engine.items()) == []
    assert list(engine.keys(reverse=True)) == []
    with engine.begin(write=True) as txn:
        assert list(txn.items(b'a', reverse=True)) == []


@pytest.mark.parametrize('bad', ['text', bytearray(b'x'), memoryview(b'x'),
                                 1, None])
def test_non_bytes_arguments_raise_type_error(engine, bad):
    name = type(bad).__name__
    with pytest.raises(TypeError, match=f'key must be bytes, not {name}'):
        engine.put(bad, b'v')
    with pytest.raises(TypeError, match=f'value must be bytes, not {name}'):
        engine.put(b'k', bad)
    with pytest.raises(TypeError, match=name):
        engine.get(bad)
    with engine.begin(write=True) as txn:
        with pytest.raises(TypeError, match=name):
            txn.delete(bad)
        if bad is not None:  # None is a valid bound
            with pytest.raises(TypeError, match='lo must be bytes'):
                txn.items(bad)
            with pytest.raises(TypeError, match='hi must be bytes'):
                txn.keys(None, bad)
            with pytest.raises(TypeError, match='lo must be bytes'):
                txn.count(bad)
    assert list(engine.items()) == []


def test_get_many(engine):
    fill(engine, [(b'a', b'1'), (b'b', b'2'), (b'c', b'')])
    with engine.begin() as txn:
        assert txn.get_many([]) == []
        assert txn.get_many([b'a', b'x', b'c', b'a']) == [b'1', None, b'', b'1']
        assert txn.get_many(iter([b'b'])) == [b'2']
    with engine.begin(write=True) as txn:       # sees the transaction's writes
        txn.put(b'x', b'new')
        txn.delete(b'a')
        assert txn.get_many([b'a', b'b', b'x', b'y']) == [None, b'2', b'new', None]
    keys = [b'k%04d' % i for i in range(300)]   # more than one etcd Txn holds
    fill(engine, [(k, k) for k in keys[::2]])
    with begin_snapshot(engine) as reader:
        engine.put(b'k0000', b'changed')
        engine.put(b'k0001', b'added')
        want = [k if i % 2 == 0 else None for i, k in enumerate(keys)]
        assert reader.get_many(keys) == want     # the snapshot, not the changes
        assert reader.get_many(reversed(keys)) == want[::-1]
    with engine.begin() as txn:
        assert txn.get_many([b'k0000', b'k0001']) == [b'changed', b'added']


def test_the_savepoint_forwards_get_many(engine):
    from centidb.records.savepoint import Savepoint
    fill(engine, [(b'a', b'1')])
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn)
        savepoint.put(b'b', b'2')
        assert savepoint.get_many([b'a', b'b', b'c']) == [b'1', b'2', None]


def test_get_many_checks_its_arguments_and_state(engine):
    engine.put(b'a', b'1')
    with engine.begin() as txn:
        with pytest.raises(TypeError, match='key must be bytes, not str'):
            txn.get_many([b'a', 'b'])
        with pytest.raises(ValueError, match='empty'):
            txn.get_many([b''])
        with pytest.raises(TypeError):
            txn.get_many(None)
        assert txn.get_many([b'a']) == [b'1']
    with pytest.raises(TransactionError, match='already'):
        txn.get_many([b'a'])
    txn = engine.begin()
    engine.close()
    with pytest.raises(EngineClosedError):
        txn.get_many([b'a'])


# --- range deletes ----------------------------------------------------------

DELETE_BOUNDS = [None, b'', b'\x00', b'a', b'b', b'b\x00', b'ba', b'c', b'\xff', b'\xff\xff\xff']


def test_delete_range_over_all_bounds(engine):
    model = {k: b'v' + k for k in RANGE_KEYS}
    fill(engine, model.items())
    for lo in DELETE_BOUNDS:
        for hi in DELETE_BOUNDS:
            left = {k: v for k, v in model.items() if not in_range(k, lo, hi)}
            with engine.begin(write=True) as txn:
                txn.delete_range(lo, hi)
                assert list(txn.items()) == expected_items(left), (lo, hi)
                assert list(txn.keys(reverse=True)) == \
                    [k for k, _ in expected_items(left, reverse=True)]
                assert txn.count(lo, hi) == 0 and txn.first(lo, hi) is None
                assert txn.count() == len(left)
                assert txn.get_many(RANGE_KEYS) == [left.get(k) for k in RANGE_KEYS]
                txn.abort()
    assert list(engine.items()) == expected_items(model)    # aborted: nothing gone
    with engine.begin(write=True) as txn:
        txn.delete_range(b'a', b'c')
    assert list(engine.keys()) == [b'\x00', b'c', b'\xff', b'\xff\xff']
    with engine.begin(write=True) as txn:
        txn.delete_range(None, None)
    assert list(engine.items()) == []


def test_delete_range_then_writes_in_the_same_transaction(engine):
    fill(engine, [(b'k%02d' % i, b'old') for i in range(20)])
    with engine.begin(write=True) as txn:
        txn.put(b'k05x', b'written before')     # removed with the range
        txn.delete_range(b'k05', b'k15')
        txn.put(b'k07', b'written after')        # survives, as after any delete
        txn.put(b'k14', b'written after')
        txn.delete(b'k08')                       # already gone: nothing changes
        txn.delete(b'k16')
        want = [b'k%02d' % i for i in (0, 1, 2, 3, 4, 7, 14, 15, 17, 18, 19)]
        assert list(txn.keys()) == want
        assert list(txn.keys(reverse=True)) == want[::-1]
        assert txn.get(b'k07') == b'written after' and txn.get(b'k06') is None
        assert txn.get(b'k05x') is None
        assert txn.get_many([b'k05', b'k07', b'k15']) == [None, b'written after', b'old']
        assert txn.count(b'k05', b'k15') == 2
        assert txn.first(b'k05') == (b'k07', b'written after')
        assert txn.first(hi=b'k14', reverse=True) == (b'k07', b'written after')
        txn.delete_range(b'k00', b'k03')         # a second range, apart from the first
        txn.delete_range(b'k13', b'k18')         # one overlapping it
        want = [b'k03', b'k04', b'k07', b'k18', b'k19']
        assert list(txn.keys()) == want
    assert list(engine.keys()) == want
    assert engine.get(b'k07') == b'written after' and engine.get(b'k14') is None


@pytest.mark.parametrize('reverse', [False, True])
def test_an_iterator_survives_a_range_delete(engine, reverse):
    fill(engine, [(b'%03d' % i, b'v') for i in range(100)])
    with engine.begin(write=True) as txn:
        it = txn.keys(reverse=reverse)
        seen = [next(it), next(it)]
        # Delete the keys just ahead (the iterator may have read them), then
        # some further on; put one key back inside the first range.
        ahead = (b'090', b'098') if reverse else (b'002', b'010')
        txn.delete_range(*ahead)
        txn.delete_range(b'040', b'060')
        txn.put(b'050', b'back')
        seen += list(it)
        gone = {b'%03d' % i for i in [*range(2, 10), *range(90, 98)] if
                in_range(b'%03d' % i, *ahead)} | {b'%03d' % i for i in range(40, 60)}
        want = sorted(({b'%03d' % i for i in range(100)} - gone) | {b'050'},
                      reverse=reverse)
        assert seen == want
        txn.abort()


def test_delete_range_checks_its_arguments_and_state(engine):
    fill(engine, [(b'a', b'1'), (b'b', b'2')])
    with engine.begin(write=True) as txn:
        for lo, hi in (('a', None), (None, bytearray(b'b')), (1, 2)):
            with pytest.raises(TypeError, match='must be bytes'):
                txn.delete_range(lo, hi)
        before = txn.fast.writes
        txn.delete_range(b'b', b'a')            # an empty range deletes nothing
        txn.delete_range(b'a', b'a')
        assert list(txn.keys()) == [b'a', b'b']
        txn.delete_range(b'a', b'b')
        assert txn.fast.writes != before
    assert list(engine.keys()) == [b'b']
    with engine.begin() as reader:
        with pytest.raises(TransactionError, match='read-only'):
            reader.delete_range(None, None)
    with pytest.raises(TransactionError, match='already'):
        txn.delete_range(None, None)
    writer = engine.begin(write=True)
    engine.close()
    with pytest.raises(EngineClosedError):
        writer.delete_range(None, None)


def test_the_savepoint_rolls_back_a_range_delete(engine):
    from centidb.records.savepoint import Savepoint
    fill(engine, [(b'a', b'1'), (b'b', b'2'), (b'c', b'3')])
    with engine.begin(write=True) as txn:
        savepoint = Savepoint(txn)
        savepoint.put(b'b', b'changed first')
        savepoint.delete_range(b'a', b'c')
        savepoint.put(b'a2', b'new')
        assert list(txn.keys()) == [b'a2', b'c']
        savepoint.roll_back()
        assert list(txn.items()) == [(b'a', b'1'), (b'b', b'2'), (b'c', b'3')]
    assert list(engine.items()) == [(b'a', b'1'), (b'b', b'2'), (b'c', b'3')]


def test_limits_are_stated(engine):
    for name in ('max_key_size', 'max_value_size', 'max_txn_ops', 'max_txn_bytes'):
        limit = getattr(engine, name)
        assert limit is None or (type(limit) is int and limit > 0), name
    assert engine.snapshot_at in ('begin', 'first read')


# --- transactions ---------------------------------------------------------

def test_transaction_attributes(engine):
    with engine.begin() as txn:
        assert txn.engine is engine
        assert txn.write is False
        assert txn.state == 'open'
        assert isinstance(txn, EngineTransaction)
    assert txn.state == 'committed'
    with engine.begin(write=True) as txn:
        assert txn.write is True


def test_read_your_writes_merged_in_both_directions(engine):
    fill(engine, [(b'a', b'1'), (b'c', b'3'), (b'e', b'5'), (b'g', b'7')])
    with engine.begin(write=True) as txn:
        txn.put(b'b', b'2')        # new key between committed ones
        txn.put(b'c', b'33')       # overwrite
        txn.delete(b'e')           # delete committed key
        txn.put(b'h', b'8')        # new key after the last one
        txn.put(b'x', b'9')
        txn.delete(b'x')           # put then delete in the same txn
        txn.delete(b'zz')          # delete missing key
        view = {b'a': b'1', b'b': b'2', b'c': b'33', b'g': b'7', b'h': b'8'}
        assert txn.get(b'c') == b'33'
        assert txn.get(b'e') is None
        assert txn.get(b'x') is None
        for lo, hi in [(None, None), (b'b', b'h'), (b'bb', b'gg'),
                       (b'e', b'f'), (b'', b'\xff')]:
            for reverse in (False, True):
                want = expected_items(view, lo, hi, reverse)
                assert list(txn.items(lo, hi, reverse)) == want
        # Not visible outside the transaction before commit.
        assert engine.get(b'b') is None
        assert engine.get(b'e') == b'5'
    assert list(engine.items()) == expected_items(view)


def test_abort_discards_writes(engine):
    engine.put(b'keep', b'1')
    txn = engine.begin(write=True)
    txn.put(b'new', b'2')
    txn.put(b'keep', b'changed')
    txn.delete(b'keep')
    txn.abort()
    assert txn.state == 'aborted'
    assert list(engine.items()) == [(b'keep', b'1')]


def test_context_manager_commits_on_success(engine):
    with engine.begin(write=True) as txn:
        txn.put(b'k', b'v')
    assert txn.state == 'committed'
    assert engine.get(b'k') == b'v'


def test_context_manager_aborts_and_reraises(engine):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with engine.begin(write=True) as txn:
            txn.put(b'k', b'v')
            raise Boom()
    assert txn.state == 'aborted'
    assert engine.get(b'k') is None
    # The writer lock was released: a new write transaction works.
    engine.put(b'k', b'v2')
    assert engine.get(b'k') == b'v2'


def test_explicit_commit_inside_with_block(engine):
    with engine.begin(write=True) as txn:
        txn.put(b'k', b'v')
        txn.commit()
    assert engine.get(b'k') == b'v'


def test_use_after_commit_or_abort_raises(engine):
    engine.put(b'a', b'1')
    for end in ('commit', 'abort'):
        txn = engine.begin(write=True)
        getattr(txn, end)()
        for call in (lambda: txn.get(b'a'), lambda: txn.put(b'a', b'2'),
                     lambda: txn.delete(b'a'), txn.items, txn.keys,
                     txn.count, txn.commit):
            with pytest.raises(TransactionError, match='already'):
                call()
        txn.abort()  # aborting again is a harmless no-op
    assert engine.get(b'a') == b'1'


def test_iterator_raises_once_its_transaction_ends(engine):
    fill(engine, [(b'a', b'1'), (b'b', b'2')])
    txn = engine.begin()
    started = txn.items()
    unstarted = txn.keys(reverse=True)
    assert next(started) == (b'a', b'1')
    txn.commit()
    for it in (started, unstarted):
        with pytest.raises(TransactionError):
            next(it)


def test_write_in_read_transaction_raises(engine):
    with engine.begin() as txn:
        with pytest.raises(TransactionError, match='read-only'):
            txn.put(b'k', b'v')
        with pytest.raises(TransactionError, match='read-only'):
            txn.delete(b'k')
    assert engine.get(b'k') is None


def test_read_transaction_is_a_snapshot(engine):
    fill(engine, [(b'a', b'1'), (b'b', b'2')])
    reader = begin_snapshot(engine)
    engine.put(b'a', b'changed')
    engine.delete(b'b')
    engine.put(b'c', b'3')
    assert reader.get(b'a') == b'1'
    assert reader.get(b'b') == b'2'
    assert reader.get(b'c') is None
    assert list(reader.items()) == [(b'a', b'1'), (b'b', b'2')]
    assert list(reader.keys(reverse=True)) == [b'b', b'a']
    reader.abort()
    assert list(engine.items()) == [(b'a', b'changed'), (b'c', b'3')]


def test_engine_iterator_keeps_its_snapshot(engine):
    # More keys than MemoryEngine fetches per step, so commits land mid-scan.
    model = {b'%04d' % i: b'old' for i in range(300)}
    fill(engine, model.items())
    forward = engine.items()
    backward = engine.keys(reverse=True)
    first = [next(forward) for _ in range(10)]
    last = [next(backward) for _ in range(10)]
    with engine.begin(write=True) as txn:
        for i in range(0, 300, 3):
            txn.delete(b'%04d' % i)
        for i in range(1, 300, 3):
            txn.put(b'%04d' % i, b'new')
        txn.put(b'0100x', b'added')
    assert first + list(forward) == expected_items(model)
    assert last + list(backward) == sorted(model, reverse=True)


def test_snapshot_scan_after_replacing_every_key(engine):
    # The reader's keys and the committed keys are disjoint and numerous,
    # so a snapshot scan must interleave old and current keys correctly.
    old = {b'%s%03d' % (c, i): b'old'
           for c in (b'a', b'c') for i in range(300)}
    fill(engine, old.items())
    with begin_snapshot(engine) as reader:
        with engine.begin(write=True) as txn:
            for i in range(300):
                txn.delete(b'c%03d' % i)
                txn.put(b'b%03d' % i, b'new')
        for reverse in (False, True):
            assert list(reader.items(reverse=reverse)) == \
                expected_items(old, reverse=reverse)
            assert list(reader.keys(b'a250', b'c100', reverse)) == \
                [k for k, _ in expected_items(old, b'a250', b'c100', reverse)]
    assert list(engine.keys()) == sorted(
        b'%s%03d' % (c, i) for c in (b'a', b'b') for i in range(300))


def test_iterator_survives_writes_in_its_own_transaction(engine):
    fill(engine, [(b'%02d' % i, b'c') for i in range(0, 20, 2)])
    for reverse in (False, True):
        with engine.begin(write=True) as txn:
            view = {k: v for k, v in txn.items()}
            it = txn.items(b'01', b'17', reverse=reverse)
            seen = []
            after = None
            while True:
                want = next_expected(view, after, b'01', b'17', reverse)
                got = next(it, None)
                assert got == want
                if got is None:
                    break
                seen.append(got[0])
                after = got[0]
                # Change the yielded key, a key just ahead, a key behind and
                # add a key ahead; the iterator resumes after `after`.
                step = -1 if reverse else 1
                ahead = b'%02d' % (int(after) + step)
                ahead2 = b'%02d' % (int(after) + 2 * step)
                behind = b'%02d' % (int(after) - step)
                for key in (after, ahead2):
                    txn.delete(key)
                    view.pop(key, None)
                for key in (ahead, behind):
                    txn.put(key, b'w')
                    view[key] = b'w'
            assert seen == sorted(set(seen), reverse=reverse)
            txn.abort()


def next_expected(view, after, lo, hi, reverse):
    """The item an iterator over ``view`` must yield after key ``after``."""
    keys = [k for k in view if in_range(k, lo, hi) and (
        after is None or (k < after if reverse else k > after))]
    if not keys:
        return None
    key = max(keys) if reverse else min(keys)
    return key, view[key]


# --- writers, threads and closing ----------------------------------------

def run_in_thread(func, timeout=10):
    """Run ``func`` in a daemon thread; fail instead of hanging on deadlock."""
    errors = []

    def target():
        try:
            func()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f'{func.__name__} deadlocked'
    if errors:
        raise errors[0]


def test_nested_write_in_same_thread_raises(engine):
    run_in_thread(lambda: check_nested_write(engine))


def check_nested_write(engine):
    with engine.begin(write=True) as txn:
        txn.put(b'k', b'v')
        with pytest.raises(TransactionError, match='already holds'):
            engine.begin(write=True)
        with pytest.raises(TransactionError, match='already holds'):
            engine.put(b'x', b'y')
        with pytest.raises(TransactionError, match='already holds'):
            engine.delete(b'k')
        # Reading alongside is fine and sees the committed state.
        assert engine.get(b'k') is None
        with engine.begin() as reader:
            assert reader.get(b'k') is None
    assert engine.get(b'k') == b'v'
    engine.put(b'x', b'y')  # the lock was released
    assert engine.get(b'x') == b'y'


def test_writers_in_two_threads_serialize(engine):
    first = engine.begin(write=True)
    first.put(b'k', b'1')
    result = {}

    def second_writer():
        with engine.begin(write=True) as txn:
            result['seen'] = txn.get(b'k')
            txn.put(b'k', txn.get(b'k') + b'2')

    thread = threading.Thread(target=second_writer)
    thread.start()
    thread.join(0.2)
    assert thread.is_alive(), 'second writer did not wait for the first'
    assert 'seen' not in result
    first.commit()
    thread.join(10)
    assert not thread.is_alive()
    assert result['seen'] == b'1'
    assert engine.get(b'k') == b'12'


def test_concurrent_readers_see_consistent_snapshots(engine):
    keys = [b'%03d' % i for i in range(150)]
    fill(engine, [(k, b'0') for k in keys])
    errors = []
    stop = threading.Event()

    def reader():
        try:
            while not stop.is_set():
                with engine.begin() as txn:
                    values = [v for _, v in txn.items()]
                    assert len(values) == len(keys)
                    assert len(set(values)) == 1, 'saw a partial commit'
                    assert txn.get(keys[0]) == values[0]
        except Exception as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for version in range(1, 30):
            fill(engine, [(k, b'%d' % version) for k in keys])
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert errors == []
    assert engine.get(keys[-1]) == b'29'


def test_closed_engine_raises_everywhere(engine):
    fill(engine, [(b'a', b'1'), (b'b', b'2')])
    reader = engine.begin()
    writer = engine.begin(write=True)
    engine_iter = engine.items()
    unstarted_iter = engine.keys()
    txn_iter = reader.keys()
    assert next(engine_iter) == (b'a', b'1')
    assert next(txn_iter) == b'a'
    engine.close()
    engine.close()  # closing twice is fine
    assert engine.closed
    calls = [
        lambda: engine.get(b'a'), lambda: engine.put(b'a', b'1'),
        lambda: engine.delete(b'a'), engine.items, engine.keys,
        engine.begin, lambda: engine.begin(write=True),
        lambda: reader.get(b'a'), reader.items, reader.keys, reader.commit,
        lambda: writer.put(b'c', b'3'),
        lambda: writer.delete(b'a'), writer.commit,
        lambda: next(engine_iter), lambda: next(txn_iter),
        lambda: next(unstarted_iter),
    ]
    for call in calls:
        with pytest.raises(EngineClosedError, match='closed'):
            call()
    # close() ended the transactions, so aborting them (cleanup code does)
    # is a no-op rather than a second error.
    reader.abort()
    writer.abort()
    assert reader.state == writer.state == 'closed'


def test_put_many_reads_back_and_checks_the_state(engine):
    """_put_many, the collection layer's unchecked bulk write: its writes are
    seen by get/first/items (also by an iterator made before them), and an
    ended, read-only or closed transaction raises like put() (it raised
    TypeError or AttributeError, and LMDB aborted a read transaction)."""
    fill(engine, [(b'b', b'0')])
    with engine.begin(write=True) as txn:
        it = txn.items()
        assert next(it) == (b'b', b'0')
        txn._put_many([(b'a', b'1'), (b'c', b'2'), (b'b', b'3')])
        assert txn.get(b'b') == b'3' and txn.first(b'bb') == (b'c', b'2')
        assert txn.first(reverse=True) == (b'c', b'2')
        assert list(it) == [(b'c', b'2')]
        assert txn.fast.writes == 3
    assert list(engine.items()) == [(b'a', b'1'), (b'b', b'3'), (b'c', b'2')]
    with pytest.raises(TransactionError, match='committed'):
        txn._put_many([(b'd', b'4')])
    reader = engine.begin()
    with pytest.raises(TransactionError, match='read-only'):
        reader._put_many([(b'd', b'4')])
    assert reader.state == 'open' and reader.get(b'a') == b'1'
    writer = engine.begin(write=True)
    engine.close()
    for ended in (reader, writer):
        with pytest.raises(EngineClosedError):
            ended._put_many([(b'd', b'4')])
        with pytest.raises(EngineClosedError):
            ended.first()
        assert ended.fast.get is None


def test_close_inside_with_block_reports_lost_writes(engine):
    with pytest.raises(EngineClosedError):
        with engine.begin(write=True) as txn:
            txn.put(b'k', b'v')
            engine.close()


def test_close_wakes_a_blocked_writer(engine):
    held = engine.begin(write=True)
    result = []

    def writer():
        try:
            engine.begin(write=True)
        except EngineClosedError as exc:
            result.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    thread.join(0.1)
    assert thread.is_alive() and not result
    engine.close()
    thread.join(10)
    assert not thread.is_alive()
    assert len(result) == 1
    assert held.state == 'closed'


# --- random operations against a dict model ---------------------------------

KEY_ALPHABET = b'\x00\x01ab\xff'
COMMON_KEYS = [b'\x00', b'\x00\x00', b'\x01', b'a', b'ab', b'b', b'\xff',
               b'\xff\xff']


def random_key(rng):
    if rng.random() < 0.5:
        return rng.choice(COMMON_KEYS)
    return bytes(rng.choice(KEY_ALPHABET) for _ in range(rng.randint(1, 3)))


def random_bounds(rng):
    lo = None if rng.random() < 0.3 else random_key(rng)
    hi = None if rng.random() < 0.3 else random_key(rng)
    return lo, hi


def check_scan(rng, txn, view):
    """Scan ``txn`` with random bounds, maybe writing between steps."""
    lo, hi = random_bounds(rng)
    reverse = rng.random() < 0.5
    if not txn.write or rng.random() < 0.5:
        assert list(txn.items(lo, hi, reverse)) == \
            expected_items(view, lo, hi, reverse)
        assert list(txn.keys(lo, hi, reverse)) == \
            [k for k, _ in expected_items(view, lo, hi, reverse)]
        assert txn.count(lo, hi) == len(expected_items(view, lo, hi))
        return
    it = txn.items(lo, hi, reverse)
    after = None
    while True:
        got = next(it, None)
        assert got == next_expected(view, after, lo, hi, reverse)
        if got is None:
            return
        after = got[0]
        if rng.random() < 0.5:
            apply_write(rng, txn, view)


def apply_write(rng, txn, view):
    key = random_key(rng)
    if rng.random() < 0.6:
        value = b'%d' % rng.randrange(1000)
        txn.put(key, value)
        view[key] = value
    elif rng.random() < 0.85:
        txn.delete(key)
        view.pop(key, None)
    else:
        lo, hi = random_bounds(rng)
        if lo is None and hi is None:
            lo = key
        txn.delete_range(lo, hi)
        for gone in [k for k in view if in_range(k, lo, hi)]:
            del view[gone]


def run_random_operations(engine, seed, steps):
    rng = random.Random(seed)
    model = {}
    readers = []  # (read transaction, the model when it began)
    for _ in range(steps):
        choice = rng.random()
        if choice < 0.1:
            # Engine-level auto-commit operation.
            key = random_key(rng)
            if rng.random() < 0.5:
                engine.put(key, b'e')
                model[key] = b'e'
            else:
                engine.delete(key)
                model.pop(key, None)
            assert engine.get(key) == model.get(key)
        elif choice < 0.2 and len(readers) < 4:
            readers.append((begin_snapshot(engine), dict(model)))
        elif choice < 0.3 and readers:
            txn, snapshot = readers.pop(rng.randrange(len(readers)))
            check_scan(rng, txn, snapshot)
            key = random_key(rng)
            assert txn.get(key) == snapshot.get(key)
            txn.commit() if rng.random() < 0.5 else txn.abort()
        else:
            write = rng.random() < 0.8
            view = dict(model)
            with engine.begin(write=write) as txn:
                for _ in range(rng.randint(1, 12)):
                    op = rng.random()
                    if write and op < 0.5:
                        apply_write(rng, txn, view)
                    elif op < 0.8:
                        key = random_key(rng)
                        assert txn.get(key) == view.get(key)
                    else:
                        check_scan(rng, txn, view)
                if write and rng.random() < 0.3:
                    txn.abort()
                else:
                    model = view if write else model
        lo, hi = random_bounds(rng)
        reverse = rng.random() < 0.5
        assert list(engine.items(lo, hi, reverse)) == \
            expected_items(model, lo, hi, reverse)
    for txn, snapshot in readers:
        assert list(txn.items()) == expected_items(snapshot)
        assert list(txn.items(reverse=True)) == \
            expected_items(snapshot, reverse=True)
        txn.abort()
    assert list(engine.items()) == expected_items(model)


@pytest.mark.parametrize('seed', [1, 2, 3])
def test_random_operations_match_a_dict(engine, seed):
    run_random_operations(engine, seed, steps=250)


@pytest.mark.parametrize('kind', ['plyvel', 'lmdb'])
def test_reopen_keeps_committed_data_only(tmp_path, kind):
    eng = make_engine(kind, tmp_path)
    eng.put(b'auto', b'1')
    with eng.begin(write=True) as txn:
        txn.put(b'txn', b'2')
        txn.delete(b'auto')
    txn = eng.begin(write=True)
    txn.put(b'aborted', b'3')
    txn.abort()
    with pytest.raises(ZeroDivisionError):
        with eng.begin(write=True) as txn:
            txn.put(b'failed', b'4')
            1 / 0
    eng.close()
    eng = make_engine(kind, tmp_path)
    try:
        assert list(eng.items()) == [(b'txn', b'2')]
    finally:
        eng.close()


# --- opening a wrong path (the disk engines) ----------------------------------
#
# Every wrong path raises an EngineError subclass that names the path and
# what is wrong, and leaves what is there untouched.

DISK_KINDS = ['plyvel', 'lmdb']
#: The file that marks each kind's database, and the other kind's.
MARKER = {'plyvel': 'CURRENT', 'lmdb': 'data.mdb'}
OTHER = {'plyvel': 'lmdb', 'lmdb': 'plyvel'}
CLASS = {'plyvel': PlyvelEngine, 'lmdb': LmdbEngine}


def open_disk(kind, path, create):
    """Open a `kind` engine at `path` directly (make_engine picks the path)."""
    pytest.importorskip(kind)
    return CLASS[kind](path, create_if_missing=create)


def raises_about(error, path, kind, create, *words):
    """Assert opening `path` raises exactly `error`, naming `path` and `words`."""
    with pytest.raises(EngineError) as info:
        open_disk(kind, path, create)
    assert type(info.value) is error, info.value
    message = str(info.value)
    assert str(path) in message
    for word in words:
        assert word in message
    return info.value


@pytest.mark.parametrize('create', [True, False])
@pytest.mark.parametrize('kind', DISK_KINDS)
def test_open_a_regular_file(tmp_path, kind, create):
    """PlyvelEngine said "locked", LmdbEngine raised a bare FileExistsError."""
    path = tmp_path / 'file'
    path.write_bytes(b'mine')
    error = raises_about(DatabasePathError, path, kind, create,
                         'is a file, not a directory')
    assert not isinstance(error, DatabaseLockedError)
    assert isinstance(error, OSError)
    assert path.read_bytes() == b'mine'
    raises_about(DatabasePathError, path / 'db', kind, create,
                 f"{str(path)!r} is a file, not a directory")


@pytest.mark.parametrize('kind', DISK_KINDS)
def test_open_where_the_parent_is_missing(tmp_path, kind):
    path = tmp_path / 'a' / 'b' / 'db'
    error = raises_about(DatabaseNotFoundError, path, kind, False,
                         'create_if_missing=True', str(path.parent),
                         'does not exist either')
    assert isinstance(error, FileNotFoundError)
    assert not (tmp_path / 'a').exists()
    with open_disk(kind, path, True) as eng:    # creating makes the parents
        eng.put(b'k', b'v')
    with open_disk(kind, path, False) as eng:
        assert eng.get(b'k') == b'v'


@pytest.mark.parametrize('kind', DISK_KINDS)
def test_open_a_directory_of_other_files(tmp_path, kind):
    path = tmp_path / 'notes'
    path.mkdir()
    (path / 'todo.txt').write_text('buy milk')
    raises_about(DatabaseNotFoundError, path, kind, False,
                 "other files: 'todo.txt'", 'create_if_missing=True')
    raises_about(DatabasePathError, path, kind, True,
                 "other files ('todo.txt')", 'new or empty directory')
    assert os.listdir(path) == ['todo.txt']
    (path / 'todo.txt').unlink()
    (path / '.hidden').write_text('')   # hidden files do not count
    with open_disk(kind, path, True):
        pass


@pytest.mark.parametrize('create', [True, False])
@pytest.mark.parametrize('kind', DISK_KINDS)
def test_open_the_other_engines_database(tmp_path, kind, create):
    path = tmp_path / 'db'
    with open_disk(OTHER[kind], path, True) as other:
        other.put(b'k', b'v')
    before = sorted(os.listdir(path))
    raises_about(DatabasePathError, path, kind, create, MARKER[OTHER[kind]],
                 f'open it with {CLASS[OTHER[kind]].__name__}')
    assert sorted(os.listdir(path)) == before
    with open_disk(OTHER[kind], path, False) as other:
        assert other.get(b'k') == b'v'


@pytest.mark.parametrize('create', [True, False])
@pytest.mark.parametrize('kind', DISK_KINDS)
def test_open_a_damaged_database(tmp_path, kind, create):
    """The file marking the database holds something else."""
    path = tmp_path / 'db'
    path.mkdir()
    (path / MARKER[kind]).write_bytes(b'MANIFEST-000009\n' * 500)
    raises_about(DatabaseCorruptError, path, kind, create)
    (path / MARKER[kind]).unlink()
    (path / MARKER[kind]).mkdir()       # a directory where a file belongs
    raises_about(DatabasePathError, path, kind, create)


#: A child process: open each (kind, path, create) of argv and print the
#: name of the exception raised and its message, or "opened".
OPEN_AND_REPORT = '''
import sys
from centidb.engines import LmdbEngine, PlyvelEngine
args = sys.argv[1:]
for kind, path, create in zip(args[::3], args[1::3], args[2::3]):
    cls = LmdbEngine if kind == 'lmdb' else PlyvelEngine
    try:
        cls(path, create_if_missing=create == '1').close()
    except Exception as exc:
        print(type(exc).__name__, exc)
    else:
        print('opened')
'''

WITHOUT_DAC_OVERRIDE = ['--inh-caps=-dac_override,-dac_read_search',
                        '--bounding-set=-dac_override,-dac_read_search', '--']


def open_as_unprivileged(cases):
    """Run OPEN_AND_REPORT on `cases` where file permissions apply.

    Root ignores file permissions; as root, the child runs under ``setpriv``
    without the capabilities that let it, and the test is skipped if that
    cannot be done.
    """
    command = [sys.executable, '-c', OPEN_AND_REPORT]
    for kind, path, create in cases:
        command += [kind, str(path), '1' if create else '0']
    if os.geteuid() == 0:
        setpriv = shutil.which('setpriv')
        if setpriv is None:
            pytest.skip('root ignores file permissions, and setpriv, which '
                        'could drop that right, is not installed')
        command = [setpriv, *WITHOUT_DAC_OVERRIDE, *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if result.returncode and os.geteuid() == 0 and 'setpriv' in result.stderr:
        pytest.skip(f'setpriv cannot drop root\'s file access: {result.stderr}')
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.skipif(not hasattr(os, 'geteuid'), reason='POSIX permissions')
@pytest.mark.parametrize('kind', DISK_KINDS)
def test_open_without_permission(tmp_path, kind):
    pytest.importorskip(kind)
    closed = tmp_path / 'closed'            # no access at all
    closed.mkdir()
    read_only = tmp_path / 'read-only'      # holds a read-only database
    with open_disk(kind, read_only / 'db', True):
        pass
    cases = [(kind, closed, True), (kind, closed / 'db', True),
             (kind, read_only / 'new', True), (kind, read_only / 'db', False)]
    modes = [(closed, 0o000), (read_only, 0o555), (read_only / 'db', 0o555)]
    modes += [(read_only / 'db' / name, 0o444)
              for name in os.listdir(read_only / 'db')]
    try:
        for path, mode in modes:
            os.chmod(path, mode)
        lines = open_as_unprivileged(cases)
    finally:
        for path, _ in reversed(modes):
            os.chmod(path, 0o755)
    assert len(lines) == len(cases), lines
    name = DatabasePermissionError.__name__
    for line, (_, path, _) in zip(lines, cases):
        assert line.startswith(name + ' ') and repr(str(path)) in line, line
        assert 'permission denied' in line
    assert 'read the directory' in lines[0]
    assert 'parent directories' in lines[1]
    assert 'cannot create' in lines[2]
    assert not (read_only / 'new').exists()
    assert issubclass(DatabasePermissionError, PermissionError)
    assert issubclass(DatabasePermissionError, DatabasePathError)


# --- registry ---------------------------------------------------------------

def test_get_engine_class():
    assert get_engine_class('ListEngine') is ListEngine
    assert get_engine_class('MemoryEngine') is MemoryEngine is ListEngine
    assert get_engine_class('LmdbEngine') is LmdbEngine
    assert get_engine_class(PlyvelEngine) is PlyvelEngine
    assert Transaction is EngineTransaction
    assert set(ENGINES) == {'ListEngine', 'LmdbEngine', 'MemoryEngine', 'PlyvelEngine'}
    assert all(issubclass(cls, Engine) for cls in ENGINES.values())
    with pytest.raises(ValueError, match='known engines: lmdb, leveldb, plyvel, memory, '
                                         'etcd, EtcdEngine, ListEngine, LmdbEngine, '
                                         'MemoryEngine, PlyvelEngine'):
        get_engine_class('nosuch')
    # Optional engines resolve by name, importing their module then.
    assert get_engine_class('EtcdEngine').__module__ == OPTIONAL_ENGINES['EtcdEngine']
    with pytest.raises(TypeError):
        get_engine_class(42)
