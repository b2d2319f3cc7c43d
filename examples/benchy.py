"""The benchmark table: centidb on each engine against raw engine loops and sqlite3.

Usage: python examples/benchy.py [--records 235886] [--runs 3]
       [--engines LmdbEngine,PlyvelEngine,ListEngine] [--modes ...] [--quick]
       > benchy.csv

Workload: N records ``{'stub': 150 hex chars, 'name': word, 'location':
word.upper()}``, the same on every machine (words are generated from a fixed
seed and are unique), msgpack-encoded, keyed by ``(name, location)``; the
indexed variants add two indexes, on the reversed name and on the reversed
location.

Modes:

* ``insert blind``, ``insert blind +2 idx``, ``insert``, ``insert +2 idx``:
  all N records in one write transaction into a fresh store, with
  ``blind=True`` or ``False``, without or with the two indexes;
* ``get by key``: a fixed random sample of keys (up to 50,000), each read
  and decoded, in one read transaction of the indexed store;
* ``get by index``: the same sample, looked up by reversed name;
* ``index range scan``: every record in reversed-location order through the
  index.

Before the read modes, LevelDB stores (raw and centidb alike) are compacted,
so the reads measure a settled database rather than a race with LevelDB's
background compaction of the load.

Baselines, in the same run on the same records, each written for speed by
hand: ``raw lmdb`` and ``raw plyvel`` store exactly the keys centidb stores
(built with ``keylib.packs``) with plain msgpack values; ``sqlite3`` uses a
WITHOUT ROWID table keyed by (name, location) with indexed rev_name and
rev_location columns. The baselines a selected engine is compared with
always run.

CSV on stdout, one row per (engine, mode): the median time of --runs runs
(each on fresh stores), the rates derived from it, and the centidb rows'
ratios of records/s against the raw loop of the same engine (ListEngine:
against raw lmdb) and against sqlite3, for the same mode. ``keys_written``
counts engine keys (one per record plus one per index entry); read rows
write nothing and leave keys_per_s empty. Context (versions, key codec,
machine) and a progress bar go to stderr. Stores live in a temporary
directory removed at the end, also on error or Ctrl-C.
"""

import argparse
import csv
import gc
import operator
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

import lmdb
import msgpack
import plyvel
from tqdm import tqdm

import centidb
from centidb import encodings, keylib
from centidb.engines import PlyvelEngine

RECORDS = 235886
QUICK_RECORDS = 2000
RUNS = 3
SAMPLE = 50000
SEED = 235886

COLUMNS = ['engine', 'mode', 'records', 'keys_written', 'seconds', 'records_per_s',
           'keys_per_s', 'ratio_vs_raw', 'ratio_vs_sqlite']
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
READS = ('get by key', 'get by index', 'index range scan')
MODES = tuple(INSERTS) + READS

LMDB_MAP_SIZE = 4 << 30
SQLITE_CACHE_KIB = 256 * 1024
SQLITE_PRAGMAS = ('PRAGMA journal_mode=OFF', 'PRAGMA synchronous=OFF',
                  f'PRAGMA cache_size=-{SQLITE_CACHE_KIB}', 'PRAGMA temp_store=MEMORY')

key_func = operator.itemgetter('name', 'location')


def rev_name(rec):
    return rec['name'][::-1]


def rev_location(rec):
    return rec['location'][::-1]


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


# --- centidb -------------------------------------------------------------------

def open_store(engine, path):
    if engine == 'LmdbEngine':
        return centidb.open(engine, path=path, map_size=LMDB_MAP_SIZE, sync=False)
    if engine == 'PlyvelEngine':
        return centidb.open(engine, name=path, create_if_missing=True)
    return centidb.open(engine)


def open_collection(store, indexed):
    coll = store.collection('records', encoder=encodings.make_msgpack_encoder(),
                            key_func=key_func)
    if indexed:
        coll.add_index('rev_name', rev_name)
        coll.add_index('rev_location', rev_location)
    return coll


