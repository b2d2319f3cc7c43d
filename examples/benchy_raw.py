"""examples/benchy.py's raw baselines: hand-written loops on py-lmdb and plyvel.

They store exactly the keys centidb stores: the collection prefix plus the
packed key; an index entry is the packed index value under the index's
prefix, 0x01, and the packed key without the collection prefix (0x01 never
occurs in a packed str, so the first one after the prefix ends the index
value). Values are plain msgpack, without centidb's header byte. Every timed
loop packs its own keys, as an application would, and binds what it calls
to locals, as a capable engineer writing for speed would. The methods are
those of ``benchy_backends``' classes.
"""

from __future__ import annotations

import time

import lmdb
import msgpack
import plyvel

from benchy_backends import (LMDB_MAP_SIZE, MOVED, RANGE_LEN, chunks, compact_leveldb,
                             dir_bytes, lmdb_bytes, wipe)
from centidb import keylib


def _packer():
    return msgpack.Packer(use_bin_type=True).pack


class RawLmdb:
    """py-lmdb: one environment, the default database."""

    def __init__(self, engine, path, data):
        self.path, self.data = path, data
        self.env = None

    def open(self, indexed, durable=False):
        self.indexed = indexed
        self.env = lmdb.open(self.path, map_size=LMDB_MAP_SIZE, sync=durable)

    def _write(self, txn, records, blind):
        """Store `records` (and their index entries) in the write transaction `txn`."""
        (coll, idx1, idx2), pack = self.data.prefixes, _packer()
        unpackb, packs, n = msgpack.unpackb, keylib.packs, len(coll)
        put = txn.put
        if not self.indexed:
            # Without indexes, overwriting needs no read: blind or not is
            # the same loop.
            for rec in records:
                put(packs((rec['name'], rec['location']), coll), pack(rec))
        elif blind:
            for rec in records:
                key = packs((rec['name'], rec['location']), coll)
                put(key, pack(rec))
                tail = b'\x01' + key[n:]
                put(packs(rec['name'][::-1], idx1) + tail, b'')
                put(packs(rec['location'][::-1], idx2) + tail, b'')
        else:
            replace, delete = txn.replace, txn.delete
            for rec in records:
                key = packs((rec['name'], rec['location']), coll)
                old = replace(key, pack(rec))
                tail = b'\x01' + key[n:]
                e1 = packs(rec['name'][::-1], idx1) + tail
                e2 = packs(rec['location'][::-1], idx2) + tail
                if old is not None:
                    old = unpackb(old)
                    for entry in (packs(old['name'][::-1], idx1) + tail,
                                  packs(old['location'][::-1], idx2) + tail):
                        if entry != e1 and entry != e2:
                            delete(entry)
                put(e1, b'')
                put(e2, b'')

    def insert(self, blind):
        records, begin, write = self.data.records, self.env.begin, self._write
        start = time.perf_counter()
        with begin(write=True) as txn:
            write(txn, records, blind)
        return time.perf_counter() - start

    def insert_chunked(self, records):
        begin, write, parts = self.env.begin, self._write, chunks(records)
        start = time.perf_counter()
        for part in parts:
            with begin(write=True) as txn:
                write(txn, part, False)
        return time.perf_counter() - start

    def check(self, keys_written):
        assert self.env.stat()['entries'] == keys_written, self.env.stat()

    def size(self, compact=False):
        env = self.env
        return lmdb_bytes(self.path, (lambda dest: env.copy(dest, compact=True))
                          if compact else None)

    def get_by_key(self, keys=None):
        keys = self.data.sample_keys if keys is None else keys
        coll, unpackb, packs = self.data.prefixes[0], msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        with self.env.begin() as txn:
            get = txn.get
            for key in keys:
                value = unpackb(get(packs(key, coll)))
        return time.perf_counter() - start, value

    def get_by_index(self):
        revs, (coll, idx1, _) = self.data.sample_revs, self.data.prefixes
        unpackb, packs = msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        with self.env.begin() as txn:
            get, cursor = txn.get, txn.cursor()
            set_range, cursor_key = cursor.set_range, cursor.key
            for rev in revs:
                head = packs(rev, idx1) + b'\x01'
                value = None
                if set_range(head):
                    entry = cursor_key()
                    if entry.startswith(head):
                        value = unpackb(get(coll + entry[len(head):]))
        return time.perf_counter() - start, value

    def range_scan(self):
        coll, _, idx2 = self.data.prefixes
        hi, start_at = keylib.next_prefix(idx2), len(idx2)
        unpackb = msgpack.unpackb
        start = time.perf_counter()
        with self.env.begin() as txn:
            get, cursor = txn.get, txn.cursor()
            if cursor.set_range(idx2):
                for entry in cursor.iternext(values=False):
                    if entry >= hi:
                        break
                    value = unpackb(get(coll + entry[entry.index(b'\x01', start_at) + 1:]))
        return time.perf_counter() - start, value

    def ranges(self):
        coll, _, idx2 = self.data.prefixes
        hi, start_at, starts = keylib.next_prefix(idx2), len(idx2), self.data.range_starts
        unpackb, packs = msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        with self.env.begin() as txn:
            get, cursor = txn.get, txn.cursor()
            set_range, iternext = cursor.set_range, cursor.iternext
            for lo in starts:
                left = RANGE_LEN
                if set_range(packs(lo, idx2)):
                    for entry in iternext(values=False):
                        if entry >= hi:
                            break
                        value = unpackb(get(coll + entry[entry.index(b'\x01', start_at) + 1:]))
                        left -= 1
                        if not left:
                            break
        return time.perf_counter() - start, value

    def full_scan(self):
        coll, unpackb = self.data.prefixes[0], msgpack.unpackb
        hi = keylib.next_prefix(coll)
        start = time.perf_counter()
        with self.env.begin() as txn:
            cursor = txn.cursor()
            if cursor.set_range(coll):
                for key, stored in cursor.iternext():
                    if key >= hi:
                        break
                    value = unpackb(stored)
        return time.perf_counter() - start, value

    def group_counts(self):
        idx2 = self.data.prefixes[2]
        hi, start_at, unpacks = keylib.next_prefix(idx2), len(idx2), keylib.unpacks
        start = time.perf_counter()
        groups, head, count = [], None, 0
        with self.env.begin() as txn:
            cursor = txn.cursor()
            if cursor.set_range(idx2):
                for entry in cursor.iternext(values=False):
                    if entry >= hi:
                        break
                    this = entry[:entry.index(b'\x01', start_at)]
                    if this == head:
                        count += 1
                        continue
                    if head is not None:
                        groups.append((unpacks(head, idx2), count))
                    head, count = this, 1
        if head is not None:
            groups.append((unpacks(head, idx2), count))
        return time.perf_counter() - start, (len(groups), groups[-1])

    def update(self):
        (coll, idx1, idx2), pack = self.data.prefixes, _packer()
        unpackb, packs, n = msgpack.unpackb, keylib.packs, len(coll)
        begin, parts = self.env.begin, chunks(self.data.update_keys)
        start = time.perf_counter()
        for part in parts:
            with begin(write=True) as txn:
                get, put, delete = txn.get, txn.put, txn.delete
                for key in part:
                    key_bytes = packs(key, coll)
                    rec = unpackb(get(key_bytes))
                    tail = b'\x01' + key_bytes[n:]
                    old1 = packs(rec['name'][::-1], idx1) + tail
                    old2 = packs(rec['location'][::-1], idx2) + tail
                    rec['location'] += MOVED
                    new1 = packs(rec['name'][::-1], idx1) + tail
                    new2 = packs(rec['location'][::-1], idx2) + tail
                    if new1 != old1:
                        delete(old1)
                        put(new1, b'')
                    if new2 != old2:
                        delete(old2)
                        put(new2, b'')
                    put(key_bytes, pack(rec))
        return time.perf_counter() - start

    def check_update(self, rev):
        coll, _, idx2 = self.data.prefixes
        head = keylib.packs(rev, idx2) + b'\x01'
        with self.env.begin() as txn:
            cursor = txn.cursor()
            assert cursor.set_range(head) and cursor.key().startswith(head), rev
            return msgpack.unpackb(txn.get(coll + cursor.key()[len(head):]))

    def add_index(self):
        """Index every stored record by rev_location, in one write transaction."""
        coll, _, idx2 = self.data.prefixes
        hi, n, unpackb, packs = keylib.next_prefix(coll), len(coll), msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        with self.env.begin(write=True) as txn:
            put, cursor = txn.put, txn.cursor()
            if cursor.set_range(coll):
                for key, value in cursor.iternext():
                    if key >= hi:
                        break
                    put(packs(unpackb(value)['location'][::-1], idx2) + b'\x01' + key[n:], b'')
        return time.perf_counter() - start

    def close(self, keep=False):
        if self.env is not None:
            self.env.close()
            self.env = None
        if not keep:
            wipe(self.path)


