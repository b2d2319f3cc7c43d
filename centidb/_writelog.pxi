# Compiled twins of centidb/engines/writelog.py: LogCalls, the unchecked
# calls of LevelDB's write transactions (C methods instead of Python
# frames); freeze_table, which turns a large write transaction's dict of
# pending writes into one sorted block; and put_pairs, which hands the
# block's pairs to a commit's batch.
# The pure version walks the objects six times (sort, values, join,
# lengths, hashes, marks) and a dict of 2**17 writes is far larger than the
# caches; this one reads each key and value once into an array of
# pointers, sorts that, and copies, measures and marks in one pass.

from cpython cimport array as _carray
from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.dict cimport PyDict_Next
from cpython.buffer cimport PyBUF_SIMPLE, PyObject_GetBuffer, PyBuffer_Release
from cpython.object cimport PyObject
from libc.stdlib cimport qsort

TWINS += ('LogCalls', 'freeze_table', 'put_pairs')

cdef enum:
    _HEADS = 1024   # writelog.HEADS
    _SPARSE = 16    # writelog._SPARSE
    _LATE = 255     # writelog._LATE

cdef struct _Write:
    uint64_t head           # the key's first 8 bytes, big-endian, zero-padded
    PyObject *key
    PyObject *value

cdef _carray.array _OFFSETS_32 = _carray.array('I')
cdef _carray.array _OFFSETS_64 = _carray.array('Q')


cdef extern from "Python.h":
    # The macros, on borrowed pointers, callable without the GIL.
    const char *_key_bytes "PyBytes_AS_STRING" (PyObject *) nogil
    Py_ssize_t _key_size "PyBytes_GET_SIZE" (PyObject *) nogil


cdef inline uint64_t _head(const char *data, Py_ssize_t size) noexcept nogil:
    cdef uint64_t head = 0
    cdef Py_ssize_t i
    for i in range(8):
        head = (head << 8) | (<unsigned char>data[i] if i < size else 0)
    return head


cdef int _compare_writes(const void *a, const void *b) noexcept nogil:
    # Byte order, as bytes compare: the heads decide most pairs.
    cdef const _Write *x = <const _Write *>a
    cdef const _Write *y = <const _Write *>b
    if x.head != y.head:
        return -1 if x.head < y.head else 1
    cdef Py_ssize_t nx = _key_size(x.key), ny = _key_size(y.key)
    cdef int order = memcmp(_key_bytes(x.key), _key_bytes(y.key), nx if nx < ny else ny)
    if order:
        return order
    return (nx > ny) - (nx < ny)


@cython.binding(True)
def freeze_table(dict table not None, bytearray cells not None, Py_ssize_t number):
    """Mirrors centidb.engines.writelog.freeze_table."""
    cdef Py_ssize_t n = len(table), i = 0, pos = 0, total = 0, at = 0, size
    cdef Py_ssize_t mask = len(cells) - 1
    cdef unsigned char mark = <unsigned char>(number if number < _LATE else _LATE)
    cdef unsigned char *cell = <unsigned char *>PyByteArray_AS_STRING(cells)
    cdef PyObject *key
    cdef PyObject *value
    cdef Py_hash_t hashed
    cdef _carray.array offsets
    cdef list index = []
    cdef char *out
    cdef bint wide = False
    cdef _Write *writes = <_Write *>malloc((n if n > 0 else 1) * sizeof(_Write))
    if writes == NULL:
        raise MemoryError()
    try:
        while PyDict_Next(table, &pos, &key, &value):
            if type(<object>key) is not bytes or type(<object>value) is not bytes:
                raise TypeError('a frozen write must be bytes, not '
                                f'{type(<object>key).__name__!r}: '
                                f'{type(<object>value).__name__!r}')
            writes[i].key = key
            writes[i].value = value
            writes[i].head = _head(_key_bytes(key), _key_size(key))
            total += _key_size(key) + PyBytes_GET_SIZE(<object>value)
            i += 1
        qsort(writes, n, sizeof(_Write), _compare_writes)
        joined = PyBytes_FromStringAndSize(NULL, total)
        out = PyBytes_AS_STRING(joined)
        wide = total >= (<Py_ssize_t>1) << 32
        if wide:
            offsets = _carray.clone(_OFFSETS_64, 2 * n + 1, False)
            offsets.data.as_ulonglongs[0] = 0
        else:
            offsets = _carray.clone(_OFFSETS_32, 2 * n + 1, False)
            offsets.data.as_uints[0] = 0
        for i in range(n):
            key, value = writes[i].key, writes[i].value
            if i % _SPARSE == 0:
                index.append(<object>key)
            size = _key_size(key)
            memcpy(out + at, _key_bytes(key), size)
            at += size
            if wide:
                offsets.data.as_ulonglongs[2 * i + 1] = <unsigned long long>at
            else:
                offsets.data.as_uints[2 * i + 1] = <unsigned int>at
            size = PyBytes_GET_SIZE(<object>value)
            memcpy(out + at, PyBytes_AS_STRING(<object>value), size)
            at += size
            if wide:
                offsets.data.as_ulonglongs[2 * i + 2] = <unsigned long long>at
            else:
                offsets.data.as_uints[2 * i + 2] = <unsigned int>at
            hashed = hash(<object>key)
            cell[hashed & mask] = mark
            cell[(hashed >> 32) & mask] = mark
    finally:
        free(writes)
    return index, joined, offsets


