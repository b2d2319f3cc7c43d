"""The benchmark table: centidb on each engine against raw engine loops and sqlite3.

Usage: python examples/benchy.py [--records 235886] [--runs 3] [--passes 3]
       [--chunked-records 100000] [--durable-records 20000]
       [--engines LmdbEngine,PlyvelEngine,ListEngine] [--modes ...] [--quick]
       > benchy.csv
       python examples/benchy.py --rss [--records 1000000] [--engines ...] > rss.csv
       python examples/benchy.py --etcd [--records 20000] [--runs 3] [--quick] > etcd.csv

Workload: N records ``{'stub': 150 hex chars, 'name': word, 'location':
word.upper()}``, the same on every machine (words are generated from a fixed
seed and are unique), msgpack-encoded, keyed by ``(name, location)``; the
indexed stores (``+2 idx``) add two indexes, ``rev_name`` (the reversed name)
and ``rev_location`` (the reversed location).

Modes, in the order of the table. Loads, each into a fresh store:

* ``insert blind``, ``insert blind +2 idx``, ``insert``, ``insert +2 idx``:
  all N records in one write transaction, with ``blind=True`` or ``False``,
  without or with the two indexes;
* ``put_many +2 idx``: all N records in one ``Collection.put_many(records,
  txn=...)`` call into the indexed collection (not blind);
* ``insert +2 idx 1000/txn``: as ``insert +2 idx``, but for the first
  --chunked-records records (default 100,000), with one write transaction
  (commit) per 1,000 records;
* ``insert +2 idx 1000/txn durable``: the same for the first
  --durable-records records (default 20,000), with every commit durable (LMDB
  ``sync=True``, LevelDB writes with ``sync=True``, sqlite3
  ``journal_mode=WAL`` and ``synchronous=FULL``), on the real disk (under
  /var/tmp). ListEngine keeps nothing on disk and has no row.

Reads, on the store of ``insert +2 idx`` (or of an untimed indexed load when
that mode is not selected), each in one read transaction; each is timed as
the best of --passes passes:

* ``get by key``: a fixed random sample of keys (up to 50,000), each read and
  decoded;
* ``get by index``: the same records, looked up by reversed name;
* ``index range scan`` (not in the default run; select it with --modes):
  every record in reversed-location order through the index;
* ``index ranges of 1000``: 50 ranges (one per 1,000 records in a smaller
  store) of 1,000 consecutive entries of the rev_location index (fewer if
  the store has fewer), each starting at a fixed random entry
  (``Index.values(lo, max=1000)``), every record fetched and decoded;
* ``full scan``: every record in key order, decoded (``Collection.values()``);
* ``group counts``: ``Index.group_counts()`` on rev_location: the number of
  entries per index tuple (every location is unique, so every group has one
  entry and every group's tuple is decoded).

Then, on the same store:

* ``update 10%``: a fixed random tenth of the records, in write transactions
  of 1,000: read, change ``location`` (append ``'X'``), write back under the
  same key, not blind, so the rev_location entry changes and the rev_name
  entry does not. centidb uses the update idiom its tutorial gives:
  ``record = get(key, rec=True, txn=txn)``, change ``record.data``,
  ``put(record, txn=txn)`` (the Record remembers the old index entries; a
  plain ``get()`` then ``put(rec, key=key)`` also decodes the old version
  again: see benchmarks/callgrind_ops.py's ``update`` and ``update_rec``);
* ``get by key batched``, ``full scan batched``: the collection rewritten
  with ``Collection.batch(max_recs=32, packer=ZLIB_PACKER)`` (untimed), then
  the first 5,000 keys of the sample read, and a full scan, as above.

Baselines, in the same run on the same records, each written for speed by
hand: ``raw lmdb`` and ``raw plyvel`` (examples/benchy_raw.py) store exactly
the keys centidb stores with plain msgpack values, and do each mode's work
with the engine's own calls (the update: get, decode, compute the old and new
index entries, delete the changed one, put the new one, put the record).
``sqlite3`` (examples/benchy_backends.py) uses a WITHOUT ROWID table keyed by
(name, location) with indexed rev_name and rev_location columns,
``journal_mode=OFF`` and ``synchronous=OFF`` except in the durable mode; its
update is ``UPDATE ... SET location, rev_location`` (location being part of
its primary key, the row moves). A baseline has no bulk call and no batches:
its ``put_many +2 idx`` row repeats its ``insert +2 idx`` measurement, its
batched rows its unbatched ones. The baselines a selected engine is compared
with always run (ListEngine's include LmdbEngine).

Each run takes the modes in the order above and, within a mode, every
backend in turn (in table order, and in reverse every other run, so that
none always goes first and each engine stays beside its raw loop): a change
of the machine's load between two modes moves every backend's figure of a
mode alike. Each backend's read store stays open from its load to the
batched reads, and each pass of a read runs on every backend before the
next pass. LevelDB stores are compacted (untimed) after the update, as
every LevelDB store of a process shares one background thread: else one
backend's compaction would delay the next backend's writes.

CPU-bound stores live on tmpfs (/dev/shm, when there is one), so disk
writeback does not move the ratios; only the durable mode uses the disk.
LevelDB stores, raw and centidb alike, are fully compacted before the reads
and again after batching, so the reads measure a settled database. Every
read's last result is checked against the expected record in every run; in
the first run, every store's keys are also counted after each write.
``--quick`` is the test suite's smoke test: 2,000 records, one run, one
pass.

CSV on stdout, one row per (backend, mode): ``seconds`` is the median over
--runs runs (each on fresh stores) of the time of one pass (of the best of
--passes passes, for reads); the rates derive from it. ``ratio_vs_raw``
compares a centidb row's records/s with the raw loop of the same engine
(ListEngine: raw lmdb), ``ratio_vs_sqlite`` with sqlite3, and
``ratio_vs_lmdbengine`` a ListEngine row with LmdbEngine's; above 1 is
faster. A ratio is the median over the runs of each run's ratio (not the
ratio of the medians), as each run measures the two close together;
``ratio_vs_raw_runs`` lists each run's ``ratio_vs_raw``, in run order, to
show how far one run's ratio moves. ``keys_written`` counts engine keys
put (one per record plus one per index entry; for the update, the record
and its new rev_location entry);
read rows leave keys_per_s empty. ``bytes_on_disk`` (from the first run):
on the non-blind load rows, the store after the load (LMDB: data.mdb;
LevelDB: the directory after a full compaction; sqlite3: the database file
and its WAL); on the ``get by key`` and ``full scan`` rows, the store after
the update and before batching, and on the batched rows after batching
(LMDB, which never shrinks its file, measured by a compacting copy).
ListEngine keeps nothing on disk. Context (versions, key codec, machine,
where the stores live), a progress bar and, at the end, the wall time spent
per mode go to stderr. Stores live in temporary directories removed at the
end, also on error or Ctrl-C.

``--rss`` prints another table instead (default 1,000,000 records): the
peak memory of a one-transaction import on each backend (``import +2 idx``:
as ``insert +2 idx``; raw plyvel in one WriteBatch), of ``put_many +2 idx``
on each centidb engine, and of building one index (rev_location) over a
stored collection of N records (``add_index``: ``Collection.add_index``; raw
loops writing every entry in one transaction or WriteBatch; sqlite3 ``CREATE
INDEX``). Each runs in a child process of its own, which builds the records,
resets its peak (``/proc/self/clear_refs``), reads ``ru_maxrss`` as its
baseline, runs the task and reads ``ru_maxrss`` again; ``peak_rss_per_record``
is (peak - baseline) / N in bytes. The stores are on tmpfs; RSS includes the
pages of an LMDB file the process maps and touches, ListEngine's whole store,
and sqlite3's page cache (up to 256 MiB). ListEngine's ``add_index`` child
loads its store (1,000 records a commit) before its baseline; the others
open a store an earlier child wrote (and, for LevelDB, compacted, so that
opening it replays no log into memory).

``--etcd`` prints the EtcdEngine table instead (default 20,000 records), on
etcd clusters of 1 and 3 members it starts itself: see
examples/benchy_etcd.py.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import platform
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import lmdb
import msgpack
import plyvel
from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)    # the helper modules beside this file

import centidb  # noqa: E402
from benchy_backends import (BATCH_RECS, LMDB_MAP_SIZE, MOVED, RANGE_LEN,  # noqa: E402,F401
                             SQLITE_CACHE_KIB, SQLITE_PRAGMAS, Centidb, Sqlite, key_func,
                             open_collection, open_store, rev_location, rev_name, wipe)
from benchy_raw import RawLmdb, RawPlyvel  # noqa: E402
from benchy_etcd import ETCD_RECORDS, etcd_sample, etcd_table  # noqa: E402
from centidb import keylib  # noqa: E402

RECORDS = 235886
QUICK_RECORDS = 2000
RSS_RECORDS = 1000000
RUNS = 3
PASSES = 3
SAMPLE = 50000
BATCHED_SAMPLE = 5000
RANGES = 50
DURABLE_RECORDS = 20000
CHUNKED_RECORDS = 100000
SEED = 235886

COLUMNS = ['engine', 'mode', 'records', 'keys_written', 'seconds', 'records_per_s',
           'keys_per_s', 'ratio_vs_raw', 'ratio_vs_sqlite', 'ratio_vs_lmdbengine',
           'bytes_on_disk', 'ratio_vs_raw_runs']
RSS_COLUMNS = ['engine', 'task', 'records', 'seconds', 'baseline_rss_bytes',
               'peak_rss_bytes', 'peak_rss_per_record']
ENGINES = ('LmdbEngine', 'PlyvelEngine', 'ListEngine')
RAW_LMDB, RAW_PLYVEL, SQLITE = 'raw lmdb', 'raw plyvel', 'sqlite3'
#: The raw baseline of each centidb engine.
RAW_OF = {'LmdbEngine': RAW_LMDB, 'PlyvelEngine': RAW_PLYVEL, 'ListEngine': RAW_LMDB}
#: Order of the table; a centidb engine follows its raw baseline.
BACKENDS = (SQLITE, RAW_LMDB, 'LmdbEngine', RAW_PLYVEL, 'PlyvelEngine', 'ListEngine')

#: Insert modes: name -> (blind, indexed).
INSERTS = {
    'insert blind': (True, False),
    'insert blind +2 idx': (True, True),
    'insert': (False, False),
    'insert +2 idx': (False, True),
}
PUT_MANY = 'put_many +2 idx'
CHUNKED = 'insert +2 idx 1000/txn'
DURABLE = 'insert +2 idx 1000/txn durable'
LOADS = (*INSERTS, PUT_MANY, CHUNKED, DURABLE)
READS = ('get by key', 'get by index', 'index range scan', 'index ranges of 1000',
         'full scan', 'group counts')
UPDATE = 'update 10%'
#: Batched read modes -> the unbatched mode they compare with.
BATCHED = {'get by key batched': 'get by key', 'full scan batched': 'full scan'}
MODES = LOADS + READS + (UPDATE, *BATCHED)
#: The default run leaves out the slow scan of the whole index (the ranges
#: measure the same path).
DEFAULT_MODES = tuple(mode for mode in MODES if mode != 'index range scan')
#: A baseline has no call of its own for these: it repeats this measurement.
SAME_AS = {PUT_MANY: 'insert +2 idx', **BATCHED}
READ_STORE = 'insert +2 idx'
RSS_TASKS = ('import +2 idx', PUT_MANY, 'add_index')

BACKEND_CLASSES = {SQLITE: Sqlite, RAW_LMDB: RawLmdb, RAW_PLYVEL: RawPlyvel,
                   'LmdbEngine': Centidb, 'PlyvelEngine': Centidb, 'ListEngine': Centidb}


# --- the data set ------------------------------------------------------------

ONSETS = ('b c d f g h j k l m n p r s t v w z br ch cl dr fl gr kr pl pr sh '
          'st th tr').split()
VOWELS = 'a e i o u a e i o u ai ea ie oo ou y'.split()
CODAS = [''] * 6 + 'n r s l m t k nd st rn'.split()


def make_words(n, seed=SEED):
    """`n` distinct pronounceable lowercase words, the same for the same seed."""
    rng = random.Random(seed)
    seen = set()
    words = []
    while len(words) < n:
        word = ''.join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)
                       for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def make_records(n, seed=SEED):
    """benchy's `n` records, the same on every machine."""
    rng = random.Random(seed + 1)
    return [{'stub': '%0150x' % rng.getrandbits(600), 'name': word,
             'location': word.upper()} for word in make_words(n, seed)]


