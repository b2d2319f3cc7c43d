"""examples/benchy.py --etcd: EtcdEngine against a raw etcd loop, on 1 and 3 members.

For each cluster size a fresh etcd cluster runs on 127.0.0.1 (started by
``tests/etcd_cluster.py``, data on the real disk, fsync on as etcd's
default). Each run gives the raw loop and centidb a fresh key prefix of the
same length on it, loads benchy's records, then reads them back. Mode by
mode, the raw loop and centidb take turns (which goes first alternates from
one run to the next), and so do the passes of a read. Modes:

* ``put_many blind +2 idx``: every record with its two index entries, one
  commit per ``EtcdEngine.max_txn_ops // 3`` records (42 with etcd's default
  ``--max-txn-ops``: 126 puts and the commit marker), each commit one
  ``Collection.put_many(part, blind=True)``; raw: one ``Txn`` of the same 126
  puts per part.
* ``get by key``: the sample's records, each read and decoded, in one read
  transaction (pinned to the revision of its first read); raw: one
  ``Range`` per key, at the revision the first answer gave.
* ``get_many``: ``Collection.get_many`` of the sample; raw: one ``Txn`` of
  ``Range`` operations per 128 keys, the first alone (it gives the
  revision), the others at once (gRPC futures).
* ``index ranges of 1000``: benchy's ranges of the rev_location index
  (``Index.values(lo, max=1000)``), every record read and decoded; raw: per
  range, one ``Range`` of up to 1,000 entries (keys only), then its records
  as in ``get_many``, all at the revision of the first answer.

The raw loop stores exactly the keys centidb stores (under its own prefix
of the same length as centidb's data prefix) with plain msgpack values,
packs its keys and encodes or decodes every value inside the timed loop,
and calls a gRPC KV stub on the same endpoint the engine uses first,
without centidb's failover wrapper. Both check what they read last against
the expected record; in the first run, both count the keys they wrote.

:func:`etcd_table` writes the CSV: one row per (members, engine, mode), with
``seconds`` the median over runs of one pass (reads: of the best of the
passes in each run) and ``ratio_vs_raw`` EtcdEngine's records/s over the raw
loop's (the target is 0.5 or more). Context goes to `err`.
"""

from __future__ import annotations

import csv
import importlib.metadata
import os
import statistics
import subprocess
import sys
import tempfile
import time

import msgpack

from benchy_backends import RANGE_LEN, Centidb, chunks, open_collection
import centidb
from centidb import keylib
from centidb.engines.etcd_client import load_protocol

#: tests/etcd_cluster.py starts the clusters; imported only by --etcd.
TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'tests')

#: Records of the default --etcd run, and the most single gets per read mode.
ETCD_RECORDS = 20000
GETS = 2000
MEMBERS = (1, 3)
#: Range operations per read Txn (etcd's default --max-txn-ops).
READS_PER_TXN = 128
RAW, ENGINE = 'raw etcd', 'EtcdEngine'
LOAD = 'put_many blind +2 idx'
GET, GET_MANY, RANGES = 'get by key', 'get_many', f'index ranges of {RANGE_LEN}'
#: Read modes -> the method of both runners.
READS = {GET: 'get_by_key', GET_MANY: 'get_many', RANGES: 'ranges'}
MODES = (LOAD, *READS)
COLUMNS = ['members', 'engine', 'mode', 'records', 'keys_written', 'seconds',
           'records_per_s', 'keys_per_s', 'ratio_vs_raw']


def etcd_cluster():
    """The module tests/etcd_cluster.py, imported from beside the examples."""
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    import etcd_cluster
    return etcd_cluster


