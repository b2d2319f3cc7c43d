"""Does put_many pay? Bulk calls against loops of single calls and a raw LMDB loop.

Usage: python benchmarks/put_many.py [--records 100000] [--runs 3]
       [--engines LmdbEngine,PlyvelEngine,ListEngine]
       python benchmarks/put_many.py --ops VARIANT MODE N   (for callgrind)

benchy's records and collection (examples/benchy.py: keyed by ``(name,
location)``, msgpack, optionally two indexes), each run on fresh stores, all
N records in one write transaction. Insert variants, per engine and mode
(``blind`` or not, with or without the indexes):

* ``loop put()``: ``coll.put(rec, txn=txn)`` for each record (benchy's insert);
* ``put_many``: one ``coll.put_many(records, txn=txn)``;
* ``put_many, 1000 a call``: the same records in calls of 1000 (what the
  docstring advises for large imports: a long batch, held in memory until
  it is written, falls out of the CPU caches);
* ``raw lmdb``: benchy's hand-written LMDB loop storing the same keys.

Then, on the indexed store: ``Index.get_many`` of a sample against a loop of
``Index.get``, and ``delete_many`` of the sample against a loop of
``delete()``. Prints the context (versions, key codec) and, per row, the
median seconds and records/s of --runs runs and the ratio to the first row
of its group. Times are CPU seconds of this process (``process_time``), less
disturbed by other work on the machine than wall time. Stores live in a
temporary directory removed at the end.

``--ops VARIANT MODE N`` stores N records one way (VARIANT: ``loop``,
``put_many``, ``chunks`` (1000 a call), ``raw``; MODE: one of the insert modes) into a fresh
store of the first of --engines and exits, for instruction counts, which do not depend on the
machine's load; VARIANT ``none`` only makes the records::

    for v in none loop put_many raw; do
      valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        python benchmarks/put_many.py --ops $v 'insert +2 idx' 20000 2>&1 | grep Collected
    done

The cost of storing one record is (count of VARIANT - count of none) / 20000.
"""

import argparse
import gc
import importlib.util
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import lmdb

import centidb
from centidb import keylib

HERE = os.path.dirname(os.path.abspath(__file__))
INSERTS = {'insert blind': (True, False), 'insert': (False, False),
           'insert blind +2 idx': (True, True), 'insert +2 idx': (False, True)}


