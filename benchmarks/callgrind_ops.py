"""One operation, on centidb or on a raw engine loop doing the same work, for callgrind.

Usage: python benchmarks/callgrind_ops.py {centidb,raw} OP PASSES [lmdb|leveldb]

The engine is LMDB unless the fourth argument says ``leveldb``: then centidb
runs on ``PlyvelEngine`` and the raw loops use plyvel (a snapshot for reads,
a write batch for writes, as the engine does).

OP is one of ``scan`` (every record decoded), ``range`` (20 index ranges of
1,000 records, each fetched and decoded), ``get``, ``iget`` (get by index),
``update`` (5,000 records change their indexed field, a commit per 1,000),
``update_rec`` (the same through ``get(rec=True)`` and ``put(record)``),
``groups`` (``group_counts()`` of an index), ``put_many``, ``insert2``
(blind puts, two indexes), ``insert2r`` (the same not blind: each put reads
the old version; the raw LMDB loop uses ``txn.replace``) and ``blind0`` (blind
puts, no index). 20,000 benchy-like records; read and update operations
load them first, then run PASSES passes. Instruction counts do not depend
on the machine's load, so the cost of one pass is stable::

    for who in centidb raw; do for n in 0 2; do
      valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python benchmarks/callgrind_ops.py $who scan $n 2>&1 | grep Collected
    done; done

One pass costs (count at 2 - count at 0) / 2; raw / centidb is the ratio
benchy reports as time.
"""

import operator
import random
import shutil
import sys
import tempfile

import lmdb
import msgpack
import plyvel

import centidb
from centidb import keylib

who, op, passes = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = sys.argv[4] if len(sys.argv) > 4 else 'lmdb'
if engine not in ('lmdb', 'leveldb'):
    sys.exit(f'unknown engine {engine!r}: lmdb or leveldb')
N = 20000
rnd = random.Random(1)
recs = []
for i in range(N):
    word = 'w%07d%s' % (rnd.randrange(10 ** 7), i)
    recs.append({'stub': '%0150x' % rnd.getrandbits(600), 'name': word,
                 'location': word.upper()[:6]})
key_func = operator.itemgetter('name', 'location')


def rev_name(rec):
    return rec['name'][::-1]


def rev_location(rec):
    return rec['location'][::-1]


starts = sorted(rnd.sample([rev_location(r) for r in recs], 20))
sample = rnd.sample(recs, 5000)
INSERTS = ('put_many', 'insert2', 'insert2r', 'blind0')
# One Packer, reused, as benchy's raw loops pack (msgpack.packb makes one per call).
packs, pack, unpack = keylib.packs, msgpack.Packer(use_bin_type=True).pack, msgpack.unpackb
tmp = tempfile.mkdtemp(dir='/dev/shm')


def centidb_store(path, indexed=True):
    if engine == 'leveldb':
        # name= is PlyvelEngine's older spelling of path=, so older commits run this too.
        store = centidb.open('PlyvelEngine', name=path, create_if_missing=True)
    else:
        store = centidb.open('LmdbEngine', path=path, map_size=1 << 30)
    coll = store.collection('c', key_func=key_func)
    if indexed:
        coll.add_index('rn', rev_name)
        coll.add_index('rl', rev_location)
    return store, coll


def centidb_pass(store, coll):
    if op == 'update':
        for i in range(0, len(sample), 1000):
            with store.begin(write=True) as txn:
                for rec in sample[i:i + 1000]:
                    value = coll.get(key_func(rec), txn=txn)
                    value['location'] += 'X'
                    coll.put(value, txn=txn, key=key_func(rec))
        return
    if op == 'update_rec':
        for i in range(0, len(sample), 1000):
            with store.begin(write=True) as txn:
                for rec in sample[i:i + 1000]:
                    record = coll.get(key_func(rec), txn=txn, rec=True)
                    record.data['location'] += 'X'
                    coll.put(record, txn=txn)
        return
    with store.begin() as txn:
        if op == 'scan':
            for _ in coll.values(txn=txn):
                pass
        elif op == 'range':
            index = coll.indices['rl']
            for start in starts:
                for _ in index.values(start, max=1000, txn=txn):
                    pass
        elif op == 'get':
            for rec in sample:
                coll.get(key_func(rec), txn=txn)
        elif op == 'iget':
            get = coll.indices['rn'].get
            for rec in sample:
                get(rev_name(rec), txn=txn)
        elif op == 'groups':
            coll.indices['rl'].group_counts(txn=txn)


