"""EtcdEngine against a raw etcd loop doing the same operations, on 1 and 3 members.

For each cluster size, a fresh cluster on 127.0.0.1 (``tests/etcd_cluster.py``)
runs, three times each, taking the median:

* ``bulk insert``: records with one index, written with ``put_many`` in
  transactions that fit etcd's 128 operations (63 records: a record and an
  index entry each, plus the commit marker); raw: one etcd ``Txn`` of the
  same puts per batch.
* ``get``: one record by key per transaction; raw: one ``Range`` per key.
* ``get_many``: ``Collection.get_many`` of a batch of keys; raw: one ``Txn``
  of ``Range`` operations per 128 keys. ``engine get_many`` is the engine
  alone (``EngineTransaction.get_many`` of the records' engine keys): what
  the document layer reaches once it reads through it.
* ``index range``: every record of one index value (``Index.values``); raw:
  one ``Range`` over the index entries, then one ``Txn`` of ``Range``
  operations for the records.

Both sides use the same client (gRPC, the ``pyetcd`` protocol messages) and
the same key and value sizes. CSV on stdout, one row per (members,
operation): the medians, operations per second and centidb's ratio to raw
(the target is 0.5 or more); context on stderr. Usage::

    .venv/bin/python benchmarks/etcd_bench.py [--records N] [--no-fsync] > etcd.csv
"""

import argparse
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests'))

import centidb  # noqa: E402
from centidb import keylib  # noqa: E402
from centidb.engines.etcd import EtcdEngine  # noqa: E402

from etcd_cluster import EtcdCluster, find_etcd  # noqa: E402

PAYLOAD = 'x' * 100
GROUPS = 50
BATCH = 63          # records per bulk-insert transaction: 2 puts each, + marker


def record(i):
    return {'id': i, 'grp': i % GROUPS, 'payload': PAYLOAD}


def by_id(rec):
    return rec['id']


def grp_of(rec):
    return rec['grp']


class Raw:
    """The same operations as plain etcd calls, through the engine's client."""

    def __init__(self, engine):
        self.client, self.rpc = engine._client, engine.rpc
        self.prefix = engine.prefix + b'raw/'
        self.value = keylib.packs(('x' * 140,))    # about a stored record's size

    def key(self, i):
        return self.prefix + b'r' + keylib.packs(i)

    def entry(self, i):
        return self.prefix + b'i' + keylib.packs((i % GROUPS, i))

    def bulk_insert(self, ids):
        rpc = self.rpc
        for start in range(0, len(ids), BATCH):
            ops = []
            for i in ids[start:start + BATCH]:
                ops.append(rpc.RequestOp(request_put=rpc.PutRequest(key=self.key(i),
                                                                    value=self.value)))
                ops.append(rpc.RequestOp(request_put=rpc.PutRequest(key=self.entry(i),
                                                                    value=b'')))
            self.client.txn(rpc.TxnRequest(success=ops), writes=True)

    def get(self, ids):
        for i in ids:
            assert self.client.range(self.rpc.RangeRequest(key=self.key(i))).kvs

    def get_many(self, ids):
        rpc = self.rpc
        for start in range(0, len(ids), 128):
            response = self.client.txn(rpc.TxnRequest(success=[
                rpc.RequestOp(request_range=rpc.RangeRequest(key=self.key(i)))
                for i in ids[start:start + 128]]))
            assert all(op.response_range.kvs for op in response.responses)

    engine_get_many = get_many

    def index_range(self, groups):
        rpc = self.rpc
        for g in groups:
            lo = self.prefix + b'i' + keylib.packs((g,))
            entries = self.client.range(rpc.RangeRequest(
                key=lo, range_end=keylib.next_prefix(lo), keys_only=True)).kvs
            ids = [keylib.unpacks(kv.key, self.prefix + b'i')[1] for kv in entries]
            self.get_many(ids)


class Centi:
    """The operations through a centidb store on the engine."""

    def __init__(self, engine):
        self.store = centidb.Store(engine)
        self.coll = self.store.collection('bench', key_func=by_id)
        self.index = self.coll.add_index('grp', grp_of)

    def bulk_insert(self, ids):
        for start in range(0, len(ids), BATCH):
            self.coll.put_many([record(i) for i in ids[start:start + BATCH]], blind=True)

    def get(self, ids):
        for i in ids:
            assert self.coll.get(i) is not None

    def get_many(self, ids):
        assert None not in self.coll.get_many(ids)

    def engine_get_many(self, ids):
        keys = [keylib.packs(i, self.coll.prefix) for i in ids]
        with self.store.engine.begin() as txn:
            assert None not in txn.get_many(keys)

    def index_range(self, groups):
        for g in groups:
            assert list(self.index.values(prefix=g))


def timed(func, *args):
    started = time.perf_counter()
    func(*args)
    return time.perf_counter() - started


def run(members, records, fsync, rounds=3):
    """Yield CSV rows for one cluster size."""
    with EtcdCluster(members, fsync=fsync) as cluster:
        results = {}
        for round_ in range(rounds):
            prefix = b'bench%d/' % round_
            engine = EtcdEngine(cluster.endpoints, prefix=prefix)
            raw, centi = Raw(engine), Centi(engine)
            ids = list(range(records))
            gets = ids[::max(1, records // 500)]
            groups = list(range(0, GROUPS, 5))
            cases = [('bulk insert', 'bulk_insert', ids, len(ids)),
                     ('get', 'get', gets, len(gets)),
                     ('get_many', 'get_many', gets, len(gets)),
                     ('engine get_many', 'engine_get_many', gets, len(gets)),
                     ('index range', 'index_range', groups, records // GROUPS * len(groups))]
            for name, method, arg, count in cases:
                # Alternate which goes first, so neither always runs warm.
                order = [('raw', raw), ('centidb', centi)]
                if round_ % 2:
                    order.reverse()
                for impl, runner in order:
                    seconds = timed(getattr(runner, method), arg)
                    results.setdefault((name, impl), []).append((seconds, count))
            centi.store.close()
        for name in ('bulk insert', 'get', 'get_many', 'engine get_many', 'index range'):
            raw_s = statistics.median(s for s, _ in results[name, 'raw'])
            centi_s = statistics.median(s for s, _ in results[name, 'centidb'])
            count = results[name, 'raw'][0][1]
            yield (members, name, count, f'{raw_s:.4f}', f'{centi_s:.4f}',
                   f'{count / raw_s:.0f}', f'{count / centi_s:.0f}', f'{raw_s / centi_s:.2f}')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--records', type=int, default=2000)
    parser.add_argument('--members', default='1,3', help='cluster sizes, comma-separated')
    parser.add_argument('--no-fsync', action='store_true',
                        help='run etcd with --unsafe-no-fsync')
    args = parser.parse_args(argv)
    binary = find_etcd()
    if binary is None:
        sys.exit('no etcd binary: run dev/setup.sh')
    print(f'# etcd {binary}; python {platform.python_version()}; key codec '
          f'{keylib.IMPL}; {args.records} records; fsync '
          f'{"off" if args.no_fsync else "on"}; medians of 3', file=sys.stderr)
    if keylib.IMPL != 'speedups':
        print('# warning: the compiled key codec is not active', file=sys.stderr)
    print('members,operation,items,raw_s,centidb_s,raw_per_s,centidb_per_s,ratio')
    for members in (int(m) for m in args.members.split(',')):
        for row in run(members, args.records, not args.no_fsync):
            print(','.join(map(str, row)), flush=True)


if __name__ == '__main__':
    main()