@cython.binding(True)
def put_pairs(block, _carray.array offsets not None, put):
    """Mirrors centidb.engines.writelog.put_pairs."""
    cdef Py_buffer view
    cdef const char *start
    cdef Py_ssize_t i, n = (len(offsets) - 1) // 2, a, b, c
    cdef bint wide = offsets.ob_descr.typecode == b'Q'
    if not wide and offsets.ob_descr.typecode != b'I':
        raise TypeError(f"offsets must be an array of type 'I' or 'Q', "
                        f"not {offsets.typecode!r}")
    PyObject_GetBuffer(block, &view, PyBUF_SIMPLE)
    try:
        start = <const char *>view.buf
        for i in range(n):
            if wide:
                a = <Py_ssize_t>offsets.data.as_ulonglongs[2 * i]
                b = <Py_ssize_t>offsets.data.as_ulonglongs[2 * i + 1]
                c = <Py_ssize_t>offsets.data.as_ulonglongs[2 * i + 2]
            else:
                a = <Py_ssize_t>offsets.data.as_uints[2 * i]
                b = <Py_ssize_t>offsets.data.as_uints[2 * i + 1]
                c = <Py_ssize_t>offsets.data.as_uints[2 * i + 2]
            if not 0 <= a <= b <= c <= view.len:
                raise ValueError(f'offsets {a}, {b}, {c} are outside the block '
                                 f'of {view.len} bytes')
            put(PyBytes_FromStringAndSize(start + a, b - a),
                PyBytes_FromStringAndSize(start + b, c - b))
    finally:
        PyBuffer_Release(&view)


cdef class LogCalls:
    """Mirrors centidb.engines.writelog.LogCalls."""

    cdef object pending
    cdef object frozen_get, committed, freeze, deleted, tombstone
    cdef Py_ssize_t freeze_at
    cdef object last_key, last_value
    cdef bint noted
    cdef dict table     # pending, when it is a plain dict; else None
    cdef bytearray heads

    def __init__(self, pending, frozen_get, committed, Py_ssize_t freeze_at,
                 freeze, deleted, tombstone, bytearray heads not None):
        if len(heads) != _HEADS:
            raise ValueError(f'heads must hold {_HEADS} bytes, not {len(heads)}')
        self.pending, self.frozen_get, self.committed = pending, frozen_get, committed
        self.freeze_at, self.freeze, self.deleted = freeze_at, freeze, deleted
        self.tombstone, self.heads = tombstone, heads
        self.last_key = b''
        self.last_value = None
        self.table = pending if type(pending) is dict else None

    cdef void mark(self, key):
        # heads[head_cell(key)] = 1; anything but a non-empty bytes key marks every cell.
        cdef unsigned char *cells = <unsigned char *>PyByteArray_AS_STRING(self.heads)
        cdef const unsigned char *data
        cdef Py_ssize_t size
        cdef unsigned int second = 0
        if type(key) is bytes and PyBytes_GET_SIZE(key):
            data = <const unsigned char *>PyBytes_AS_STRING(key)
            size = PyBytes_GET_SIZE(key)
            if size > 1:
                second = data[1]
            cells[(data[0] * 37u + second) & (_HEADS - 1)] = 1
        else:
            memset(cells, 1, _HEADS)

    cdef Py_ssize_t size(self) except -1:
        if self.table is not None:
            return len(self.table)
        return len(self.pending)

    def get(self, key):
        """Mirrors centidb.engines.writelog.LogCalls.get."""
        if self.table is not None:
            value = self.table.get(key)
        else:
            value = self.pending.get(key)
        if value is None and self.frozen_get is not None:
            value = self.frozen_get(key)
        if value is None:
            if key != self.last_key:
                self.last_value = self.committed(key)
                self.last_key = key
            return self.last_value
        return None if value is self.tombstone else value

    def put(self, key, value):
        """Mirrors centidb.engines.writelog.LogCalls.put."""
        self.mark(key)
        if self.table is not None:
            self.table[key] = value
        else:
            self.pending[key] = value
        if self.size() >= self.freeze_at:
            self.freeze()

    def put_many(self, pairs):
        """Mirrors centidb.engines.writelog.LogCalls.put_many."""
        if type(pairs) is list:
            for pair in <list>pairs:
                self.mark((<tuple>pair)[0] if type(pair) is tuple and len(<tuple>pair) == 2
                          else None)
        else:
            self.mark(None)
        if self.table is not None:
            self.table.update(pairs)
        else:
            self.pending.update(pairs)
        if self.size() >= self.freeze_at:
            self.freeze()

    def delete(self, key):
        """Mirrors centidb.engines.writelog.LogCalls.delete."""
        self.mark(key)
        if self.frozen_get is None and key in self.pending and self.committed(key) is None:
            del self.pending[key]
            return
        if not self.noted:
            self.deleted()
            self.noted = True
        self.pending[key] = self.tombstone
        if self.size() >= self.freeze_at:
            self.freeze()
