"""Compress and decompress functions of the built-in packers, bounded by a size limit.

A store's ``max_unpacked_size`` (see :data:`centidb.encodings.MAX_UNPACKED_SIZE`)
is the most bytes one stored value may decompress to (its *decompressed size*).
:func:`bounded_functions` gives, for zlib and for lz4, zstd and snappy where
their packages are installed, a compress function that refuses data longer
than the limit (:class:`~centidb.errors.ValueTooLargeError`: such a value
could be stored but never read back) and a decompress function that refuses,
with ``ValueError``, to decompress more than the limit, without holding much
more than the limit in memory. :func:`centidb.encodings.make_packers` makes the
packers from them.
"""

from __future__ import annotations

import threading
import zlib
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Tuple

from centidb.errors import ValueTooLargeError

if TYPE_CHECKING:
    from zstandard import ZstdCompressor, ZstdDecompressor

__all__ = ['Functions', 'bounded_functions']

#: What :func:`bounded_functions` gives for each packer: its name, its
#: compress function and its decompress function.
Functions = Tuple[str, Callable[[bytes], bytes], Callable[[bytes], bytes]]


def _too_big(name: str, limit: int) -> ValueError:
    return ValueError(f'the {name} data decompresses to more than {limit} bytes, the '
                      f'max_unpacked_size limit (a store you trust can be opened with '
                      f'a larger max_unpacked_size)')


def _too_large(name: str, size: int, limit: int) -> ValueTooLargeError:
    return ValueTooLargeError(
        f'the value encodes to {size} bytes, more than the {limit} bytes the '
        f'max_unpacked_size limit lets the {name} packer decompress when reading it. '
        f'Nothing was written: store smaller records, or open the store with a '
        f'larger max_unpacked_size')


def _bounded_compress(name: str, compress: Callable[[bytes], bytes],
                      limit: int) -> Callable[[bytes], bytes]:
    """`compress`, refusing data longer than `limit`: reading would refuse to decompress it."""
    def bounded(data: bytes) -> bytes:
        if len(data) > limit:
            raise _too_large(name, len(data), limit)
        return compress(data)
    return bounded


_CHUNK = 1024 * 1024


def _zlib_decompress(limit: int) -> Callable[[bytes], bytes]:
    """``zlib.decompress`` that stops after `limit` bytes of output.

    Output comes in pieces of at most 1 MiB, so refusing a bomb holds
    about `limit` bytes, not the doubling buffer one call would grow.
    """
    def decompress(data: bytes) -> bytes:
        inflater = zlib.decompressobj()
        pieces = []
        total = 0
        pending = data
        while not inflater.eof:
            piece = inflater.decompress(pending, min(limit + 1 - total, _CHUNK))
            total += len(piece)
            if total > limit:
                raise _too_big('zlib', limit)
            pieces.append(piece)
            pending = inflater.unconsumed_tail
            if not (piece or pending or inflater.eof):
                raise ValueError('incomplete or truncated zlib stream')
        return pieces[0] if len(pieces) == 1 else b''.join(pieces)
    return decompress


def _lz4_decompress(decompress: Callable[[bytes], bytes],
                    limit: int) -> Callable[[bytes], bytes]:
    """``lz4.block.decompress``, refusing a size header above `limit` before it allocates."""
    def bounded(data: bytes) -> bytes:
        if len(data) >= 4 and int.from_bytes(bytes(data[:4]), 'little') > limit:
            raise _too_big('lz4', limit)
        return decompress(data)
    return bounded


def _zstd_functions(zstandard: ModuleType, limit: int) -> tuple[Callable[[bytes], bytes],
                                                                Callable[[bytes], bytes]]:
    """zstd compress/decompress reusing one context per thread.

    Contexts are not thread-safe, and making one per call costs more than
    compressing a small record. Decompressing refuses a frame whose header
    gives a size above `limit`, and one without a size that decompresses to more;
    compressing refuses data longer than `limit`.
    """
    local = threading.local()

    def compress(data: bytes) -> bytes:
        if len(data) > limit:
            raise _too_large('zstd', len(data), limit)
        context: ZstdCompressor
        try:
            context = local.compressor
        except AttributeError:
            context = local.compressor = zstandard.ZstdCompressor(level=3)
        return context.compress(data)

    def decompress(data: bytes) -> bytes:
        context: ZstdDecompressor
        try:
            context = local.decompressor
        except AttributeError:
            context = local.decompressor = zstandard.ZstdDecompressor()
        size = zstandard.frame_content_size(data)
        if size > limit:
            raise _too_big('zstd', limit)
        if size >= 0:
            return context.decompress(data)
        try:
            return context.decompress(data, max_output_size=limit)
        except zstandard.ZstdError as exc:
            raise ValueError(f'the zstd data is corrupt or decompresses to more than {limit} '
                             f'bytes, the max_unpacked_size limit ({exc})') from None

    return compress, decompress


def _snappy_decompress(decompress: Callable[[bytes], bytes],
                       limit: int) -> Callable[[bytes], bytes]:
    """``snappy.decompress``, refusing a length header above `limit` before it allocates."""
    def bounded(data: bytes) -> bytes:
        size = shift = 0
        for byte in bytes(data[:5]):        # the uncompressed length, a varint
            size |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if size > limit:
            raise _too_big('snappy', limit)
        return decompress(data)
    return bounded


def bounded_functions(limit: int) -> list[Functions]:
    """The built-in packers' functions, compressing and decompressing at most `limit` bytes.

    :param limit: the most bytes one stored value decompresses to (an ``int``, at
        least 1; :func:`centidb.encodings.make_packers` checks it).
    :returns: a ``list`` of ``(name, compress, decompress)``: zlib, then lz4,
        zstd and snappy where their packages are installed.
    """
    functions: list[Functions] = [
        ('zlib', _bounded_compress('zlib', zlib.compress, limit), _zlib_decompress(limit))]
    try:
        import lz4.block as lz4_block
    except ImportError:
        pass
    else:
        functions.append(('lz4', _bounded_compress('lz4', lz4_block.compress, limit),
                          _lz4_decompress(lz4_block.decompress, limit)))
    try:
        import zstandard
    except ImportError:
        pass
    else:
        functions.append(('zstd', *_zstd_functions(zstandard, limit)))
    try:
        import snappy as snappy_module
        snappy_module.compress
    except (ImportError, AttributeError):
        pass
    else:
        functions.append(('snappy', _bounded_compress('snappy', snappy_module.compress, limit),
                          _snappy_decompress(snappy_module.decompress, limit)))
    return functions