class Centidb:
    """centidb on one engine."""

    def __init__(self, engine, path, data):
        self.engine, self.path, self.data = engine, path, data
        self.store = self.coll = None

    def open(self, indexed):
        self.store = open_store(self.engine, self.path)
        self.coll = open_collection(self.store, indexed)

    def insert(self, blind):
        records, store, put = self.data.records, self.store, self.coll.put
        start = time.perf_counter()
        with store.begin(write=True) as txn:
            for rec in records:
                put(rec, txn=txn, blind=blind)
        return time.perf_counter() - start

    def check(self, keys_written):
        with self.store.begin() as txn:
            found = self.coll.count(txn=txn) + sum(
                index.count(txn=txn) for index in self.coll.indices.values())
        assert found == keys_written, (self.engine, found, keys_written)

    def settle(self):
        if isinstance(self.store.engine, PlyvelEngine):
            self.store.engine.compact()

    def get_by_key(self):
        store, get, keys = self.store, self.coll.get, self.data.sample_keys
        start = time.perf_counter()
        with store.begin() as txn:
            for key in keys:
                value = get(key, txn=txn)
        return time.perf_counter() - start, value

    def get_by_index(self):
        store, get = self.store, self.coll.indices['rev_name'].get
        revs = self.data.sample_revs
        start = time.perf_counter()
        with store.begin() as txn:
            for rev in revs:
                value = get(rev, txn=txn)
        return time.perf_counter() - start, value

    def range_scan(self):
        store, values = self.store, self.coll.indices['rev_location'].values
        start = time.perf_counter()
        with store.begin() as txn:
            for value in values(txn=txn):
                pass
        return time.perf_counter() - start, value

    def close(self):
        if self.store is not None:
            self.store.close()
            self.store = None
        wipe(self.path)


# --- raw baselines ---------------------------------------------------------------
#
# Same keys as centidb (collection prefix + packed key; index entry = packed
# index value under the index prefix, 0x01, packed key without the collection
# prefix), plain msgpack values, no header byte. Every timed loop packs its own
# keys, as an application would.

