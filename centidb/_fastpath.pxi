# Twin of centidb/records/fastpath.py: the engine transaction's unchecked calls (its `fast`,
# a FastCalls of _engines.pxi). Included by _speedups.pyx before _records.pxi,
# whose classes call these without a Python call.


from cpython.object cimport PyObject


cdef inline object fast_of(etxn):
    """The FastCalls of the engine transaction `etxn` (its `fast`)."""
    return etxn.fast


cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset

cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member

from types import MemberDescriptorType as _MemberDescriptor

# Where the store transaction class `_slots_class` keeps its public slots
# `manager`, `write` and `engine_txn` in an instance, read from its member
# descriptors: once checked_engine_txn has checked that type(txn) is exactly
# that class, it reads them there, as the descriptors would, without three
# attribute lookups. -1: they are not plain slots; it looks them up.
cdef object _slots_class = None
cdef Py_ssize_t _manager_at = -1, _write_at = -1, _etxn_at = -1


cdef Py_ssize_t slot_offset(cls, str name) except -2:
    """The offset of the object slot `name` in an instance of `cls`, or -1."""
    descr = getattr(cls, name, None)
    if type(descr) is not _MemberDescriptor:
        return -1
    cdef PyMemberDef *member = (<PyMemberDescrObject *>descr).d_member
    return member.offset if member.type == 16 else -1    # T_OBJECT_EX, a __slots__ slot


cdef void learn_slots(txn_class) except *:
    global _slots_class, _manager_at, _write_at, _etxn_at
    _manager_at = slot_offset(txn_class, 'manager')
    _write_at = slot_offset(txn_class, 'write')
    _etxn_at = slot_offset(txn_class, 'engine_txn')
    if _manager_at < 0 or _write_at < 0:
        _etxn_at = -1
    _slots_class = txn_class


cdef inline PyObject *slot_at(txn, Py_ssize_t offset):
    """The slot at `offset` of `txn` (borrowed; NULL if unset)."""
    return (<PyObject **>((<char *><PyObject *>txn) + offset))[0]


cdef object checked_engine_txn(txns, txn_class, txn, bint write):
    """Mirrors centidb.records.fastpath.checked_engine_txn."""
    cdef PyObject *etxn
    cdef PyObject *writable
    if type(txn) is txn_class:
        if txn_class is not _slots_class:
            learn_slots(txn_class)
        if _etxn_at >= 0:
            etxn = slot_at(txn, _etxn_at)
            if (slot_at(txn, _manager_at) == <PyObject *>txns and etxn != NULL
                    and etxn != <PyObject *>None):
                if not write:
                    return <object>etxn
                writable = slot_at(txn, _write_at)
                if writable != NULL and <object>writable:
                    return <object>etxn
        elif txn.manager is txns and (not write or txn.write):
            found = txn.engine_txn
            if found is not None:
                return found
    return txns.engine_txn(txn, write)   # raises the right error


cdef object put_many(etxn, fast, list writes):
    """Mirrors centidb.records.fastpath.put_many, `fast` being etxn's."""
    put_pairs = fast_put_many(fast)
    if put_pairs is None:
        etxn._put_many(writes)
    else:
        add_writes(fast, len(writes))
        try:
            put_pairs(writes)
        except Exception as exc:
            etxn._put_many_failed(exc, writes)


cdef object put_one(etxn, fast, bytes key, bytes value):
    """Mirrors centidb.records.fastpath.put_one, `fast` being etxn's."""
    put = fast_put(fast)
    if put is None:
        put_many(etxn, fast, [(key, value)])
    else:
        add_writes(fast, 1)
        try:
            put(key, value)
        except Exception as exc:
            etxn._put_many_failed(exc, [(key, value)])


cdef object replace_one(etxn, fast, bytes key, bytes value):
    """Mirrors centidb.records.fastpath.replace_one, `fast` being etxn's."""
    add_writes(fast, 1)
    try:
        return fast_replace(fast)(key, value)
    except Exception as exc:
        etxn._put_many_failed(exc, [(key, value)])


cdef object delete_one(etxn, fast, bytes key):
    """Mirrors centidb.records.fastpath.delete_one, `fast` being etxn's."""
    delete = fast_delete(fast)
    if delete is None:
        etxn.delete(key)
    else:
        add_writes(fast, 1)
        try:
            delete(key)
        except Exception as exc:
            etxn._put_many_failed(exc, [(key, b'')])


cdef object first_key(etxn, bytes lo, bytes hi):
    """Mirrors centidb.records.fastpath.first_key."""
    cursor = fast_seek_cursor(fast_of(etxn))
    if cursor is None:
        found = etxn.first(lo, hi)
        return None if found is None else found[0]
    if cursor.set_range(lo):
        key = cursor.key()
        if key < hi:
            return key
    return None
