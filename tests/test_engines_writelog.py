"""merge_overlay: pending writes merged over a snapshot; the write log behind it.

The in-memory and LevelDB write transactions keep their writes in one dict
(key -> latest value or TOMBSTONE): what a pending write costs, deletes of
keys only this transaction wrote, sorting on the first iteration, the
unchecked calls (``fast.put``...), and the commit taking the writes away
(a small table read in place, a large one emptied as it goes).
PlyvelEngine's log freezes a large transaction's writes into compact
key-sorted segments: reads find them (newest first, deletes included, also
through the unchecked calls), an ordered read turns them back into
objects, an abort drops them, and a frozen write costs about its bytes.
``freeze_table`` (twinned) builds a segment's block and marks its keys in
the filter: both implementations against a plain model. A write
transaction reads a committed key once when read again in a row.
"""

import itertools
import shutil
import sys
import tempfile
import tracemalloc

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from sortedcontainers import SortedDict

from centidb import impl
from centidb.engines import TOMBSTONE, MemoryEngine, PlyvelEngine, merge_overlay, writelog

# The module run from its source and compiled from it, whichever is active.
SOURCE = impl.source_version('centidb.engines.writelog')
BUILT = impl.compiled_version('centidb.engines.writelog')
PURE = SOURCE.freeze_table
TWIN = getattr(BUILT, 'freeze_table', None)
_NOT_BUILT = pytest.mark.skipif(BUILT is None, reason='centidb.engines.writelog is not compiled')
FREEZERS = [pytest.param(PURE, id='pure'), pytest.param(TWIN, id='twin', marks=_NOT_BUILT)]
PUTTERS = [pytest.param(SOURCE.put_pairs, id='pure'),
           pytest.param(getattr(BUILT, 'put_pairs', None), id='twin', marks=_NOT_BUILT)]


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
        txn.fast.writes += 2
        txn.fast.put_many([(b'b', b'2'), (b'd', b'4')])
        txn.put(b'e', b'5')
        assert list(it) == [b'b', b'c', b'd', b'e']
        assert list(txn.keys(reverse=True)) == [b'e', b'd', b'c', b'b', b'a']
    assert [key for key, _ in logged.items()] == [b'a', b'b', b'c', b'd', b'e']


def test_commit_takes_the_pending_writes_away(logged):
    txn = logged.begin(write=True)
    txn.put(b'k', b'v')
    txn.delete(b'gone')
    txn.commit()
    assert txn._pending is None and txn.fast.put_many is None
    assert list(logged.items()) == [(b'k', b'v')]


def test_the_unchecked_writes_are_the_checked_ones_without_checks(logged):
    """``fast.put`` / ``fast.put_many`` (and PlyvelEngine's ``fast.delete``) while open."""
    logged.put(b'old', b'1')
    logged.put(b'kept', b'2')
    txn = logged.begin(write=True)
    txn.fast.put(b'new', b'3')
    txn.fast.put_many([(b'old', b'4'), (b'more', b'5')])
    if txn.fast.delete is not None:
        txn.fast.delete(b'more')        # only ever pending: forgotten
        txn.fast.delete(b'kept')        # committed: a tombstone
        assert b'more' not in txn._pending and txn._pending[b'kept'] is TOMBSTONE
    else:
        txn.delete(b'more')
        txn.delete(b'kept')
    assert txn.get(b'new') == b'3' and txn.get(b'old') == b'4' and txn.get(b'kept') is None
    txn.commit()
    assert txn.fast.put is None and txn.fast.put_many is None and txn.fast.delete is None
    assert txn.fast.get is None
    assert list(logged.items()) == [(b'new', b'3'), (b'old', b'4')]


@pytest.mark.parametrize('whole', [True, False])
def test_a_commit_of_puts_and_deletes_small_or_large(logged, monkeypatch, whole):
    """A small table is read in place and cleared, a large one emptied as it is copied."""
    if not whole:
        monkeypatch.setattr(writelog, '_DRAIN_WHOLE', 2)
    for i in range(0, 10, 2):
        logged.put(b'k%d' % i, b'old')
    with logged.begin(write=True) as txn:
        for i in range(10):
            if i % 3:
                txn.put(b'k%d' % i, b'new')
            else:
                txn.delete(b'k%d' % i)
    assert dict(logged.items()) == {b'k%d' % i: b'new' for i in range(10) if i % 3}


