# Twins of centidb.encodings.msgpack_decoder and msgpack_encoder. Included by _speedups.pyx; the
# record reader calls the decoder it makes without a Python call.

cdef class MsgpackDecode:
    """Mirrors the ``decode`` that centidb.encodings.msgpack_decoder returns."""

    cdef object unpackb, ext_hook

    cdef object run(self, data):
        try:
            return self.unpackb(data, strict_map_key=False, ext_hook=self.ext_hook)
        except UnicodeDecodeError:
            return self.unpackb(data, strict_map_key=False, ext_hook=self.ext_hook,
                                unicode_errors='surrogatepass')

    def __call__(self, data):
        return self.run(data)


@cython.binding(True)
def msgpack_decoder(unpackb, ext_hook):
    """Mirrors centidb.encodings.msgpack_decoder."""
    cdef MsgpackDecode decode = MsgpackDecode.__new__(MsgpackDecode)
    decode.unpackb = unpackb
    decode.ext_hook = ext_hook
    return decode


cdef class MsgpackEncode:
    """Mirrors the ``encode`` that centidb.encodings.msgpack_encoder returns."""

    cdef object local, make_packer, pack_surrogates
    # The pack method of the thread that called last, so that a thread
    # writing many records skips the thread-local lookup. Reading both
    # fields is C code holding the GIL: no other thread runs in between.
    cdef object last_pack
    cdef unsigned long last_thread
    cdef bint has_last

    cdef object run(self, value):
        cdef unsigned long thread = PyThread_get_thread_ident()
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
def msgpack_encoder(make_packer, pack_surrogates):
    """Mirrors centidb.encodings.msgpack_encoder."""
    cdef MsgpackEncode encode = MsgpackEncode.__new__(MsgpackEncode)
    encode.local = _threading.local()
    encode.make_packer = make_packer
    encode.pack_surrogates = pack_surrogates
    return encode
