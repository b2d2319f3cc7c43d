# Types for Cython's compilation of fastcalls.py (centidb.impl.PURE_MODE):
# declarations only, the code is fastcalls.py's. The record layer cimports
# FastCalls to read its fields directly.

cdef class FastCalls:
    cdef public object get, put, put_many, replace, delete, seek_cursor
    cdef public Py_ssize_t writes
