# Types for Cython's compilation of fastpath.py (centidb.impl.PURE_MODE):
# declarations only, the code is fastpath.py's. record.py cimports these.

cimport cython
from centidb.engines.fastcalls cimport FastCalls
from centidb.txn cimport Transaction

@cython.locals(checked=Transaction)
cpdef object checked_engine_txn(txns, txn_class, txn, bint write)
cpdef object put_many(etxn, FastCalls fast, list pairs)
cpdef object put_one(etxn, FastCalls fast, bytes key, bytes value)
cpdef object replace_one(etxn, FastCalls fast, bytes key, bytes value)
cpdef object delete_one(etxn, FastCalls fast, bytes key)
cpdef object first_key(etxn, bytes lo, bytes hi)