def layout():
    """The key prefixes centidb gives the collection and its two indexes."""
    store = centidb.open('ListEngine')
    try:
        coll = open_collection(store, True)
        return (coll.prefix, coll.indices['rev_name'].prefix,
                coll.indices['rev_location'].prefix)
    finally:
        store.close()


class Data:
    """The records, the read samples and every expected result, shared by every backend."""

    def __init__(self, n, sample_size, durable_records=DURABLE_RECORDS,
                 chunked_records=CHUNKED_RECORDS):
        records = self.records = make_records(n)
        self.prefixes = layout()
        sample = random.Random(SEED + 2).sample(records, min(sample_size, n))
        self.sample_keys = [key_func(rec) for rec in sample]
        self.sample_revs = [rev_name(rec) for rec in sample]
        self.last_key = sample[-1]
        self.batched_keys = self.sample_keys[:BATCHED_SAMPLE]
        self.last_batched = sample[len(self.batched_keys) - 1]
        by_rev = sorted(records, key=rev_location)
        self.last_scanned = by_rev[-1]
        self.last_by_key = max(records, key=key_func)
        rng = random.Random(SEED + 3)
        ranges = min(RANGES, max(1, n // RANGE_LEN))
        firsts = [rng.randrange(max(1, n - RANGE_LEN + 1)) for _ in range(ranges)]
        self.range_starts = [rev_location(by_rev[i]) for i in firsts]
        self.range_total = sum(min(RANGE_LEN, n - i) for i in firsts)
        self.range_last = by_rev[min(firsts[-1] + RANGE_LEN, n) - 1]
        updated = random.Random(SEED + 4).sample(records, max(1, n // 10))
        self.update_keys = [key_func(rec) for rec in updated]
        self.first_updated = updated[0]
        self.moved = set(self.update_keys)
        self.durable_records = records[:min(durable_records, n)]
        self.chunked_records = records[:min(chunked_records, n)]

    def current(self, rec):
        """`rec` as the update mode leaves it."""
        if key_func(rec) in self.moved:
            return dict(rec, location=rec['location'] + MOVED)
        return rec

    def counts(self):
        """{mode: (records, engine keys written)}."""
        n, u = len(self.records), len(self.update_keys)
        c, d = len(self.chunked_records), len(self.durable_records)
        counts = {mode: (n, n * (3 if indexed else 1)) for mode, (_, indexed) in INSERTS.items()}
        counts.update({PUT_MANY: (n, 3 * n), CHUNKED: (c, 3 * c), DURABLE: (d, 3 * d),
                       'get by key': (len(self.sample_keys), 0),
                       'get by index': (len(self.sample_revs), 0), 'index range scan': (n, 0),
                       'index ranges of 1000': (self.range_total, 0), 'full scan': (n, 0),
                       'group counts': (n, 0), UPDATE: (u, 2 * u),
                       'get by key batched': (len(self.batched_keys), 0),
                       'full scan batched': (n, 0)})
        return counts


# --- running -----------------------------------------------------------------------

def load(runner, mode, data):
    """Run the load `mode` (None: an untimed blind indexed load); return seconds."""
    if mode in INSERTS:
        return runner.insert(INSERTS[mode][0])
    if mode == PUT_MANY:
        return runner.put_many()
    if mode == CHUNKED:
        return runner.insert_chunked(data.chunked_records)
    if mode == DURABLE:
        return runner.insert_chunked(data.durable_records)
    return runner.insert(True)


def best_of(passes, read):
    """The fastest of `passes` calls of `read`, and what the last one read."""
    best = None
    for _ in range(passes):
        gc.collect()
        seconds, value = read()
        best = seconds if best is None else min(best, seconds)
    return best, value


def check(backend, mode, value, expected):
    assert value == expected, (backend, mode, value, expected)


def own_modes(backend, modes):
    """The selected modes `backend` measures, in table order.

    A baseline measures its SAME_AS modes once, under the mode they repeat;
    ListEngine has no durable mode.
    """
    wanted = [mode for mode in modes if not (mode == DURABLE and backend == 'ListEngine')]
    if backend in ENGINES:
        return wanted
    return list(dict.fromkeys(SAME_AS.get(mode, mode) for mode in wanted))


def store_path(tmp, backend, slot):
    """Where `backend`'s store for `slot` ('load' or 'read') lives under `tmp`."""
    path = os.path.join(tmp, f'{backend.replace(" ", "-")}-{slot}')
    return path + '.sqlite' if backend == SQLITE else path


class Recorder:
    """Collects the seconds (and sizes) of one run's measurements.

    :param times: {(backend, mode): [seconds, ...]}, appended to.
    :param sizes: {(backend, mode): bytes on disk}, or None to measure no size.
    :param step: called once per measurement (the progress bar).
    :param spent: {mode: wall seconds}, or None; each measurement adds the
        wall time since the previous one (setup, checks and sizes included).
    """

    def __init__(self, times, sizes, step, spent):
        self.times, self.sizes, self.step, self.spent = times, sizes, step, spent
        self.clock = time.perf_counter()

    def __call__(self, backend, mode, seconds, size=None):
        now = time.perf_counter()
        if self.spent is not None:
            self.spent[mode] = self.spent.get(mode, 0) + now - self.clock
        self.clock = now
        self.times.setdefault((backend, mode), []).append(seconds)
        if self.sizes is not None and size is not None:
            self.sizes[backend, mode] = size
        self.step()


def run_once(order, tmp, data, modes, record, *, durable_dir=None, passes=PASSES,
             verify=True):
    """One run of the selected modes, each on every backend of `order` in turn.

    Mode by mode, so that a change of the machine's load between two modes
    moves every backend's figure of a mode alike. Each load writes a fresh
    store; each backend's read store (its ``insert +2 idx`` load, or an
    untimed indexed load) stays open for the reads, the update and the
    batched reads, and every pass of a read runs on every backend before the
    next pass. Stores go under `tmp` (the durable ones under `durable_dir`,
    default `tmp`). With `verify`, every store's keys are counted after each
    write (every read's result is checked anyway).

    :param record: a `Recorder`.
    """
    own = {backend: own_modes(backend, modes) for backend in order}
    reading = [backend for backend in order if any(mode not in LOADS for mode in own[backend])]
    untimed = [backend for backend in reading if READ_STORE not in own[backend]]
    kept = {}
    try:
        for mode in [*LOADS, None]:
            for backend in order:
                if (backend in untimed) if mode is None else (mode in own[backend]):
                    keep = backend in reading and mode in (READ_STORE, None)
                    where = (durable_dir or tmp) if mode == DURABLE else tmp
                    runner = load_store(backend, mode, data, record, verify,
                                        store_path(where, backend, 'read' if keep else 'load'),
                                        keep)
                    if keep:
                        kept[backend] = runner
        use_stores(kept, own, modes, data, record, passes, verify)
    finally:
        for runner in kept.values():
            runner.close()
    for backend in order:
        if backend not in ENGINES:
            for mode in modes:
                if mode in SAME_AS:
                    record(backend, mode, record.times[backend, SAME_AS[mode]][-1],
                           (record.sizes or {}).get((backend, SAME_AS[mode])))


def load_store(backend, mode, data, record, verify, path, keep):
    """Run one load on a fresh store at `path`; return its runner if `keep`, else close it."""
    indexed = mode is None or mode not in INSERTS or INSERTS[mode][1]
    runner = BACKEND_CLASSES[backend](backend, path, data)
    try:
        runner.open(indexed, durable=mode == DURABLE)
        gc.collect()
        seconds = load(runner, mode, data)
        if verify:
            records = {DURABLE: data.durable_records,
                       CHUNKED: data.chunked_records}.get(mode, data.records)
            runner.check(len(records) * (3 if indexed else 1))
        if mode is not None:
            measure = record.sizes is not None and not (mode in INSERTS and INSERTS[mode][0])
            record(backend, mode, seconds, runner.size() if measure else None)
        if keep:
            settle(runner)
            return runner
    except BaseException:
        runner.close()
        raise
    runner.close()
    return None


def settle(runner):
    """Compact a LevelDB store fully, untimed (the others need nothing).

    LevelDB compacts in a background thread that every store of the process
    shares: without this, the compaction a backend's writes leave behind
    would run during the next backend's measurement, and delay the flushes
    of its writes (closing a store also waits for its running compaction).
    """
    settle = getattr(runner, 'settle', None)
    if settle is not None:
        settle()


def take_turns(runners, passes, read, expected, mode, record, size=None):
    """Time `read(runner)` on every runner in turn, `passes` times; record each one's best."""
    best = {}
    for _ in range(passes):
        for backend, runner in runners.items():
            gc.collect()
            seconds, value = read(runner)
            check(backend, mode, value, expected)
            best[backend] = min(seconds, best.get(backend, seconds))
    for backend, seconds in best.items():
        record(backend, mode, seconds, None if size is None else size[backend])


def use_stores(kept, own, modes, data, record, passes, verify):
    """The reads, the update and the batched reads, each on every kept store in turn."""
    reads = {'get by key': (lambda runner: runner.get_by_key(), data.last_key),
             'get by index': (lambda runner: runner.get_by_index(), data.last_key),
             'index range scan': (lambda runner: runner.range_scan(), data.last_scanned),
             'index ranges of 1000': (lambda runner: runner.ranges(), data.range_last),
             'full scan': (lambda runner: runner.full_scan(), data.last_by_key),
             'group counts': (lambda runner: runner.group_counts(),
                              (len(data.records), ((rev_location(data.last_scanned),), 1)))}

    def having(mode):
        return {backend: runner for backend, runner in kept.items() if mode in own[backend]}

    for mode, (read, expected) in reads.items():
        take_turns(having(mode), passes, read, expected, mode, record)
    updated = having(UPDATE)
    for backend, runner in updated.items():
        gc.collect()
        seconds = runner.update()
        if verify:
            runner.check(3 * len(data.records))
        moved = data.current(data.first_updated)
        check(backend, UPDATE, runner.check_update(rev_location(moved)), moved)
        record(backend, UPDATE, seconds)
        settle(runner)
    current = data.current if updated else (lambda rec: rec)
    if record.sizes is not None and any(mode in BATCHED for mode in modes):
        for backend, runner in kept.items():
            size = runner.size(compact=True)
            if size is not None:
                for mode in BATCHED.values():
                    record.sizes[backend, mode] = size
    batched = {backend: runner for backend, runner in kept.items()
               if any(mode in BATCHED for mode in own[backend])}
    sizes = {}
    for backend, runner in batched.items():
        runner.batch()
        settle(runner)
        sizes[backend] = runner.size(compact=True) if record.sizes is not None else None
    reads = {'get by key batched': (lambda runner: runner.get_by_key(data.batched_keys),
                                    current(data.last_batched)),
             'full scan batched': (lambda runner: runner.full_scan(),
                                   current(data.last_by_key))}
    for mode, (read, expected) in reads.items():
        take_turns(having(mode), passes, read, expected, mode, record, sizes)


def rows(times, sizes, backends, modes, data):
    """The table's rows, from the collected `times` and `sizes`."""
    counts = data.counts()

    def count(backend, mode):
        return counts[SAME_AS.get(mode, mode) if backend not in ENGINES else mode]

    def run_ratios(backend, mode, other):
        if other is None or other == backend or (other, mode) not in times:
            return []
        mine, theirs = count(backend, mode)[0], count(other, mode)[0]
        pairs = zip(times[backend, mode], times[other, mode])
        return [mine * t / (theirs * s) for s, t in pairs]

    def ratio(backend, mode, other):
        # The median of the runs' ratios: each run measured the two close
        # together, so a slow drift of the machine's speed cancels out.
        ratios = run_ratios(backend, mode, other)
        return f'{statistics.median(ratios):.2f}' if ratios else ''

    for backend in backends:
        for mode in modes:
            if (backend, mode) not in times:
                continue        # ListEngine has no durable row
            records, keys_written = count(backend, mode)
            seconds = statistics.median(times[backend, mode])
            size = sizes.get((backend, mode))
            yield [backend, mode, records, keys_written, f'{seconds:.4f}',
                   f'{records / seconds:.0f}',
                   f'{keys_written / seconds:.0f}' if keys_written else '',
                   ratio(backend, mode, RAW_OF.get(backend)), ratio(backend, mode, SQLITE),
                   ratio(backend, mode, 'LmdbEngine') if backend == 'ListEngine' else '',
                   '' if size is None else size,
                   ' '.join(f'{r:.2f}' for r in run_ratios(backend, mode, RAW_OF.get(backend)))]


# --- peak memory (--rss) -----------------------------------------------------------

def reset_peak():
    """Make the peak RSS the current RSS (Linux 4.0+); False where not possible."""
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')
        return True
    except OSError:
        return False


def max_rss():
    """The peak RSS of this process so far, in bytes (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_child(task, backend, n, path):
    """In a child process: run one --rss task; print its result as JSON."""
    data = Data(n, 1)
    runner = BACKEND_CLASSES[backend](backend, path, data)
    if task == 'setup':         # the stored collection for add_index, untimed
        if backend == SQLITE:
            runner.open(True, indexes=False)
        else:
            runner.open(False)
        runner.insert(True)
        settle = getattr(runner, 'settle', None)
        if settle is not None:
            settle()        # LevelDB: else the next open replays its log into memory
        runner.close(keep=True)
        return
    if task == 'add_index':
        if backend == SQLITE:
            runner.open(True, indexes=False)
        else:
            runner.open(False)
        if backend == 'ListEngine':
            runner.insert_chunked(data.records)
    else:
        runner.open(True)
    gc.collect()
    was_reset = reset_peak()
    baseline = max_rss()
    if task == 'add_index':
        seconds = runner.add_index()
    elif task == PUT_MANY:
        seconds = runner.put_many()
    else:
        seconds = runner.insert(False)
    peak = max_rss()
    if backend != SQLITE:
        runner.check(n * (2 if task == 'add_index' else 3))
    runner.close()
    print(json.dumps({'seconds': seconds, 'baseline': baseline, 'peak': peak,
                      'reset': was_reset}))


def run_child(task, backend, n, path):
    result = subprocess.run([sys.executable, os.path.abspath(__file__), '--rss-child', task,
                             backend, str(n), path], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f'--rss child {task} {backend} failed:\n{result.stderr}')
    return json.loads(result.stdout.splitlines()[-1]) if task != 'setup' else None


def rss_table(backends, n, tmp, err):
    """Run every --rss task on every backend, each in a child; write the CSV."""
    cases = [(task, backend) for task in RSS_TASKS for backend in backends
             if task != PUT_MANY or backend in ENGINES]
    writer = csv.writer(sys.stdout, lineterminator='\n')
    rows, unreset = [], []
    with tqdm(total=len(cases), file=err, unit='child', dynamic_ncols=True) as bar:
        for task, backend in cases:
            bar.set_description(f'{task} {backend}')
            path = os.path.join(tmp, backend.replace(' ', '-'))
            if backend == SQLITE:
                path += '.sqlite'
            if task == 'add_index' and backend != 'ListEngine':
                run_child('setup', backend, n, path)
            try:
                got = run_child(task, backend, n, path)
            finally:
                wipe(path)
                if os.path.exists(path):
                    os.remove(path)
            if not got['reset']:
                unreset.append(f'{task} {backend}')
            grown = got['peak'] - got['baseline']
            rows.append([backend, task, n, f'{got["seconds"]:.4f}', got['baseline'],
                         got['peak'], f'{grown / n:.1f}'])
            bar.update(1)
    if unreset:
        print('WARNING: could not reset the peak RSS (/proc/self/clear_refs) in: '
              + ', '.join(unreset) + '; their baseline is the peak of building the '
              'records, which may hide part of the task\'s growth', file=err)
    writer.writerow(RSS_COLUMNS)
    writer.writerows(rows)


# --- the command line --------------------------------------------------------------

def versions():
    return ', '.join([
        f'python {platform.python_version()}', f'centidb {centidb.__version__}',
        f'lmdb {lmdb.__version__} (LMDB {".".join(map(str, lmdb.version()))})',
        f'plyvel {plyvel.__version__} (LevelDB {plyvel.__leveldb_version__})',
        f'msgpack {".".join(map(str, msgpack.version))}',
        f'sqlite3 library {sqlite3.sqlite_version}'])


def fs_type(path):
    """The file system type of the mount holding `path` (Linux), or '?'."""
    path, best, kind = os.path.realpath(path), '', '?'
    try:
        with open('/proc/mounts') as f:
            for line in f:
                fields = line.split()
                mount = fields[1]
                if (path == mount or path.startswith(mount.rstrip('/') + '/')) \
                        and len(mount) > len(best):
                    best, kind = mount, fields[2]
    except OSError:
        pass
    return kind


def scratch(prefix, candidates):
    """A new temporary directory in the first usable of `candidates`."""
    for parent in candidates:
        if os.path.isdir(parent) and os.access(parent, os.W_OK):
            return tempfile.mkdtemp(prefix=prefix, dir=parent)
    return tempfile.mkdtemp(prefix=prefix)


def comma_list(allowed, label):
    def parse(text):
        items = [item.strip() for item in text.split(',') if item.strip()]
        unknown = [item for item in items if item not in allowed]
        if unknown or not items:
            raise argparse.ArgumentTypeError(
                f'unknown {label} {", ".join(map(repr, unknown)) or "(none given)"}; '
                f'choose from: {", ".join(allowed)}')
        return items
    return parse


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=None,
                        help=f'number of records (default {RECORDS}, {QUICK_RECORDS} with '
                             f'--quick, {RSS_RECORDS} with --rss)')
    parser.add_argument('--runs', type=int, default=None,
                        help=f'runs per measurement, median reported (default {RUNS}, '
                             f'1 with --quick)')
    parser.add_argument('--passes', type=int, default=None,
                        help=f'passes per read in each run, the best kept (default {PASSES}, '
                             f'1 with --quick)')
    parser.add_argument('--durable-records', type=int, default=DURABLE_RECORDS,
                        help=f'records of the durable mode (default {DURABLE_RECORDS})')
    parser.add_argument('--chunked-records', type=int, default=CHUNKED_RECORDS,
                        help=f'records of the 1000/txn mode (default {CHUNKED_RECORDS})')
    parser.add_argument('--engines', type=comma_list(ENGINES, 'engine'),
                        default=list(ENGINES), help='comma list of centidb engines')
    parser.add_argument('--modes', type=comma_list(MODES, 'mode'),
                        default=list(DEFAULT_MODES),
                        help='comma list of: ' + ', '.join(MODES).replace('%', '%%') + ' (default: all but '
                             'index range scan)')
    parser.add_argument('--quick', action='store_true',
                        help=f'smoke test: {QUICK_RECORDS} records, 1 run, 1 pass')
    parser.add_argument('--rss', action='store_true',
                        help='print the peak-memory table instead (one child per task)')
    parser.add_argument('--rss-child', nargs=4, help=argparse.SUPPRESS)
    parser.add_argument('--etcd', action='store_true',
                        help=f'print the EtcdEngine table instead: a raw etcd loop and '
                             f'EtcdEngine on 1 and 3 members (default {ETCD_RECORDS} records)')
    args = parser.parse_args()
    if args.etcd and args.rss:
        parser.error('--etcd and --rss are two different tables: choose one')
    default_n = (RSS_RECORDS if args.rss else QUICK_RECORDS if args.quick
                 else ETCD_RECORDS if args.etcd else RECORDS)
    args.records = default_n if args.records is None else args.records
    args.runs = (1 if args.quick else RUNS) if args.runs is None else args.runs
    args.passes = (1 if args.quick else PASSES) if args.passes is None else args.passes
    if min(args.records, args.runs, args.passes, args.durable_records,
           args.chunked_records) < 1:
        parser.error('--records, --runs, --passes, --durable-records and --chunked-records '
                     'must be at least 1')
    return args


def context(err):
    print(versions(), file=err)
    print(f'machine: {platform.platform()}, {platform.machine()}, '
          f'{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}', file=err)
    print(f'key codec: keylib.IMPL = {keylib.IMPL!r}', file=err)
    if keylib.IMPL != 'speedups':
        print('!' * 72 + f'\nWARNING: the compiled key codec is NOT active '
              f'(keylib.IMPL = {keylib.IMPL!r}):\ncentidb timings below are for '
              'the pure-Python codec. Build it with\n  python setup.py build_ext '
              '--inplace\n' + '!' * 72, file=err)


def main():
    args = parse_args()
    if args.rss_child:
        task, backend, n, path = args.rss_child
        return rss_child(task, backend, int(n), path)
    n, err = args.records, sys.stderr
    needed = {SQLITE} | set(args.engines) | {RAW_OF[engine] for engine in args.engines}
    if 'ListEngine' in needed:
        needed.add('LmdbEngine')    # ratio_vs_lmdbengine
    backends = [backend for backend in BACKENDS if backend in needed]
    context(err)
    if args.etcd:
        return etcd_table(Data(n, etcd_sample(n)), args.runs, args.passes, best_of, check, err)
    tmp = scratch('centidb-benchy-', ['/dev/shm'])
    if args.rss:
        print(f'--rss: {n} records; one child process per task and backend; stores in '
              f'{tmp} ({fs_type(tmp)})', file=err)
        try:
            rss_table(backends, n, tmp, err)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    modes = [mode for mode in MODES if mode in args.modes]
    data = Data(n, min(SAMPLE, n), args.durable_records, args.chunked_records)
    durable = scratch('centidb-benchy-durable-', ['/var/tmp'])
    print(f'{n} records; {len(data.sample_keys)} gets per read mode '
          f'({len(data.batched_keys)} batched); {len(data.range_starts)} ranges of up to '
          f'{RANGE_LEN}; '
          f'{len(data.update_keys)} updated; {len(data.chunked_records)} in 1000/txn, '
          f'{len(data.durable_records)} durable; median '
          f'of {args.runs} runs (reads: the best of {args.passes} passes in each), '
          f'fresh stores each run', file=err)
    print(f'stores in {tmp} ({fs_type(tmp)}); durable stores in {durable} '
          f'({fs_type(durable)})', file=err)
    print('settings: LMDB map_size 4 GiB, sync=False (durable: True); LevelDB sync=False '
          '(durable: True), compacted before the reads and after batching; sqlite3 '
          f'journal_mode=OFF, synchronous=OFF (durable: WAL, FULL), cache_size '
          f'{SQLITE_CACHE_KIB // 1024} MiB, indexes created before the load; batches: '
          f'zlib, {BATCH_RECS} records', file=err)
    print('ratio_vs_raw: ListEngine is compared with raw lmdb. Raw loops and sqlite3 '
          'pack or bind their keys inside the timed loop; raw lmdb "insert" uses '
          'txn.replace(); raw plyvel "insert" reads the committed DB (not its own '
          'batch). Baselines\' put_many and batched rows repeat their insert +2 idx and '
          'unbatched measurements', file=err)
    times, sizes, spent, began = {}, {}, {}, time.perf_counter()
    try:
        total = sum(1 for run in range(args.runs) for backend in backends for mode in modes
                    if not (mode == DURABLE and backend == 'ListEngine'))
        with tqdm(total=total, file=err, unit='case', dynamic_ncols=True) as bar:
            for run in range(args.runs):
                bar.set_description(f'run {run + 1}/{args.runs}')
                record = Recorder(times, sizes if run == 0 else None,
                                  lambda: bar.update(1), spent)
                # Every other run in reverse: no backend always goes first,
                # and each engine stays beside its raw loop.
                run_once(backends[::-1] if run % 2 else backends, tmp, data, modes, record,
                         durable_dir=durable, passes=args.passes, verify=run == 0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(durable, ignore_errors=True)
    print(f'wall time {time.perf_counter() - began:.0f} s; by mode (all backends and runs, '
          'setup and checks included): ' + ', '.join(
              f'{mode} {seconds:.0f} s' for mode, seconds in spent.items()), file=err)

    writer = csv.writer(sys.stdout, lineterminator='\n')
    writer.writerow(COLUMNS)
    writer.writerows(rows(times, sizes, backends, modes, data))


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt:
        sys.exit('interrupted; temporary stores removed')
