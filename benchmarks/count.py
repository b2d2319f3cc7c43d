"""Counting a whole collection: ``len(coll)`` against sqlite3's ``count(*)``.

Usage: python benchmarks/count.py [--records 200000] [--runs 5]
       [--engines lmdb,leveldb,memory] [--dir /dev/shm]

Loads ``--records`` records ``{'id': n, 'name': 'user<n>', 'tag': n % 50}``
keyed by ``id``, with an index on ``tag``, into a fresh store per engine
(one transaction), and the same rows into a sqlite3 table with an index on
``tag``. Then times, each the median of ``--runs`` runs, in one process:

* ``len(coll)`` (the same as ``coll.count()``);
* ``index.count()``: the entries of the ``tag`` index (one per record);
* ``count(*)`` of the sqlite3 table.

Prints one line per measurement (seconds) and the ratio to sqlite3 (above
1: slower than sqlite3). Which implementation runs (compiled or pure) is
printed first: set ``CENTIDB_NO_SPEEDUPS=1`` for the pure one.
"""

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

import centidb
from centidb import keylib


def median_time(func, runs):
    """The median wall-clock seconds of `runs` calls of `func`; its last result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def load_centidb(engine, directory, records):
    options = {} if engine == 'memory' else {'path': os.path.join(directory, engine)}
    if engine == 'leveldb':
        options['create_if_missing'] = True
    store = centidb.open(engine, **options)
    coll = store.collection('people', key_func=lambda r: r['id'])
    index = coll.add_index('tag', lambda r: r['tag'])
    with store.begin(write=True):
        coll.put_many({'id': n, 'name': f'user{n}', 'tag': n % 50} for n in range(records))
    return store, coll, index


def load_sqlite(directory, records):
    db = sqlite3.connect(os.path.join(directory, 'people.sqlite3'))
    db.execute('create table people (id integer primary key, name text, tag integer)')
    db.execute('create index people_tag on people (tag)')
    with db:
        db.executemany('insert into people values (?, ?, ?)',
                       ((n, f'user{n}', n % 50) for n in range(records)))
    return db


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--records', type=int, default=200_000)
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--engines', default='lmdb,leveldb,memory')
    parser.add_argument('--dir', default='/dev/shm' if os.path.isdir('/dev/shm') else None)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix='centidb-count-', dir=args.dir)
    try:
        print(f'{args.records} records, median of {args.runs} runs, '
              f'centidb key codec: {keylib.IMPL}')
        db = load_sqlite(directory, args.records)
        base, n = median_time(
            lambda: db.execute('select count(*) from people').fetchone()[0], args.runs)
        assert n == args.records
        print(f'{"sqlite3 count(*)":<28} {base:9.4f} s')
        for engine in args.engines.split(','):
            store, coll, index = load_centidb(engine, directory, args.records)
            with store:
                for label, func in ((f'{engine} len(coll)', lambda: len(coll)),
                                    (f'{engine} index.count()', index.count)):
                    seconds, n = median_time(func, args.runs)
                    assert n == args.records, (label, n)
                    print(f'{label:<28} {seconds:9.4f} s  {seconds / base:6.1f}x sqlite3')
        db.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