class RawPlyvel:
    """plyvel: writes through one WriteBatch per transaction, reads from a snapshot."""

    def __init__(self, engine, path, data):
        self.path, self.data = path, data
        self.db = None

    def open(self, indexed, durable=False):
        self.indexed, self.durable = indexed, durable
        self.db = plyvel.DB(self.path, create_if_missing=True)

    def _write(self, batch, records, blind):
        """Add `records` (and their index entries) to `batch`.

        Not blind, it reads the committed database only: a key written
        twice in one batch would leave a stale entry (the keys here are
        unique).
        """
        (coll, idx1, idx2), pack = self.data.prefixes, _packer()
        unpackb, packs, n = msgpack.unpackb, keylib.packs, len(coll)
        put = batch.put
        if not self.indexed:
            for rec in records:
                put(packs((rec['name'], rec['location']), coll), pack(rec))
        elif blind:
            for rec in records:
                key = packs((rec['name'], rec['location']), coll)
                put(key, pack(rec))
                tail = b'\x01' + key[n:]
                put(packs(rec['name'][::-1], idx1) + tail, b'')
                put(packs(rec['location'][::-1], idx2) + tail, b'')
        else:
            get, delete = self.db.get, batch.delete
            for rec in records:
                key = packs((rec['name'], rec['location']), coll)
                old = get(key)
                put(key, pack(rec))
                tail = b'\x01' + key[n:]
                e1 = packs(rec['name'][::-1], idx1) + tail
                e2 = packs(rec['location'][::-1], idx2) + tail
                if old is not None:
                    old = unpackb(old)
                    for entry in (packs(old['name'][::-1], idx1) + tail,
                                  packs(old['location'][::-1], idx2) + tail):
                        if entry != e1 and entry != e2:
                            delete(entry)
                put(e1, b'')
                put(e2, b'')

    def insert(self, blind):
        records, write_batch, write = self.data.records, self.db.write_batch, self._write
        start = time.perf_counter()
        batch = write_batch(sync=self.durable)
        write(batch, records, blind)
        batch.write()
        return time.perf_counter() - start

    def insert_chunked(self, records):
        write_batch, write, parts = self.db.write_batch, self._write, chunks(records)
        sync = self.durable
        start = time.perf_counter()
        for part in parts:
            batch = write_batch(sync=sync)
            write(batch, part, False)
            batch.write()
        return time.perf_counter() - start

    def check(self, keys_written):
        found = sum(1 for _ in self.db.iterator(include_value=False))
        assert found == keys_written, (found, keys_written)

    def settle(self):
        compact_leveldb(self.db)

    def size(self, compact=False):
        compact_leveldb(self.db)
        return dir_bytes(self.path)

    def get_by_key(self, keys=None):
        keys = self.data.sample_keys if keys is None else keys
        coll, unpackb, packs = self.data.prefixes[0], msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        get = snapshot.get
        for key in keys:
            value = unpackb(get(packs(key, coll)))
        snapshot.close()
        return time.perf_counter() - start, value

    def get_by_index(self):
        revs, (coll, idx1, _) = self.data.sample_revs, self.data.prefixes
        unpackb, packs = msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        get = snapshot.get
        it = snapshot.iterator(include_value=False)  # one iterator, re-seeked
        seek = it.seek
        for rev in revs:
            head = packs(rev, idx1) + b'\x01'
            seek(head)
            entry = next(it, b'')
            value = unpackb(get(coll + entry[len(head):])) if entry.startswith(head) else None
        it.close()
        snapshot.close()
        return time.perf_counter() - start, value

    def range_scan(self):
        coll, _, idx2 = self.data.prefixes
        start_at, unpackb = len(idx2), msgpack.unpackb
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        get = snapshot.get
        with snapshot.iterator(prefix=idx2, include_value=False) as it:
            for entry in it:
                value = unpackb(get(coll + entry[entry.index(b'\x01', start_at) + 1:]))
        snapshot.close()
        return time.perf_counter() - start, value

    def ranges(self):
        coll, _, idx2 = self.data.prefixes
        start_at, starts = len(idx2), self.data.range_starts
        unpackb, packs = msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        get = snapshot.get
        with snapshot.iterator(prefix=idx2, include_value=False) as it:
            seek = it.seek      # one iterator, re-seeked
            for lo in starts:
                seek(packs(lo, idx2))
                left = RANGE_LEN
                for entry in it:
                    value = unpackb(get(coll + entry[entry.index(b'\x01', start_at) + 1:]))
                    left -= 1
                    if not left:
                        break
        snapshot.close()
        return time.perf_counter() - start, value

    def full_scan(self):
        coll, unpackb = self.data.prefixes[0], msgpack.unpackb
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        with snapshot.iterator(prefix=coll, include_key=False) as it:
            for stored in it:
                value = unpackb(stored)
        snapshot.close()
        return time.perf_counter() - start, value

    def group_counts(self):
        idx2 = self.data.prefixes[2]
        start_at, unpacks = len(idx2), keylib.unpacks
        start = time.perf_counter()
        groups, head, count = [], None, 0
        snapshot = self.db.snapshot()
        with snapshot.iterator(prefix=idx2, include_value=False) as it:
            for entry in it:
                this = entry[:entry.index(b'\x01', start_at)]
                if this == head:
                    count += 1
                    continue
                if head is not None:
                    groups.append((unpacks(head, idx2), count))
                head, count = this, 1
        snapshot.close()
        if head is not None:
            groups.append((unpacks(head, idx2), count))
        return time.perf_counter() - start, (len(groups), groups[-1])

    def update(self):
        (coll, idx1, idx2), pack = self.data.prefixes, _packer()
        unpackb, packs, n = msgpack.unpackb, keylib.packs, len(coll)
        get, write_batch = self.db.get, self.db.write_batch
        parts = chunks(self.data.update_keys)
        start = time.perf_counter()
        for part in parts:
            batch = write_batch()
            put, delete = batch.put, batch.delete
            for key in part:     # distinct keys: reading the committed DB is right
                key_bytes = packs(key, coll)
                rec = unpackb(get(key_bytes))
                tail = b'\x01' + key_bytes[n:]
                old1 = packs(rec['name'][::-1], idx1) + tail
                old2 = packs(rec['location'][::-1], idx2) + tail
                rec['location'] += MOVED
                new1 = packs(rec['name'][::-1], idx1) + tail
                new2 = packs(rec['location'][::-1], idx2) + tail
                if new1 != old1:
                    delete(old1)
                    put(new1, b'')
                if new2 != old2:
                    delete(old2)
                    put(new2, b'')
                put(key_bytes, pack(rec))
            batch.write()
        return time.perf_counter() - start

    def check_update(self, rev):
        coll, _, idx2 = self.data.prefixes
        head = keylib.packs(rev, idx2) + b'\x01'
        with self.db.iterator(prefix=head, include_value=False) as it:
            entry = next(it)
        return msgpack.unpackb(self.db.get(coll + entry[len(head):]))

    def add_index(self):
        """Index every stored record by rev_location, in one WriteBatch."""
        coll, _, idx2 = self.data.prefixes
        n, unpackb, packs = len(coll), msgpack.unpackb, keylib.packs
        start = time.perf_counter()
        snapshot = self.db.snapshot()
        batch = self.db.write_batch()
        put = batch.put
        with snapshot.iterator(prefix=coll) as it:
            for key, value in it:
                put(packs(unpackb(value)['location'][::-1], idx2) + b'\x01' + key[n:], b'')
        batch.write()
        snapshot.close()
        return time.perf_counter() - start

    def close(self, keep=False):
        if self.db is not None:
            self.db.close()
            self.db = None
        if not keep:
            wipe(self.path)