def load_benchy():
    path = os.path.join(HERE, os.pardir, 'examples', 'benchy.py')
    spec = importlib.util.spec_from_file_location('benchy', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fresh(benchy, engine, path, indexed):
    """A new store and benchy's collection."""
    benchy.wipe(path)
    store = benchy.open_store(engine, path)
    return store, benchy.open_collection(store, indexed)


def insert(benchy, engine, path, data, variant, blind, indexed):
    """Seconds to store every record, one way; the store is left open."""
    store, coll = fresh(benchy, engine, path, indexed)
    recs = data.records
    gc.collect()
    start = time.process_time()
    with store.begin(write=True) as txn:
        if variant == 'loop put()':
            put = coll.put
            for rec in recs:
                put(rec, blind=blind, txn=txn)
        elif variant == 'put_many, 1000 a call':
            for first in range(0, len(recs), 1000):
                coll.put_many(recs[first:first + 1000], blind=blind, txn=txn)
        else:
            coll.put_many(recs, blind=blind, txn=txn)
    return time.process_time() - start, store, coll


def raw_insert(benchy, path, data, blind, indexed):
    benchy.wipe(path)
    raw = benchy.RawLmdb('raw lmdb', path, data)
    raw.open(indexed)
    try:
        gc.collect()
        start = time.process_time()
        raw.insert(blind)
        return time.process_time() - start
    finally:
        raw.close()


def bulk_reads(store, coll, data):
    """Seconds of Index.get loop, Index.get_many, delete loop, delete_many."""
    index, revs, keys = coll.indices['rev_name'], data.sample_revs, data.sample_keys
    out = {}
    gc.collect()
    start = time.process_time()
    with store.begin() as txn:
        loop = [index.get(rev, txn=txn) for rev in revs]
    out['loop Index.get'] = time.process_time() - start
    gc.collect()
    start = time.process_time()
    with store.begin() as txn:
        bulk = index.get_many(revs, txn=txn)
    out['Index.get_many'] = time.process_time() - start
    assert bulk == loop
    for name in ('loop delete()', 'delete_many'):
        gc.collect()
        start = time.process_time()
        with store.begin(write=True) as txn:
            if name == 'delete_many':
                deleted = coll.delete_many(keys, txn=txn)
            else:
                deleted = [coll.delete(key, txn=txn) for key in keys]
            out[name] = time.process_time() - start
            assert all(deleted)
            txn.abort()
    return out


OPS_VARIANTS = {'loop': 'loop put()', 'put_many': 'put_many', 'chunks': 'put_many, 1000 a call'}


def ops(variant, mode, n, engine):
    """Store `n` records one way into a fresh store (see the module doc)."""
    benchy = load_benchy()
    data = benchy.Data(n, 1)
    blind, indexed = INSERTS[mode]
    tmp = tempfile.mkdtemp(prefix='centidb-put-many-')
    try:
        if variant == 'none':
            pass
        elif variant == 'raw':
            raw_insert(benchy, os.path.join(tmp, 'raw'), data, blind, indexed)
        else:
            _, store, _ = insert(benchy, engine, os.path.join(tmp, 'db'), data,
                                 OPS_VARIANTS[variant], blind, indexed)
            store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--ops', nargs=3, metavar=('VARIANT', 'MODE', 'N'),
                        help='store N records one way, for callgrind (see above)')
    parser.add_argument('--records', type=int, default=100000)
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--engines', default='LmdbEngine,PlyvelEngine,ListEngine')
    args = parser.parse_args()
    engines = [name.strip() for name in args.engines.split(',') if name.strip()]
    if args.ops:
        return ops(args.ops[0], args.ops[1], int(args.ops[2]), engines[0])
    benchy = load_benchy()
    print(f'centidb key codec: {keylib.IMPL}; Python {platform.python_version()}; '
          f'lmdb {lmdb.__version__}; {platform.machine()}', file=sys.stderr)
    if keylib.IMPL != 'speedups':
        print('WARNING: the compiled extension is not active: pure-Python timings',
              file=sys.stderr)
    variants = ['loop put()', 'put_many', 'put_many, 1000 a call']
    data = benchy.Data(args.records, min(10000, args.records))
    times = {}
    tmp = tempfile.mkdtemp(prefix='centidb-put-many-')
    try:
        for run in range(args.runs):
            for mode, (blind, indexed) in INSERTS.items():
                times.setdefault((mode, 'raw lmdb'), []).append(
                    raw_insert(benchy, os.path.join(tmp, 'raw'), data, blind, indexed))
                for engine in engines:
                    order = variants if run % 2 == 0 else variants[::-1]
                    for variant in order:
                        path = os.path.join(tmp, engine)
                        seconds, store, coll = insert(benchy, engine, path, data, variant,
                                                      blind, indexed)
                        times.setdefault((mode, engine, variant), []).append(seconds)
                        assert coll.count() == len(data.records)
                        if indexed and not blind and variant == 'put_many':
                            for name, value in bulk_reads(store, coll, data).items():
                                times.setdefault(('bulk reads', engine, name), []).append(value)
                        store.close()
                        benchy.wipe(path)
            print(f'run {run + 1}/{args.runs} done', file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'{args.records} records (bulk reads and deletes: {len(data.sample_keys)}), '
          f'median of {args.runs} runs, key codec {keylib.IMPL}')
    print('group,row,seconds,records_per_s,ratio_to_first_row')
    for mode in INSERTS:
        for engine in engines:
            rows = [(variant, times[mode, engine, variant]) for variant in variants]
            rows.append(('raw lmdb', times[mode, 'raw lmdb']))
            report(f'{mode} {engine}', rows, args.records)
    for engine in engines:
        rows = [(name, times['bulk reads', engine, name])
                for name in ('loop Index.get', 'Index.get_many', 'loop delete()', 'delete_many')]
        report(f'bulk reads {engine}', rows, len(data.sample_keys))


def report(group, rows, n):
    first = statistics.median(rows[0][1])
    for name, values in rows:
        median = statistics.median(values)
        print(f'{group},{name},{median:.4f},{n / median:.0f},{first / median:.2f}')


if __name__ == '__main__':
    main()
