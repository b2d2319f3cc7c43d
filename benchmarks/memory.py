"""Memory and file size of bulk loads: peak RSS per record, LMDB's data file against sqlite3's.

Usage: python benchmarks/memory.py [--records 1000000] [--runs 1]
       [--cases NAME,...] [--sections rss,size,speed] [--speed-cases NAME,...]
       > memory.csv
       python benchmarks/memory.py --child CASE N DIR   (one RSS case; prints JSON)

Workload: examples/benchy.py's records (``{'stub': 150 hex chars, 'name':
word, 'location': word.upper()}``, msgpack, keyed by ``(name,
location)``), and its two indexes on the reversed name and the reversed
location: three engine keys per record.

``rss`` section: each case runs in a fresh child process, which first makes
the records (and, for the index builds, the stored collection), then
resets its peak RSS (``/proc/self/clear_refs``) and measures the peak
(``resource.getrusage`` ``ru_maxrss``) minus the RSS before the case, and
the RSS held just before the commit:

* ``raw WriteBatch``: the baseline, plyvel's WriteBatch of the three keys
  per record (packed in the loop, as benchy's raw loop does), then
  ``write()``;
* ``PlyvelEngine put`` and ``PlyvelEngine _put_many``: the same keys and
  values through one PlyvelEngine write transaction, one ``put`` per key,
  or one ``_put_many`` of three pairs per record (what the collection layer
  calls);
* ``centidb put +2 idx`` and ``centidb put blind +2 idx``:
  ``Collection.put`` of every record into PlyvelEngine in one transaction;
* ``MemoryEngine _put_many``: the in-memory engine's write log (its
  committed data is Python objects too, so no raw baseline applies);
* ``add_index LevelDB``, ``add_index LMDB``, ``reindex LMDB``: a new index
  (``rev_name``) on a stored collection of N records, and a rebuild of it.

The first five rows' ratio is against ``raw WriteBatch``; ``held`` is the
RSS the pending writes hold before the commit (the raw batch: its bytes).
``peak_anon_kib`` is the peak of the anonymous part of the RSS (no mapped
files), which this process samples in the child's ``/proc`` every few
milliseconds. ``file_kib`` is the growth of the file-backed part of the
RSS (the data files LMDB, and LevelDB for reading tables, map into
memory, as far as they were read), which the peak includes; the LevelDB
store is compacted before the index cases, so no background compaction
runs meanwhile. Nothing else runs in the child while it measures: a
thread sampling the RSS there, for one, interleaves its allocations with
the write log's and keeps Python from handing freed memory back (the peak
of ``PlyvelEngine put`` rose by a quarter with one).

``speed`` section: CPU seconds (``time.process_time``, less disturbed by
other work on the machine than wall time) of a bulk import in one
transaction, the median of --runs runs, cases interleaved: the raw
WriteBatch, the PlyvelEngine and centidb cases above, a raw LMDB
``putmulti`` loop, and ``Collection.put`` and ``put_many`` (1,000 a call)
into LmdbEngine; ratios of records/s against the raw loop of the engine.

``size`` section: the size of the data file after loading the records
into a fresh store: LmdbEngine with and without the indexes, all records in
one transaction or a commit every 1,000, by a ``put`` per record in benchy's
(random) order (``put``) or sorted by key (``put sorted``), or by one
``put_many`` per transaction, in benchy's order or sorted; the size of its
compacting copy (``LmdbEngine.backup(compact=True)``); LMDB's leaf page fill (the
share of leaf page bytes its nodes use); sqlite3 with benchy's schema, the
same loads. Ratios are against sqlite3's file for the same load.

CSV on stdout; context (versions, key codec) on stderr. Stores live in a
temporary directory removed at the end.
"""

import argparse
import csv
import gc
import importlib.util
import json
import os
import platform
import re
import resource
import select
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

import centidb
from centidb import encodings, keylib

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = 1000000
LMDB_MAP_SIZE = 16 << 30
COMMIT_EVERY = 1000

RAW = 'raw WriteBatch'
RSS_CASES = (RAW, 'PlyvelEngine put', 'PlyvelEngine _put_many', 'centidb put +2 idx',
             'centidb put blind +2 idx', 'MemoryEngine _put_many', 'add_index LevelDB',
             'add_index LMDB', 'reindex LMDB')