# --- PlyvelEngine: large transactions freeze their writes into segments ------------------


@pytest.fixture
def small_freeze(monkeypatch, tmp_path):
    """A PlyvelEngine whose write transactions freeze their dict every 4 keys."""
    pytest.importorskip('plyvel')
    monkeypatch.setattr(writelog, 'FREEZE_AT', 4)
    eng = PlyvelEngine(tmp_path / 'db', create_if_missing=True)
    yield eng
    eng.close()


def test_frozen_writes_are_read_back_newest_first(small_freeze):
    small_freeze.put(b'old', b'committed')
    with small_freeze.begin(write=True) as txn:
        for i in range(40):
            txn.put(b'k%03d' % i, b'v%d' % i)
        txn._put_many([(b'k%03d' % i, b'w%d' % i) for i in range(0, 40, 3)])
        txn.delete(b'k005')
        txn.delete(b'old')
        for i in range(40, 60):           # the deletes are frozen too
            txn.put(b'k%03d' % i, b'x')
        frozen = txn._frozen
        assert len(frozen.segments) > 5 and frozen.deleted == {b'k005', b'old'}
        assert txn.get(b'k000') == b'w0' and txn.get(b'k001') == b'v1'
        assert txn.get(b'k005') is None and txn.get(b'old') is None
        assert txn.get(b'k0') is None and txn.get(b'k999') is None
        assert txn.get_many([b'k038', b'k040']) == [b'v38', b'x']
        txn.put(b'k005', b'again')        # a put after a frozen delete wins
        for i in range(60, 64):
            txn.put(b'k%03d' % i, b'y')
        assert b'k005' not in frozen.deleted and txn.get(b'k005') == b'again'
    expected = {b'k%03d' % i: b'w%d' % i if i % 3 == 0 else b'v%d' % i for i in range(40)}
    expected.update({b'k%03d' % i: b'x' for i in range(40, 60)})
    expected.update({b'k%03d' % i: b'y' for i in range(60, 64)})
    expected[b'k005'] = b'again'
    assert dict(small_freeze.items()) == expected


def test_the_unchecked_calls_follow_the_frozen_writes(small_freeze):
    """``fast.get`` and ``fast.delete`` see writes frozen after they were made."""
    small_freeze.put(b'old', b'committed')
    with small_freeze.begin(write=True) as txn:
        assert txn.get(b'old') == b'committed'
        txn.fast.writes += 12
        for i in range(12):
            txn.fast.put(b'k%02d' % i, b'v%d' % i)
        assert txn._frozen is not None
        get = txn.fast.get
        assert [get(b'k%02d' % i) for i in range(12)] == [b'v%d' % i for i in range(12)]
        txn.fast.writes += 2
        txn.fast.delete(b'k01')          # frozen: a tombstone hides it
        txn.fast.delete(b'old')
        assert txn.fast.get(b'k01') is None and txn.fast.get(b'old') is None
        assert txn.get(b'k00') == b'v0' and txn.get(b'absent') is None
    assert small_freeze.get(b'k01') is None and small_freeze.get(b'old') is None
    assert small_freeze.get(b'k11') == b'v11'


def test_the_unchecked_replace_returns_what_get_read_then_writes(small_freeze):
    """PlyvelEngine's ``fast.replace``: the value pending, frozen or committed
    (None if deleted or absent) comes back, and the new one is written, frozen
    with the rest once the dict is full."""
    small_freeze.put(b'old', b'committed')
    small_freeze.put(b'gone', b'committed')
    with small_freeze.begin(write=True) as txn:
        replace = txn.fast.replace
        txn.fast.writes += 5
        assert replace(b'old', b'1') == b'committed'
        assert replace(b'old', b'2') == b'1'            # pending
        assert replace(b'new', b'3') is None
        txn.delete(b'gone')
        assert replace(b'gone', b'4') is None           # a tombstone
        assert replace(b'more', b'5') is None           # the fourth key: frozen now
        assert txn._frozen is not None
        replace = txn.fast.replace                      # made again for the frozen writes
        txn.fast.writes += 2
        assert replace(b'old', b'6') == b'2' and replace(b'more', b'7') == b'5'
        assert txn.get(b'old') == b'6' and txn.get(b'gone') == b'4'
    assert txn.fast.replace is None
    assert dict(small_freeze.items()) == {b'old': b'6', b'new': b'3', b'gone': b'4', b'more': b'7'}


