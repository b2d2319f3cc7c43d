"""Tests for centidb.engines.

The contract tests run against every engine through the ``engine`` fixture;
the random-operations test checks every engine against a plain dict.
"""

import random
import subprocess
import sys
import threading

import pytest
from sortedcontainers import SortedDict

from centidb.engines import (
    ENGINES,
    TOMBSTONE,
    Engine,
    ListEngine,
    LmdbEngine,
    PlyvelEngine,
    TraceEngine,
    Transaction,
    WrapperEngine,
    WrapperTransaction,
    get_engine_class,
    merge_overlay,
)
from centidb.errors import (
    DatabaseLockedError,
    DatabaseNotFoundError,
    EngineClosedError,
    EngineError,
    MapFullError,
    TransactionError,
)

ENGINE_KINDS = ['list', 'plyvel', 'lmdb', 'trace']


def make_engine(kind, directory):
    """Open a fresh engine of ``kind`` storing its files in ``directory``."""
    if kind == 'list':
        return ListEngine()
    if kind == 'plyvel':
        pytest.importorskip('plyvel')
        return PlyvelEngine(directory / 'leveldb', create_if_missing=True)
    if kind == 'lmdb':
        pytest.importorskip('lmdb')
        return LmdbEngine(directory / 'lmdb', sync=False)
    if kind == 'trace':
        return TraceEngine(ListEngine())
    raise AssertionError(kind)


@pytest.fixture(params=ENGINE_KINDS)
def engine(request, tmp_path):
    eng = make_engine(request.param, tmp_path)
    yield eng
    eng.close()


def in_range(key, lo, hi):
    return (lo is None or key >= lo) and (hi is None or key < hi)


def expected_items(model, lo=None, hi=None, reverse=False):
    """What items(lo, hi, reverse) must yield for the dict ``model``."""
    keys = sorted((k for k in model if in_range(k, lo, hi)), reverse=reverse)
    return [(k, model[k]) for k in keys]


def fill(engine, pairs):
    with engine.begin(write=True) as txn:
        for key, value in pairs:
            txn.put(key, value)


# --- basic operations -----------------------------------------------------

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
    assert list(engine.items()) == []


# --- transactions ---------------------------------------------------------

def test_transaction_attributes(engine):
    with engine.begin() as txn:
        assert txn.engine is engine
        assert txn.write is False
        assert txn.state == 'open'
        assert isinstance(txn, Transaction)
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
                     txn.commit):
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
    reader = engine.begin()
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
    # More keys than ListEngine fetches per step, so commits land mid-scan.
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
    with engine.begin() as reader:
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
        assert txn.writes == 3
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
        assert ended._fast_get is None


def test_close_inside_with_block_reports_lost_writes(engine):
    with pytest.raises(EngineClosedError):
        with engine.begin(write=True) as txn:
            txn.put(b'k', b'v')
            engine.close()


def test_engine_is_a_context_manager(tmp_path):
    with make_engine('plyvel', tmp_path) as eng:
        eng.put(b'k', b'v')
    assert eng.closed
    with pytest.raises(EngineClosedError):
        eng.get(b'k')
    with make_engine('plyvel', tmp_path) as again:  # the lock was released
        assert again.get(b'k') == b'v'


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
    else:
        txn.delete(key)
        view.pop(key, None)


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
            readers.append((engine.begin(), dict(model)))
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


# --- ListEngine internals ---------------------------------------------------

def test_list_engine_history_is_versioned_and_dropped():
    eng = ListEngine()
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


def test_list_engine_iterator_releases_its_reader():
    eng = ListEngine()
    fill(eng, [(b'a', b'1'), (b'b', b'2')])
    it = eng.items()
    assert next(it) == (b'a', b'1')
    assert sum(eng._readers.values()) == 1
    it.close()
    assert not eng._readers
    list(eng.keys())
    assert not eng._readers


def test_list_engine_forgotten_transaction_is_released():
    eng = ListEngine()
    eng.begin(write=True).put(b'k', b'v')  # never committed, then collected
    eng.begin()
    assert not eng._readers
    eng.put(b'k', b'w')  # the writer lock was released
    assert eng.get(b'k') == b'w'


