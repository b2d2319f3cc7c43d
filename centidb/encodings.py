"""Record encoders and packers.

An *encoder* turns a record (any Python value the encoder supports) into
bytes and back; a *packer* turns those bytes into other bytes and back,
usually to compress them. Both are :class:`Encoder` objects: a name plus two
functions. A store remembers each encoder and packer it has seen by name,
under a small persistent id, so a reopened store knows how every record was
written.

Built in:

* :func:`make_msgpack_encoder` (the default for collections): safe for
  files from untrusted sources. ``None``, bools, ints, floats, ``str``,
  ``bytes``, lists, dicts (any msgpack keys) and **tuples** come back as
  they went in: tuples are stored as msgpack extension type 1 holding an
  array, so other msgpack readers see them as that extension. Subclasses
  come back as their base type.
* :func:`make_json_encoder`: UTF-8 JSON. Tuples come back as lists, dict
  keys must be strings, and ``bytes`` cannot be stored.
* :data:`PICKLE_ENCODER`: any picklable object, tuples included. **Opt-in
  only**: unpickling data from an untrusted file can run arbitrary code.
* Packers: :data:`PLAIN_PACKER` (no compression), :data:`ZLIB_PACKER`, and
  :data:`LZ4_PACKER`, :data:`ZSTD_PACKER`, :data:`SNAPPY_PACKER` when the
  ``lz4``, ``zstandard`` or ``python-snappy`` package is installed (else
  ``None``).

An encoder whose ``exact`` flag is false (JSON, and custom encoders unless
they say otherwise) may give back a different value than it was given, so a
collection using one runs index functions on the decoded record, exactly as
a later update or delete will see it.
"""

import json
import pickle
import threading
import zlib

import msgpack

__all__ = ['Encoder', 'make_msgpack_encoder', 'make_json_encoder',
           'PICKLE_ENCODER', 'PLAIN_PACKER', 'ZLIB_PACKER', 'LZ4_PACKER',
           'ZSTD_PACKER', 'SNAPPY_PACKER', 'BUILTIN_ENCODERS']


class Encoder:
    """A named pair of functions: ``encode(value) -> bytes`` and its inverse.

    Used both for record encoders and for packers (compressors), which map
    bytes to bytes. The functions are kept as :attr:`encode` and
    :attr:`decode`; ``pack`` and ``unpack`` are their older names, kept as
    aliases.

    :param name: a non-empty ``str`` that identifies the encoder inside a
        store, so it must stay the same for as long as data written with it
        exists.
    :param pack: ``pack(value) -> bytes``, kept as :attr:`encode`.
    :param unpack: ``unpack(bytes) -> value``, the inverse of `pack`, kept as
        :attr:`decode`.
    :param exact: True if ``unpack(pack(value)) == value`` always holds for
        the values index functions look at; lets ``put()`` skip decoding its
        own output.
    :raises TypeError: if `name` is not a non-empty ``str`` or `pack` or
        `unpack` is not callable.
    """

    __slots__ = ('name', 'encode', 'decode', 'exact')

    def __init__(self, name, pack, unpack, exact=False):
        if not isinstance(name, str) or not name:
            raise TypeError(f'Encoder name must be a non-empty str, not {name!r}')
        if not callable(pack) or not callable(unpack):
            raise TypeError(f'Encoder {name!r}: pack and unpack must be callable')
        self.name = name
        #: ``encode(value) -> bytes``.
        self.encode = pack
        #: ``decode(bytes) -> value``, the inverse of :attr:`encode`.
        self.decode = unpack
        #: True if decode(encode(value)) always equals value (for the values
        #: index functions look at). Lets put() skip decoding its own output.
        self.exact = bool(exact)

    @property
    def pack(self):
        """Alias of :attr:`encode` (the older name)."""
        return self.encode

    @property
    def unpack(self):
        """Alias of :attr:`decode` (the older name)."""
        return self.decode

    def __repr__(self):
        return f'<Encoder {self.name!r}>'


_TUPLE_EXT = 1