#: The RSS rows compared with the raw WriteBatch.
AGAINST_RAW = RSS_CASES[1:5]
COLUMNS = ['section', 'case', 'records', 'seconds', 'records_per_s', 'peak_kib',
           'peak_anon_kib', 'file_kib', 'held_kib', 'bytes_per_record', 'ratio', 'ratio_vs', 'note']


def load_benchy():
    path = os.path.join(HERE, os.pardir, 'examples', 'benchy.py')
    spec = importlib.util.spec_from_file_location('benchy', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def key_func(rec):
    return rec['name'], rec['location']


def rev_name(rec):
    return rec['name'][::-1]


def rev_location(rec):
    return rec['location'][::-1]


def open_collection(store, indexed):
    coll = store.collection('records', encoder=encodings.make_msgpack_encoder(),
                            key_func=key_func)
    if indexed:
        coll.add_index('rev_name', rev_name)
        coll.add_index('rev_location', rev_location)
    return coll


def prefixes():
    """The key prefixes centidb gives the collection and its two indexes."""
    store = centidb.open('MemoryEngine')
    try:
        coll = open_collection(store, True)
        return (coll.prefix, coll.indices['rev_name'].prefix,
                coll.indices['rev_location'].prefix)
    finally:
        store.close()


# --- measuring RSS -----------------------------------------------------------------

def rss_kib(field='VmRSS'):
    """This process's resident set now (or another field of its status), in KiB."""
    with open('/proc/self/status') as status:
        return int(re.search(field + r':\s+(\d+)', status.read()).group(1))


def reset_peak():
    """Make the peak RSS the current RSS (Linux 4.0+); False if not allowed."""
    try:
        with open('/proc/self/clear_refs', 'w') as clear:
            clear.write('5')
        return True
    except OSError:
        return False


def peak_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class Held:
    """Records the RSS at one point of a case (just before its commit)."""

    kib = None

    def __call__(self):
        self.kib = rss_kib()


def engine_pairs(records, pre):
    """Yield, per record, the three (key, value) pairs, packed on the fly."""
    coll, idx1, idx2 = pre
    pack = msgpack.Packer(use_bin_type=True).pack
    packs, n = keylib.packs, len(coll)
    for rec in records:
        key = packs((rec['name'], rec['location']), coll)
        tail = b'\x01' + key[n:]
        yield [(key, pack(rec)), (packs(rec['name'][::-1], idx1) + tail, b''),
               (packs(rec['location'][::-1], idx2) + tail, b'')]


def case_raw(records, pre, path, held, clock=time.perf_counter):
    db = plyvel.DB(path, create_if_missing=True)
    try:
        start = clock()
        batch = db.write_batch()
        put = batch.put
        for pairs in engine_pairs(records, pre):
            for key, value in pairs:
                put(key, value)
        held()
        batch.write()
        return clock() - start
    finally:
        db.close()


def case_engine(records, pre, path, held, how, engine_name='PlyvelEngine',
                clock=time.perf_counter):
    if engine_name == 'PlyvelEngine':
        engine = centidb.engines.PlyvelEngine(path, create_if_missing=True)
    else:
        engine = centidb.engines.MemoryEngine()
    try:
        start = clock()
        txn = engine.begin(write=True)
        if how == 'put':
            put = txn.put
            for pairs in engine_pairs(records, pre):
                for key, value in pairs:
                    put(key, value)
        else:
            put_many = txn._put_many
            for pairs in engine_pairs(records, pre):
                put_many(pairs)
        held()
        txn.commit()
        return clock() - start
    finally:
        engine.close()


def case_centidb(records, path, held, blind, clock=time.perf_counter):
    store = centidb.open('PlyvelEngine', name=path, create_if_missing=True)
    try:
        coll = open_collection(store, True)
        put = coll.put
        start = clock()
        with store.begin(write=True) as txn:
            for rec in records:
                put(rec, txn=txn, blind=blind)
            held()
        return clock() - start
    finally:
        store.close()


def open_store(engine, path):
    if engine == 'LmdbEngine':
        return centidb.open(engine, path=path, map_size=LMDB_MAP_SIZE, sync=False)
    return centidb.open(engine, name=path, create_if_missing=True)


def stored_collection(records, engine, path, indexed):
    """Store `records` (commits of 10,000 puts), close; the collection is ready."""
    store = open_store(engine, path)
    try:
        coll = open_collection(store, indexed)
        for first in range(0, len(records), 10000):
            coll.put_many(records[first:first + 10000], blind=True)
        if engine == 'PlyvelEngine':
            store.engine.compact()  # no background compaction during the case
    finally:
        store.close()


def case_index(records, path, held, engine, rebuild):
    """Time add_index (or reindex) on a stored collection; `held` is not used.

    Returns the seconds, the RSS before the call, and how much its
    file-backed part (data files mapped into memory) grew.
    """
    stored_collection(records, engine, path, rebuild)
    del records[:]      # the records are on disk: the baseline need not hold them
    gc.collect()
    store = open_store(engine, path)
    try:
        coll = store.collection('records', encoder=encodings.make_msgpack_encoder(),
                                key_func=key_func)
        if rebuild:
            coll.add_index('rev_name', rev_name)
            coll.add_index('rev_location', rev_location)
        gc.collect()
        base, base_file = rss_kib(), rss_kib('RssFile')
        reset_peak()
        started()
        start = time.perf_counter()
        if rebuild:
            coll.reindex('rev_name')
        else:
            coll.add_index('rev_name', rev_name)
        seconds = time.perf_counter() - start
        file_kib = rss_kib('RssFile') - base_file   # before close() unmaps the files
        with store.begin() as txn:
            assert coll.indices['rev_name'].count(txn=txn) == coll.count(txn=txn)
        return seconds, base, file_kib
    finally:
        store.close()


def child(case, n, path):
    """Run one RSS case in this (fresh) process; print a JSON line."""
    benchy = load_benchy()
    records = benchy.make_records(n)
    pre = prefixes()
    held = Held()
    gc.collect()
    base = rss_kib()
    base_file = rss_kib('RssFile')
    file_kib = None
    resettable = reset_peak()
    if not case.startswith(('add_index', 'reindex')):
        started()
    if case == RAW:
        seconds = case_raw(records, pre, path, held)
    elif case in ('PlyvelEngine put', 'PlyvelEngine _put_many', 'MemoryEngine _put_many'):
        engine, how = case.split(' ')
        seconds = case_engine(records, pre, path, held, how.lstrip('_'), engine)
    elif case in ('centidb put +2 idx', 'centidb put blind +2 idx'):
        seconds = case_centidb(records, path, held, 'blind' in case)
    else:
        verb, engine = case.split(' ')
        engine = {'LevelDB': 'PlyvelEngine', 'LMDB': 'LmdbEngine'}[engine]
        seconds, base, file_kib = case_index(records, path, held, engine,
                                             verb == 'reindex')
    peak = peak_kib()
    if file_kib is None:
        file_kib = rss_kib('RssFile') - base_file
    print(json.dumps({'case': case, 'records': n, 'seconds': seconds, 'base_kib': base,
                      'peak_kib': peak - base, 'file_kib': file_kib,
                      'held_kib': None if held.kib is None else held.kib - base,
                      'resettable': resettable}))


def started():
    """Tell the parent the case starts now, with the anonymous RSS before it."""
    print(f"START {rss_kib('RssAnon')}", flush=True)


def status_kib(pid, field):
    try:
        with open(f'/proc/{pid}/status') as status:
            return int(re.search(field + r':\s+(\d+)', status.read()).group(1))
    except (OSError, AttributeError):
        return 0


def run_child(case, n, tmp):
    """Run one case in a child process; its JSON, with the peak of its anonymous RSS.

    This process samples the child's ``RssAnon`` every few milliseconds
    once the case starts (a sampler inside the child would disturb what it
    measures), so mapped data files are left out of this peak.
    """
    path = os.path.join(tmp, 'child')
    errors = tempfile.TemporaryFile(mode='w+')
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), '--child', case, str(n), path],
        stdout=subprocess.PIPE, stderr=errors, text=True)
    lines, base_anon, peak_anon = [], None, 0
    try:
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], 0.004)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line)
                if line.startswith('START '):
                    base_anon = int(line.split()[1])
            if base_anon is not None:
                peak_anon = max(peak_anon, status_kib(proc.pid, 'RssAnon'))
        if proc.wait() != 0:
            errors.seek(0)
            raise RuntimeError(f'case {case!r} failed:\n{errors.read()}')
    finally:
        proc.stdout.close()
        errors.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if os.path.isdir(path):
            shutil.rmtree(path)
    result = json.loads(lines[-1])
    result['anon_kib'] = peak_anon - base_anon
    return result


