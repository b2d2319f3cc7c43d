"""N record operations with the compiled or the pure-Python record path, for callgrind.

Usage: python benchmarks/record_ops.py {compiled,pure} {put,get,index,scan} N

Loads 20,000 benchy-like records (two indexes) into a fresh LMDB store, then
does N operations of one kind in one transaction: ``put`` (non-blind puts
of fresh records instead of the load), ``get`` (get by key), ``index``
(``Index.get``), ``scan`` (N // 20000 full index range scans). ``pure``
swaps the record layer's twins (``RecordWriter``, ``RecordReader``,
``Record``, ``index_entries``) for their pure-Python versions; the key codec
stays compiled in both. Instruction counts do not depend on machine load::

    for op in put get index scan; do for v in compiled pure; do for n in 0 20000; do
      valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        python benchmarks/record_ops.py $v $op $n 2>&1 | grep Collected
    done; done; done

The cost of one operation is (count at N=20000 - count at N=0) / 20000.
"""

import os
import shutil
import sys
import tempfile
from unittest import mock

import centidb
from centidb import impl
from centidb.records import record as records

variant, op, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = ('Record', 'RecordWriter', 'RecordReader', 'index_entries')
src = impl.COMPILED if variant == 'compiled' else records.PYTHON
tmp = tempfile.mkdtemp()
with mock.patch.multiple(records, **{k: getattr(src, k) for k in names}):
    store = centidb.open('LmdbEngine', path=os.path.join(tmp, 'db'), map_size=1 << 30)
    coll = store.collection('c', key_func=lambda r: (r['name'], r['loc']))
    coll.add_index('rn', lambda r: r['name'][::-1])
    coll.add_index('rl', lambda r: r['loc'][::-1])
    recs = [{'name': 'n%06d' % i, 'loc': 'L%d' % (i % 97), 'stub': 'x' * 150} for i in range(20000)]
    if op != 'put':
        with store.begin(write=True) as txn:
            for r in recs:
                coll.put(r, txn=txn, blind=True)
    keys = [(r['name'], r['loc']) for r in recs][:n]
    if op == 'get':
        with store.begin() as txn:
            for k in keys:
                coll.get(k, txn=txn)
    elif op == 'index':
        idx = coll.indices['rn']
        with store.begin() as txn:
            for k in keys:
                idx.get(k[0][::-1], txn=txn)
    elif op == 'scan':
        with store.begin() as txn:
            for _ in range(n // 20000):
                for v in coll.indices['rl'].values(txn=txn):
                    pass
    elif op == 'put':
        with store.begin(write=True) as txn:
            for r in recs[:n]:
                coll.put(r, txn=txn)
    store.close()
shutil.rmtree(tmp)
