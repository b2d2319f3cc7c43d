# Compiled twin of centidb/txn.py: TxnState, the base class of Transaction,
# whose manager, write and engine_txn are C fields here, so that
# checked_engine_txn (_fastpath.pxi) reads them without an attribute lookup.

TWINS += ('TxnState',)


cdef class TxnState:
    """Mirrors centidb.txn.TxnState."""

    cdef public object manager, write, engine_txn

    def __init__(self, manager, write, engine_txn):
        self.manager = manager
        self.write = write
        self.engine_txn = engine_txn