def rss_rows(cases, n, runs, tmp):
    results = {}
    for run in range(runs):
        for case in cases:
            print(f'rss run {run + 1}/{runs}: {case}', file=sys.stderr)
            results.setdefault(case, []).append(run_child(case, n, tmp))
    rows = []
    medians = {}
    for case in cases:
        got = results[case]
        medians[case] = {field: statistics.median(r[field] for r in got)
                         for field in ('seconds', 'peak_kib', 'anon_kib', 'file_kib')}
        helds = [r['held_kib'] for r in got if r['held_kib'] is not None]
        medians[case]['held_kib'] = statistics.median(helds) if helds else None
        medians[case]['note'] = '' if all(r['resettable'] for r in got) else (
            'peak not resettable: ru_maxrss minus the RSS before the case')
    for case in cases:
        m = medians[case]
        ratio = vs = ''
        if case in AGAINST_RAW and RAW in medians:
            ratio = f"{m['peak_kib'] / medians[RAW]['peak_kib']:.2f}"
            vs = f'{RAW} peak'
            if m['held_kib'] is not None and medians[RAW]['held_kib']:
                m['note'] = (m['note'] + ' ' if m['note'] else '') + (
                    f"held/raw held {m['held_kib'] / medians[RAW]['held_kib']:.2f}")
        rows.append(['rss', case, n, f"{m['seconds']:.3f}", f"{n / m['seconds']:.0f}",
                     m['peak_kib'], m['anon_kib'], m['file_kib'],
                     '' if m['held_kib'] is None else m['held_kib'],
                     f"{m['peak_kib'] * 1024 / n:.0f}", ratio, vs, m['note']])
    return rows


