"""centidb beside its peers: ZODB, PostgreSQL and sqlite3 on the same workload.

Usage: python benchmarks/peers.py [--records 100000] [--runs 3] [--passes 3]
       [--peers centidb-lmdb,centidb-plyvel,zodb,postgresql,sqlite3,mongodb]
       [--budget 60] [--dir /dev/shm] [--quick] > docs/peers.csv
       python benchmarks/peers.py --chart docs/peers.csv docs/peers.png

Records: examples/benchy.py's, ``{'stub': 150 hex chars, 'name': word,
'location': word.upper()}`` keyed by ``(name, location)``, with two indexes:
the reversed name and the reversed location. Every peer stores the key and
the whole record, and keeps both indexes. Operations (rows of the table):

* ``insert one txn``: all records into a fresh, indexed store in one
  transaction;
* ``insert commit/1000``: the same, committing every 1,000 records (run
  first, into a store of its own, dropped after);
* then, on the store of the one-transaction load (after an untimed settle:
  LevelDB compaction, PostgreSQL ``VACUUM ANALYZE``):
* ``get by key``: a fixed random sample of keys (up to 20,000), each record
  read and decoded, in one read transaction;
* ``get by index``: the same records, looked up by reversed name;
* ``index range 1000``: 50 ranges (5 with --quick) of 1,000 consecutive
  entries of the reversed-location index, from fixed random starting
  values, each record fetched and decoded;
* ``full scan``: every record, decoded;
* ``count per index value``: the number of records per reversed location,
  like SQL's ``GROUP BY`` (every value is unique here, so this is one pass
  over the index that yields N groups of 1);
* ``update 10% commit/1000``: a fixed random tenth of the records gets a new
  ``location`` (its lowercase), so its reversed-location index entry
  changes; the key stays. A commit every 1,000 records.

Every answer is checked (the last record read, the counts, and after the
update the per-value counts of the index and an updated record). Each write
is timed once per run, each read as the best of ``--passes`` passes in a
run; the CSV holds the median over ``--runs`` runs of wall-clock seconds
and of CPU seconds (this process's, plus PostgreSQL's server process for
its connection), records/s, and ratios of records/s against centidb on
LMDB and against sqlite3 (above 1: faster than the baseline). Runs are the
outer loop and peers the inner one, so a change of the machine's load falls
on every peer alike. An operation whose first run takes over ``--budget``
seconds is not repeated (its row says so). Data lives on tmpfs
(``/dev/shm``) when it exists, PostgreSQL's too; durability is off
everywhere (docs/perf.rst lists each peer's settings). A peer whose software
is missing gets one row with a note instead of numbers; MongoDB always does
(no runner: its server cannot be installed here). CSV on stdout, context
on stderr. Temporary stores are removed and the PostgreSQL server stopped at
the end, also on an error, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import csv
import gc
import glob
import importlib.metadata
import itertools
import operator
import os
import platform
import pwd
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, Iterator, List, Tuple, cast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'examples'))
import benchy  # noqa: E402  (examples/ is not a package: the shared records)

import centidb  # noqa: E402
from centidb import encodings, keylib  # noqa: E402

RECORDS = 100_000
QUICK_RECORDS = 2000
RUNS = 3
PASSES = 3
SAMPLE = 20_000
RANGES = 50
QUICK_RANGES = 5
RANGE_LEN = 1000
CHUNK = 1000
BUDGET = 60.0
ZODB_CACHE = 100_000     # objects: the whole store fits, as a ZODB user would size it
SEED = benchy.SEED

OPS = ('insert one txn', 'insert commit/1000', 'get by key', 'get by index',
       'index range 1000', 'full scan', 'count per index value', 'update 10% commit/1000')
COLUMNS = ['peer', 'operation', 'records', 'seconds', 'cpu_seconds', 'records_per_s',
           'ratio_vs_centidb', 'ratio_vs_sqlite3', 'note']
#: --peers name -> the peer's name in the table.
PEERS = {'centidb-lmdb': 'centidb LmdbEngine', 'centidb-plyvel': 'centidb PlyvelEngine',
         'zodb': 'ZODB', 'postgresql': 'PostgreSQL', 'sqlite3': 'sqlite3',
         'mongodb': 'MongoDB'}
CENTIDB_BASELINE, SQLITE_BASELINE = 'centidb LmdbEngine', 'sqlite3'

LMDB_MAP_SIZE = 4 << 30
SQLITE_PRAGMAS = ('PRAGMA journal_mode=OFF', 'PRAGMA synchronous=OFF',
                  'PRAGMA cache_size=-262144', 'PRAGMA temp_store=MEMORY')
PG_SETTINGS = {'fsync': 'off', 'synchronous_commit': 'off', 'full_page_writes': 'off',
               'shared_buffers': "'256MB'", 'max_wal_size': "'4GB'", 'autovacuum': 'off'}

Record = Dict[str, str]      # typing's names: aliases are evaluated at import (Python 3.9)
#: (peer, operation) -> [(wall-clock seconds, CPU seconds) per run]
Times = Dict[Tuple[str, str], List[Tuple[float, float]]]


def new_location(rec: Record) -> str:
    """The location the update gives a record."""
    return rec['location'].lower()


class Data:
    """The records, the samples every peer reads and the expected answers."""

    def __init__(self, n: int, ranges: int = RANGES) -> None:
        self.records: list[Record] = benchy.make_records(n)
        rng = random.Random(SEED + 7)
        sample = rng.sample(self.records, min(SAMPLE, n))
        self.keys = [(r['name'], r['location']) for r in sample]
        self.revs = [r['name'][::-1] for r in sample]
        self.last_sampled = sample[-1]
        by_rev = sorted(self.records, key=lambda r: r['location'][::-1])
        self.range_len = min(RANGE_LEN, n)
        starts = [rng.randrange(n - self.range_len + 1) for _ in range(ranges)]
        self.range_starts = [by_rev[i]['location'][::-1] for i in starts]
        self.last_in_range = by_rev[starts[-1] + self.range_len - 1]
        updated = rng.sample(self.records, n // 10)
        self.updates = [((r['name'], r['location']), new_location(r)) for r in updated]
        self.groups_before = sorted((r['location'][::-1], 1) for r in self.records)
        moved = {key for key, _ in self.updates}
        self.groups_after = sorted(
            ((new_location(r) if (r['name'], r['location']) in moved else r['location'])[::-1], 1)
            for r in self.records)
        self.last_updated = dict(updated[-1], location=new_location(updated[-1])) \
            if updated else None

    def counts(self) -> dict[str, int]:
        """Records each operation handles, for records/s."""
        n = len(self.records)
        return {'insert one txn': n, 'insert commit/1000': n, 'get by key': len(self.keys),
                'get by index': len(self.revs),
                'index range 1000': len(self.range_starts) * self.range_len,
                'full scan': n, 'count per index value': n,
                'update 10% commit/1000': len(self.updates)}


def chunks(items: list[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    """`items` in consecutive lists of `size`."""
    for i in range(0, len(items), size):
        yield items[i:i + size]


def version_of(dist: str) -> str:
    """The installed version of a distribution, or '?'."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return '?'


