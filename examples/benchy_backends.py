"""examples/benchy.py's measured backends: centidb on an engine, and sqlite3.

Also what every backend shares: the workload's key and index functions, the
store settings and the size measures. The raw engine loops are in
``benchy_raw.py``. Every backend has the same methods: ``open(indexed,
durable=False)``; timed writes returning seconds (``insert``,
``insert_chunked``, ``update``, ``add_index``); timed reads returning
``(seconds, what was read last)`` so the caller can check the result;
``check``, ``settle``, ``size`` and ``close``. Nothing here prints.
"""

from __future__ import annotations

import operator
import os
import shutil
import sqlite3
import time

import centidb
from centidb import encodings
from centidb.engines import LmdbEngine, PlyvelEngine

LMDB_MAP_SIZE = 4 << 30
SQLITE_CACHE_KIB = 256 * 1024
#: sqlite3 settings: the fast ones (every row but the durable one), the
#: durable ones, and those common to both.
SQLITE_FAST = ('PRAGMA journal_mode=OFF', 'PRAGMA synchronous=OFF')
SQLITE_DURABLE = ('PRAGMA journal_mode=WAL', 'PRAGMA synchronous=FULL')
SQLITE_COMMON = (f'PRAGMA cache_size=-{SQLITE_CACHE_KIB}', 'PRAGMA temp_store=MEMORY')
SQLITE_PRAGMAS = SQLITE_FAST + SQLITE_COMMON
#: Records per write transaction in the chunked modes (inserts, update).
COMMIT_EVERY = 1000
#: Index entries read per range in the "index ranges of 1000" mode.
RANGE_LEN = 1000
#: Records per batch in the batched modes (zlib packer).
BATCH_RECS = 32
#: The update mode appends this to each updated record's location.
MOVED = 'X'

key_func = operator.itemgetter('name', 'location')


def rev_name(rec):
    """The first index: the reversed name."""
    return rec['name'][::-1]


def rev_location(rec):
    """The second index: the reversed location."""
    return rec['location'][::-1]


def open_store(engine, path, durable=False):
    """A centidb store on `engine` at `path`, opened for speed unless `durable`."""
    if engine == 'LmdbEngine':
        return centidb.open(engine, path=path, map_size=LMDB_MAP_SIZE, sync=durable)
    if engine == 'PlyvelEngine':
        return centidb.open(engine, name=path, create_if_missing=True, sync=durable)
    return centidb.open(engine)


def open_collection(store, indexed):
    """benchy's collection: msgpack, keyed by (name, location), 0 or 2 indexes."""
    coll = store.collection('records', encoder=encodings.make_msgpack_encoder(),
                            key_func=key_func)
    if indexed:
        coll.add_index('rev_name', rev_name)
        coll.add_index('rev_location', rev_location)
    return coll


def wipe(path):
    """Remove the store directory `path`, if there is one."""
    if os.path.isdir(path):
        shutil.rmtree(path)


def dir_bytes(path):
    """The sizes of the files in directory `path`, summed."""
    return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))


def compact_leveldb(db):
    """Compact every level of the plyvel `db` over all its keys.

    Not ``db.compact_range()`` without bounds: with LevelDB 1.22 and plyvel
    1.5.1 that flushes the memtable but merges no level (measured: a store
    with half its keys deleted kept its size), so the first and last keys
    are passed.
    """
    with db.iterator(include_value=False) as it:
        first = next(it, None)
    if first is not None:
        with db.iterator(reverse=True, include_value=False) as it:
            last = next(it)
        db.compact_range(start=first, stop=last)


def lmdb_bytes(path, copy_to=None):
    """The size of an LMDB store: its data.mdb, or the data.mdb `copy_to(dir)` writes.

    LMDB never shrinks its file: freed pages are kept for reuse, so after
    deletes and rewrites only a compacting copy shows the size of the data.
    """
    if copy_to is None:
        return os.path.getsize(os.path.join(path, 'data.mdb'))
    copy = path + '-copy'
    wipe(copy)
    os.makedirs(copy)
    try:
        copy_to(copy)
        return os.path.getsize(os.path.join(copy, 'data.mdb'))
    finally:
        wipe(copy)


def chunks(items, size=COMMIT_EVERY):
    """`items` cut into lists of `size`."""
    return [items[i:i + size] for i in range(0, len(items), size)]


