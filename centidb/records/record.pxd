# Types for Cython's compilation of record.py (centidb.impl.PURE_MODE):
# declarations only, the code is record.py's.

cimport cython
from centidb.engines.fastcalls cimport FastCalls
from centidb.records.fastpath cimport (
    checked_engine_txn, delete_one, first_key, put_many, put_one, replace_one,
)
from centidb.msgpackcodec cimport MsgpackDecode, MsgpackEncode
from centidb._speedups cimport intact, seal, body_of, first_key_end, pack_entry, rejoined, split_first

cdef bytes _SEP, _AFTER_KEY_SEP, _EMPTY
cdef int _VALUES, _ITEMS, _KEYS, _INDEX_VALUES, _INDEX_ITEMS
cdef Py_ssize_t _FEW


cpdef tuple as_key(object value)


cdef class Record:
    cdef public object coll, data, key, _stored, _entries, _indexes, _key_bytes, _read_in
    cdef public Py_ssize_t _read_at


@cython.locals(fast=FastCalls)
cpdef Record seen(Record record, bytes key_bytes, etxn=*)

@cython.locals(record=Record)
cdef Record new_record(coll, data, key, stored, list entries, tuple indexes, bytes key_bytes,
                       FastCalls fast)

@cython.locals(prefix=bytes)
cpdef list index_entries(tuple specs, data, bytes tail)

cdef tuple _past(bytes last, lo, hi, bint reverse)


@cython.final
cdef class RecordWriter:
    cdef readonly object coll, txns, txn_class, encode, compress, key_func, limit
    cdef readonly object old_entries, too_long, decode_plain
    cdef readonly bint usable, counted, checksum
    cdef readonly bytes header, prefix
    cdef readonly tuple specs, indexes
    cdef readonly int plain_id

    @cython.locals(trailer=Py_ssize_t, body=bytes)
    cdef list _old_entries(self, old, bytes entry_tail)

    @cython.locals(read=Record, fast=FastCalls, key_bytes=bytes, value=bytes,
                   entry_tail=bytes, entry=bytes, entries=list, writes=list,
                   replaced=bint)
    cpdef write(self, txn, data, key, blind)

    @cython.locals(start=Py_ssize_t, reads=bint, checksum=bint, key_bytes=bytes, value=bytes,
                   entry_tail=bytes, entry=bytes, entries=list, writes=list, keys=list,
                   counts=list, distinct=set, stale=list, lo=bytes, hi=bytes, header=bytes,
                   prefix=bytes, specs=tuple, key=tuple)
    cpdef write_many(self, etxn, list datas, bint blind, first_id)

    @cython.locals(latest=dict, merged=list, stale=list, at=Py_ssize_t, count=Py_ssize_t,
                   key_bytes=bytes, held=tuple)
    cpdef merge_stored(self, etxn, list writes, list counts, Py_ssize_t start, bint stored)


@cython.final
cdef class RecordReader:
    cdef readonly object txns, txn_class, decode_plain, decode, limit
    cdef readonly object batch_get, missing, corrupt_entry, corrupt_record
    cdef readonly object corrupt_key, batch_items, end, coll
    cdef readonly tuple specs, indexes
    cdef readonly bytes prefix
    cdef readonly int plain_id, batch_flag
    cdef readonly bint batched, checksum

    @cython.locals(fast=FastCalls)
    cdef object _stored(self, etxn, bytes key_bytes)
    cpdef get(self, txn, key, default)
    @cython.locals(key_bytes=bytes)
    cpdef get_record(self, txn, key, default)
    cdef object _read(self, etxn, bytes key_bytes)
    @cython.locals(trailer=Py_ssize_t, body=bytes)
    cdef object _decoded(self, key_bytes, stored)
    @cython.locals(keys=list, pos=Py_ssize_t)
    cpdef dict _fetched(self, etxn, list chunk, bytes index_prefix)
    @cython.locals(key_bytes=bytes, pos=Py_ssize_t)
    cdef object _entry_output(self, etxn, bytes entry, bytes index_prefix, index_name,
                              int what, dict fetched)
    cdef object _output(self, key_bytes, stored, int what)
    @cython.locals(packed=bytes, key_bytes=bytes)
    cpdef index_get(self, txn, bytes index_prefix, index_name, x, default)

@cython.locals(entry=bytes)
cdef bint _any_longer(list entries, Py_ssize_t limit) except -1

cdef object _reader_get(RecordReader reader, txn, key, default, bint rec)
cdef object _reader_index_get(RecordReader reader, txn, bytes index_prefix, index_name, x,
                              default)
cdef object _writer_write(writer, txn, data, key, blind)
cdef object _bare_write(RecordWriter writer, txn, data, key, blind)

@cython.locals(msgpack_encode=MsgpackEncode)
cdef object _encoded(encode, data)
@cython.locals(msgpack_decode=MsgpackDecode)
cdef object _decoded_body(decode, bytes body)
