# Twin of centidb/records/record.py: index entries, Record, and the common-case record
# writer and reader. Included by _speedups.pyx after _keylib.pxi. Each class and
# function mirrors the pure-Python one of the same name, which documents it;
# everything outside this module reaches it through constructor arguments.

@cython.binding(True)
def index_entries(tuple specs, data, bytes tail):
    """Mirrors centidb.records.index_entries."""
    return entries_of(specs, data, tail)


cdef list entries_of(tuple specs, data, bytes tail):
    # index_entries without a Python call, for this module's callers.
    cdef list entries = []
    cdef bytes prefix
    for func, prefix in specs:
        result = func(data)
        if result is None:
            continue
        if type(result) is list:
            for item in <list>result:
                entries.append(pack_entry(item, prefix, tail))
        else:
            entries.append(pack_entry(result, prefix, tail))
    return entries


cdef inline object encode_value(encode, data):
    """encode(data)."""
    return encode(data)


# crc32(value + trailer) of every intact sealed value (mirrors centidb.checksums.RESIDUE).
cdef unsigned long _CRC_RESIDUE = 0x2144DF1C


cdef bytes sealed(bytes header, unsigned long header_crc, object data):
    """header + data + the CRC-32 trailer of both, in one allocation (mirrors
    centidb.checksums.seal); `header_crc` is crc32(header)."""
    cdef bytes body = data if type(data) is bytes else bytes(data)
    cdef unsigned long crc = PyLong_AsUnsignedLong(_crc32(body, header_crc))
    cdef Py_ssize_t h = PyBytes_GET_SIZE(header), n = PyBytes_GET_SIZE(body)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, h + n + 4)
    cdef unsigned char *p = <unsigned char *>PyBytes_AS_STRING(out)
    memcpy(p, PyBytes_AS_STRING(header), h)
    memcpy(p + h, PyBytes_AS_STRING(body), n)
    p += h + n
    p[0] = crc & 0xFF
    p[1] = (crc >> 8) & 0xFF
    p[2] = (crc >> 16) & 0xFF
    p[3] = (crc >> 24) & 0xFF
    return out


cdef inline bint intact(bytes stored):
    """Mirrors centidb.checksums.intact."""
    return (PyBytes_GET_SIZE(stored) > 4
            and PyLong_AsUnsignedLong(_crc32(stored)) == _CRC_RESIDUE)


cdef inline tuple untracked(tuple items):
    """`items`, which holds only bytes and such tuples, left out of the garbage
    collector's lists: a long list of them costs no collection time (CPython
    untracks such a tuple itself, but only once a collection has walked it)."""
    PyObject_GC_UnTrack(<void *>items)
    return items


cdef inline tuple as_key(object value):
    """Mirrors centidb.records.as_key."""
    if type(value) is tuple:
        return <tuple>value
    return tuple(value) if isinstance(value, tuple) else (value,)


cdef class Record:
    """Mirrors centidb.records.Record."""

    cdef public object coll, data, key, _stored, _entries, _indexes, _key_bytes, _read_in
    cdef public Py_ssize_t _read_at

    def __init__(self, coll, data, key=None, _stored=None, _entries=None,
                 _indexes=None):
        self.coll = coll
        self.data = data
        self.key = key
        self._stored = _stored
        self._entries = _entries
        self._indexes = _indexes
        self._key_bytes = None
        self._read_in = None
        self._read_at = -1

    def __repr__(self):
        name = self.coll.name if self.coll is not None else None
        return f'<Record {name}:{self.key!r} {self.data!r}>'

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return (self.coll is other.coll and self.key == other.key
                and self.data == other.data)

    __hash__ = None


cdef Record new_record(coll, data, key, stored, entries, indexes, bytes key_bytes, fast):
    """Record(coll, data, key, stored, entries, indexes) without the call, seen under
    `key_bytes` in the engine transaction whose `fast` is `fast` (mirrors
    centidb.records.seen)."""
    cdef Record record = Record.__new__(Record)
    record.coll = coll
    record.data = data
    record.key = key
    record._stored = stored
    record._entries = entries
    record._indexes = indexes
    record._key_bytes = key_bytes
    record._read_in = fast
    record._read_at = fast_writes(fast)
    return record


