# Types for Cython's compilation of entry.py (centidb.impl.PURE_MODE):
# declarations only, the code is entry.py's.

from centidb.records.reader cimport RecordReader
from centidb.records.record cimport RecordWriter

cdef object _reader_get(RecordReader reader, txn, key, default, bint rec)
cdef object _reader_index_get(RecordReader reader, txn, bytes index_prefix, index_name, x,
                              default)
cdef object _put_in(calls, txn, rec, key, blind, packer)
cdef object _bare_write(RecordWriter writer, txn, data, key, blind)
