# Types for Cython's compilation of txn.py (centidb.impl.PURE_MODE):
# declarations only, the code is txn.py's. The record layer cimports
# Transaction to read its fields directly.

cdef class Transaction:
    cdef public object manager, engine_txn, undo, changes
    cdef public bint write
    cdef object __weakref__