cdef Py_ssize_t _FEW = 8  # mirrors centidb.records._FEW


cdef class RecordWriter:
    """Mirrors centidb.records.RecordWriter."""

    cdef readonly object coll, txns, txn_class, encode, compress, key_func, limit
    cdef readonly object old_entries, too_long, record_class
    cdef readonly bint usable, counted
    cdef readonly bytes header, prefix
    cdef readonly tuple specs, indexes
    cdef readonly int plain_id
    cdef readonly object decode_plain
    cdef readonly bint checksum
    cdef unsigned long header_crc

    def __init__(self, coll, txns, txn_class, usable, prefix, encode, compress, header,
                 key_func, specs, indexes, limit, old_entries, too_long, record_class,
                 counted=False, plain_id=-1, decode_plain=None, checksum=False):
        self.coll = coll
        self.txns = txns
        self.txn_class = txn_class
        self.usable = usable
        self.prefix = prefix
        self.encode = encode
        self.compress = compress
        self.header = header
        self.key_func = key_func
        self.specs = specs
        self.indexes = indexes
        self.limit = limit
        self.old_entries = old_entries
        self.too_long = too_long
        self.record_class = record_class
        self.counted = counted
        self.plain_id = plain_id
        self.decode_plain = decode_plain
        self.checksum = checksum
        self.header_crc = PyLong_AsUnsignedLong(_crc32(header))

    cdef object stored_entries(self, old, bytes entry_tail):
        # old_entries(old, entry_tail), decoding a plain msgpack record inline.
        cdef Py_ssize_t trailer = 4 if self.checksum else 0
        if (type(old) is bytes and PyBytes_GET_SIZE(old) > trailer
                and <unsigned char>PyBytes_AS_STRING(old)[0] == self.plain_id
                and (not trailer or intact(<bytes>old))):
            try:
                data = self.decode_plain(PyBytes_FromStringAndSize(
                    PyBytes_AS_STRING(old) + 1, PyBytes_GET_SIZE(old) - 1 - trailer))
            except Exception:
                return self.old_entries(old, entry_tail)   # raises the right error
            return entries_of(self.specs, data, entry_tail)
        return self.old_entries(old, entry_tail)

    cpdef write(self, txn, data, key, blind):
        """Mirrors centidb.records.RecordWriter.write."""
        cdef Py_ssize_t limit
        cdef bytes key_bytes, value, entry_tail, entry
        cdef list entries, writes
        cdef bint too_long, from_record = False
        cdef Record typed
        cdef Py_ssize_t read_at = -1
        etxn = checked_engine_txn(self.txns, self.txn_class, txn, True)
        if not self.usable or self.counted:
            return None
        # A Record's state, read from C fields (or, for a pure one, attributes).
        read_key_bytes = read_stored = read_entries = read_in = None
        if type(data) is Record:
            typed = <Record>data
            if typed.coll is not self.coll or typed._indexes is not self.indexes:
                return None
            from_record = True
            read_key_bytes, read_stored, read_entries = typed._key_bytes, typed._stored, typed._entries
            read_in, read_at, key_of_read, data = typed._read_in, typed._read_at, typed.key, typed.data
        elif type(data) is self.record_class:
            if data.coll is not self.coll or data._indexes is not self.indexes:
                return None
            from_record = True
            read_key_bytes, read_stored, read_entries = data._key_bytes, data._stored, data._entries
            read_in, read_at, key_of_read, data = data._read_in, data._read_at, data.key, data.data
        if from_record and key is None:
            key = key_of_read
        if key is None:
            if self.key_func is None:
                return None
            encoded = encode_value(self.encode, data)
            key = self.key_func(data)
        else:
            encoded = encode_value(self.encode, data)
        if self.compress is not None:
            encoded = self.compress(encoded)
        if self.checksum:
            value = sealed(self.header, self.header_crc, encoded)
        else:
            value = self.header + encoded
        key = as_key(key)
        key_bytes = pack_entry(key, self.prefix, b'')
        if self.specs:
            entry_tail = _ENTRY_SEP + key_bytes[PyBytes_GET_SIZE(self.prefix):]
            entries = entries_of(self.specs, data, entry_tail)
        else:
            entry_tail, entries = b'', []
        if self.limit is not None:
            limit = self.limit
            too_long = PyBytes_GET_SIZE(key_bytes) > limit
            for entry in entries:
                if PyBytes_GET_SIZE(entry) > limit:
                    too_long = True
            if too_long:
                self.too_long(key, key_bytes, entries)
        old = None
        cdef bint replaced = False
        fast = fast_of(etxn)
        if not blind and self.indexes:
            if read_in is fast and read_at == fast_writes(fast) and read_key_bytes == key_bytes:
                old = read_stored       # nothing was written in etxn since it was read
            elif fast_replace(fast) is not None:
                old = replace_one(etxn, fast, key_bytes, value)
                replaced = True
            else:
                get = fast_get(fast)
                old = etxn.get(key_bytes) if get is None else get(key_bytes)
        if not entries and old is None:
            if not replaced:
                put_one(etxn, fast, key_bytes, value)
            return new_record(self.coll, data, key, value, entries, self.indexes, key_bytes,
                              fast)
        writes = [] if replaced else [(key_bytes, value)]
        if old is None:
            for entry in entries:
                writes.append((entry, b''))
        else:
            if from_record and read_key_bytes == key_bytes and read_stored == old:
                old_entries = read_entries
            else:
                try:
                    old_entries = self.stored_entries(old, entry_tail)
                except BaseException:
                    if replaced:
                        put_one(etxn, fast, key_bytes, old)
                    raise
            had = old_entries if len(old_entries) <= _FEW else set(old_entries)
            has = entries if len(entries) <= _FEW else set(entries)
            for entry in old_entries:
                if entry not in has:
                    delete_one(etxn, fast, entry)
            for entry in entries:
                if entry not in had:
                    writes.append((entry, b''))
        if writes:
            put_many(etxn, fast, writes)
        return new_record(self.coll, data, key, value, entries, self.indexes, key_bytes, fast)

    def write_many(self, etxn, list datas, bint blind, first_id):
        """Mirrors centidb.records.RecordWriter.write_many."""
        cdef Py_ssize_t limit = 0, start
        cdef bint has_limit = self.limit is not None
        cdef bint reads = not blind and len(self.indexes) > 0
        cdef bint counting = first_id is not None
        cdef bytes key_bytes, value, entry_tail, entry, prefix = self.prefix
        cdef bytes header = self.header, lo = None, hi = None
        cdef list entries, writes = [], keys = [], counts = [], stale = []
        cdef set distinct = set()
        cdef tuple key
        cdef bint too_long, checksum = self.checksum
        cdef unsigned long header_crc = self.header_crc
        if not self.usable or (not counting and self.key_func is None):
            return None
        record_class = self.record_class
        for data in datas:
            if type(data) is Record or type(data) is record_class:
                return None
        encode, compress, key_func = self.encode, self.compress, self.key_func
        if has_limit:
            limit = self.limit
        next_id = first_id
        start = PyBytes_GET_SIZE(prefix)
        for data in datas:
            encoded = encode_value(encode, data)
            if counting:
                key = (next_id,)
                next_id += 1
            else:
                key = as_key(key_func(data))
            if compress is not None:
                encoded = compress(encoded)
            if checksum:
                value = sealed(header, header_crc, encoded)
            else:
                value = header + encoded
            key_bytes = pack_entry(key, prefix, b'')
            entry_tail = _ENTRY_SEP + key_bytes[start:]
            entries = entries_of(self.specs, data, entry_tail)
            if has_limit:
                too_long = PyBytes_GET_SIZE(key_bytes) > limit
                for entry in entries:
                    if PyBytes_GET_SIZE(entry) > limit:
                        too_long = True
                if too_long:
                    self.too_long(key, key_bytes, entries)
            keys.append(key)
            writes.append(untracked((key_bytes, value)))
            for entry in entries:
                writes.append(untracked((entry, b'')))
            if reads:
                counts.append(len(entries))
                distinct.add(key_bytes)
                if lo is None or key_bytes < lo:
                    lo = key_bytes
                if hi is None or key_bytes > hi:
                    hi = key_bytes
        if reads and keys:
            stored = etxn.first(lo, hi + b'\x00') is not None
            if stored or len(distinct) < len(keys):
                writes, stale = self.merge_stored(etxn, writes, counts, start, stored)
        for entry in stale:
            etxn.delete(entry)
        if writes:
            etxn._put_many(writes)
        return keys

    @cython.boundscheck(True)    # public: a caller's inconsistent lists must raise
    def merge_stored(self, etxn, list writes, list counts, Py_ssize_t start, bint stored):
        """Mirrors centidb.records.RecordWriter.merge_stored."""
        cdef dict latest = {}
        cdef list merged = [], stale = []
        cdef Py_ssize_t at = 0, count
        cdef bytes key_bytes
        cdef tuple held
        for count in counts:
            key_bytes, value = <tuple?>writes[at]
            latest[key_bytes] = untracked((value, untracked(
                tuple([(<tuple?>pair)[0] for pair in writes[at + 1:at + 1 + count]]))))
            at += 1 + count
        get = fast_get(fast_of(etxn))
        olds = iter(etxn.get_many(list(latest))) if stored and get is None else None
        for key_bytes, pending in latest.items():
            value, held = <tuple>pending
            if not stored:
                old = None
            else:
                old = next(olds) if olds is not None else get(key_bytes)
            if old is not None:
                old_entries = self.stored_entries(old, _ENTRY_SEP + key_bytes[start:])
                if old_entries:
                    keep = set(held)
                    for entry in old_entries:
                        if entry not in keep:
                            stale.append(entry)
            merged.append(untracked((key_bytes, value)))
            for entry in held:
                merged.append(untracked((entry, b'')))
        return merged, stale