class RawLmdb:
    def __init__(self, engine, path, data):
        self.path, self.data = path, data
        self.env = None

    def open(self, indexed):
        self.indexed = indexed
        self.env = lmdb.open(self.path, map_size=LMDB_MAP_SIZE, sync=False)

    def insert(self, blind):
        records, (coll, idx1, idx2) = self.data.records, self.data.prefixes
        pack = msgpack.Packer(use_bin_type=True).pack
        unpackb, packs = msgpack.unpackb, keylib.packs
        n = len(coll)
        start = time.perf_counter()
        with self.env.begin(write=True) as txn:
            put = txn.put
            if not self.indexed:
                # Without indexes, overwriting needs no read: blind or not
                # is the same loop.
                for rec in records:
                    put(packs((rec['name'], rec['location']), coll), pack(rec))
            elif blind:
                for rec in records:
                    key = packs((rec['name'], rec['location']), coll)
                    put(key, pack(rec))
                    tail = b'\x01' + key[n:]
                    put(packs(rec['name'][::-1], idx1) + tail, b'')
                    put(packs(rec['location'][::-1], idx2) + tail, b'')
            else:
                replace, delete = txn.replace, txn.delete
                for rec in records:
                    key = packs((rec['name'], rec['location']), coll)
                    old = replace(key, pack(rec))
                    tail = b'\x01' + key[n:]
                    e1 = packs(rec['name'][::-1], idx1) + tail
                    e2 = packs(rec['location'][::-1], idx2) + tail
                    if old is not None:
                        old = unpackb(old)
                        for entry in (packs(old['name'][::-1], idx1) + tail,
                                      packs(old['location'][::-1], idx2) + tail):
                            if entry != e1 and entry != e2:
                                delete(entry)
                    put(e1, b'')
                    put(e2, b'')
        return time.perf_counter() - start

    def check(self, keys_written):
        assert self.env.stat()['entries'] == keys_written, self.env.stat()

    def get_by_key(self):
        keys, coll = self.data.sample_keys, self.data.prefixes[0]
        unpackb, packs = msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        with self.env.begin() as txn:
            get = txn.get
            for key in keys:
                value = unpackb(get(packs(key, coll)))
        return time.perf_counter() - start, value

    def get_by_index(self):
        revs, (coll, idx1, _) = self.data.sample_revs, self.data.prefixes
        unpackb, packs = msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        with self.env.begin() as txn:
            get, cursor = txn.get, txn.cursor()
            set_range, cursor_key = cursor.set_range, cursor.key
            for rev in revs:
                head = packs(rev, idx1) + b'\x01'
                value = None
                if set_range(head):
                    entry = cursor_key()
                    if entry.startswith(head):
                        value = unpackb(get(coll + entry[len(head):]))
        return time.perf_counter() - start, value

    def range_scan(self):
        coll, _, idx2 = self.data.prefixes
        hi, start_at = keylib.next_prefix(idx2), len(idx2)
        unpackb = msgpack.unpackb
        start = time.perf_counter()
        with self.env.begin() as txn:
            get, cursor = txn.get, txn.cursor()
            if cursor.set_range(idx2):
                for entry in cursor.iternext(values=False):
                    if entry >= hi:
                        break
                    # 0x01 never occurs in a packed str: it ends the index value.
                    value = unpackb(get(coll + entry[entry.index(b'\x01', start_at) + 1:]))
        return time.perf_counter() - start, value

    def close(self):
        if self.env is not None:
            self.env.close()
            self.env = None
        wipe(self.path)


class RawPlyvel:
    def __init__(self, engine, path, data):
        self.path, self.data = path, data
        self.db = None

    def open(self, indexed):
        self.indexed = indexed
        self.db = plyvel.DB(self.path, create_if_missing=True)

    def insert(self, blind):
        records, (coll, idx1, idx2) = self.data.records, self.data.prefixes
        pack = msgpack.Packer(use_bin_type=True).pack
        unpackb, packs = msgpack.unpackb, keylib.packs
        n = len(coll)
        start = time.perf_counter()
        batch = self.db.write_batch()
        put = batch.put
        if not self.indexed:
            for rec in records:
                put(packs((rec['name'], rec['location']), coll), pack(rec))
        elif blind:
            for rec in records:
                key = packs((rec['name'], rec['location']), coll)
                put(key, pack(rec))
                tail = b'\x01' + key[n:]
                put(packs(rec['name'][::-1], idx1) + tail, b'')
                put(packs(rec['location'][::-1], idx2) + tail, b'')
        else:
            # Reads the committed database only: a key written twice in the
            # same batch would leave a stale entry (the keys here are unique).
            get, delete = self.db.get, batch.delete
            for rec in records:
                key = packs((rec['name'], rec['location']), coll)
                old = get(key)
                put(key, pack(rec))
                tail = b'\x01' + key[n:]
                e1 = packs(rec['name'][::-1], idx1) + tail
                e2 = packs(rec['location'][::-1], idx2) + tail
                if old is not None:
                    old = unpackb(old)
                    for entry in (packs(old['name'][::-1], idx1) + tail,
                                  packs(old['location'][::-1], idx2) + tail):
                        if entry != e1 and entry != e2:
                            delete(entry)
                put(e1, b'')
                put(e2, b'')
        batch.write()
        return time.perf_counter() - start

    def check(self, keys_written):
        found = sum(1 for _ in self.db.iterator(include_value=False))
        assert found == keys_written, (found, keys_written)

    def settle(self):
        self.db.compact_range()

    def get_by_key(self):
        keys, coll = self.data.sample_keys, self.data.prefixes[0]
        unpackb, packs = msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        get = snapshot.get
        for key in keys:
            value = unpackb(get(packs(key, coll)))
        snapshot.close()
        return time.perf_counter() - start, value

    def get_by_index(self):
        revs, (coll, idx1, _) = self.data.sample_revs, self.data.prefixes
        unpackb, packs = msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        get = snapshot.get
        it = snapshot.iterator(include_value=False)  # one iterator, re-seeked
        seek = it.seek
        for rev in revs:
            head = packs(rev, idx1) + b'\x01'
            seek(head)
            entry = next(it, b'')
            value = unpackb(get(coll + entry[len(head):])) if entry.startswith(head) else None
        it.close()
        snapshot.close()
        return time.perf_counter() - start, value

    def range_scan(self):
        coll, _, idx2 = self.data.prefixes
        start_at, unpackb = len(idx2), msgpack.unpackb
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        get = snapshot.get
        with snapshot.iterator(prefix=idx2, include_value=False) as it:
            for entry in it:
                value = unpackb(get(coll + entry[entry.index(b'\x01', start_at) + 1:]))
        snapshot.close()
        return time.perf_counter() - start, value

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None
        wipe(self.path)


