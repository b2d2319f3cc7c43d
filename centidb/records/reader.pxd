# Types for Cython's compilation of reader.py (centidb.impl.PURE_MODE):
# declarations only, the code is reader.py's. entry.pxd cimports RecordReader.

cimport cython
from centidb.engines.fastcalls cimport FastCalls
from centidb.records.fastpath cimport checked_engine_txn, first_key
from centidb.records.record cimport decoded_body, index_entries, new_record, plain_body
from centidb._speedups cimport first_key_end, pack_entry, rejoined, split_first

cdef bytes _SEP, _AFTER_KEY_SEP, _EMPTY
cdef int _VALUES, _ITEMS, _KEYS, _INDEX_VALUES, _INDEX_ITEMS

cdef tuple _past(bytes last, lo, hi, bint reverse)


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
    cdef object _decoded(self, key_bytes, stored)
    @cython.locals(keys=list, pos=Py_ssize_t)
    cpdef dict _fetched(self, etxn, list chunk, bytes index_prefix)
    @cython.locals(key_bytes=bytes, pos=Py_ssize_t)
    cdef object _entry_output(self, etxn, bytes entry, bytes index_prefix, index_name,
                              int what, dict fetched)
    cdef object _output(self, key_bytes, stored, int what)
    @cython.locals(packed=bytes, key_bytes=bytes)
    cpdef index_get(self, txn, bytes index_prefix, index_name, x, default)