# The raw loops store centidb's layout: record keys under 0x0f, entries under 0x10/0x11.
CP, I1, I2 = b'\x0f', b'\x10', b'\x11'


def raw_load(txn, indexed=True, read=False):
    put, replace, delete = txn.put, txn.replace, txn.delete
    for rec in recs:
        key = packs(key_func(rec), CP)
        old = replace(key, pack(rec)) if read else put(key, pack(rec))
        if indexed:
            tail = b'\x01' + key[1:]
            new = [packs((rev_name(rec),), I1) + tail, packs((rev_location(rec),), I2) + tail]
            if read and old is not None:
                value = unpack(old)
                for entry in (packs((rev_name(value),), I1) + tail,
                              packs((rev_location(value),), I2) + tail):
                    if entry not in new:
                        delete(entry)
            put(new[0], b'')
            put(new[1], b'')


def raw_pass(env):
    if op in ('update', 'update_rec'):
        for i in range(0, len(sample), 1000):
            with env.begin(write=True) as txn:
                for rec in sample[i:i + 1000]:
                    key = packs(key_func(rec), CP)
                    value = unpack(txn.get(key))
                    tail = b'\x01' + key[1:]
                    # Both indexes, as a program that does not know which changed.
                    old = [packs((rev_name(value),), I1) + tail,
                           packs((rev_location(value),), I2) + tail]
                    value['location'] += 'X'
                    new = [packs((rev_name(value),), I1) + tail,
                           packs((rev_location(value),), I2) + tail]
                    for old_entry, new_entry in zip(old, new):
                        if old_entry != new_entry:
                            txn.delete(old_entry)
                            txn.put(new_entry, b'')
                    txn.put(key, pack(value))
        return
    with env.begin() as txn:
        if op == 'scan':
            cursor = txn.cursor()
            cursor.set_range(CP)
            for key, value in cursor.iternext():
                if key >= I1:
                    break
                unpack(value)
        elif op == 'range':
            get = txn.get
            for start in starts:
                cursor = txn.cursor()
                cursor.set_range(packs((start,), I2))
                for n, entry in enumerate(cursor.iternext(values=False)):
                    if n == 1000:
                        break
                    unpack(get(CP + entry[entry.index(b'\x01', 1) + 1:]))
        elif op == 'get':
            get = txn.get
            for rec in sample:
                unpack(get(packs(key_func(rec), CP)))
        elif op == 'groups':
            groups, head, count, cursor = [], None, 0, txn.cursor()
            cursor.set_range(I2)
            for entry in cursor.iternext(values=False):
                if entry >= b'\x12':
                    break
                this = entry[:entry.index(b'\x01', 1)]
                if this == head:
                    count += 1
                    continue
                if head is not None:
                    groups.append((keylib.unpacks(head, I2), count))
                head, count = this, 1
            if head is not None:
                groups.append((keylib.unpacks(head, I2), count))
        elif op == 'iget':
            cursor, get = txn.cursor(), txn.get
            for rec in sample:
                packed = packs((rev_name(rec),), I1)
                cursor.set_range(packed + b'\x01')
                unpack(get(CP + cursor.key()[len(packed) + 1:]))


def ldb_load(db, indexed=True, read=False):
    """raw_load on plyvel: one write batch; reads see the store before it."""
    snap = db.snapshot()
    get = snap.get
    with db.write_batch() as batch:
        put, delete = batch.put, batch.delete
        for rec in recs:
            key = packs(key_func(rec), CP)
            old = get(key) if read else None
            put(key, pack(rec))
            if indexed:
                tail = b'\x01' + key[1:]
                new = [packs((rev_name(rec),), I1) + tail, packs((rev_location(rec),), I2) + tail]
                if old is not None:
                    value = unpack(old)
                    for entry in (packs((rev_name(value),), I1) + tail,
                                  packs((rev_location(value),), I2) + tail):
                        if entry not in new:
                            delete(entry)
                put(new[0], b'')
                put(new[1], b'')
    snap.close()