class Sqlite:
    """sqlite3: a WITHOUT ROWID table keyed by (name, location)."""

    def __init__(self, engine, path, data):
        self.path, self.data = path, data
        self.conn = None

    def open(self, indexed):
        self.indexed = indexed
        conn = self.conn = sqlite3.connect(self.path, isolation_level=None)
        for pragma in SQLITE_PRAGMAS:
            conn.execute(pragma)
        extra = ', rev_name TEXT, rev_location TEXT' if indexed else ''
        conn.execute(f'CREATE TABLE recs (name TEXT, location TEXT, stub TEXT{extra}, '
                     f'PRIMARY KEY (name, location)) WITHOUT ROWID')
        if indexed:
            conn.execute('CREATE INDEX recs_rev_name ON recs (rev_name)')
            conn.execute('CREATE INDEX recs_rev_location ON recs (rev_location)')

    def insert(self, blind):
        records, conn = self.data.records, self.conn
        verb = 'INSERT' if blind else 'INSERT OR REPLACE'
        start = time.perf_counter()
        conn.execute('BEGIN')
        if self.indexed:
            conn.executemany(f'{verb} INTO recs VALUES (?, ?, ?, ?, ?)',
                             ((r['name'], r['location'], r['stub'], r['name'][::-1],
                               r['location'][::-1]) for r in records))
        else:
            conn.executemany(f'{verb} INTO recs VALUES (?, ?, ?)',
                             ((r['name'], r['location'], r['stub']) for r in records))
        conn.execute('COMMIT')
        return time.perf_counter() - start

    def check(self, keys_written):
        (found,), = self.conn.execute('SELECT count(*) FROM recs')
        assert found * (3 if self.indexed else 1) == keys_written, found

    def _read(self, sql, params):
        execute = self.conn.execute
        start = time.perf_counter()
        execute('BEGIN')
        for param in params:
            name, location, stub = execute(sql, param).fetchone()
            value = {'stub': stub, 'name': name, 'location': location}
        execute('COMMIT')
        return time.perf_counter() - start, value

    def get_by_key(self):
        return self._read('SELECT name, location, stub FROM recs '
                          'WHERE name = ? AND location = ?', self.data.sample_keys)

    def get_by_index(self):
        return self._read('SELECT name, location, stub FROM recs WHERE rev_name = ?',
                          [(rev,) for rev in self.data.sample_revs])

    def range_scan(self):
        execute = self.conn.execute
        start = time.perf_counter()
        execute('BEGIN')
        for name, location, stub in execute(
                'SELECT name, location, stub FROM recs ORDER BY rev_location'):
            value = {'stub': stub, 'name': name, 'location': location}
        execute('COMMIT')
        return time.perf_counter() - start, value

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        for suffix in ('', '-journal', '-wal', '-shm'):
            if os.path.exists(self.path + suffix):
                os.remove(self.path + suffix)


