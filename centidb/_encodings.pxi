# Twins of centidb.encodings.msgpack_decoder and msgpack_encoder. Included by _speedups.pyx; the
# record reader calls the decoder it makes without a Python call.

from cpython.bytes cimport PyBytes_CheckExact
from cpython.dict cimport PyDict_Check
from cpython.list cimport PyList_Check, PyList_CheckExact
from cpython.tuple cimport PyTuple_Check, PyTuple_CheckExact

cdef class MsgpackDecode:
    """Mirrors the ``decode`` that centidb.encodings.msgpack_decoder returns."""

    cdef object unpackb, ext_hook, too_deep
    cdef int max_depth

    cdef object run(self, data):
        try:
            value = self.unpackb(data, strict_map_key=False, ext_hook=self.ext_hook)
        except UnicodeDecodeError:
            value = self.unpackb(data, strict_map_key=False, ext_hook=self.ext_hook,
                                 unicode_errors='surrogatepass')
        if self.max_depth > 0 and _is_container(value) and _may_nest_deeper(data, self.max_depth):
            _check_nested(value, self.max_depth, self.too_deep)
        return value

    def __call__(self, data):
        return self.run(data)


cdef bint _may_nest_deeper(data, int max_depth) except -1:
    """Mirrors the test in centidb.encodings.msgpack_decoder: more than
    `max_depth` bytes of `data` can open a map, an array or an extension."""
    cdef const unsigned char *at
    cdef Py_ssize_t size, i, opening = 0
    cdef unsigned char byte
    if not PyBytes_CheckExact(data):
        data = bytes(data)
    size = PyBytes_GET_SIZE(data)
    if size <= max_depth:
        return False
    at = <const unsigned char *>PyBytes_AS_STRING(data)
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


cdef int _check_nested(object container, int room, object too_deep) except -1:
    """Mirrors centidb.encodings._check_nested: `container` is the first level."""
    if room <= 0:
        raise too_deep()
    if PyDict_Check(container):
        for key in container.keys():
            if _is_container(key):
                _check_nested(key, room - 1, too_deep)
        for item in container.values():
            if _is_container(item):
                _check_nested(item, room - 1, too_deep)
    elif PyList_CheckExact(container):
        for item in <list>container:
            if _is_container(item):
                _check_nested(item, room - 1, too_deep)
    elif PyTuple_CheckExact(container):
        for item in <tuple>container:
            if _is_container(item):
                _check_nested(item, room - 1, too_deep)
    else:
        for item in container:
            if _is_container(item):
                _check_nested(item, room - 1, too_deep)
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
