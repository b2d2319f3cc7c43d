# Twin of centidb/fastpath.py: the engine transaction's unchecked calls. Included by
# _speedups.pyx before _records.pxi, whose classes call these without a Python call.

cdef object checked_engine_txn(txns, txn_class, txn, bint write):
    """Mirrors centidb.fastpath.checked_engine_txn."""
    cdef TxnState state
    if type(txn) is txn_class:
        if isinstance(txn, TxnState):
            state = <TxnState>txn
            if state.manager is txns and (not write or state.write):
                etxn = state.engine_txn
                if etxn is not None:
                    return etxn
        elif txn.manager is txns and (not write or txn.write):
            etxn = txn.engine_txn
            if etxn is not None:
                return etxn
    return txns.engine_txn(txn, write)


cdef object put_many(etxn, list writes):
    """Mirrors centidb.fastpath.put_many."""
    fast_put_many = fast_put_many_of(etxn)
    if fast_put_many is None:
        etxn._put_many(writes)
    else:
        add_writes(etxn, len(writes))
        try:
            fast_put_many(writes)
        except Exception as exc:
            etxn._put_many_failed(exc, writes)


cdef object put_one(etxn, bytes key, bytes value):
    """Mirrors centidb.fastpath.put_one."""
    fast_put = fast_put_of(etxn)
    if fast_put is None:
        put_many(etxn, [(key, value)])
    else:
        add_writes(etxn, 1)
        try:
            fast_put(key, value)
        except Exception as exc:
            etxn._put_many_failed(exc, [(key, value)])


cdef object replace_one(etxn, replace, bytes key, bytes value):
    """Mirrors centidb.fastpath.replace_one, `replace` being etxn's _fast_replace."""
    add_writes(etxn, 1)
    try:
        return replace(key, value)
    except Exception as exc:
        etxn._put_many_failed(exc, [(key, value)])


cdef object delete_one(etxn, bytes key):
    """Mirrors centidb.fastpath.delete_one."""
    fast_delete = fast_delete_of(etxn)
    if fast_delete is None:
        etxn.delete(key)
    else:
        add_writes(etxn, 1)
        try:
            fast_delete(key)
        except Exception as exc:
            etxn._put_many_failed(exc, [(key, b'')])


cdef object first_key(etxn, bytes lo, bytes hi):
    """Mirrors centidb.fastpath.first_key."""
    cursor = seek_cursor_of(etxn)
    if cursor is None:
        found = etxn.first(lo, hi)
        return None if found is None else found[0]
    if cursor.set_range(lo):
        key = cursor.key()
        if key < hi:
            return key
    return None