def test_merge_overlay_directly():
    overlay = SortedDict({b'b': b'B', b'c': TOMBSTONE, b'e': b'E'})
    base = [(b'a', b'1'), (b'c', b'3'), (b'd', b'4')]
    assert list(merge_overlay(overlay, iter(base))) == \
        [(b'a', b'1'), (b'b', b'B'), (b'd', b'4'), (b'e', b'E')]
    assert list(merge_overlay(overlay, iter(base[::-1][:2]), hi=b'e',
                              reverse=True)) == [(b'd', b'4'), (b'b', b'B')]


# --- PlyvelEngine -----------------------------------------------------------

def test_plyvel_missing_database(tmp_path):
    pytest.importorskip('plyvel')
    path = str(tmp_path / 'absent')
    with pytest.raises(DatabaseNotFoundError) as info:
        PlyvelEngine(path)
    assert isinstance(info.value, FileNotFoundError)
    assert path in str(info.value)
    assert 'create_if_missing=True' in str(info.value)


def test_plyvel_locked_by_another_handle(tmp_path):
    pytest.importorskip('plyvel')
    path = str(tmp_path / 'db')
    with PlyvelEngine(path, create_if_missing=True):
        with pytest.raises(DatabaseLockedError) as info:
            PlyvelEngine(path)
        assert isinstance(info.value, OSError)
        assert path in str(info.value)
    with PlyvelEngine(path) as eng:  # free again once closed
        assert list(eng.items()) == []


def test_plyvel_locked_by_another_process(tmp_path):
    pytest.importorskip('plyvel')
    path = str(tmp_path / 'db')
    code = ('import plyvel, sys\n'
            'db = plyvel.DB(sys.argv[1], create_if_missing=True)\n'
            'print("ready", flush=True)\n'
            'sys.stdin.read()\n'
            'db.close()\n')
    proc = subprocess.Popen([sys.executable, '-c', code, path],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == 'ready'
        with pytest.raises(DatabaseLockedError, match='locked'):
            PlyvelEngine(path)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0
    with PlyvelEngine(path) as eng:
        eng.put(b'k', b'v')
        assert eng.get(b'k') == b'v'


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


# --- LmdbEngine -------------------------------------------------------------

def test_lmdb_missing_database(tmp_path):
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'absent')
    with pytest.raises(DatabaseNotFoundError) as info:
        LmdbEngine(path, create_if_missing=False)
    assert isinstance(info.value, FileNotFoundError)
    assert path in str(info.value)
    assert 'create_if_missing=True' in str(info.value)
    assert not (tmp_path / 'absent').exists()


def test_lmdb_open_twice_in_process(tmp_path):
    pytest.importorskip('lmdb')
    with LmdbEngine(tmp_path / 'db', sync=False):
        with pytest.raises(DatabaseLockedError, match='already open'):
            LmdbEngine(tmp_path / 'db')


def test_lmdb_map_full_aborts_with_actionable_error(tmp_path):
    pytest.importorskip('lmdb')
    eng = LmdbEngine(tmp_path / 'db', map_size=64 << 10, autogrow=False,
                     sync=False)
    try:
        eng.put(b'before', b'1')
        with pytest.raises(MapFullError) as info:
            with eng.begin(write=True) as txn:
                for i in range(2000):
                    txn.put(b'%06d' % i, b'x' * 100)
        message = str(info.value)
        assert 'map_size=65536' in message and 'larger map_size' in message
        assert isinstance(info.value, OSError)
        assert txn.state == 'aborted'
        assert list(eng.items()) == [(b'before', b'1')]
        with pytest.raises(MapFullError):
            eng.put(b'big', b'x' * 200_000)
        assert eng.get(b'big') is None
        eng.put(b'after', b'2')  # the engine is still usable
        assert eng.get(b'after') == b'2'
    finally:
        eng.close()