cdef bytes _AFTER_KEY_SEP = bytes([KEY_SEP + 1])

# What a record scan yields (mirrors centidb.records).
cdef enum:
    _VALUES = 0
    _ITEMS = 1
    _KEYS = 2
    _INDEX_VALUES = 3
    _INDEX_ITEMS = 4


cdef tuple split_first(bytes buf, bytes prefix, Py_ssize_t *end, bint keep=True):
    """Mirrors centidb.keylib.split_first, setting *end to the position; without
    `keep`, the elements are only checked, and None is returned."""
    cdef Reader r
    cdef list elements = []
    start_reader(&r, buf, prefix)
    while r.pos < r.n:
        if r.s[r.pos] == KEY_SEP:
            end[0] = r.pos + 1
            return tuple(elements) if keep else None
        if keep:
            elements.append(read_element(&r))
        else:
            skip_element(&r)
    end[0] = 0
    return tuple(elements) if keep else None


cdef class RecordReader:
    """Mirrors centidb.records.RecordReader."""

    cdef readonly object txns, txn_class, decode_plain, decode, limit
    cdef readonly object batch_get, missing, corrupt_entry, corrupt_record
    cdef readonly object corrupt_key, batch_items, end, coll
    cdef readonly tuple specs, indexes
    cdef readonly bytes prefix
    cdef readonly int plain_id, batch_flag
    cdef readonly bint batched, checksum

    def __init__(self, txns, txn_class, prefix, plain_id, decode_plain, decode, limit,
                 batched, batch_get, missing, corrupt_entry, corrupt_record, corrupt_key,
                 batch_items, batch_flag, end, coll=None, specs=(), indexes=(),
                 checksum=False):
        self.txns = txns
        self.txn_class = txn_class
        self.prefix = prefix
        self.plain_id = plain_id
        self.decode_plain = decode_plain
        self.decode = decode
        self.limit = limit
        self.batched = batched
        self.batch_get = batch_get
        self.missing = missing
        self.corrupt_entry = corrupt_entry
        self.corrupt_record = corrupt_record
        self.corrupt_key = corrupt_key
        self.batch_items = batch_items
        self.batch_flag = batch_flag
        self.end = end
        self.coll = coll
        self.specs = specs
        self.indexes = indexes
        self.checksum = checksum

    cdef object stored(self, etxn, bytes key_bytes):
        if self.batched:
            return self.batch_get(etxn, key_bytes)
        getter = fast_get(fast_of(etxn))
        if getter is None or (self.limit is not None
                                and PyBytes_GET_SIZE(key_bytes) > <Py_ssize_t>self.limit):
            return etxn.get(key_bytes)
        return getter(key_bytes)

    cdef object decode_stored(self, key_bytes, stored):
        # With checksums, a damaged value goes to decode(), which raises the error.
        cdef Py_ssize_t trailer = 4 if self.checksum else 0
        try:
            if type(stored) is bytes:
                if (PyBytes_GET_SIZE(stored) > trailer
                        and <unsigned char>PyBytes_AS_STRING(stored)[0] == self.plain_id
                        and (not trailer or intact(<bytes>stored))):
                    # The tail, copied without a slice object.
                    tail = PyBytes_FromStringAndSize(PyBytes_AS_STRING(stored) + 1,
                                                     PyBytes_GET_SIZE(stored) - 1 - trailer)
                    return self.decode_plain(tail)
            elif not trailer and stored[0] == self.plain_id:
                return self.decode_plain(stored[1:])
            return self.decode(stored)
        except CentiError:
            raise
        except Exception as exc:
            raise self.corrupt_record(key_bytes, exc) from exc

    cpdef get(self, txn, key, default):
        """Mirrors centidb.records.RecordReader.get."""
        key_bytes = pack_entry(as_key(key), self.prefix, b'')
        stored = self.read(checked_engine_txn(self.txns, self.txn_class, txn, False),
                           key_bytes)
        if stored is None:
            return default
        return self.decode_stored(key_bytes, stored)

    cpdef get_record(self, txn, key, default):
        """Mirrors centidb.records.RecordReader.get_record."""
        key = as_key(key)
        key_bytes = pack_entry(key, self.prefix, b'')
        etxn = checked_engine_txn(self.txns, self.txn_class, txn, False)
        stored = self.read(etxn, key_bytes)
        if stored is None:
            return default
        data = self.decode_stored(key_bytes, stored)
        entries = entries_of(
            self.specs, data, _ENTRY_SEP + key_bytes[PyBytes_GET_SIZE(self.prefix):])
        return new_record(self.coll, data, key, stored, entries, self.indexes, key_bytes,
                          fast_of(etxn))

    cdef object read(self, etxn, bytes key_bytes):
        stored = self.stored(etxn, key_bytes)
        if stored is None and not self.batched:
            stored = self.batch_get(etxn, key_bytes)
        return stored

    def values(self, etxn, bytes lo, bytes hi, reverse):
        """Mirrors centidb.records.RecordReader.values."""
        return self._scan(etxn, lo, hi, reverse, _VALUES)

    def items(self, etxn, bytes lo, bytes hi, reverse):
        """Mirrors centidb.records.RecordReader.items."""
        return self._scan(etxn, lo, hi, reverse, _ITEMS)

    def keys(self, etxn, bytes lo, bytes hi, reverse):
        """Mirrors centidb.records.RecordReader.keys."""
        return self._scan(etxn, lo, hi, reverse, _KEYS)

    cdef bint is_batch(self, found):
        if found is None:
            return False
        stored = found[1]
        return len(stored) > 0 and stored[0] & self.batch_flag

    def _scan(self, etxn, lo, hi, bint reverse, int what, bytes index_prefix=b'',
             index_name=''):
        """Mirrors centidb.records.RecordReader._scan."""
        cdef list chunk
        cdef tuple pair
        cdef bytes key_bytes, stored, last = None
        cdef bint restart = True
        cdef bint records = what < _INDEX_VALUES
        cdef dict fetched = None
        cdef int flag = self.batch_flag
        cdef Py_ssize_t i, n, writes
        if records and reverse and self.is_batch(etxn.first(hi, self.end)):
            yield from self._expanded(etxn, lo, hi, True, what)
            return
        while restart:
            restart = False
            if last is not None:
                if reverse:
                    hi = last
                else:
                    lo = last + b'\x00'
            fast = fast_of(etxn)
            writes = fast_writes(fast)
            chunks = etxn.item_chunks(lo, hi, reverse)
            try:
                for chunk in chunks:
                    if not records and fast_get(fast) is None:
                        fetched = self._fetched(etxn, chunk, index_prefix)
                    n = len(chunk)
                    for i in range(n):
                        if fast_writes(fast) != writes:
                            restart = True
                            break
                        pair = <tuple>chunk[i]
                        key_bytes = <bytes>pair[0]
                        if not records:
                            yield self.entry_output(etxn, key_bytes, index_prefix, index_name,
                                                    what, fetched)
                            last = key_bytes
                            continue
                        stored = <bytes>pair[1]
                        if (PyBytes_GET_SIZE(stored) == 0
                                or (<unsigned char>PyBytes_AS_STRING(stored)[0]) & flag):
                            if last is not None:
                                if reverse:
                                    hi = last
                                else:
                                    lo = last + b'\x00'
                            yield from self._expanded(etxn, lo, hi, reverse, what)
                            return
                        if what == _VALUES:
                            yield self.decode_stored(key_bytes, stored)
                        else:
                            yield self.output(key_bytes, stored, what)
                        last = key_bytes
                    if restart:
                        break
            finally:
                chunks.close()
        if records and not reverse and self.is_batch(etxn.first(hi, self.end)):
            if last is not None:
                lo = last + b'\x00'
            yield from self._expanded(etxn, lo, hi, False, what)

    def _fetched(self, etxn, list chunk, bytes index_prefix):
        """Mirrors centidb.records.RecordReader._fetched."""
        cdef Py_ssize_t pos
        cdef list keys = []
        for entry, _ in chunk:
            try:
                split_first(entry, index_prefix, &pos, False)
            except CorruptKeyError:
                break
            if not pos:
                break
            keys.append(self.prefix + entry[pos:])
        return dict(zip(keys, etxn.get_many(keys)))

    cdef object entry_output(self, etxn, bytes entry, bytes index_prefix, index_name,
                             int what, dict fetched):
        cdef Py_ssize_t pos
        tup = split_first(entry, index_prefix, &pos, what == _INDEX_ITEMS)
        if not pos:
            raise self.corrupt_entry(entry)
        key_bytes = self.prefix + entry[pos:]
        if fetched is not None and key_bytes in fetched and not self.batched:
            stored = fetched[key_bytes]
        else:
            stored = self.stored(etxn, key_bytes)
        if stored is None and not self.batched:
            stored = self.batch_get(etxn, key_bytes)
        if stored is None:
            raise self.missing(index_name, unpacks(key_bytes, self.prefix))
        if what == _INDEX_ITEMS:
            return tup, self.decode_stored(key_bytes, stored)
        return self.decode_stored(key_bytes, stored)

    def _expanded(self, etxn, lo, hi, reverse, int what):
        """Mirrors centidb.records.RecordReader._expanded."""
        for key_bytes, stored in self.batch_items(etxn, lo, hi, reverse):
            yield self.output(key_bytes, stored, what)

    cdef object output(self, key_bytes, stored, int what):
        if what == _VALUES:
            return self.decode_stored(key_bytes, stored)
        try:
            key = unpacks(key_bytes, self.prefix)
        except CorruptKeyError as exc:
            raise self.corrupt_key(key_bytes, exc) from None
        if what == _KEYS:
            return key
        return key, self.decode_stored(key_bytes, stored)

    cpdef index_get(self, txn, bytes index_prefix, index_name, x, default):
        """Mirrors centidb.records.RecordReader.index_get."""
        cdef bytes packed = pack_entry(as_key(x), index_prefix, b'')
        etxn = checked_engine_txn(self.txns, self.txn_class, txn, False)
        entry = first_key(etxn, packed + _ENTRY_SEP, packed + _AFTER_KEY_SEP)
        if entry is None:
            return default
        key_bytes = self.prefix + entry[PyBytes_GET_SIZE(packed) + 1:]
        stored = self.stored(etxn, key_bytes)
        if stored is None and not self.batched:
            stored = self.batch_get(etxn, key_bytes)
        if stored is None:
            raise self.missing(index_name, unpacks(key_bytes, self.prefix))
        return self.decode_stored(key_bytes, stored)

    def index_records(self, bytes index_prefix, index_name, bint items, etxn, lo, hi,
                      reverse):
        """Mirrors centidb.records.RecordReader.index_records."""
        return self._scan(etxn, lo, hi, reverse, _INDEX_ITEMS if items else _INDEX_VALUES,
                         index_prefix, index_name)