def test_a_write_transaction_reads_the_committed_data_once_per_key_in_a_row(tmp_path):
    """Reading a record, then writing it back: one database read (the snapshot never changes)."""
    pytest.importorskip('plyvel')
    with PlyvelEngine(tmp_path / 'db', create_if_missing=True) as eng:
        eng.put(b'a', b'1')
        with eng.begin(write=True) as txn:
            reads = []
            snapshot_get = txn._read_committed
            txn._read_committed = lambda key: reads.append(key) or snapshot_get(key)
            txn._arm()
            assert [txn.get(b'a'), txn.get(b'a'), txn.get(b'b'), txn.get(b'a')] == \
                [b'1', b'1', None, b'1']
            assert reads == [b'a', b'b', b'a']
            txn.put(b'a', b'2')
            assert txn.get(b'a') == b'2'
            txn.delete(b'a')        # pending: forgotten only if never committed
            assert txn.get(b'a') is None and reads == [b'a', b'b', b'a', b'a']


def test_an_ordered_read_brings_the_frozen_writes_back(small_freeze):
    small_freeze.put(b'a', b'committed')
    small_freeze.put(b'z', b'committed')
    with small_freeze.begin(write=True) as txn:
        for i in range(10):
            txn.put(b'm%d' % i, b'%d' % i)
        txn.delete(b'a')
        assert txn._frozen is not None and len(txn._pending) < 4
        assert txn.first() == (b'm0', b'0')
        assert txn._frozen is None and type(txn._pending) is SortedDict
        assert next(txn.item_chunks(reverse=True))[0] == (b'z', b'committed')
        for i in range(10, 20):           # no more freezing
            txn.put(b'm%02d' % i, b'%d' % i)
        assert txn._frozen is None
        assert txn.count() == 21
    assert small_freeze.get(b'a') is None and small_freeze.get(b'm19') == b'19'


def test_reading_a_range_no_write_falls_in_keeps_the_log_compact(small_freeze):
    """add_index's pattern: records read in order while entries go under another
    first byte. The read comes from the snapshot; the log still freezes."""
    records = [b'r\x01%02d' % i for i in range(20)]
    for key in records:
        small_freeze.put(key, b'')
    with small_freeze.begin(write=True) as txn:
        txn.put(b'\x00meta', b'x')
        seen = []
        for key, _ in txn.items(b'r\x01', b'r\x02'):      # a collection's prefix range
            seen.append(key)
            txn.fast.writes += 1
            txn.fast.put(b'r\x03' + key, b'')             # its index's
        assert seen == records
        assert txn._frozen is not None and type(txn._pending) is dict
        assert [key for key, _ in txn.items(b'r\x03', b'r\x04')] == \
            [b'r\x03' + key for key in records]
        assert type(txn._pending) is SortedDict     # that range holds pending writes
    assert len(list(small_freeze.items())) == 41


def test_a_short_hi_leaves_out_the_writes_that_start_with_it(tmp_path):
    pytest.importorskip('plyvel')
    with PlyvelEngine(tmp_path / 'db', create_if_missing=True) as eng:
        with eng.begin(write=True) as txn:
            txn.put(b'b1x', b'')
            assert not txn._may_write_in(b'b0', b'b1') and not txn._may_write_in(None, b'')
            assert txn._may_write_in(b'b0', b'b1\x00') and txn._may_write_in(b'b1', b'b2')
            assert not txn._may_write_in(b'b2', b'b3') and not txn._may_write_in(b'b', b'b')
            assert txn._may_write_in(b'c', None) and txn._may_write_in(b'a', b'b1')  # guesses:
            assert txn._may_write_in(None, None)        # ranges over many prefixes


LOG_CALLS = [pytest.param(SOURCE.LogCalls, id='pure'),
             pytest.param(getattr(BUILT, 'LogCalls', None), id='twin', marks=_NOT_BUILT)]


