"""Document layer overhead: centidb against hand-written raw engine loops.

Usage: python benchmarks/doc_layer_bench.py [--records 50000] [--runs 3]

Inserts N records (``{'stub', 'name', 'location'}``, key (name, location),
two reversed-string indexes) in one transaction with ``blind=True``, then
reads every record back by key in random order. The raw loops build the same
keys with keylib and msgpack values by hand and call lmdb / plyvel directly.
Prints one CSV row per engine and operation with the median records/s of
--runs runs and the ratio centidb/raw. The full benchmark table is
examples/benchy.py; this script isolates the layer's own cost.
"""

import argparse
import csv
import operator
import random
import shutil
import statistics
import sys
import tempfile
import time

import lmdb
import msgpack
import plyvel

import centidb
from centidb import encodings, keylib

COLL, IDX1, IDX2 = keylib.packs(1), keylib.packs(2), keylib.packs(3)


def make_records(n, seed=1):
    rng = random.Random(seed)
    letters = 'abcdefghijklmnopqrstuvwxyz'
    records = []
    for i in range(n):
        word = ''.join(rng.choice(letters) for _ in range(rng.randint(4, 10))) + str(i)
        records.append({'stub': '%0150x' % rng.getrandbits(600), 'name': word,
                        'location': word.upper()})
    return records


def raw_lmdb(path, records):
    env = lmdb.open(path, map_size=1 << 31, sync=False)
    pack = msgpack.Packer(use_bin_type=True).pack
    packs = keylib.packs
    start = time.perf_counter()
    with env.begin(write=True) as txn:
        put = txn.put
        for rec in records:
            key = packs((rec['name'], rec['location']), COLL)
            put(key, pack(rec))
            tail = b'\x01' + key[len(COLL):]
            put(packs(rec['name'][::-1], IDX1) + tail, b'')
            put(packs(rec['location'][::-1], IDX2) + tail, b'')
    insert = time.perf_counter() - start
    keys = [packs((r['name'], r['location']), COLL) for r in records]
    random.Random(2).shuffle(keys)
    start = time.perf_counter()
    with env.begin() as txn:
        get = txn.get
        for key in keys:
            msgpack.unpackb(get(key))
    read = time.perf_counter() - start
    env.close()
    return insert, read


def raw_plyvel(path, records):
    db = plyvel.DB(path, create_if_missing=True)
    pack = msgpack.Packer(use_bin_type=True).pack
    packs = keylib.packs
    start = time.perf_counter()
    batch = db.write_batch()
    put = batch.put
    for rec in records:
        key = packs((rec['name'], rec['location']), COLL)
        put(key, pack(rec))
        tail = b'\x01' + key[len(COLL):]
        put(packs(rec['name'][::-1], IDX1) + tail, b'')
        put(packs(rec['location'][::-1], IDX2) + tail, b'')
    batch.write()
    insert = time.perf_counter() - start
    keys = [packs((r['name'], r['location']), COLL) for r in records]
    random.Random(2).shuffle(keys)
    start = time.perf_counter()
    snapshot = db.snapshot()
    get = snapshot.get
    for key in keys:
        msgpack.unpackb(get(key))
    read = time.perf_counter() - start
    snapshot.close()
    db.close()
    return insert, read


def centidb_run(engine, kwargs, records):
    store = centidb.open(engine, **kwargs)
    coll = store.collection('stuff', encoder=encodings.make_msgpack_encoder(),
                            key_func=operator.itemgetter('name', 'location'))
    coll.add_index('rev_name', lambda p: p['name'][::-1])
    coll.add_index('rev_location', lambda p: p['location'][::-1])
    start = time.perf_counter()
    with store.begin(write=True) as txn:
        put = coll.put
        for rec in records:
            put(rec, txn=txn, blind=True)
    insert = time.perf_counter() - start
    keys = [(r['name'], r['location']) for r in records]
    random.Random(2).shuffle(keys)
    start = time.perf_counter()
    with store.begin() as txn:
        get = coll.get
        for key in keys:
            get(key, txn=txn)
    read = time.perf_counter() - start
    store.close()
    return insert, read


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=50000)
    parser.add_argument('--runs', type=int, default=3)
    args = parser.parse_args()
    print(f'centidb {centidb.__version__}, key codec {keylib.IMPL}, '
          f'{args.records} records, median of {args.runs} runs', file=sys.stderr)
    if keylib.IMPL != 'speedups':
        print('WARNING: compiled key codec not active', file=sys.stderr)
    records = make_records(args.records)
    results = {}
    for run in range(args.runs):
        tmp = tempfile.mkdtemp(prefix='centidb-bench-')
        try:
            cases = {
                ('LmdbEngine', 'raw'): lambda: raw_lmdb(f'{tmp}/raw.lmdb', records),
                ('LmdbEngine', 'centidb'): lambda: centidb_run(
                    'LmdbEngine', {'path': f'{tmp}/c.lmdb', 'map_size': 1 << 31,
                                   'sync': False}, records),
                ('PlyvelEngine', 'raw'): lambda: raw_plyvel(f'{tmp}/raw.ldb', records),
                ('PlyvelEngine', 'centidb'): lambda: centidb_run(
                    'PlyvelEngine', {'name': f'{tmp}/c.ldb', 'create_if_missing': True},
                    records),
                ('ListEngine', 'centidb'): lambda: centidb_run('ListEngine', {}, records),
            }
            for case, func in cases.items():
                results.setdefault(case, []).append(func())
        finally:
            shutil.rmtree(tmp)
    writer = csv.writer(sys.stdout, lineterminator='\n')
    writer.writerow(['engine', 'operation', 'centidb_rec_per_s', 'raw_rec_per_s',
                     'ratio'])
    n = args.records
    for engine in ('LmdbEngine', 'PlyvelEngine', 'ListEngine'):
        for op, column in (('insert blind, 2 indexes', 0), ('get by key', 1)):
            ours = statistics.median(n / r[column] for r in results[(engine, 'centidb')])
            raw = results.get((engine, 'raw'))
            if raw:
                theirs = statistics.median(n / r[column] for r in raw)
                writer.writerow([engine, op, f'{ours:.0f}', f'{theirs:.0f}',
                                 f'{ours / theirs:.2f}'])
            else:
                writer.writerow([engine, op, f'{ours:.0f}', '', ''])


if __name__ == '__main__':
    main()
