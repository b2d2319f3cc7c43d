# The compiled kernel: functions that take data and return data, each the
# compiled form of a pure-Python function of the same name (named in TWINS,
# chosen by centidb.impl.choose), for what Python cannot say as fast.
# Included by _speedups.pyx; keep it small.

from cpython.bytes cimport PyBytes_CheckExact


@cython.binding(True)
cpdef bint may_nest_deeper(data, Py_ssize_t max_depth) except -1:
    """centidb.msgpackcodec.may_nest_deeper: the bytes of `data` that can open a
    container, counted eight at a time by their high bit first (every such
    byte has it set; most records stop there), exactly only if that passes.
    """
    cdef const unsigned char *at
    cdef Py_ssize_t size, i, words, opening = 0
    cdef uint64_t word
    cdef unsigned char byte
    if not PyBytes_CheckExact(data):
        data = bytes(data)
    size = PyBytes_GET_SIZE(data)
    if size <= max_depth:
        return False
    at = <const unsigned char *>PyBytes_AS_STRING(data)
    words = size // 8
    for i in range(words):
        memcpy(&word, at + i * 8, 8)
        # Each byte's high bit moved to its low bit, then all eight summed
        # into the top byte by one multiplication.
        opening += (((word & 0x8080808080808080ULL) >> 7) * 0x0101010101010101ULL) >> 56
    for i in range(words * 8, size):
        opening += at[i] >> 7
    if opening <= max_depth:
        return False
    opening = 0
    for i in range(size):
        byte = at[i]
        if (0x80 <= byte <= 0x9F or 0xC7 <= byte <= 0xC9 or 0xD4 <= byte <= 0xD8
                or 0xDC <= byte <= 0xDF):
            opening += 1
            if opening > max_depth:
                return True
    return False


# The record layer's: centidb/records/record.py cimports them (_speedups.pxd);
# their pure-Python forms are in centidb/records/kernel.py and centidb/checksums.py.

# crc32(value + trailer) of every intact sealed value (centidb.checksums.RESIDUE).
cdef unsigned long _CRC_RESIDUE = 0x2144DF1C


cdef bytes seal(bytes value):
    """centidb.checksums.seal, in one allocation."""
    cdef unsigned long crc = PyLong_AsUnsignedLong(_crc32(value))
    cdef Py_ssize_t n = PyBytes_GET_SIZE(value)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n + 4)
    cdef unsigned char *p = <unsigned char *>PyBytes_AS_STRING(out)
    memcpy(p, PyBytes_AS_STRING(value), n)
    p[n] = crc & 0xFF
    p[n + 1] = (crc >> 8) & 0xFF
    p[n + 2] = (crc >> 16) & 0xFF
    p[n + 3] = (crc >> 24) & 0xFF
    return out


cdef bint intact(bytes stored) except -1:
    """centidb.checksums.intact."""
    return (PyBytes_GET_SIZE(stored) > 4
            and PyLong_AsUnsignedLong(_crc32(stored)) == _CRC_RESIDUE)

cdef bytes body_of(bytes stored, Py_ssize_t trailer):
    """centidb.records.record.body_of, without a slice object."""
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(stored) + 1,
                                     PyBytes_GET_SIZE(stored) - 1 - trailer)


cdef bytes rejoined(bytes head, bytes data, Py_ssize_t start):
    """centidb.records.record.rejoined, in one allocation."""
    cdef Py_ssize_t h = PyBytes_GET_SIZE(head), n = PyBytes_GET_SIZE(data) - start
    cdef bytes out = PyBytes_FromStringAndSize(NULL, h + n)
    cdef char *p = PyBytes_AS_STRING(out)
    memcpy(p, PyBytes_AS_STRING(head), h)
    memcpy(p + h, PyBytes_AS_STRING(data) + start, n)
    return out