class Centidb:
    """centidb on one engine."""

    def __init__(self, engine, path, data):
        self.engine, self.path, self.data = engine, path, data
        self.store = self.coll = None

    def open(self, indexed, durable=False):
        self.store = open_store(self.engine, self.path, durable)
        self.coll = open_collection(self.store, indexed)

    def insert(self, blind):
        records, store, put = self.data.records, self.store, self.coll.put
        start = time.perf_counter()
        with store.begin(write=True) as txn:
            for rec in records:
                put(rec, txn=txn, blind=blind)
        return time.perf_counter() - start

    def insert_chunked(self, records):
        store, put, parts = self.store, self.coll.put, chunks(records)
        start = time.perf_counter()
        for part in parts:
            with store.begin(write=True) as txn:
                for rec in part:
                    put(rec, txn=txn)
        return time.perf_counter() - start

    def put_many(self):
        records, store, put_many = self.data.records, self.store, self.coll.put_many
        start = time.perf_counter()
        with store.begin(write=True) as txn:
            put_many(records, txn=txn)
        return time.perf_counter() - start

    def check(self, keys_written):
        with self.store.begin() as txn:
            found = self.coll.count(txn=txn) + sum(
                index.count(txn=txn) for index in self.coll.indices.values())
        assert found == keys_written, (self.engine, found, keys_written)

    def settle(self):
        if isinstance(self.store.engine, PlyvelEngine):
            # PlyvelEngine.compact() calls compact_range() without bounds,
            # which merges nothing here (see compact_leveldb): reach past it.
            compact_leveldb(self.store.engine._db)

    def size(self, compact=False):
        engine = self.store.engine
        if isinstance(engine, LmdbEngine):
            return lmdb_bytes(self.path, engine.backup if compact else None)
        if isinstance(engine, PlyvelEngine):
            self.settle()
            return dir_bytes(self.path)
        return None     # in memory

    def get_by_key(self, keys=None):
        store, get = self.store, self.coll.get
        keys = self.data.sample_keys if keys is None else keys
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

    def ranges(self):
        store, values = self.store, self.coll.indices['rev_location'].values
        starts = self.data.range_starts
        start = time.perf_counter()
        with store.begin() as txn:
            for lo in starts:
                for value in values(lo, max=RANGE_LEN, txn=txn):
                    pass
        return time.perf_counter() - start, value

    def full_scan(self):
        store, values = self.store, self.coll.values
        start = time.perf_counter()
        with store.begin() as txn:
            for value in values(txn=txn):
                pass
        return time.perf_counter() - start, value

    def group_counts(self):
        store, group_counts = self.store, self.coll.indices['rev_location'].group_counts
        start = time.perf_counter()
        with store.begin() as txn:
            groups = group_counts(txn=txn)
        return time.perf_counter() - start, (len(groups), groups[-1])

    def update(self):
        store, get, put = self.store, self.coll.get, self.coll.put
        parts = chunks(self.data.update_keys)
        start = time.perf_counter()
        for part in parts:
            with store.begin(write=True) as txn:
                for key in part:
                    record = get(key, rec=True, txn=txn)
                    record.data['location'] += MOVED
                    put(record, txn=txn)
        return time.perf_counter() - start

    def check_update(self, rev):
        """The record the rev_location index finds under `rev` (an updated tuple)."""
        return self.coll.indices['rev_location'].get(rev)

    def batch(self):
        """Rewrite the whole collection as zlib batches of BATCH_RECS records (untimed)."""
        found, made, _ = self.coll.batch(max_recs=BATCH_RECS, packer=encodings.ZLIB_PACKER)
        assert found == len(self.data.records) and made, (found, made)

    def add_index(self):
        start = time.perf_counter()
        self.coll.add_index('rev_location', rev_location)
        return time.perf_counter() - start

    def close(self, keep=False):
        if self.store is not None:
            self.store.close()
            self.store = None
        if not keep:
            wipe(self.path)


