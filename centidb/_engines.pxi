# Compiled twin of centidb/engines/fastcalls.py: FastCalls, which every engine
# transaction holds as `fast`, its unchecked calls and write counter C fields
# here, which the compiled record paths read without an attribute lookup.

TWINS += ('FastCalls', 'guarded')


cdef class FastCalls:
    """Mirrors centidb.engines.FastCalls."""

    cdef public object get, put, put_many, replace, delete, seek_cursor
    cdef public Py_ssize_t writes


# The attributes of an engine transaction's `fast`: C fields of a FastCalls, and
# attributes of anything else standing for one (the pure-Python FastCalls, when
# the parity tests run these paths over the pure engines).

cdef inline object fast_get(fast):
    return (<FastCalls>fast).get if type(fast) is FastCalls else fast.get


cdef inline object fast_put(fast):
    return (<FastCalls>fast).put if type(fast) is FastCalls else fast.put


cdef inline object fast_put_many(fast):
    return (<FastCalls>fast).put_many if type(fast) is FastCalls else fast.put_many


cdef inline object fast_replace(fast):
    return (<FastCalls>fast).replace if type(fast) is FastCalls else fast.replace


cdef inline object fast_delete(fast):
    return (<FastCalls>fast).delete if type(fast) is FastCalls else fast.delete


cdef inline object fast_seek_cursor(fast):
    return (<FastCalls>fast).seek_cursor if type(fast) is FastCalls else fast.seek_cursor


cdef inline Py_ssize_t fast_writes(fast) except? -1:
    if type(fast) is FastCalls:
        return (<FastCalls>fast).writes
    return fast.writes


cdef inline void add_writes(fast, Py_ssize_t n) except *:
    if type(fast) is FastCalls:
        (<FastCalls>fast).writes += n
    else:
        fast.writes += n


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
