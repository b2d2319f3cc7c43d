# Twins of centidb.encodings.msgpack_decoder and msgpack_encoder. Included by _speedups.pyx; the
# record reader calls the decoder it makes without a Python call.

from cpython.bytes cimport PyBytes_CheckExact
from cpython.dict cimport PyDict_Check, PyDict_CheckExact, PyDict_Next
from cpython.list cimport PyList_Check, PyList_CheckExact, PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_TYPE, Py_TPFLAGS_LIST_SUBCLASS, Py_TPFLAGS_TUPLE_SUBCLASS, Py_TPFLAGS_DICT_SUBCLASS
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_Check, PyTuple_CheckExact, PyTuple_GET_ITEM, PyTuple_GET_SIZE

cdef class MsgpackDecode:
    """Mirrors the ``decode`` that centidb.encodings.msgpack_decoder returns."""

    cdef object unpackb, ext_hook, too_deep
    cdef int max_depth

    cdef object run(self, data):
        try:
            value = self.unpackb(data, strict_map_key=False, ext_hook=self.ext_hook)
        except UnicodeDecodeError:
            try:
                value = self.unpackb(data, strict_map_key=False, ext_hook=self.ext_hook,
                                     unicode_errors='surrogatepass')
            except UnicodeDecodeError as exc:
                raise _not_utf8(exc) from None
        if self.max_depth > 0 and _is_container(value) and _may_nest_deeper(data, self.max_depth):
            _check_nested(value, self.max_depth, self.too_deep)
        return value

    def __call__(self, data):
        return self.run(data)


cdef object _not_utf8(exc):
    """Mirrors the ValueError of centidb.encodings.msgpack_decoder for bytes not UTF-8."""
    return ValueError(f'a msgpack str holds bytes that are not UTF-8: {exc}')


cdef bint _may_nest_deeper(data, int max_depth) except -1:
    """Mirrors the test in centidb.encodings.msgpack_decoder: more than
    `max_depth` bytes of `data` can open a map, an array or an extension.

    Every such byte has its high bit set, so the bytes are first counted
    eight at a time by that bit alone; most records stop there.
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
                or byte >= 0xDC and byte <= 0xDF):
            opening += 1
            if opening > max_depth:
                return True
    return False


@cython.binding(True)
def msgpack_decoder(unpackb, ext_hook, int max_depth=0, too_deep=None):
    """Mirrors centidb.encodings.msgpack_decoder."""
    cdef MsgpackDecode decode = MsgpackDecode.__new__(MsgpackDecode)
    decode.unpackb = unpackb
    decode.ext_hook = ext_hook
    decode.max_depth = max_depth
    decode.too_deep = too_deep
    return decode


cdef inline bint _is_container(object value):
    return PyList_Check(value) or PyTuple_Check(value) or PyDict_Check(value)


cdef inline bint _is_container_at(PyObject *value):
    return (Py_TYPE(<object>value).tp_flags & (Py_TPFLAGS_LIST_SUBCLASS | Py_TPFLAGS_TUPLE_SUBCLASS
                                            | Py_TPFLAGS_DICT_SUBCLASS)) != 0


cdef int _check_nested(object container, int room, object too_deep) except -1:
    """Mirrors centidb.encodings._check_nested: `container` is the first level.

    Exact dicts, lists and tuples are read in place; a container met in
    them is held (a strong reference) while it is walked.
    """
    cdef Py_ssize_t pos = 0, i, size
    cdef PyObject *key
    cdef PyObject *item
    cdef object child
    if room <= 0:
        raise too_deep()
    if PyDict_CheckExact(container):
        while PyDict_Next(container, &pos, &key, &item):
            if _is_container_at(key):
                child = <object>key
                _check_nested(child, room - 1, too_deep)
            if _is_container_at(item):
                child = <object>item
                _check_nested(child, room - 1, too_deep)
    elif PyList_CheckExact(container):
        i = 0
        while i < PyList_GET_SIZE(container):
            item = PyList_GET_ITEM(container, i)
            if _is_container_at(item):
                child = <object>item
                _check_nested(child, room - 1, too_deep)
            i += 1
    elif PyTuple_CheckExact(container):
        size = PyTuple_GET_SIZE(container)
        for i in range(size):
            item = PyTuple_GET_ITEM(container, i)
            if _is_container_at(item):
                child = <object>item
                _check_nested(child, room - 1, too_deep)
    elif PyDict_Check(container):
        for child in container.keys():
            if _is_container(child):
                _check_nested(child, room - 1, too_deep)
        for child in container.values():
            if _is_container(child):
                _check_nested(child, room - 1, too_deep)
    else:
        for child in container:
            if _is_container(child):
                _check_nested(child, room - 1, too_deep)
    return 0


cdef class MsgpackEncode:
    """Mirrors the ``encode`` that centidb.encodings.msgpack_encoder returns."""

    cdef object local, make_packer, pack_surrogates, too_deep
    cdef int max_depth
    # The pack method of the thread that called last, so that a thread
    # writing many records skips the thread-local lookup. Reading both
    # fields is C code holding the GIL: no other thread runs in between.
    cdef object last_pack
    cdef unsigned long last_thread
    cdef bint has_last

    cdef object run(self, value):
        cdef unsigned long thread = PyThread_get_thread_ident()
        if _is_container(value):
            _check_nested(value, self.max_depth, self.too_deep)
        if self.has_last and self.last_thread == thread:
            pack = self.last_pack
        else:
            try:
                packer = self.local.packer
            except AttributeError:
                packer = self.local.packer = self.make_packer()
            pack = packer.pack
            self.last_pack, self.last_thread, self.has_last = pack, thread, True
        try:
            return pack(value)
        except UnicodeEncodeError:
            return self.pack_surrogates(value)

    def __call__(self, value):
        return self.run(value)


@cython.binding(True)
def msgpack_encoder(make_packer, pack_surrogates, int max_depth, too_deep):
    """Mirrors centidb.encodings.msgpack_encoder."""
    cdef MsgpackEncode encode = MsgpackEncode.__new__(MsgpackEncode)
    encode.local = _threading.local()
    encode.make_packer = make_packer
    encode.pack_surrogates = pack_surrogates
    encode.max_depth = max_depth
    encode.too_deep = too_deep
    return encode