def test_lmdb_autogrow(tmp_path):
    pytest.importorskip('lmdb')
    eng = LmdbEngine(tmp_path / 'db', map_size=64 << 10, sync=False)
    try:
        for t in range(100):
            with eng.begin(write=True) as txn:
                for i in range(20):
                    txn.put(b'%03d-%02d' % (t, i), b'x' * 100)
        assert eng.map_size > 64 << 10
        assert sum(1 for _ in eng.keys()) == 2000
        # An engine-level put larger than the map grows it and retries.
        eng.put(b'big', b'y' * 1_000_000)
        assert eng.get(b'big') == b'y' * 1_000_000
    finally:
        eng.close()


def test_lmdb_map_size_after_close_raises_engine_closed(tmp_path):
    """map_size after close() raised a raw lmdb.Error."""
    pytest.importorskip('lmdb')
    eng = LmdbEngine(tmp_path / 'db', map_size=1 << 20, sync=False)
    assert eng.map_size == 1 << 20
    eng.close()
    with pytest.raises(EngineClosedError, match='closed'):
        eng.map_size


def test_lmdb_key_size_limit(tmp_path):
    pytest.importorskip('lmdb')
    with LmdbEngine(tmp_path / 'db', sync=False) as eng:
        longest = b'k' * eng.max_key_size
        eng.put(longest, b'v')
        assert eng.get(longest) == b'v'
        with pytest.raises(EngineError, match='too long'):
            eng.put(longest + b'k', b'v')
        assert eng.get(longest + b'k') is None
        eng.delete(longest + b'k')
        assert list(eng.keys()) == [longest]


# --- wrappers ---------------------------------------------------------------

def test_trace_engine_records_calls():
    lines = []
    eng = TraceEngine(ListEngine(), log=lines.append)
    eng.put(b'a', b'1')
    assert eng.get(b'a') == b'1'
    with eng.begin(write=True) as txn:
        txn.put(b'b', b'2')
        txn.delete(b'a')
        assert list(txn.items(b'a')) == [(b'b', b'2')]
    assert list(eng.keys()) == [b'b']
    eng.close()
    assert eng.calls == [
        ('put', (b'a', b'1')),
        ('get', (b'a',)),
        ('begin', (True,)),
        ('txn.put', (b'b', b'2')),
        ('txn.delete', (b'a',)),
        ('txn.items', (b'a', None, False)),
        ('txn.commit', ()),
        ('keys', (None, None, False)),
        ('close', ()),
    ]
    assert eng.counts['put'] == 1 and eng.counts['txn.commit'] == 1
    assert lines[0] == "put(b'a', b'1')"
    assert lines[5] == "txn.items(b'a', None, False)"
    assert eng.inner.closed


def test_wrapper_forwards_first_and_trace_records_it():
    """first() was neither forwarded (the wrapper iterated with items(), so
    the inner engine's seek went unused) nor traced."""
    inner = TraceEngine(ListEngine())
    eng = TraceEngine(inner)
    eng.put(b'a', b'1')
    eng.put(b'b', b'2')
    inner.calls.clear()
    with eng.begin() as txn:
        assert txn.first(b'a\x00') == (b'b', b'2')
        assert txn.first(hi=b'b', reverse=True) == (b'a', b'1')
        with pytest.raises(TypeError):
            txn.first('a')                  # checked before forwarding
    assert eng.first(b'c') is None
    assert [call for call in eng.calls if 'first' in call[0]] == [
        ('txn.first', (b'a\x00', None, False)),
        ('txn.first', (None, b'b', True)),
        ('txn.first', ('a', None, False)),
        ('first', (b'c', None, False)),
    ]
    assert [name for name, _ in inner.calls] == [
        'begin', 'txn.first', 'txn.first', 'txn.commit', 'first']
    with pytest.raises(TransactionError):
        txn.first()
    eng.close()
    with pytest.raises(EngineClosedError):
        eng.first()


class Injected(Exception):
    """The fault a FaultyEngine raises."""


class FaultyTransaction(WrapperTransaction):
    def put(self, key, value):
        if key == b'fail':
            raise Injected(key)
        super().put(key, value)


class FaultyEngine(WrapperEngine):
    transaction_class = FaultyTransaction

    def put(self, key, value):
        if key == b'fail':
            raise Injected(key)
        super().put(key, value)