# --- file sizes ---------------------------------------------------------------------

def lmdb_load(records, path, indexed, every, bulk):
    """Load `records` into a fresh LmdbEngine store; seconds, then the engine stats.

    `bulk`: one ``put_many`` per transaction, else a ``put`` per record.
    """
    store = open_store('LmdbEngine', path)
    try:
        coll = open_collection(store, indexed)
        put = coll.put
        start = time.perf_counter()
        for first in range(0, len(records), every):
            with store.begin(write=True) as txn:
                if bulk:
                    coll.put_many(records[first:first + every], txn=txn, blind=True)
                else:
                    for rec in records[first:first + every]:
                        put(rec, txn=txn, blind=True)
        seconds = time.perf_counter() - start
        env = store.engine._env
        stat, info = env.stat(), env.info()
        backup = path + '-copy'
        store.engine.backup(backup, compact=True)
        copied = os.path.getsize(os.path.join(backup, 'data.mdb'))
        shutil.rmtree(backup)
        fill = leaf_fill(env, stat)
    finally:
        store.close()
    size = os.path.getsize(os.path.join(path, 'data.mdb'))
    return seconds, size, copied, fill, info


def leaf_fill(env, stat):
    """The share of leaf page bytes that nodes use (LMDB: 8-byte node header, 2-byte slot)."""
    used = 0
    with env.begin() as txn:
        for key, value in txn.cursor():
            used += 8 + 2 + len(key) + len(value)
    leaf = stat['leaf_pages'] * (stat['psize'] - 16)
    return used / leaf if leaf else 0.0


