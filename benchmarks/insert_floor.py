"""How fast can any Python layer insert benchy's indexed records into LMDB?

Usage: python benchmarks/insert_floor.py [--records 235886] [--runs 3]

Times, in one run on the same records (examples/benchy.py's data, 2 indexes,
one write transaction, blind):

* ``sqlite3``: benchy's sqlite3 baseline;
* ``lmdb floor``: LMDB storing the 3 keys per record that centidb stores,
  built beforehand and written with one ``putmulti`` call: the engine's own
  cost, with no per-record Python at all;
* ``raw lmdb``: benchy's hand-written loop (builds keys and values per record);
* ``centidb LmdbEngine``: ``Collection.put`` per record.

It prints each median in records/s, and ratios against sqlite3. It answers
whether "2x sqlite3" is reachable: not when the floor itself is below 2x.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import lmdb
import msgpack

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'examples'))
import benchy  # noqa: E402  (examples/ is not a package)
from centidb import keylib  # noqa: E402


def engine_pairs(data):
    """The (key, value) pairs centidb's layout gives the records, prebuilt."""
    coll, idx1, idx2 = data.prefixes
    pack = msgpack.Packer(use_bin_type=True).pack
    pairs = []
    for rec in data.records:
        key = keylib.packs((rec['name'], rec['location']), coll)
        tail = b'\x01' + key[len(coll):]
        pairs += [(key, pack(rec)), (keylib.packs(rec['name'][::-1], idx1) + tail, b''),
                  (keylib.packs(rec['location'][::-1], idx2) + tail, b'')]
    return pairs


def lmdb_floor(path, pairs):
    env = lmdb.open(path, map_size=benchy.LMDB_MAP_SIZE, sync=False)
    try:
        start = time.perf_counter()
        with env.begin(write=True) as txn:
            txn.cursor().putmulti(pairs)
        return time.perf_counter() - start
    finally:
        env.close()


def run_benchy_backend(name, path, data):
    runner = benchy.BACKEND_CLASSES[name](name, path, data)
    try:
        runner.open(True)
        return runner.insert(True)
    finally:
        runner.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=benchy.RECORDS)
    parser.add_argument('--runs', type=int, default=3)
    args = parser.parse_args()
    data = benchy.Data(args.records, 1)
    pairs = engine_pairs(data)
    times = {}
    tmp = tempfile.mkdtemp(prefix='centidb-floor-')
    try:
        for _ in range(args.runs):
            for name in ('sqlite3', 'lmdb floor', 'raw lmdb', 'LmdbEngine'):
                path = os.path.join(tmp, name.replace(' ', '-'))
                if name == 'lmdb floor':
                    seconds = lmdb_floor(path, pairs)
                    shutil.rmtree(path)
                else:
                    seconds = run_benchy_backend(name, path, data)
                times.setdefault(name, []).append(seconds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = len(data.records)
    sqlite_rate = n / statistics.median(times['sqlite3'])
    print(f'{n} records, 2 indexes, blind, one transaction; median of {args.runs} runs')
    for name, seconds in times.items():
        rate = n / statistics.median(seconds)
        print(f'{name:12s} {rate:9.0f} records/s  {rate / sqlite_rate:5.2f}x sqlite3')


if __name__ == '__main__':
    main()