def ldb_pass(db):
    """raw_pass on plyvel."""
    if op in ('update', 'update_rec'):
        for i in range(0, len(sample), 1000):
            snap = db.snapshot()
            with db.write_batch() as batch:
                for rec in sample[i:i + 1000]:
                    key = packs(key_func(rec), CP)
                    value = unpack(snap.get(key))
                    tail = b'\x01' + key[1:]
                    old = [packs((rev_name(value),), I1) + tail,
                           packs((rev_location(value),), I2) + tail]
                    value['location'] += 'X'
                    new = [packs((rev_name(value),), I1) + tail,
                           packs((rev_location(value),), I2) + tail]
                    for old_entry, new_entry in zip(old, new):
                        if old_entry != new_entry:
                            batch.delete(old_entry)
                            batch.put(new_entry, b'')
                    batch.put(key, pack(value))
            snap.close()
        return
    snap = db.snapshot()
    if op == 'scan':
        for key, value in snap.iterator(start=CP, stop=I1):
            unpack(value)
    elif op == 'range':
        get = snap.get
        for start in starts:
            it = snap.iterator(start=packs((start,), I2), include_value=False)
            for n, entry in enumerate(it):
                if n == 1000:
                    break
                unpack(get(CP + entry[entry.index(b'\x01', 1) + 1:]))
            it.close()
    elif op == 'get':
        get = snap.get
        for rec in sample:
            unpack(get(packs(key_func(rec), CP)))
    elif op == 'groups':
        groups, head, count = [], None, 0
        for entry in snap.iterator(start=I2, stop=b'\x12', include_value=False):
            this = entry[:entry.index(b'\x01', 1)]
            if this == head:
                count += 1
                continue
            if head is not None:
                groups.append((keylib.unpacks(head, I2), count))
            head, count = this, 1
        if head is not None:
            groups.append((keylib.unpacks(head, I2), count))
    elif op == 'iget':
        get = snap.get
        it = snap.iterator(include_value=False)
        for rec in sample:
            packed = packs((rev_name(rec),), I1)
            it.seek(packed + b'\x01')
            unpack(get(CP + next(it)[len(packed) + 1:]))
        it.close()
    snap.close()


try:
    if op in INSERTS:
        for p in range(passes):
            if who == 'centidb':
                store, coll = centidb_store(f'{tmp}/c{p}', op != 'blind0')
                with store.begin(write=True) as txn:
                    if op == 'put_many':
                        coll.put_many(recs, txn=txn)
                    else:
                        blind = op != 'insert2r'
                        for rec in recs:
                            coll.put(rec, txn=txn, blind=blind)
                store.close()
            elif engine == 'leveldb':
                db = plyvel.DB(f'{tmp}/r{p}', create_if_missing=True)
                ldb_load(db, op != 'blind0', op == 'insert2r')
                db.close()
            else:
                env = lmdb.open(f'{tmp}/r{p}', map_size=1 << 30)
                with env.begin(write=True) as txn:
                    raw_load(txn, op != 'blind0', op == 'insert2r')
                env.close()
    elif who == 'centidb':
        store, coll = centidb_store(f'{tmp}/c')
        with store.begin(write=True) as txn:
            coll.put_many(recs, txn=txn, blind=True)
        for _ in range(passes):
            centidb_pass(store, coll)
        store.close()
    elif engine == 'leveldb':
        db = plyvel.DB(f'{tmp}/r', create_if_missing=True)
        ldb_load(db)
        for _ in range(passes):
            ldb_pass(db)
        db.close()
    else:
        env = lmdb.open(f'{tmp}/r', map_size=1 << 30)
        with env.begin(write=True) as txn:
            raw_load(txn)
        for _ in range(passes):
            raw_pass(env)
        env.close()
finally:
    shutil.rmtree(tmp)