def test_fault_injection_leaves_nothing_written(engine):
    faulty = FaultyEngine(engine)
    faulty.put(b'ok', b'1')
    with pytest.raises(Injected):
        with faulty.begin(write=True) as txn:
            txn.put(b'a', b'2')
            txn.delete(b'ok')
            txn.put(b'fail', b'3')
    assert txn.state == 'aborted'
    with pytest.raises(Injected):
        faulty.put(b'fail', b'4')
    assert list(faulty.items()) == [(b'ok', b'1')]
    assert list(engine.items()) == [(b'ok', b'1')]
    faulty.close()
    assert engine.closed


def test_wrapper_requires_an_engine():
    with pytest.raises(TypeError, match='inner must be an Engine'):
        WrapperEngine({})


# --- registry ---------------------------------------------------------------

def test_get_engine_class():
    assert get_engine_class('ListEngine') is ListEngine
    assert get_engine_class('LmdbEngine') is LmdbEngine
    assert get_engine_class(PlyvelEngine) is PlyvelEngine
    assert set(ENGINES) == {'ListEngine', 'LmdbEngine', 'PlyvelEngine'}
    assert all(issubclass(cls, Engine) for cls in ENGINES.values())
    with pytest.raises(ValueError, match='known engines: ListEngine, LmdbEngine, PlyvelEngine'):
        get_engine_class('nosuch')
    with pytest.raises(TypeError):
        get_engine_class(42)


def test_plyvel_compact_keeps_the_data_and_refuses_after_close(tmp_path):
    pytest.importorskip('plyvel')
    eng = PlyvelEngine(tmp_path / 'db', create_if_missing=True)
    with eng.begin(write=True) as txn:
        for i in range(2000):
            txn.put(b'k%05d' % i, b'v' * 100)
        txn.delete(b'k00007')
    eng.compact()
    assert eng.get(b'k00006') == b'v' * 100 and eng.get(b'k00007') is None
    assert sum(1 for _ in eng.keys()) == 1999
    eng.close()
    with pytest.raises(EngineClosedError):
        eng.compact()


def test_plyvel_commit_of_writes_and_deletes_keeps_their_order(tmp_path):
    """The commit writes the log in order, deletes included."""
    pytest.importorskip('plyvel')
    with PlyvelEngine(tmp_path / 'db', create_if_missing=True) as eng:
        with eng.begin(write=True) as txn:
            txn.put(b'a', b'1')
            txn.delete(b'a')
            txn.put(b'b', b'1')
            txn.delete(b'b')
            txn.put(b'b', b'2')
        assert list(eng.items()) == [(b'b', b'2')]
        with eng.begin(write=True) as txn:
            txn._put_many([(b'c', b'3'), (b'c', b'4')])
        assert list(eng.items()) == [(b'b', b'2'), (b'c', b'4')]


GROW_IN_ANOTHER_PROCESS = '''
import sys
from centidb.engines import LmdbEngine
eng = LmdbEngine(sys.argv[1], map_size=1 << 20, autogrow=True, sync=False)
for n in range(8):
    with eng.begin(write=True) as txn:
        for i in range(500):
            txn.put(b'%d-%05d' % (n, i), b'x' * 1000)
print(eng.map_size)
eng.close()
'''


def test_lmdb_follows_a_map_another_process_grew(tmp_path):
    """After another process grows the map, begin() raised lmdb.MapResizedError."""
    pytest.importorskip('lmdb')
    path = str(tmp_path / 'db')
    eng = LmdbEngine(path, map_size=1 << 20, autogrow=True, sync=False)
    eng.put(b'mine', b'1')
    grown = subprocess.run([sys.executable, '-c', GROW_IN_ANOTHER_PROCESS, path],
                           capture_output=True, text=True, timeout=60)
    assert grown.returncode == 0, grown.stderr
    assert int(grown.stdout) > 1 << 20
    assert eng.get(b'mine') == b'1'
    with eng.begin() as txn:
        assert txn.get(b'7-00499') == b'x' * 1000
    assert eng.map_size == int(grown.stdout)
    eng.close()