def etcd_sample(n):
    """The number of records read by key: a tenth of `n`, at most GETS."""
    return max(1, min(GETS, n // 10))


class RawEtcd:
    """The raw loop: gRPC calls on one KV stub, keys laid out as centidb's."""

    def __init__(self, endpoint, prefix, data):
        grpc, self.rpc, stubs = load_protocol()
        self.channel = grpc.insecure_channel(endpoint)
        self.kv = stubs.KVStub(self.channel)
        self.prefix, self.data = prefix, data
        self.coll, self.idx1, self.idx2 = (prefix + p for p in data.prefixes)

    def put_many(self, per_txn):
        rpc, txn = self.rpc, self.kv.Txn
        RequestOp, PutRequest, TxnRequest = rpc.RequestOp, rpc.PutRequest, rpc.TxnRequest
        coll, idx1, idx2 = self.coll, self.idx1, self.idx2
        pack, packs, n = msgpack.Packer(use_bin_type=True).pack, keylib.packs, len(self.coll)
        parts = chunks(self.data.records, per_txn)
        start = time.perf_counter()
        for part in parts:
            ops = []
            for rec in part:
                key = packs((rec['name'], rec['location']), coll)
                tail = b'\x01' + key[n:]
                ops.append(RequestOp(request_put=PutRequest(key=key, value=pack(rec))))
                ops.append(RequestOp(request_put=PutRequest(
                    key=packs(rec['name'][::-1], idx1) + tail)))
                ops.append(RequestOp(request_put=PutRequest(
                    key=packs(rec['location'][::-1], idx2) + tail)))
            txn(TxnRequest(success=ops))
        return time.perf_counter() - start

    def check(self, keys_written):
        found = self.kv.Range(self.rpc.RangeRequest(
            key=self.prefix, range_end=keylib.next_prefix(self.prefix), count_only=True)).count
        assert found == keys_written, (found, keys_written)

    def get_by_key(self):
        rpc, get = self.rpc, self.kv.Range
        RangeRequest, unpackb, packs = rpc.RangeRequest, msgpack.unpackb, keylib.packs
        coll, keys = self.coll, self.data.sample_keys
        start = time.perf_counter()
        revision = 0
        for key in keys:
            response = get(RangeRequest(key=packs(key, coll), revision=revision))
            revision = revision or response.header.revision
            value = unpackb(response.kvs[0].value)
        return time.perf_counter() - start, value

    def _records(self, keys, revision):
        """The records under `keys`, decoded: one Txn per READS_PER_TXN, sent at once.

        With `revision` 0, the first Txn goes alone and gives the revision.
        """
        rpc, txn = self.rpc, self.kv.Txn
        RequestOp, RangeRequest, unpackb = rpc.RequestOp, rpc.RangeRequest, msgpack.unpackb
        requests = [rpc.TxnRequest(success=[
            RequestOp(request_range=RangeRequest(key=key, revision=revision))
            for key in keys[i:i + READS_PER_TXN]]) for i in range(0, len(keys), READS_PER_TXN)]
        responses = []
        if not revision:
            responses.append(txn(requests.pop(0)))
            revision = responses[0].header.revision
            for request in requests:
                for op in request.success:
                    op.request_range.revision = revision
        futures = [txn.future(request) for request in requests]
        responses += [future.result() for future in futures]
        return [unpackb(op.response_range.kvs[0].value)
                for response in responses for op in response.responses], revision

    def get_many(self):
        coll, packs = self.coll, keylib.packs
        start = time.perf_counter()
        values, _ = self._records([packs(key, coll) for key in self.data.sample_keys], 0)
        return time.perf_counter() - start, values[-1]

    def ranges(self):
        rpc, get, records = self.rpc, self.kv.Range, self._records
        coll, idx2, packs = self.coll, self.idx2, keylib.packs
        hi, start_at = keylib.next_prefix(idx2), len(idx2)
        start = time.perf_counter()
        revision = 0
        for lo in self.data.range_starts:
            response = get(rpc.RangeRequest(key=packs(lo, idx2), range_end=hi,
                                            limit=RANGE_LEN, keys_only=True, revision=revision))
            revision = revision or response.header.revision
            keys = [coll + kv.key[kv.key.index(b'\x01', start_at) + 1:] for kv in response.kvs]
            values, _ = records(keys, revision)
        return time.perf_counter() - start, values[-1]

    def close(self):
        self.channel.close()


class CentiEtcd(Centidb):
    """centidb on an EtcdEngine (benchy's Centidb, opened on the cluster)."""

    def __init__(self, endpoints, prefix, data):
        super().__init__('EtcdEngine', None, data)
        self.endpoints, self.prefix = endpoints, prefix

    def open(self):
        self.store = centidb.open('EtcdEngine', endpoints=self.endpoints, prefix=self.prefix)
        self.coll = open_collection(self.store, True)
        indices = self.coll.indices
        assert (self.coll.prefix, indices['rev_name'].prefix,
                indices['rev_location'].prefix) == self.data.prefixes

    def records_per_txn(self):
        """Records of one commit: three puts each, within the engine's max_txn_ops."""
        return self.store.engine.max_txn_ops // 3

    def put_many(self, per_txn):
        put_many, parts = self.coll.put_many, chunks(self.data.records, per_txn)
        start = time.perf_counter()
        for part in parts:
            put_many(part, blind=True)
        return time.perf_counter() - start

    def get_many(self):
        get_many, keys = self.coll.get_many, self.data.sample_keys
        start = time.perf_counter()
        values = get_many(keys)
        return time.perf_counter() - start, values[-1]

    def close(self):
        if self.store is not None:
            self.store.close()
            self.store = None


def measure(members, data, runs, passes, best_of, check, times, err):
    """Run every mode `runs` times on a fresh cluster of `members`; add to `times`."""
    parent = _scratch_parent()
    with etcd_cluster().EtcdCluster(members, fsync=True, parent=parent) as cluster:
        print(f'{members} member(s): data in {cluster.directory}', file=err)
        expected = {GET: data.last_key, GET_MANY: data.last_key, RANGES: data.range_last}
        for run in range(runs):
            centi = CentiEtcd(cluster.endpoints, b'cdb%d/' % run, data)
            # The same length as the engine's data keys: its prefix + b'd'.
            raw = RawEtcd(cluster.endpoints[0], b'raw%d/d' % run, data)
            try:
                centi.open()
                order = [(RAW, raw), (ENGINE, centi)]
                if run % 2:
                    order.reverse()
                per_txn = centi.records_per_txn()
                for name, runner in order:
                    times.setdefault((members, name, LOAD), []).append(runner.put_many(per_txn))
                    if run == 0:
                        runner.check(3 * len(data.records))
                for mode, method in READS.items():
                    # Passes alternate between the two, so that a burst of
                    # other work on the machine slows both alike.
                    best = {}
                    for _ in range(passes):
                        for name, runner in order:
                            seconds, value = best_of(1, getattr(runner, method))
                            check(f'{name} on {members}', mode, value, expected[mode])
                            best[name] = min(seconds, best.get(name, seconds))
                    for name, seconds in best.items():
                        times.setdefault((members, name, mode), []).append(seconds)
            finally:
                raw.close()
                centi.close()
    print(f'{members} member(s) done; load average {_load()}', file=err)


def _scratch_parent():
    """Where clusters keep their data: /var/tmp (a real disk, for fsync) if usable."""
    return '/var/tmp' if os.access('/var/tmp', os.W_OK) else tempfile.gettempdir()


def _load():
    return ' '.join(f'{x:.2f}' for x in os.getloadavg())


def versions(binary):
    """The etcd server and client library versions, for the context line."""
    try:
        server = subprocess.run([binary, '--version'], capture_output=True, text=True,
                                timeout=30).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        server = 'etcd version unknown'
    clients = []
    for package in ('grpcio', 'protobuf', 'etcd-sdk-python'):
        try:
            clients.append(f'{package} {importlib.metadata.version(package)}')
        except importlib.metadata.PackageNotFoundError:
            clients.append(f'{package} ?')
    return f'{server} ({binary}); ' + ', '.join(clients)


def rows(times, data):
    """The table's rows, from the collected `times`."""
    counts = {LOAD: (len(data.records), 3 * len(data.records)),
              GET: (len(data.sample_keys), 0), GET_MANY: (len(data.sample_keys), 0),
              RANGES: (data.range_total, 0)}
    for members in MEMBERS:
        for name in (RAW, ENGINE):
            for mode in MODES:
                records, keys_written = counts[mode]
                seconds = statistics.median(times[members, name, mode])
                ratio = ''
                if name == ENGINE:
                    ratio = f'{statistics.median(times[members, RAW, mode]) / seconds:.2f}'
                yield [members, name, mode, records, keys_written, f'{seconds:.4f}',
                       f'{records / seconds:.0f}',
                       f'{keys_written / seconds:.0f}' if keys_written else '', ratio]


def etcd_table(data, runs, passes, best_of, check, err):
    """Measure EtcdEngine and the raw loop on 1 and 3 members; write the CSV to stdout.

    :param data: benchy's ``Data`` (records, sample, ranges, expected results).
    :param runs: runs per cluster size (median reported).
    :param passes: passes per read in each run (the best kept).
    :param best_of: benchy's ``best_of(passes, read)`` (called for one pass at a time).
    :param check: benchy's ``check(backend, mode, value, expected)``.
    :param err: where the context goes.
    """
    binary = etcd_cluster().find_etcd()
    if binary is None:
        sys.exit('--etcd needs an etcd binary: run dev/setup.sh (or set CENTIDB_ETCD_BINARY)')
    print(versions(binary), file=err)
    print(f'--etcd: {len(data.records)} records; members {", ".join(map(str, MEMBERS))}; '
          f'{len(data.sample_keys)} gets per read mode; {len(data.range_starts)} ranges of up '
          f'to {RANGE_LEN}; median of {runs} runs (reads: the best of {passes} passes in '
          f'each), fresh prefixes each run on one cluster per size; etcd fsync on (its '
          f'default), data under {_scratch_parent()}; clients on 127.0.0.1', file=err)
    times = {}
    began = time.perf_counter()
    for members in MEMBERS:
        measure(members, data, runs, passes, best_of, check, times, err)
    print(f'wall time {time.perf_counter() - began:.0f} s', file=err)
    writer = csv.writer(sys.stdout, lineterminator='\n')
    writer.writerow(COLUMNS)
    writer.writerows(rows(times, data))