@pytest.mark.parametrize('log_calls', LOG_CALLS)
def test_the_log_calls_mark_the_head_cell_of_every_key_written(log_calls):
    heads, pending = bytearray(writelog.HEADS), {}
    calls = log_calls(pending, None, lambda key: None, 100, None, lambda: None,
                      TOMBSTONE, heads)
    calls.put(b'\x07a', b'1')
    calls.put_many([(b'x1', b''), (b'y', b'2'), (b'x1z', b'')])
    calls.delete(b'\xff')
    calls.delete(b'x1')         # forgotten, not tombstoned: still marked
    written = [b'\x07a', b'x1', b'y', b'\xff']
    assert [i for i, cell in enumerate(heads) if cell] == \
        sorted(writelog.head_cell(key) for key in written)
    assert writelog.head_cell(b'y') == writelog.head_cell(b'y\x00') != writelog.head_cell(b'y\x01')
    assert pending == {b'\x07a': b'1', b'y': b'2', b'x1z': b'', b'\xff': TOMBSTONE}
    # Pairs it cannot read twice (not a list): every cell, to be safe.
    heads = bytearray(writelog.HEADS)
    log_calls({}, None, lambda key: None, 100, None, lambda: None, TOMBSTONE,
              heads).put_many(iter([(b'a', b'')]))
    assert all(heads)


_KEYS = st.binary(min_size=1, max_size=3).map(lambda b: bytes(b'\x00ab'[x % 3] for x in b))


# Narrow ranges too, where a one-byte key and a bound ending in 0x00 meet.
_BOUNDS = st.tuples(st.none() | _KEYS, st.none() | _KEYS) | _KEYS.flatmap(
    lambda lo: st.tuples(st.just(lo), st.sampled_from(
        [lo + b'\x00', lo + b'\x00\x00', lo[:1] + b'b', lo[:2] + b'\x00'])))


@example(committed=[], bounds=(b'a', b'a\x00'), reverse=False, steps=[(True, b'a')],
         freeze_at=1 << 17)
@given(committed=st.lists(_KEYS, max_size=8), bounds=_BOUNDS,
       reverse=st.booleans(),
       steps=st.lists(st.none() | st.tuples(st.booleans(), _KEYS), max_size=16),
       freeze_at=st.sampled_from([2, 1 << 17]))
def test_writes_made_while_iterating_are_seen_past_the_last_key_yielded(
        committed, bounds, reverse, steps, freeze_at):
    """Model: each step yields the next key past the last one yielded, in the
    data as it is then (committed data with the pending writes applied)."""
    pytest.importorskip('plyvel')
    lo, hi = bounds
    directory = tempfile.mkdtemp()
    old_freeze_at = writelog.FREEZE_AT
    writelog.FREEZE_AT = freeze_at
    try:
        with PlyvelEngine(directory, create_if_missing=True) as eng:
            model = {key: b'c' for key in committed}
            for key in committed:
                eng.put(key, b'c')
            with eng.begin(write=True) as txn:
                it = txn.items(lo, hi, reverse)
                last = None
                for step in steps + [None] * 12:
                    if step is not None:
                        put, key = step
                        if put:
                            txn.put(key, b'p')
                            model[key] = b'p'
                        else:
                            txn.delete(key)
                            model.pop(key, None)
                        continue
                    ahead = sorted((key for key in model
                                    if (lo is None or key >= lo) and (hi is None or key < hi)
                                    and (last is None or (key < last if reverse else key > last))),
                                   reverse=reverse)
                    got = next(it, None)
                    assert got == ((ahead[0], model[ahead[0]]) if ahead else None)
                    if got is None:
                        break
                    last = got[0]
    finally:
        writelog.FREEZE_AT = old_freeze_at
        shutil.rmtree(directory)


def test_aborting_drops_the_frozen_writes(small_freeze):
    with pytest.raises(ZeroDivisionError):
        with small_freeze.begin(write=True) as txn:
            for i in range(20):
                txn.put(b'k%d' % i, b'v')
            assert txn._frozen is not None
            1 / 0
    assert txn._frozen is None and list(small_freeze.items()) == []