BACKEND_CLASSES = {SQLITE: Sqlite, RAW_LMDB: RawLmdb, RAW_PLYVEL: RawPlyvel,
                   'LmdbEngine': Centidb, 'PlyvelEngine': Centidb, 'ListEngine': Centidb}


def wipe(path):
    if os.path.isdir(path):
        shutil.rmtree(path)


# --- running -----------------------------------------------------------------------

class Data:
    """The records and the read samples, shared by every backend."""

    def __init__(self, n, sample_size):
        self.records = make_records(n)
        self.prefixes = layout()
        sample = random.Random(SEED + 2).sample(self.records, min(sample_size, n))
        self.sample_keys = [key_func(rec) for rec in sample]
        self.sample_revs = [rev_name(rec) for rec in sample]
        self.last_key = sample[-1]
        self.last_scanned = max(self.records, key=rev_location)


def run_backend(backend, path, data, modes, times, step):
    """Run the selected modes once on fresh stores; append to `times`."""
    n = len(data.records)
    reads = [mode for mode in modes if mode in READS]
    inserts = [mode for mode in modes if mode in INSERTS]
    if reads and not any(INSERTS[mode][1] for mode in inserts):
        inserts.append(None)    # an untimed indexed load for the reads
    # The reads run on the store of the last indexed insert.
    read_after = [mode for mode in inserts if mode is None or INSERTS[mode][1]][-1:]
    for mode in inserts:
        blind, indexed = INSERTS[mode] if mode else (True, True)
        runner = BACKEND_CLASSES[backend](backend, path, data)
        try:
            runner.open(indexed)
            gc.collect()
            seconds = runner.insert(blind)
            runner.check(n * (3 if indexed else 1))
            if mode:
                times.setdefault((backend, mode), []).append(seconds)
                step()
            if reads and [mode] == read_after:
                # LevelDB: compact first, so no read competes with background
                # compaction of the load (LMDB and sqlite3 have none).
                settle = getattr(runner, 'settle', None)
                if settle is not None:
                    settle()
                for read in reads:
                    gc.collect()
                    seconds, value = {'get by key': runner.get_by_key,
                                      'get by index': runner.get_by_index,
                                      'index range scan': runner.range_scan}[read]()
                    expected = data.last_scanned if read == 'index range scan' else data.last_key
                    assert value == expected, (backend, read, value, expected)
                    times.setdefault((backend, read), []).append(seconds)
                    step()
        finally:
            runner.close()


def rows(times, backends, modes, n, sample_size):
    counts = {mode: (n, n * (3 if INSERTS[mode][1] else 1)) for mode in INSERTS}
    counts.update({'get by key': (sample_size, 0), 'get by index': (sample_size, 0),
                   'index range scan': (n, 0)})
    rate = {}
    for (backend, mode), seconds in times.items():
        rate[backend, mode] = counts[mode][0] / statistics.median(seconds)

    def ratio(backend, mode, baseline):
        if baseline is None or (baseline, mode) not in rate:
            return ''
        return f'{rate[backend, mode] / rate[baseline, mode]:.2f}'

    for backend in backends:
        for mode in modes:
            records, keys_written = counts[mode]
            seconds = statistics.median(times[backend, mode])
            vs_sqlite = '' if backend == SQLITE else ratio(backend, mode, SQLITE)
            yield [backend, mode, records, keys_written, f'{seconds:.4f}',
                   f'{records / seconds:.0f}',
                   f'{keys_written / seconds:.0f}' if keys_written else '',
                   ratio(backend, mode, RAW_OF.get(backend)), vs_sqlite]


