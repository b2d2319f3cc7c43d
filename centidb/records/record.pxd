# Types for Cython's compilation of record.py (centidb.impl.PURE_MODE):
# declarations only, the code is record.py's. reader.pxd and entry.pxd
# cimport from here.

cimport cython
from centidb.engines.fastcalls cimport FastCalls
from centidb.records.fastpath cimport (
    checked_engine_txn, delete_one, put_many, put_one, replace_one,
)
from centidb.msgpackcodec cimport MsgpackDecode, MsgpackEncode
from centidb._speedups cimport intact, seal, body_of, pack_entry, rejoined

cdef bytes _SEP, _EMPTY
cdef Py_ssize_t _FEW


cpdef tuple as_key(object value)


cdef class Record:
    cdef public object coll, data, key, _stored, _entries, _indexes, _key_bytes, _read_in
    cdef public Py_ssize_t _read_at


@cython.locals(fast=FastCalls)
cpdef Record seen(Record record, bytes key_bytes, etxn=*)

@cython.locals(record=Record)
cpdef Record new_record(coll, data, key, stored, list entries, tuple indexes, bytes key_bytes,
                        FastCalls fast)

@cython.locals(prefix=bytes)
cpdef list index_entries(tuple specs, data, bytes tail)

@cython.locals(msgpack_encode=MsgpackEncode)
cdef object _encoded(encode, data)

@cython.locals(value=bytes, trailer=Py_ssize_t)
cpdef object plain_body(stored, int plain_id, bint checksum)

@cython.locals(msgpack_decode=MsgpackDecode)
cpdef object decoded_body(decode, bytes body)

@cython.locals(entry=bytes)
cdef bint _any_longer(list entries, Py_ssize_t limit) except -1


@cython.final
cdef class RecordWriter:
    cdef readonly object coll, txns, txn_class, encode, compress, key_func, limit
    cdef readonly object old_entries, too_long, decode_plain
    cdef readonly bint usable, auto_key, checksum
    cdef readonly bytes header, prefix
    cdef readonly tuple specs, indexes
    cdef readonly int plain_id

    cdef list _old_entries(self, old, bytes entry_tail)

    @cython.locals(read=Record, fast=FastCalls, key_bytes=bytes, value=bytes,
                   entry_tail=bytes, entry=bytes, entries=list, pairs=list,
                   replaced=bint)
    cpdef write(self, txn, data, key, blind)

    @cython.locals(start=Py_ssize_t, reads=bint, checksum=bint, key_bytes=bytes, value=bytes,
                   entry_tail=bytes, entry=bytes, entries=list, pairs=list, keys=list,
                   counts=list, distinct=set, stale=list, lo=bytes, hi=bytes, header=bytes,
                   prefix=bytes, specs=tuple, key=tuple)
    cpdef write_many(self, etxn, list datas, bint blind, first_id)

    @cython.locals(latest=dict, merged=list, stale=list, at=Py_ssize_t, count=Py_ssize_t,
                   key_bytes=bytes, held=tuple)
    cpdef merge_stored(self, etxn, list pairs, list counts, Py_ssize_t start, bint found_old)