# --- the peers ---------------------------------------------------------------------

class Runner:
    """A peer's runner; by default there is nothing to settle, empty or stop.

    Each runner also has: ``create()`` (a fresh empty store with both
    indexes), the timed operations ``insert(records, chunk)`` (a commit per
    `chunk` records), ``get_by_key(keys)``, ``get_by_index(revs)`` (each
    returns the last record read), ``ranges(starts, length)`` (returns the
    count of records and the last), ``full_scan()`` (returns the count),
    ``group_counts()`` (returns ``[(value, count)]``) and
    ``update(updates, chunk)``, and ``get_one(key)`` for the checks.
    """

    def start(self) -> None:
        """Start what the peer needs before its first store (a server)."""

    def settle(self) -> None:
        """Untimed work after the load, before the reads."""

    def cold(self) -> None:
        """Run before each read pass: drop what the peer caches in this process."""

    def server_cpu(self) -> float:
        """CPU seconds used so far by the peer's server process (none: 0)."""
        return 0.0

    def drop(self) -> None:
        """Close and delete the store."""

    def stop(self) -> None:
        """End whatever the runner started; the store too."""
        self.drop()


class Centidb(Runner):
    """centidb on LMDB or LevelDB: one collection, two indexes."""

    def __init__(self, engine: str, path: str) -> None:
        self.engine, self.path = engine, path
        self.store: Any = None

    def context(self) -> str:
        import lmdb
        import plyvel
        return (f'centidb {centidb.__version__} (keylib.IMPL {keylib.IMPL!r}), '
                f'lmdb {lmdb.__version__} (LMDB {".".join(map(str, lmdb.version()))}), '
                f'plyvel {plyvel.__version__} (LevelDB {plyvel.__leveldb_version__})')

    def create(self) -> None:
        if self.engine == 'LmdbEngine':
            self.store = centidb.open('LmdbEngine', path=self.path, map_size=LMDB_MAP_SIZE,
                                      sync=False)
        else:
            self.store = centidb.open('PlyvelEngine', name=self.path, create_if_missing=True)
        self.coll = self.store.collection('records', encoder=encodings.make_msgpack_encoder(),
                                          key_func=operator.itemgetter('name', 'location'))
        self.by_name = self.coll.add_index('rev_name', lambda r: r['name'][::-1])
        self.by_location = self.coll.add_index('rev_location', lambda r: r['location'][::-1])

    def insert(self, records: list[Record], chunk: int) -> None:
        begin, put = self.store.begin, self.coll.put
        for part in chunks(records, chunk):
            with begin(write=True) as txn:
                for rec in part:
                    put(rec, txn=txn)

    def settle(self) -> None:
        if self.engine == 'PlyvelEngine':
            self.store.engine.compact()

    def get_by_key(self, keys: list[tuple[str, str]]) -> Record:
        get, value = self.coll.get, cast(Any, None)
        with self.store.begin() as txn:
            for key in keys:
                value = get(key, txn=txn)
        return dict(value)

    def get_by_index(self, revs: list[str]) -> Record:
        get, value = self.by_name.get, cast(Any, None)
        with self.store.begin() as txn:
            for rev in revs:
                value = get(rev, txn=txn)
        return dict(value)

    def ranges(self, starts: list[str], length: int) -> tuple[int, Record]:
        values, n = self.by_location.values, 0
        with self.store.begin() as txn:
            for start in starts:
                for value in values(start, max=length, txn=txn):
                    n += 1
        return n, value

    def full_scan(self) -> int:
        n = 0
        with self.store.begin() as txn:
            for _ in self.coll.values(txn=txn):
                n += 1
        return n

    def group_counts(self) -> list[tuple[str, int]]:
        with self.store.begin() as txn:
            return [(group[0], n) for group, n in self.by_location.group_counts(txn=txn)]

    def update(self, updates: list[tuple[tuple[str, str], str]], chunk: int) -> None:
        begin, get, put = self.store.begin, self.coll.get, self.coll.put
        for part in chunks(updates, chunk):
            with begin(write=True) as txn:
                for key, location in part:
                    rec = get(key, txn=txn)
                    rec['location'] = location
                    put(rec, key, txn=txn)

    def get_one(self, key: tuple[str, str]) -> Record:
        return self.coll.get(key)       # type: ignore[no-any-return]

    def drop(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
        shutil.rmtree(self.path, ignore_errors=True)


class Zodb(Runner):
    """ZODB with BTrees, as a ZODB user would write it by hand.

    A FileStorage; records are plain dicts in an ``OOBTree`` keyed by the
    key tuple; each index is an ``OOTreeSet`` of ``(index value, key)``
    tuples, kept in step with the records by this code.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.db: Any = None

    def context(self) -> str:
        return (f'ZODB {version_of("ZODB")}, BTrees {version_of("BTrees")}, '
                f'persistent {version_of("persistent")}, FileStorage, cache_size {ZODB_CACHE} '
                'objects (minimized before each read pass)')

    def create(self) -> None:
        import transaction
        import ZODB
        import ZODB.FileStorage
        from BTrees.OOBTree import OOBTree, OOTreeSet
        os.makedirs(self.path, exist_ok=True)
        storage = ZODB.FileStorage.FileStorage(os.path.join(self.path, 'data.fs'))
        self.db = ZODB.DB(storage, cache_size=ZODB_CACHE)
        self.tm = transaction.TransactionManager()
        self.conn = self.db.open(transaction_manager=self.tm)
        root = self.conn.root()
        root['recs'], root['by_name'], root['by_location'] = OOBTree(), OOTreeSet(), OOTreeSet()
        self.tm.commit()
        self.recs, self.by_name, self.by_location = (
            root['recs'], root['by_name'], root['by_location'])

    def insert(self, records: list[Record], chunk: int) -> None:
        recs, by_name, by_location = self.recs, self.by_name, self.by_location
        commit = self.tm.commit
        for part in chunks(records, chunk):
            for rec in part:
                key = (rec['name'], rec['location'])
                old = recs.get(key)
                if old is not None:
                    by_name.remove((old['name'][::-1], key))
                    by_location.remove((old['location'][::-1], key))
                recs[key] = rec
                by_name.add((rec['name'][::-1], key))
                by_location.add((rec['location'][::-1], key))
            commit()

    def cold(self) -> None:
        self.tm.abort()
        self.conn.cacheMinimize()

    def get_by_key(self, keys: list[tuple[str, str]]) -> Record:
        get = self.recs.get
        for key in keys:
            value = get(key)
        return dict(value)

    def get_by_index(self, revs: list[str]) -> Record:
        entries, get = self.by_name.keys, self.recs.get
        for rev in revs:
            value: Any = None
            for found, key in entries(min=(rev,)):
                if found == rev:
                    value = get(key)
                break
        return dict(value)

    def ranges(self, starts: list[str], length: int) -> tuple[int, Record]:
        entries, get, n = self.by_location.keys, self.recs.get, 0
        for start in starts:
            for _, key in itertools.islice(entries(min=(start,)), length):
                value = get(key)
                n += 1
        return n, dict(value)

    def full_scan(self) -> int:
        n = 0
        for _ in self.recs.values():
            n += 1
        return n

    def group_counts(self) -> list[tuple[str, int]]:
        first = operator.itemgetter(0)
        return [(value, sum(1 for _ in entries))
                for value, entries in itertools.groupby(self.by_location.keys(), first)]

    def update(self, updates: list[tuple[tuple[str, str], str]], chunk: int) -> None:
        recs, by_location, commit = self.recs, self.by_location, self.tm.commit
        for part in chunks(updates, chunk):
            for key, location in part:
                rec = dict(recs[key])   # a stored dict is not persistent: copy, then store
                by_location.remove((rec['location'][::-1], key))
                rec['location'] = location
                recs[key] = rec
                by_location.add((location[::-1], key))
            commit()

    def get_one(self, key: tuple[str, str]) -> Record:
        return dict(self.recs[key])

    def drop(self) -> None:
        if self.db is not None:
            self.tm.abort()
            self.conn.close()
            self.db.close()
            self.db = None
        shutil.rmtree(self.path, ignore_errors=True)


class Sqlite(Runner):
    """sqlite3: key columns, the fields as columns, two indexed columns."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn: Any = None

    def context(self) -> str:
        return (f'sqlite3 library {sqlite3.sqlite_version}, ' + ', '.join(
            p.replace('PRAGMA ', '') for p in SQLITE_PRAGMAS))

    def create(self) -> None:
        os.makedirs(self.path, exist_ok=True)
        conn = self.conn = sqlite3.connect(os.path.join(self.path, 'peers.sqlite'),
                                           isolation_level=None)
        for pragma in SQLITE_PRAGMAS:
            conn.execute(pragma)
        conn.execute('CREATE TABLE recs (kname TEXT, klocation TEXT, name TEXT, location TEXT, '
                     'stub TEXT, rev_name TEXT, rev_location TEXT, '
                     'PRIMARY KEY (kname, klocation)) WITHOUT ROWID')
        conn.execute('CREATE INDEX recs_rev_name ON recs (rev_name)')
        conn.execute('CREATE INDEX recs_rev_location ON recs (rev_location)')

    def insert(self, records: list[Record], chunk: int) -> None:
        execute, executemany = self.conn.execute, self.conn.executemany
        for part in chunks(records, chunk):
            execute('BEGIN')
            executemany('INSERT INTO recs VALUES (?, ?, ?, ?, ?, ?, ?)',
                        [(r['name'], r['location'], r['name'], r['location'], r['stub'],
                          r['name'][::-1], r['location'][::-1]) for r in part])
            execute('COMMIT')

    def _gets(self, sql: str, params: list[Any]) -> Record:
        execute = self.conn.execute
        execute('BEGIN')
        for param in params:
            name, location, stub = execute(sql, param).fetchone()
            value = {'stub': stub, 'name': name, 'location': location}
        execute('COMMIT')
        return value

    def get_by_key(self, keys: list[tuple[str, str]]) -> Record:
        return self._gets('SELECT name, location, stub FROM recs '
                          'WHERE kname = ? AND klocation = ?', keys)

    def get_by_index(self, revs: list[str]) -> Record:
        return self._gets('SELECT name, location, stub FROM recs WHERE rev_name = ? LIMIT 1',
                          [(rev,) for rev in revs])

    def ranges(self, starts: list[str], length: int) -> tuple[int, Record]:
        execute, n = self.conn.execute, 0
        sql = ('SELECT name, location, stub FROM recs WHERE rev_location >= ? '
               'ORDER BY rev_location LIMIT ?')
        execute('BEGIN')
        for start in starts:
            for name, location, stub in execute(sql, (start, length)):
                value = {'stub': stub, 'name': name, 'location': location}
                n += 1
        execute('COMMIT')
        return n, value

    def full_scan(self) -> int:
        n = 0
        for name, location, stub in self.conn.execute('SELECT name, location, stub FROM recs'):
            value = {'stub': stub, 'name': name, 'location': location}  # noqa: F841
            n += 1
        return n

    def group_counts(self) -> list[tuple[str, int]]:
        groups: list[tuple[str, int]] = self.conn.execute(
            'SELECT rev_location, count(*) FROM recs GROUP BY rev_location '
            'ORDER BY rev_location').fetchall()
        return groups

    def update(self, updates: list[tuple[tuple[str, str], str]], chunk: int) -> None:
        execute, executemany = self.conn.execute, self.conn.executemany
        for part in chunks(updates, chunk):
            execute('BEGIN')
            executemany('UPDATE recs SET location = ?, rev_location = ? '
                        'WHERE kname = ? AND klocation = ?',
                        [(loc, loc[::-1], name, old) for (name, old), loc in part])
            execute('COMMIT')

    def get_one(self, key: tuple[str, str]) -> Record:
        name, location, stub = self.conn.execute(
            'SELECT name, location, stub FROM recs WHERE kname = ? AND klocation = ?',
            key).fetchone()
        return {'stub': stub, 'name': name, 'location': location}

    def drop(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        shutil.rmtree(self.path, ignore_errors=True)


def pg_binary(name: str) -> str | None:
    """Where PostgreSQL's server program `name` is: PATH, else Debian's place."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f'/usr/lib/postgresql/*/bin/{name}'),
                      key=lambda p: int(p.split('/')[4]) if p.split('/')[4].isdigit() else 0)
    return versions[-1] if versions else None


class Postgres(Runner):
    """PostgreSQL on a private temporary server: a JSONB column, expression indexes.

    start() runs initdb in a temporary directory and starts the server on a
    unix socket there, with no TCP; stop() stops it and removes the
    directory. As root, the server runs as the ``postgres`` user (else
    ``nobody``): PostgreSQL refuses to run as root.
    """

    def __init__(self, path: str) -> None:
        self.base = path    # an empty directory of its own, removed by stop()
        self.data = os.path.join(path, 'data')
        self.conn: Any = None
        self.started = False
        self.user: tuple[int, int] | None = None
        if os.geteuid() == 0:
            for name in ('postgres', 'nobody'):
                try:
                    entry = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.user = entry.pw_uid, entry.pw_gid
                break

    def _run(self, *command: str) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, Any] = {}
        if self.user:
            kwargs = {'user': self.user[0], 'group': self.user[1], 'extra_groups': []}
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.base,
                                timeout=120, **kwargs)
        if result.returncode:
            hint = (f' (it runs as uid {self.user[0]}, which must be able to reach '
                    f'{self.base}: see --dir)') if self.user else ''
            raise RuntimeError(f'{os.path.basename(command[0])} failed '
                               f'(exit {result.returncode}){hint}: {result.stderr.strip()}')
        return result

    def start(self) -> None:
        import psycopg
        initdb, pg_ctl = pg_binary('initdb'), pg_binary('pg_ctl')
        assert initdb and pg_ctl
        if self.user:
            os.chown(self.base, *self.user)
        self._run(initdb, '-D', self.data, '-U', 'bench', '--auth=trust', '--no-locale',
                  '-E', 'UTF8', '--no-sync')
        settings = dict(PG_SETTINGS, listen_addresses="''",
                        unix_socket_directories=f"'{self.base}'")
        with open(os.path.join(self.data, 'postgresql.conf'), 'a') as conf:
            conf.write('\n# benchmarks/peers.py\n' + ''.join(
                f'{name} = {value}\n' for name, value in settings.items()))
        self.pg_ctl = pg_ctl
        self.started = True     # from here on, stop() tries to stop it
        self._run(pg_ctl, '-D', self.data, '-l', os.path.join(self.base, 'server.log'),
                  '-w', '-t', '60', 'start')
        self.conn = psycopg.connect(host=self.base, dbname='postgres', user='bench')

    def context(self) -> str:
        import psycopg
        info = self.conn.info
        with self.conn.cursor() as cur:     # what one query costs the client, at least
            start = time.perf_counter()
            for _ in range(1000):
                cur.execute('SELECT 1')
            trip = (time.perf_counter() - start) * 1000
        self.conn.commit()
        return (f'PostgreSQL server {info.server_version // 10000}.{info.server_version % 10000}'
                f', psycopg {psycopg.__version__} (libpq {psycopg.pq.version()}, '
                f'{psycopg.pq.__impl__}), unix socket ("SELECT 1" round trip {trip:.0f} us), '
                + ', '.join(f'{k}={v}' for k, v in PG_SETTINGS.items()) + ', locale C')

    def create(self) -> None:
        conn = self.conn
        conn.execute('DROP TABLE IF EXISTS recs')
        conn.execute('CREATE TABLE recs (name text, location text, doc jsonb NOT NULL, '
                     'PRIMARY KEY (name, location))')
        conn.execute("CREATE INDEX recs_rev_name ON recs ((reverse(doc->>'name')))")
        conn.execute("CREATE INDEX recs_rev_location ON recs ((reverse(doc->>'location')))")
        conn.commit()

    def insert(self, records: list[Record], chunk: int) -> None:
        from psycopg.types.json import Jsonb
        conn = self.conn
        with conn.cursor() as cur:
            for part in chunks(records, chunk):
                cur.executemany('INSERT INTO recs (name, location, doc) VALUES (%s, %s, %s)',
                                [(r['name'], r['location'], Jsonb(r)) for r in part])
                conn.commit()

    def settle(self) -> None:
        self.conn.autocommit = True
        try:
            self.conn.execute('VACUUM ANALYZE recs')
        finally:
            self.conn.autocommit = False

    def server_cpu(self) -> float:
        """CPU seconds the server process serving our connection has used."""
        with open(f'/proc/{self.conn.info.backend_pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')

    def _gets(self, sql: str, params: list[Any]) -> Record:
        with self.conn.cursor() as cur:
            execute, fetchone = cur.execute, cur.fetchone
            for param in params:
                execute(sql, param)
                value, = fetchone()
        self.conn.commit()
        return value        # type: ignore[no-any-return]

    def get_by_key(self, keys: list[tuple[str, str]]) -> Record:
        return self._gets('SELECT doc FROM recs WHERE name = %s AND location = %s', keys)

    def get_by_index(self, revs: list[str]) -> Record:
        return self._gets("SELECT doc FROM recs WHERE reverse(doc->>'name') = %s LIMIT 1",
                          [(rev,) for rev in revs])

    def ranges(self, starts: list[str], length: int) -> tuple[int, Record]:
        n = 0
        with self.conn.cursor() as cur:
            for start in starts:
                cur.execute("SELECT doc FROM recs WHERE reverse(doc->>'location') >= %s "
                            "ORDER BY reverse(doc->>'location') LIMIT %s", (start, length))
                for value, in cur:
                    n += 1
        self.conn.commit()
        return n, value

    def full_scan(self) -> int:
        n = 0
        with self.conn.cursor() as cur:
            cur.execute('SELECT doc FROM recs')
            for _ in cur:
                n += 1
        self.conn.commit()
        return n

    def group_counts(self) -> list[tuple[str, int]]:
        with self.conn.cursor() as cur:
            cur.execute("SELECT reverse(doc->>'location') AS r, count(*) FROM recs "
                        "GROUP BY r ORDER BY r")
            groups: list[tuple[str, int]] = cur.fetchall()
        self.conn.commit()
        return groups

    def update(self, updates: list[tuple[tuple[str, str], str]], chunk: int) -> None:
        conn = self.conn
        with conn.cursor() as cur:
            for part in chunks(updates, chunk):
                cur.executemany("UPDATE recs SET doc = jsonb_set(doc, '{location}', to_jsonb("
                                "%s::text)) WHERE name = %s AND location = %s",
                                [(loc, name, old) for (name, old), loc in part])
                conn.commit()

    def get_one(self, key: tuple[str, str]) -> Record:
        value, = self.conn.execute('SELECT doc FROM recs WHERE name = %s AND location = %s',
                                   key).fetchone()
        self.conn.commit()
        return value        # type: ignore[no-any-return]

    def drop(self) -> None:
        if self.conn is not None:
            self.conn.rollback()
            self.conn.execute('DROP TABLE IF EXISTS recs')
            self.conn.commit()

    def stop(self) -> None:
        """Close the connection, stop the server, remove its directory."""
        try:
            if self.conn is not None:
                self.conn.close()
                self.conn = None
            if self.started:
                self.started = False
                try:
                    self._run(self.pg_ctl, '-D', self.data, '-m', 'fast', '-w', 'stop')
                except RuntimeError as exc:     # e.g. already stopped by the same Ctrl-C
                    print(f'PostgreSQL: {exc}', file=sys.stderr)
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


def missing(peer: str) -> str | None:
    """Why `peer` cannot run here, or None if it can."""
    if peer == 'zodb':
        try:
            import BTrees  # noqa: F401
            import ZODB  # noqa: F401
        except ImportError:
            return 'not installed: pip install ZODB BTrees'
    elif peer == 'postgresql':
        try:
            import psycopg  # noqa: F401
        except ImportError:
            return "not installed: pip install 'psycopg[binary]'"
        if not (pg_binary('initdb') and pg_binary('pg_ctl')):
            return 'not installed: apt-get install postgresql (no initdb or pg_ctl found)'
    elif peer == 'mongodb':
        mongod = shutil.which('mongod')
        if mongod:
            return f'not measured: mongod is at {mongod}, but this script has no MongoDB runner'
        return ('not installed: the MongoDB server is in neither Debian nor PyPI, '
                'the only package sources here; this script has no MongoDB runner')
    return None


def make_runner(peer: str, workdir: str) -> Any:
    """The runner of `peer`, keeping its files under `workdir`."""
    path = os.path.join(workdir, peer)
    if peer == 'centidb-lmdb':
        return Centidb('LmdbEngine', path)
    if peer == 'centidb-plyvel':
        return Centidb('PlyvelEngine', path)
    if peer == 'zodb':
        return Zodb(path)
    if peer == 'postgresql':
        # Beside `workdir`, not in it: the server's user must reach it.
        return Postgres(tempfile.mkdtemp(prefix='centidb-peers-pg-',
                                         dir=os.path.dirname(workdir)))
    return Sqlite(path)


# --- running ---------------------------------------------------------------------

def timed(runner: Any, func: Callable[..., Any], *args: Any) -> tuple[float, float, Any]:
    """(wall-clock seconds, CPU seconds, result) of one call, after a garbage collection.

    CPU seconds: this process's (all its threads) plus the runner's server's.
    """
    gc.collect()
    cpu, server, start = time.process_time(), runner.server_cpu(), time.perf_counter()
    result = func(*args)
    wall = time.perf_counter() - start
    return wall, time.process_time() - cpu + runner.server_cpu() - server, result


def check(peer: str, op: str, got: Any, expected: Any) -> None:
    """Stop the run if a peer returned the wrong answer."""
    if got != expected:
        raise AssertionError(f'{peer} {op}: got {str(got)[:200]}, expected {str(expected)[:200]}')


def run_once(peer: str, runner: Any, data: Data, passes: int, times: Times,
             skip: set[str]) -> None:
    """One run of every operation but those in `skip`; append the seconds to `times`.

    The one-transaction load always runs (the reads need it), untimed if skipped.
    """
    def record(op: str, wall: float, cpu: float) -> None:
        if op not in skip:
            times.setdefault((peer, op), []).append((wall, cpu))

    n = len(data.records)
    if 'insert commit/1000' not in skip:
        runner.create()
        try:
            wall, cpu, _ = timed(runner, runner.insert, data.records, CHUNK)
            check(peer, 'insert commit/1000', len(runner.group_counts()), n)
            record('insert commit/1000', wall, cpu)
        finally:
            runner.drop()
    runner.create()
    try:
        wall, cpu, _ = timed(runner, runner.insert, data.records, n)
        record('insert one txn', wall, cpu)
        runner.settle()
        reads = [('get by key', runner.get_by_key, (data.keys,), data.last_sampled),
                 ('get by index', runner.get_by_index, (data.revs,), data.last_sampled),
                 ('index range 1000', runner.ranges, (data.range_starts, data.range_len),
                  (len(data.range_starts) * data.range_len, data.last_in_range)),
                 ('full scan', runner.full_scan, (), n),
                 ('count per index value', runner.group_counts, (), data.groups_before)]
        for op, func, args, expected in reads:
            if op in skip:
                continue
            best = best_cpu = float('inf')
            for _ in range(passes):
                runner.cold()
                wall, cpu, got = timed(runner, func, *args)
                if op == 'count per index value':
                    got = sorted(tuple(group) for group in got)
                check(peer, op, got, expected)
                best, best_cpu = min(best, wall), min(best_cpu, cpu)
            record(op, best, best_cpu)
        if 'update 10% commit/1000' not in skip:
            runner.cold()
            wall, cpu, _ = timed(runner, runner.update, data.updates, CHUNK)
            check(peer, 'update', sorted(tuple(g) for g in runner.group_counts()),
                  data.groups_after)
            if data.updates:
                check(peer, 'update', runner.get_one(data.updates[-1][0]), data.last_updated)
            record('update 10% commit/1000', wall, cpu)
    finally:
        runner.drop()


def rows(times: Times, peers: list[str], notes: dict[str, str], data: Data, runs: int,
         budget: float) -> Iterator[list[str]]:
    """The CSV rows: one per measured (peer, operation), one per peer with a note."""
    counts = data.counts()
    wall = {key: statistics.median(w for w, _ in got) for key, got in times.items()}
    rate = {key: counts[key[1]] / seconds for key, seconds in wall.items()}

    def ratio(peer: str, op: str, baseline: str) -> str:
        if (baseline, op) not in rate or (peer, op) not in rate:
            return ''
        return f'{rate[peer, op] / rate[baseline, op]:.2f}'

    for peer in peers:
        name = PEERS[peer]
        if peer in notes:
            yield [name, 'all', '', '', '', '', '', '', notes[peer]]
            continue
        for op in OPS:
            cpu = statistics.median(c for _, c in times[name, op])
            done = len(times[name, op])
            note = '' if done == runs else f'{done} of {runs} runs: the first took over {budget:g} s'
            yield [name, op, str(counts[op]), f'{wall[name, op]:.4f}', f'{cpu:.4f}',
                   f'{rate[name, op]:.0f}',
                   ratio(name, op, CENTIDB_BASELINE), ratio(name, op, SQLITE_BASELINE), note]


def default_dir() -> str:
    """tmpfs when the machine has one we may write, else the temporary directory."""
    if os.path.isdir('/dev/shm') and os.access('/dev/shm', os.W_OK):
        return '/dev/shm'
    return tempfile.gettempdir()


def peer_list(text: str) -> list[str]:
    """Parse --peers: a comma list of names from PEERS."""
    items = [item.strip() for item in text.split(',') if item.strip()]
    unknown = [item for item in items if item not in PEERS]
    if unknown or not items:
        raise argparse.ArgumentTypeError(
            f'unknown peer {", ".join(map(repr, unknown)) or "(none given)"}; '
            f'choose from: {", ".join(PEERS)}')
    return items


def measure(args: argparse.Namespace) -> int:
    """Run the benchmark, print the CSV; return the exit status."""
    err = sys.stderr
    n = args.records if args.records is not None else (QUICK_RECORDS if args.quick else RECORDS)
    runs = args.runs if args.runs is not None else (1 if args.quick else RUNS)
    passes = args.passes if args.passes is not None else (1 if args.quick else PASSES)
    if n < 10 or runs < 1 or passes < 1:
        sys.exit('peers.py: --records must be at least 10, --runs and --passes at least 1')
    peers = [peer for peer in PEERS if peer in args.peers]
    data = Data(n, QUICK_RANGES if args.quick else RANGES)
    print(f'python {platform.python_version()}, {platform.platform()}, '
          f'{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}', file=err)
    if keylib.IMPL != 'speedups':
        print(f'WARNING: centidb runs on the pure-Python key codec (keylib.IMPL = '
              f'{keylib.IMPL!r}); build it with: python setup.py build_ext --inplace', file=err)
    print(f'{n} records, {len(data.keys)} gets per read, {len(data.range_starts)} ranges of '
          f'{data.range_len}, {len(data.updates)} updates; median of {runs} runs, reads best of '
          f'{passes} passes; data under {args.dir}', file=err)
    notes = {peer: why for peer in peers if (why := missing(peer))}
    for peer, why in notes.items():
        print(f'{PEERS[peer]}: {why}', file=err)
    times: Times = {}
    status = 0
    runners: dict[str, Any] = {}
    skip: dict[str, set[str]] = {}

    def failed(peer: str, exc: Exception) -> None:
        nonlocal status
        traceback.print_exc(file=err)
        notes[peer] = f'failed: {type(exc).__name__}: {exc}'.replace('\n', ' ')[:300]
        status = 1
        for op in OPS:
            times.pop((PEERS[peer], op), None)
        runner = runners.pop(peer, None)
        if runner is not None:
            runner.stop()

    workdir = tempfile.mkdtemp(prefix='centidb-peers-', dir=args.dir)
    try:
        for peer in peers:
            if peer not in notes:
                try:
                    runners[peer] = make_runner(peer, workdir)
                    runners[peer].start()   # stopped at the end even if this fails
                    print(f'{PEERS[peer]}: {runners[peer].context()}', file=err)
                except Exception as exc:    # a broken peer: a note row, the others go on
                    failed(peer, exc)
        # Runs outside, peers inside: a change in the machine's load during
        # the benchmark falls on every peer alike.
        for run in range(runs):
            for peer in list(runners):
                started = time.perf_counter()
                try:
                    run_once(PEERS[peer], runners[peer], data, passes, times,
                             skip.setdefault(peer, set()))
                except Exception as exc:
                    failed(peer, exc)
                    continue
                print(f'run {run + 1}/{runs} {PEERS[peer]}: '
                      f'{time.perf_counter() - started:.1f} s, load average '
                      f'{os.getloadavg()[0]:.2f}', file=err)
                if run == 0:    # too slow to repeat: measured once
                    skip[peer] = {op for op in OPS if times[PEERS[peer], op][0][0] > args.budget}
                    if skip[peer]:
                        print(f'  measured once (over {args.budget:g} s): '
                              f'{", ".join(sorted(skip[peer]))}', file=err)
    finally:
        try:
            for runner in runners.values():
                runner.stop()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    writer = csv.writer(sys.stdout, lineterminator='\n')
    writer.writerow(COLUMNS)
    writer.writerows(rows(times, peers, notes, data, runs, args.budget))
    return status


# --- the chart ---------------------------------------------------------------------

COLOURS = {'centidb LmdbEngine': '#1f77b4', 'centidb PlyvelEngine': '#2ca02c',
           'sqlite3': '#9e9e9e', 'PostgreSQL': '#8c6d31', 'ZODB': '#bd9e39'}


def chart(csv_path: str, png_path: str) -> None:
    """Draw the table at `csv_path` as one bar panel per operation, to `png_path`."""
    import math

    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    with open(csv_path, newline='') as f:
        table = [row for row in csv.DictReader(f)]
    if not table or set(COLUMNS) - set(table[0]):
        raise SystemExit(f'{csv_path}: not a peers.csv table (columns {COLUMNS})')
    measured = [row for row in table if row['operation'] in OPS]
    peers = list(dict.fromkeys(row['peer'] for row in measured))
    ops = [op for op in OPS if any(row['operation'] == op for row in measured)]
    columns = 4
    lines = math.ceil(len(ops) / columns)
    fig, axes = plt.subplots(lines, columns, squeeze=False,
                             figsize=(3.6 * columns, 0.45 * len(peers) * lines + 1.8))
    for ax in axes.flat[len(ops):]:
        ax.axis('off')
    for ax, op in zip(axes.flat, ops):
        found = {row['peer']: row for row in measured if row['operation'] == op}
        names = [p for p in peers if p in found][::-1]
        rates = [float(found[p]['records_per_s']) / 1000 for p in names]
        bars = ax.barh(names, rates, color=[COLOURS.get(p, '#7f7f7f') for p in names])
        ax.set_title(op, fontsize=10)
        ax.tick_params(labelsize=8)
        ax.set_xlim(0, max(rates) * 1.7)
        for bar, name, rate in zip(bars, names, rates):
            ratio = found[name]['ratio_vs_centidb']
            label = f'{rate:,.0f}k' if rate >= 10 else f'{rate:.1f}k'
            if ratio and name != CENTIDB_BASELINE:
                label += f' ({ratio}x)'
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, ' ' + label,
                    va='center', fontsize=7)
    for ax in axes[-1]:
        if ax.has_data():
            ax.set_xlabel('thousand records/s', fontsize=8)
    left_out = [f"{row['peer']} ({row['note'].split(':')[0]})"
                for row in table if row['operation'] not in OPS]
    title = ('centidb and its peers (benchmarks/peers.py): records per second, higher is '
             'better; (Nx) = rate / centidb LmdbEngine')
    if left_out:
        title += '\nnot in the chart: ' + ', '.join(left_out)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)


def main() -> int:
    """Parse the command line; measure, or draw the chart."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, help=f'records (default {RECORDS:,}, '
                        f'{QUICK_RECORDS:,} with --quick)')
    parser.add_argument('--runs', type=int, help=f'runs, median reported (default {RUNS})')
    parser.add_argument('--passes', type=int,
                        help=f'passes per read in a run, best kept (default {PASSES})')
    parser.add_argument('--peers', type=peer_list, default=list(PEERS),
                        help='comma list of: ' + ', '.join(PEERS))
    parser.add_argument('--budget', type=float, default=BUDGET,
                        help='an operation whose first run takes longer (seconds) is not '
                             f'repeated (default {BUDGET:g})')
    parser.add_argument('--dir', default=default_dir(),
                        help='where the stores live (default: /dev/shm if writable)')
    parser.add_argument('--quick', action='store_true',
                        help=f'smoke test: {QUICK_RECORDS} records, {QUICK_RANGES} ranges, '
                             '1 run, 1 pass')
    parser.add_argument('--chart', nargs=2, metavar=('CSV', 'PNG'),
                        help='draw the chart of a peers.csv table instead of measuring')
    args = parser.parse_args()
    if args.chart:
        chart(*args.chart)
        return 0
    return measure(args)


def _terminate(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)     # unwinds: stores removed, server stopped


if __name__ == '__main__':
    signal.signal(signal.SIGTERM, _terminate)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit('interrupted; temporary stores removed, servers stopped')
