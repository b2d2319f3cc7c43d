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

    cdef object run(self, value):
        try:
            packer = self.local.packer
        except AttributeError:
            packer = self.local.packer = self.make_packer()
        try:
            return packer.pack(value)
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
