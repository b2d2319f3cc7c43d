# Twin of centidb.encodings.msgpack_decoder. Included by _speedups.pyx; the
# record reader calls the decoder it makes without a Python call.

cdef class MsgpackDecode:
    """Mirrors the ``decode`` that centidb.encodings.msgpack_decoder returns."""

    cdef object unpackb, ext_hook

    cdef object run(self, data):
        try:
            return self.unpackb(data, raw=False, strict_map_key=False, ext_hook=self.ext_hook)
        except UnicodeDecodeError:
            return self.unpackb(data, raw=False, strict_map_key=False, ext_hook=self.ext_hook,
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
