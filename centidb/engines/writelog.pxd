# Types for Cython's compilation of writelog.py (centidb.impl.PURE_MODE):
# declarations only, the code is writelog.py's.

cdef Py_ssize_t _CELL_MASK

cdef Py_ssize_t _two_bytes(bytes key) except -1
cdef Py_ssize_t _prefix_cell(Py_ssize_t prefix) noexcept
cpdef Py_ssize_t head_cell(bytes key) except -1


cdef class LogCalls:
    cdef public object pending, frozen_get, committed, freeze, deleted, tombstone
    cdef public Py_ssize_t freeze_at
    cdef public bytearray heads
    cdef public bytes last_key
    cdef public object last_value
    cdef public bint noted
