# Compiled twin of centidb/engines/fastcalls.py: FastCalls, the base class of
# every engine transaction, whose unchecked calls and write counter are C
# fields here. The helpers below read them without an attribute lookup
# from an engine transaction, and through getattr from anything else that
# stands for one (a savepoint, a write_many's held writes).

TWINS += ('FastCalls', 'guarded')


cdef class FastCalls:
    """Mirrors centidb.engines.fastcalls.FastCalls."""

    cdef public object _fast_get, _fast_put_many, _fast_put, _fast_replace, _fast_delete
    cdef public object _seek_cursor, _token
    cdef public Py_ssize_t writes


cdef inline object fast_get_of(etxn):
    if isinstance(etxn, FastCalls):
        return (<FastCalls>etxn)._fast_get
    return etxn._fast_get


cdef inline object fast_put_of(etxn):
    if isinstance(etxn, FastCalls):
        return (<FastCalls>etxn)._fast_put
    return etxn._fast_put


cdef inline object fast_put_many_of(etxn):
    if isinstance(etxn, FastCalls):
        return (<FastCalls>etxn)._fast_put_many
    return etxn._fast_put_many


cdef inline object token_of(etxn):
    if isinstance(etxn, FastCalls):
        return (<FastCalls>etxn)._token
    return etxn._token


cdef inline object fast_replace_of(etxn):
    if isinstance(etxn, FastCalls):
        return (<FastCalls>etxn)._fast_replace
    return etxn._fast_replace


cdef inline object fast_delete_of(etxn):
    if isinstance(etxn, FastCalls):
        return (<FastCalls>etxn)._fast_delete
    return etxn._fast_delete


cdef inline object seek_cursor_of(etxn):
    if isinstance(etxn, FastCalls):
        return (<FastCalls>etxn)._seek_cursor
    return etxn._seek_cursor


cdef inline Py_ssize_t writes_of(etxn) except? -1:
    if isinstance(etxn, FastCalls):
        return (<FastCalls>etxn).writes
    return etxn.writes


cdef inline void add_writes(etxn, Py_ssize_t n) except *:
    if isinstance(etxn, FastCalls):
        (<FastCalls>etxn).writes += n
    else:
        etxn.writes += n


cdef class GuardedGet:
    """A getter whose library errors become centidb errors (see guarded)."""

    cdef object call, errors, mapped

    def get(self, key):
        """Return ``call(key)``; a library error raises its centidb error."""
        try:
            return self.call(key)
        except self.errors as exc:
            raise self.mapped(exc) from exc


def guarded(call, errors, mapped):
    """Mirrors centidb.engines.fastcalls.guarded."""
    cdef GuardedGet guard = GuardedGet.__new__(GuardedGet)
    guard.call = call
    guard.errors = errors
    guard.mapped = mapped
    # A bound method: called with one argument, no tuple is made.
    return guard.get
