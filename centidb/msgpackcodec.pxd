# Types for Cython's compilation of msgpackcodec.py (centidb.impl.PURE_MODE):
# declarations only, the code is msgpackcodec.py's. Another compiled module
# may cimport both classes and call run() as a C method.

cimport cython
from cpython.pythread cimport PyThread_get_thread_ident as _thread_id
from centidb._speedups cimport may_nest_deeper as _nests_deeper

@cython.locals(mapping=dict)
cpdef int check_nested(object container, Py_ssize_t room, object too_deep) except -1
cdef int _check_pair(object key, object item, Py_ssize_t room, object too_deep) except -1
cdef bint _holds_container(object items) except -1


cdef class MsgpackDecode:
    cdef public object unpackb, ext_hook, too_deep
    cdef public Py_ssize_t max_depth

    cpdef object run(self, data)


cdef class MsgpackEncode:
    cdef public object make_packer, pack_surrogates, too_deep, local
    cdef public Py_ssize_t max_depth
    cdef public tuple last

    cpdef object run(self, value)