def sqlite_load(records, path, indexed, every):
    benchy = load_benchy()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in benchy.SQLITE_PRAGMAS:
            conn.execute(pragma)
        extra = ', rev_name TEXT, rev_location TEXT' if indexed else ''
        conn.execute(f'CREATE TABLE recs (name TEXT, location TEXT, stub TEXT{extra}, '
                     f'PRIMARY KEY (name, location)) WITHOUT ROWID')
        if indexed:
            conn.execute('CREATE INDEX recs_rev_name ON recs (rev_name)')
            conn.execute('CREATE INDEX recs_rev_location ON recs (rev_location)')
        start = time.perf_counter()
        for first in range(0, len(records), every):
            chunk = records[first:first + every]
            conn.execute('BEGIN')
            if indexed:
                conn.executemany('INSERT INTO recs VALUES (?, ?, ?, ?, ?)',
                                 ((r['name'], r['location'], r['stub'], r['name'][::-1],
                                   r['location'][::-1]) for r in chunk))
            else:
                conn.executemany('INSERT INTO recs VALUES (?, ?, ?)',
                                 ((r['name'], r['location'], r['stub']) for r in chunk))
            conn.execute('COMMIT')
        seconds = time.perf_counter() - start
    finally:
        conn.close()
    return seconds, os.path.getsize(path)


def size_rows(records, tmp):
    n = len(records)
    ordered = sorted(records, key=key_func)
    rows = []
    for indexed in (False, True):
        for every, commits in ((n, 'one txn'), (COMMIT_EVERY, f'commit per {COMMIT_EVERY}')):
            label = f"{'+2 idx' if indexed else 'no idx'} / {commits}"
            path = os.path.join(tmp, 'sqlite.db')
            print(f'size: sqlite3 {label}', file=sys.stderr)
            seconds, sqlite_size = sqlite_load(records, path, indexed, every)
            os.remove(path)
            rows.append(['size', f'sqlite3 {label}', n, f'{seconds:.3f}',
                         f'{n / seconds:.0f}', '', '', '', '', f'{sqlite_size / n:.0f}', '1.00',
                         'sqlite3', f'file {sqlite_size} bytes'])
            for order, recs, bulk in (('put', records, False), ('put sorted', ordered, False),
                                      ('put_many', records, True),
                                      ('put_many sorted', ordered, True)):
                path = os.path.join(tmp, 'lmdb')
                print(f'size: LmdbEngine {label} / {order}', file=sys.stderr)
                seconds, size, copied, fill, info = lmdb_load(recs, path, indexed, every, bulk)
                shutil.rmtree(path)
                name = f'LmdbEngine {label} / {order}'
                rows.append(['size', name, n, f'{seconds:.3f}', f'{n / seconds:.0f}', '',
                             '', '', '', f'{size / n:.0f}', f'{size / sqlite_size:.2f}',
                             f'sqlite3 {label}',
                             f'file {size} bytes; leaf fill {fill:.0%}; compacting copy '
                             f'{copied} bytes ({copied / sqlite_size:.2f} of sqlite3)'])
    return rows


# --- insert speed ---------------------------------------------------------------------

SPEED_CASES = ('raw WriteBatch', 'PlyvelEngine put', 'PlyvelEngine _put_many',
               'centidb put +2 idx', 'centidb put blind +2 idx', 'raw lmdb putmulti',
               'LmdbEngine put +2 idx', 'LmdbEngine put_many +2 idx')


def speed_once(case, records, pre, path):
    """CPU seconds of one bulk import (one transaction, a fresh store)."""
    if case == 'raw lmdb putmulti':
        env = lmdb.open(path, map_size=LMDB_MAP_SIZE, sync=False)
        try:
            start = time.process_time()
            with env.begin(write=True) as txn:
                putmulti = txn.cursor().putmulti
                for pairs in engine_pairs(records, pre):
                    putmulti(pairs)
            return time.process_time() - start
        finally:
            env.close()
    if case.startswith('LmdbEngine'):
        store = open_store('LmdbEngine', path)
        try:
            coll = open_collection(store, True)
            start = time.process_time()
            with store.begin(write=True) as txn:
                if 'put_many' in case:
                    for first in range(0, len(records), COMMIT_EVERY):
                        coll.put_many(records[first:first + COMMIT_EVERY], txn=txn)
                else:
                    put = coll.put
                    for rec in records:
                        put(rec, txn=txn)
            return time.process_time() - start
        finally:
            store.close()
    clock = time.process_time
    if case == RAW:
        return case_raw(records, pre, path, Held(), clock)
    if case.startswith('PlyvelEngine'):
        how = 'put' if case.endswith(' put') else 'put_many'
        return case_engine(records, pre, path, Held(), how, clock=clock)
    return case_centidb(records, path, Held(), 'blind' in case, clock)


