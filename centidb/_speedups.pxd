# The key codec's C functions that the modules Cython compiles from their own
# source (centidb.impl.PURE_MODE) cimport: each has a pure-Python function of
# the same name in centidb/keylib.py, which those modules use uncompiled.

cdef bytes pack_entry(object value, bytes prefix, bytes tail)
cdef tuple split_first(bytes data, bytes prefix)
cdef Py_ssize_t first_key_end(bytes data, bytes prefix) except -1
cdef bytes body_of(bytes stored, Py_ssize_t trailer)
cdef bytes rejoined(bytes head, bytes data, Py_ssize_t start)
cpdef bint may_nest_deeper(object data, Py_ssize_t max_depth) except -1
cdef bytes seal(bytes value)
cdef bint intact(bytes stored) except -1