def _msgpack_default(value):
    """Pack what strict msgpack types refuse: tuples, and subclasses."""
    if isinstance(value, tuple):
        return msgpack.ExtType(_TUPLE_EXT, _msgpack_packb(list(value)))
    for base in (dict, list, str, bytes, bool, int, float):
        if isinstance(value, base):
            return base(value)
    raise TypeError(f'msgpack encoder cannot store {type(value).__name__!r} values')


def _msgpack_ext(code, data):
    if code == _TUPLE_EXT:
        return tuple(_msgpack_unpackb(data))
    return msgpack.ExtType(code, data)


def _msgpack_packb(value):
    return msgpack.packb(value, use_bin_type=True, strict_types=True,
                         default=_msgpack_default)


def _msgpack_unpackb(data):
    # A function, not functools.partial: merging keyword arguments costs more.
    return _unpackb(data, raw=False, strict_map_key=False, ext_hook=_msgpack_ext)


_unpackb = msgpack.unpackb


def make_msgpack_encoder():
    """Return a new msgpack encoder (named ``'msgpack'``); tuples round-trip.

    :returns: an exact :class:`Encoder`. Its ``encode`` raises ``TypeError``
        for a value msgpack cannot store, and ``OverflowError`` for an
        ``int`` outside -2**63 .. 2**64-1.
    """
    local = threading.local()  # a Packer is not thread-safe; reuse one per thread

    def pack(value):
        try:
            packer = local.packer
        except AttributeError:
            packer = local.packer = msgpack.Packer(
                use_bin_type=True, strict_types=True, default=_msgpack_default)
        return packer.pack(value)

    return Encoder('msgpack', pack, _msgpack_unpackb, exact=True)


def make_json_encoder():
    """Return a new JSON encoder (named ``'json'``), writing compact UTF-8.

    :returns: an inexact :class:`Encoder` (tuples come back as lists). Its
        ``encode`` raises ``TypeError`` for a value JSON cannot store.
    """
    dumps = json.JSONEncoder(separators=(',', ':'), ensure_ascii=False).encode
    loads = json.loads
    return Encoder('json', lambda value: dumps(value).encode('utf-8'), loads)


def _pickle_dumps(value):
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


#: Encodes any picklable value. Never use it on files you did not write.
PICKLE_ENCODER = Encoder('pickle', _pickle_dumps, pickle.loads, exact=True)


def _identity(data):
    return data


#: Stores the encoded bytes as they are.
PLAIN_PACKER = Encoder('plain', _identity, _identity)

#: Compresses with zlib (level 6).
ZLIB_PACKER = Encoder('zlib', zlib.compress, zlib.decompress)


def _zstd_functions(zstandard):
    """zstd compress/decompress reusing one context per thread.

    Contexts are not thread-safe, and making one per call costs more than
    compressing a small record.
    """
    local = threading.local()

    def compress(data):
        try:
            context = local.compressor
        except AttributeError:
            context = local.compressor = zstandard.ZstdCompressor(level=3)
        return context.compress(data)

    def decompress(data):
        try:
            context = local.decompressor
        except AttributeError:
            context = local.decompressor = zstandard.ZstdDecompressor()
        return context.decompress(data)

    return compress, decompress


def _optional_packers():
    """Build the packers whose compression libraries are installed."""
    lz4 = zstd = snappy = None
    try:
        import lz4.block
    except ImportError:
        pass
    else:
        lz4 = Encoder('lz4', lz4.block.compress, lz4.block.decompress)
    try:
        import zstandard
    except ImportError:
        pass
    else:
        zstd = Encoder('zstd', *_zstd_functions(zstandard))
    try:
        import snappy as snappy_module
        snappy_module.compress
    except (ImportError, AttributeError):
        pass
    else:
        snappy = Encoder('snappy', snappy_module.compress, snappy_module.decompress)
    return lz4, zstd, snappy


#: Packers backed by optional packages: ``None`` when not installed.
LZ4_PACKER, ZSTD_PACKER, SNAPPY_PACKER = _optional_packers()

#: Encoders and packers every store knows without ``add_encoder()``.
BUILTIN_ENCODERS = [encoder for encoder in (
    make_msgpack_encoder(), make_json_encoder(), PICKLE_ENCODER, PLAIN_PACKER,
    ZLIB_PACKER, LZ4_PACKER, ZSTD_PACKER, SNAPPY_PACKER) if encoder is not None]