def speed_rows(records, runs, tmp, cases=SPEED_CASES):
    """Median CPU seconds per case of `runs` runs, cases interleaved."""
    pre = prefixes()
    times = {}
    for run in range(runs):
        for case in cases:
            print(f'speed run {run + 1}/{runs}: {case}', file=sys.stderr)
            path = os.path.join(tmp, 'speed')
            gc.collect()
            try:
                times.setdefault(case, []).append(speed_once(case, records, pre, path))
            finally:
                shutil.rmtree(path, ignore_errors=True)
    n = len(records)
    rows = []
    for case in cases:
        seconds = statistics.median(times[case])
        base = 'raw lmdb putmulti' if 'mdb' in case else RAW
        ratio = ''
        if base in times:
            ratio = f'{n / seconds / (n / statistics.median(times[base])):.2f}'
        rows.append(['speed', case, n, f'{seconds:.3f}', f'{n / seconds:.0f}', '', '', '', '', '',
                     ratio, f'{base} records/s',
                     f'CPU seconds, median of {runs}: '
                     + ' '.join(f'{t:.3f}' for t in times[case])])
    return rows


# --- main -----------------------------------------------------------------------------

def context(n):
    err = sys.stderr
    print(f'python {platform.python_version()}, centidb {centidb.__version__} '
          f'({os.path.dirname(centidb.__file__)}), lmdb {lmdb.__version__} '
          f'(LMDB {".".join(map(str, lmdb.version()))}), plyvel {plyvel.__version__} '
          f'(LevelDB {plyvel.__leveldb_version__}), sqlite3 {sqlite3.sqlite_version}',
          file=err)
    print(f'machine: {platform.platform()}, {os.cpu_count()} CPUs, load average '
          f'{os.getloadavg()[0]:.2f}; key codec: keylib.IMPL = {keylib.IMPL!r}', file=err)
    if keylib.IMPL != 'speedups':
        print('WARNING: the compiled key codec is NOT active: pure-Python timings', file=err)
    print(f'{n} records; RSS: peak (and held before commit) minus the RSS before the '
          f'case, each case in a fresh process', file=err)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=RECORDS)
    parser.add_argument('--runs', type=int, default=1,
                        help='runs per RSS case, median reported (default 1)')
    parser.add_argument('--cases', default=','.join(RSS_CASES),
                        help='comma list of RSS cases: ' + ', '.join(RSS_CASES))
    parser.add_argument('--sections', default='rss,size',
                        help='comma list of rss, size, speed (default rss,size)')
    parser.add_argument('--speed-cases', default=','.join(SPEED_CASES),
                        help='comma list of speed cases: ' + ', '.join(SPEED_CASES))
    parser.add_argument('--child', nargs=3, metavar=('CASE', 'N', 'DIR'),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]), args.child[2])
    cases = [case.strip() for case in args.cases.split(',') if case.strip()]
    unknown = [case for case in cases if case not in RSS_CASES]
    if unknown:
        parser.error(f'unknown case(s) {unknown}; choose from: {", ".join(RSS_CASES)}')
    speed_cases = [case.strip() for case in args.speed_cases.split(',') if case.strip()]
    unknown = [case for case in speed_cases if case not in SPEED_CASES]
    if unknown:
        parser.error(f'unknown speed case(s) {unknown}; choose from: {", ".join(SPEED_CASES)}')
    sections = {s.strip() for s in args.sections.split(',') if s.strip()}
    if not sections <= {'rss', 'size', 'speed'}:
        parser.error('--sections takes rss, size, speed')
    context(args.records)
    tmp = tempfile.mkdtemp(prefix='centidb-memory-')
    rows = []
    try:
        if 'rss' in sections:
            rows += rss_rows(cases, args.records, args.runs, tmp)
        if 'speed' in sections:
            rows += speed_rows(load_benchy().make_records(args.records), args.runs, tmp,
                               speed_cases)
        if 'size' in sections:
            rows += size_rows(load_benchy().make_records(args.records), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    writer = csv.writer(sys.stdout, lineterminator='\n')
    writer.writerow(COLUMNS)
    writer.writerows(rows)


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt:
        sys.exit('interrupted; temporary stores removed')
