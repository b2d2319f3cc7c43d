"""Queries by field: ``coll.where(...)`` against a hand-written index loop and sqlite3.

Usage: python benchmarks/query.py [--records 200000] [--runs 5] [--engine lmdb]
       [--dir /dev/shm]

Loads benchy's records (``examples/benchy.py``: ``stub``, ``name``,
``location``), each given four more fields by its position ``i``:
``grp`` (``i % 2000``), ``city`` (``'c' + str(i % 50)``), ``tag``
(``i % 20``) and ``score`` (a seeded random int below 10,000), into a
centidb collection with field indexes on ``grp``, ``tag``, ``city``,
``score`` and ``(city, score)``, and into a sqlite3 table of JSON documents with
expression indexes on the same fields (``json_extract``). Then times five
query shapes, each the median of ``--runs`` runs in one process:

========  =====================================================
shape     query
========  =====================================================
eq        ``grp == 7``
eq+range  ``city == 'c3' and 1000 <= score <= 1199``
and       ``tag == 3 and city == 'c13'`` (an intersection)
or        ``grp == 7 or grp == 1500`` (a union)
filter    ``5000 <= score <= 5099 and name starts with 'b'``
========  =====================================================

Each shape runs three ways, each returning the matching records as dicts in
record key order: ``where()``; a loop over the index API written by hand
for that shape; sqlite3 (``json.loads`` of each row). It prints a CSV
table: the seconds of each, ``where()``'s speed as a ratio of each (above
1: ``where()`` is faster), and the planner's own cost per query in
microseconds (making the query and its plan: ``coll.where(...).plan()``). Which implementation runs (compiled
or pure) is printed first: set ``CENTIDB_NO_SPEEDUPS=1`` for the pure one.
"""

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'examples'))

import centidb  # noqa: E402
from centidb import F, keylib  # noqa: E402
from benchy import make_records  # noqa: E402


def median_time(func, runs):
    """The median wall-clock seconds of `runs` calls of `func`; its last result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def documents(n):
    """benchy's `n` records with the query fields added, keyed by position."""
    rng = random.Random(7)
    docs = make_records(n)
    for i, doc in enumerate(docs):
        doc.update(id=i, grp=i % 2000, city=f'c{i % 50}', tag=i % 20,
                   score=rng.randrange(10_000))
    return docs


def load_centidb(engine, directory, docs):
    options = {} if engine == 'memory' else {'path': os.path.join(directory, engine)}
    if engine == 'leveldb':
        options['create_if_missing'] = True
    store = centidb.open(engine, **options)
    coll = store.collection('docs', key_func=lambda r: r['id'])
    for name, fields in (('grp', 'grp'), ('tag', 'tag'), ('city', 'city'), ('score', 'score'),
                         ('city_score', ('city', 'score'))):
        coll.add_index(name, fields=fields)
    with store.begin(write=True) as txn:
        coll.put_many(docs, txn=txn)
    return store, coll


def load_sqlite(directory, docs):
    db = sqlite3.connect(os.path.join(directory, 'docs.sqlite3'))
    db.execute('create table docs (id integer primary key, body text)')
    for name, expr in (('grp', "json_extract(body, '$.grp')"),
                       ('tag', "json_extract(body, '$.tag')"),
                       ('city', "json_extract(body, '$.city')"),
                       ('score', "json_extract(body, '$.score')"),
                       ('city_score', "json_extract(body, '$.city'), "
                                      "json_extract(body, '$.score')")):
        db.execute(f'create index docs_{name} on docs ({expr})')
    with db:
        db.executemany('insert into docs values (?, ?)',
                       ((doc['id'], json.dumps(doc)) for doc in docs))
    return db


def shapes(coll):
    """``{shape: (make the where() query, hand-written loop, sqlite3 where clause and args)}``."""
    grp, tag, city, score, city_score = (coll.indices[name] for name in
                                         ('grp', 'tag', 'city', 'score', 'city_score'))

    def records(keys):
        return coll.get_many(sorted(keys, key=keylib.packs))

    def hand_eq():
        return records(grp.keys(prefix=(7,)))

    def hand_range():
        return records(city_score.keys(('c3', 1000), ('c3', 1199), include=True))

    def hand_and():
        return records(set(tag.keys(prefix=(3,))) & set(city.keys(prefix=('c13',))))

    def hand_or():
        return records(set(grp.keys(prefix=(7,))) | set(grp.keys(prefix=(1500,))))

    def hand_filter():
        found = records(score.keys(5000, 5099, include=True))
        return [doc for doc in found if doc['name'].startswith('b')]

    j = "json_extract(body, '$.{}')".format
    return {
        'eq': (lambda: coll.where(grp=7), hand_eq, (f'{j("grp")} = ?', (7,))),
        'eq+range': (lambda: coll.where(F('city') == 'c3', F('score').between(1000, 1199)),
                     hand_range,
                     (f'{j("city")} = ? and {j("score")} between ? and ?', ('c3', 1000, 1199))),
        'and': (lambda: coll.where(tag=3, city='c13'), hand_and,
                (f'{j("tag")} = ? and {j("city")} = ?', (3, 'c13'))),
        'or': (lambda: coll.where((F('grp') == 7) | (F('grp') == 1500)), hand_or,
               (f'{j("grp")} = ? or {j("grp")} = ?', (7, 1500))),
        'filter': (lambda: coll.where(F('score').between(5000, 5099), F('name').startswith('b')),
                   hand_filter, (f'{j("score")} between ? and ? and {j("name")} like ?',
                                 (5000, 5099, 'b%'))),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--records', type=int, default=200_000)
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--engine', default='lmdb', choices=['lmdb', 'leveldb', 'memory'])
    parser.add_argument('--dir', default=None, help='where the stores are made')
    args = parser.parse_args()
    print(f'# centidb {centidb.__version__}, key codec {keylib.IMPL}, sqlite3 '
          f'{sqlite3.sqlite_version}, {args.records} records, engine {args.engine}, '
          f'median of {args.runs} runs', file=sys.stderr)
    if keylib.IMPL != 'speedups':
        print('# warning: the compiled speedups are not active', file=sys.stderr)
    directory = tempfile.mkdtemp(dir=args.dir)
    try:
        docs = documents(args.records)
        store, coll = load_centidb(args.engine, directory, docs)
        db = load_sqlite(directory, docs)
        print('shape,matches,where_s,hand_s,sqlite_s,vs_hand,vs_sqlite,plan_us')
        for name, (make, hand, (clause, params)) in shapes(coll).items():
            query = make()
            def sqlite_run(clause=clause, params=params):
                rows = db.execute(f'select body from docs where {clause} order by id', params)
                return [json.loads(body) for body, in rows]
            where_s, found = median_time(query.values, args.runs)
            hand_s, by_hand = median_time(hand, args.runs)
            sqlite_s, by_sqlite = median_time(sqlite_run, args.runs)
            if not (found == by_hand == by_sqlite):
                raise SystemExit(f'{name}: where() found {len(found)} records, the loop '
                                 f'{len(by_hand)}, sqlite3 {len(by_sqlite)}')
            plans = 2000
            start = time.perf_counter()
            for _ in range(plans):
                make().plan()
            plan_us = (time.perf_counter() - start) / plans * 1e6
            print(f'{name},{len(found)},{where_s:.6f},{hand_s:.6f},{sqlite_s:.6f},'
                  f'{hand_s / where_s:.2f},{sqlite_s / where_s:.2f},{plan_us:.1f}')
        store.close()
        db.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == '__main__':
    main()