def versions():
    return ', '.join([
        f'python {platform.python_version()}', f'centidb {centidb.__version__}',
        f'lmdb {lmdb.__version__} (LMDB {".".join(map(str, lmdb.version()))})',
        f'plyvel {plyvel.__version__} (LevelDB {plyvel.__leveldb_version__})',
        f'msgpack {".".join(map(str, msgpack.version))}',
        f'sqlite3 library {sqlite3.sqlite_version}'])


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=None,
                        help=f'number of records (default {RECORDS}, '
                             f'{QUICK_RECORDS} with --quick)')
    parser.add_argument('--runs', type=int, default=None,
                        help=f'runs per measurement, median reported (default {RUNS}, '
                             f'1 with --quick)')
    parser.add_argument('--engines', type=comma_list(ENGINES, 'engine'),
                        default=list(ENGINES), help='comma list of centidb engines')
    parser.add_argument('--modes', type=comma_list(MODES, 'mode'), default=list(MODES),
                        help='comma list of: ' + ', '.join(MODES))
    parser.add_argument('--quick', action='store_true',
                        help=f'smoke test: {QUICK_RECORDS} records, 1 run')
    args = parser.parse_args()
    n = args.records if args.records is not None else (
        QUICK_RECORDS if args.quick else RECORDS)
    runs = args.runs if args.runs is not None else (1 if args.quick else RUNS)
    if n < 1 or runs < 1:
        parser.error('--records and --runs must be at least 1')
    needed = {SQLITE} | set(args.engines) | {RAW_OF[engine] for engine in args.engines}
    backends = [backend for backend in BACKENDS if backend in needed]
    modes = [mode for mode in MODES if mode in args.modes]
    sample_size = min(SAMPLE, n)

    err = sys.stderr
    print(versions(), file=err)
    print(f'machine: {platform.platform()}, {platform.machine()}, '
          f'{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}', file=err)
    print(f'key codec: keylib.IMPL = {keylib.IMPL!r}', file=err)
    if keylib.IMPL != 'speedups':
        print('!' * 72 + f'\nWARNING: the compiled key codec is NOT active '
              f'(keylib.IMPL = {keylib.IMPL!r}):\ncentidb timings below are for '
              'the pure-Python codec. Build it with\n  python setup.py build_ext '
              '--inplace\n' + '!' * 72, file=err)
    print(f'{n} records, {sample_size} gets per read mode, median of {runs} runs, '
          f'fresh stores each run; one write transaction per insert', file=err)
    print('settings: LMDB map_size 4 GiB, sync=False; LevelDB sync=False, compacted '
          'before the reads; sqlite3 '
          f'journal_mode=OFF, synchronous=OFF, cache_size {SQLITE_CACHE_KIB // 1024} MiB, '
          'indexes created before the load', file=err)
    print('ratio_vs_raw: ListEngine is compared with raw lmdb. Raw loops and '
          'sqlite3 pack or bind their keys inside the timed loop; raw lmdb "insert" '
          'uses txn.replace(); raw plyvel "insert" reads the committed DB (not its '
          'own batch)', file=err)

    records_data = Data(n, sample_size)
    times = {}
    tmp = tempfile.mkdtemp(prefix='centidb-benchy-')
    try:
        total = runs * len(backends) * len(modes)
        with tqdm(total=total, file=err, unit='case', dynamic_ncols=True) as bar:
            for run in range(runs):
                for backend in backends:
                    bar.set_description(f'run {run + 1}/{runs} {backend}')
                    path = os.path.join(tmp, backend.replace(' ', '-'))
                    run_backend(backend, path, records_data, modes, times,
                                lambda: bar.update(1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    writer = csv.writer(sys.stdout, lineterminator='\n')
    writer.writerow(COLUMNS)
    writer.writerows(rows(times, backends, modes, n, sample_size))


if __name__ == '__main__':
    try:
        main()
    except KeyboardInterrupt:
        sys.exit('interrupted; temporary stores removed')