class Sqlite:
    """sqlite3: a WITHOUT ROWID table keyed by (name, location)."""

    def __init__(self, engine, path, data):
        self.path, self.data = path, data
        self.conn = None

    def open(self, indexed, durable=False, indexes=True):
        """Create the table (and its indexes, unless not `indexes`) if missing."""
        self.indexed = indexed
        conn = self.conn = sqlite3.connect(self.path, isolation_level=None)
        for pragma in (SQLITE_DURABLE if durable else SQLITE_FAST) + SQLITE_COMMON:
            conn.execute(pragma)
        extra = ', rev_name TEXT, rev_location TEXT' if indexed else ''
        conn.execute(f'CREATE TABLE IF NOT EXISTS recs (name TEXT, location TEXT, '
                     f'stub TEXT{extra}, PRIMARY KEY (name, location)) WITHOUT ROWID')
        if indexed and indexes:
            conn.execute('CREATE INDEX IF NOT EXISTS recs_rev_name ON recs (rev_name)')
            conn.execute('CREATE INDEX IF NOT EXISTS recs_rev_location ON recs (rev_location)')

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

    def insert_chunked(self, records):
        conn, parts = self.conn, chunks(records)
        execute, executemany = conn.execute, conn.executemany
        start = time.perf_counter()
        for part in parts:
            execute('BEGIN')
            executemany('INSERT OR REPLACE INTO recs VALUES (?, ?, ?, ?, ?)',
                        ((r['name'], r['location'], r['stub'], r['name'][::-1],
                          r['location'][::-1]) for r in part))
            execute('COMMIT')
        return time.perf_counter() - start

    def check(self, keys_written):
        (found,), = self.conn.execute('SELECT count(*) FROM recs')
        assert found * (3 if self.indexed else 1) == keys_written, found

    def size(self, compact=False):
        return sum(os.path.getsize(self.path + suffix) for suffix in ('', '-wal')
                   if os.path.exists(self.path + suffix))

    def _read(self, sql, params):
        execute = self.conn.execute
        start = time.perf_counter()
        execute('BEGIN')
        for param in params:
            name, location, stub = execute(sql, param).fetchone()
            value = {'stub': stub, 'name': name, 'location': location}
        execute('COMMIT')
        return time.perf_counter() - start, value

    def get_by_key(self, keys=None):
        return self._read('SELECT name, location, stub FROM recs '
                          'WHERE name = ? AND location = ?',
                          self.data.sample_keys if keys is None else keys)

    def get_by_index(self):
        return self._read('SELECT name, location, stub FROM recs WHERE rev_name = ?',
                          [(rev,) for rev in self.data.sample_revs])

    def _scan(self, sql, params=()):
        execute = self.conn.execute
        start = time.perf_counter()
        execute('BEGIN')
        for name, location, stub in execute(sql, params):
            value = {'stub': stub, 'name': name, 'location': location}
        execute('COMMIT')
        return time.perf_counter() - start, value

    def range_scan(self):
        return self._scan('SELECT name, location, stub FROM recs ORDER BY rev_location')

    def full_scan(self):
        return self._scan('SELECT name, location, stub FROM recs ORDER BY name, location')

    def ranges(self):
        execute, starts = self.conn.execute, self.data.range_starts
        sql = (f'SELECT name, location, stub FROM recs WHERE rev_location >= ? '
               f'ORDER BY rev_location LIMIT {RANGE_LEN}')
        start = time.perf_counter()
        execute('BEGIN')
        for lo in starts:
            for name, location, stub in execute(sql, (lo,)):
                value = {'stub': stub, 'name': name, 'location': location}
        execute('COMMIT')
        return time.perf_counter() - start, value

    def group_counts(self):
        execute = self.conn.execute
        start = time.perf_counter()
        execute('BEGIN')
        groups = execute('SELECT rev_location, count(*) FROM recs '
                         'GROUP BY rev_location').fetchall()
        execute('COMMIT')
        seconds = time.perf_counter() - start
        rev, count = groups[-1]
        return seconds, (len(groups), ((rev,), count))

    def update(self):
        """UPDATE in transactions of COMMIT_EVERY; location is in the primary key."""
        conn, parts = self.conn, chunks(self.data.update_keys)
        execute, executemany = conn.execute, conn.executemany
        before = conn.total_changes
        start = time.perf_counter()
        for part in parts:
            execute('BEGIN')
            executemany('UPDATE recs SET location = ?, rev_location = ? '
                        'WHERE name = ? AND location = ?',
                        ((location + MOVED, (location + MOVED)[::-1], name, location)
                         for name, location in part))
            execute('COMMIT')
        seconds = time.perf_counter() - start
        assert conn.total_changes - before == len(self.data.update_keys)
        return seconds

    def check_update(self, rev):
        name, location, stub = self.conn.execute(
            'SELECT name, location, stub FROM recs WHERE rev_location = ?', (rev,)).fetchone()
        return {'stub': stub, 'name': name, 'location': location}

    def add_index(self):
        start = time.perf_counter()
        self.conn.execute('CREATE INDEX recs_rev_location ON recs (rev_location)')
        return time.perf_counter() - start

    def close(self, keep=False):
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        for suffix in ('', '-journal', '-wal', '-shm'):
            if not keep and os.path.exists(self.path + suffix):
                os.remove(self.path + suffix)