def test_a_segment_finds_its_keys_only_at_key_boundaries():
    """A key found inside another key or a value is not that key; empty values count."""
    keys = sorted([b'ab', b'abab', b'b', b'ba', b'bab', b'x' * 40] + [b'k%02d' % i for i in range(40)])
    values = [b'' if i % 2 else b'ab' + key for i, key in enumerate(keys)]
    segment = writelog._Segment(*writelog.freeze_table(dict(zip(keys, values)),
                                                       bytearray(512), 1))
    for key, value in zip(keys, values):
        assert segment.get(key) == value
    for absent in (b'a', b'bb', b'k', b'k1', b'x', b'k400', b'\xff', b'b\x00'):
        assert segment.get(absent) is None
    pairs = []
    writelog.put_pairs(segment.data, segment.offsets, lambda *pair: pairs.append(pair))
    assert pairs == list(zip(keys, values))
    segment.close()


def test_a_frozen_write_costs_about_its_bytes(tmp_path, monkeypatch):
    """Keys and values copied into one block, plus at most 40 bytes a write."""
    pytest.importorskip('plyvel')
    monkeypatch.setattr(writelog, 'FREEZE_AT', 4096)
    n = 40000
    with PlyvelEngine(tmp_path / 'db', create_if_missing=True) as eng:
        with eng.begin(write=True) as txn:
            for i in range(n):
                txn.put(b'key%08d' % i, b'v' * 90)
            frozen = txn._frozen
            data = sum(len(s.data) for s in frozen.segments)
            assert data == n * (11 + 90) - len(txn._pending) * 101
            extra = (sum(len(s.offsets) * s.offsets.itemsize for s in frozen.segments)
                     + len(frozen.cells)
                     + sum(sys.getsizeof(key) for s in frozen.segments for key in s.index))
            assert extra / (n - len(txn._pending)) < 40
        assert eng.get(b'key00000000') == b'v' * 90
        assert sum(1 for _ in eng.keys()) == n


@pytest.mark.parametrize('freeze', FREEZERS)
@given(table=st.dictionaries(
    # Few distinct bytes: keys often share their first 8 bytes, or are
    # prefixes of each other.
    st.lists(st.sampled_from([b'\x00', b'a', b'\xff']), min_size=1, max_size=12).map(b''.join),
    st.binary(max_size=5), min_size=1, max_size=80),
       bits=st.integers(0, 10), number=st.sampled_from([1, 2, 17, 254, 255, 256, 4000]))
def test_freeze_table_builds_the_block_and_marks_the_keys(freeze, table, bits, number):
    """Keys in byte order with their values back to back, every 16th key, and
    each key's two filter cells set to the segment's number (255 at most)."""
    cells, before = bytearray(1 << bits), dict(table)
    index, joined, offsets = freeze(table, cells, number)
    keys = sorted(table)
    flat = list(itertools.chain.from_iterable((key, table[key]) for key in keys))
    assert table == before
    assert joined == b''.join(flat) and type(joined) is bytes
    assert offsets.typecode == 'I'
    assert list(offsets) == list(itertools.accumulate(map(len, flat), initial=0))
    assert index == keys[::16]
    expected, mask = bytearray(1 << bits), (1 << bits) - 1
    for key in keys:
        expected[hash(key) & mask] = expected[(hash(key) >> 32) & mask] = min(number, 255)
    assert cells == expected


def test_the_compiled_module_is_active_when_the_compiled_codec_is():
    assert writelog is (SOURCE if impl.COMPILED is None else BUILT)
    assert writelog.__file__.endswith('.py') == (impl.COMPILED is None)


@pytest.mark.parametrize('put_pairs', PUTTERS)
def test_put_pairs_hands_over_a_segment_in_key_order(put_pairs):
    """Each key with its value (empty ones too), in order; an exception from
    `put` stops it there and propagates."""
    table = {b'k%03d' % i: b'v' * (i % 5) for i in range(100, 0, -1)}
    segment = writelog._Segment(*writelog.freeze_table(table, bytearray(1024), 1))
    got = []
    put_pairs(segment.data, segment.offsets, lambda key, value: got.append((key, value)))
    assert got == sorted(table.items()) and all(type(x) is bytes for pair in got for x in pair)

    def refuse_the_third(key, value):
        if len(got) == 2:
            raise KeyError(key)
        got.append(key)
    got = []
    with pytest.raises(KeyError, match='k003'):
        put_pairs(segment.data, segment.offsets, refuse_the_third)
    assert got == [b'k001', b'k002']
    segment.close()
