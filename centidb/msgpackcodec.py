"""The msgpack encoder's two calls: ``encode`` and ``decode`` of one value.

:class:`MsgpackEncode` packs a value with a ``msgpack.Packer`` of the
calling thread's own; :class:`MsgpackDecode` unpacks one with centidb's
options. Both refuse values nested deeper than a limit (:func:`check_nested`).
:mod:`centidb.encodings` makes the ones the msgpack encoder uses (with its
extension types) through :func:`msgpack_encoder` and :func:`msgpack_decoder`.

Written once: Cython compiles this file as it is, with the types of
``msgpackcodec.pxd`` (see :data:`centidb.impl.PURE_MODE`), so that a compiled
caller can ``cimport`` both classes and call ``run`` without a Python call.
Counting the bytes that can open a container, :func:`may_nest_deeper`, is
the one part of the compiled kernel (``centidb/_kernel.pxi``) used here.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from centidb import _nocython as cython
else:
    try:
        import cython
    except ImportError:     # not built: the names below are the pure-Python ones
        from centidb import _nocython as cython

from centidb import impl

__all__ = ['MsgpackDecode', 'MsgpackEncode', 'msgpack_decoder', 'msgpack_encoder',
           'check_nested', 'may_nest_deeper']


def check_nested(container: Any, room: int, too_deep: Callable[[], Exception]) -> None:
    """Raise ``too_deep()`` if `container` holds more than `room` levels of containers.

    `container` (a list, tuple or dict, or a subclass) is the first level;
    dict keys count as well as values. A list, tuple or dict of more than 16
    items is first asked which types it holds (one ``set(map(type, ...))``),
    so a long list of scalars costs no loop over its items.

    :param container: the value to check.
    :param room: the most levels it may hold, itself included.
    :param too_deep: ``too_deep()`` returns the exception to raise.
    """
    if room <= 0:
        raise too_deep()
    if isinstance(container, dict):
        if (len(container) <= 16 or _holds_container(container.keys())
                or _holds_container(container.values())):
            if type(container) is dict:
                mapping = container     # compiled: walked in place
                for key, item in mapping.items():
                    _check_pair(key, item, room, too_deep)
            else:
                for key, item in container.items():
                    _check_pair(key, item, room, too_deep)
    elif len(container) <= 16 or _holds_container(container):
        for item in container:
            if isinstance(item, (list, tuple, dict)):
                check_nested(item, room - 1, too_deep)


def _check_pair(key: Any, item: Any, room: int, too_deep: Callable[[], Exception]) -> None:
    """:func:`check_nested` for one key and value of a dict at level `room`."""
    if isinstance(key, (list, tuple, dict)):
        check_nested(key, room - 1, too_deep)
    if isinstance(item, (list, tuple, dict)):
        check_nested(item, room - 1, too_deep)


def _holds_container(items: Any) -> bool:
    """True if a list, tuple or dict (or a subclass) is among `items`."""
    return any(issubclass(kind, (list, tuple, dict)) for kind in set(map(type, items)))


def may_nest_deeper(data: bytes | bytearray | memoryview, max_depth: int) -> bool:
    """True if more than `max_depth` bytes of `data` can open a map, an array or an extension.

    A value cannot nest deeper than its data holds such bytes, so the
    decoder walks only a value whose data passes this test.

    :param data: msgpack data (``bytes``, or a buffer).
    :param max_depth: the number of such bytes allowed.
    """
    return (len(data) > max_depth
            and len(bytes(data).translate(None, _OTHER_BYTES)) > max_depth)


# Every byte that can open a msgpack map, array or extension (a tuple's is
# one), and the others.
_OPENING_BYTES = bytes([*range(0x80, 0xA0), 0xC7, 0xC8, 0xC9, *range(0xD4, 0xD9),
                        0xDC, 0xDD, 0xDE, 0xDF])
_OTHER_BYTES = bytes(sorted(set(range(256)) - set(_OPENING_BYTES)))


class MsgpackDecode:
    """``decode(data) -> value``: `unpackb` with centidb's options.

    Map keys may be any key type, extension types go to `ext_hook`, and a
    ``str`` holding a lone surrogate decodes.

    :param unpackb: ``msgpack.unpackb``.
    :param ext_hook: decodes centidb's extension types.
    :param max_depth: if above 0, a value nesting lists, tuples and dicts
        deeper raises ``too_deep()``. Only data holding more than
        `max_depth` bytes that can open a container is walked.
    :param too_deep: see `max_depth`.
    """

    def __init__(self, unpackb: Callable[..., Any], ext_hook: Callable[[int, bytes], Any],
                 max_depth: int = 0, too_deep: Callable[[], Exception] | None = None) -> None:
        self.unpackb, self.ext_hook = unpackb, ext_hook
        self.max_depth, self.too_deep = max_depth, too_deep

    def run(self, data: bytes) -> Any:
        """The value `data` holds.

        :param data: msgpack data.
        :raises ValueError: for data that is not msgpack, holds bytes that
            are not UTF-8 in a ``str``, or (from `ext_hook`) a malformed
            extension payload.
        """
        try:
            value = self.unpackb(data, strict_map_key=False, ext_hook=self.ext_hook)
        except UnicodeDecodeError:
            # A lone surrogate, or bad bytes: ValueError, as enclosing tuples retry on this.
            try:
                value = self.unpackb(data, strict_map_key=False, ext_hook=self.ext_hook,
                                     unicode_errors='surrogatepass')
            except UnicodeDecodeError as exc:
                raise ValueError(f'a msgpack str holds bytes that are not UTF-8: {exc}') from None
        if (self.max_depth > 0 and isinstance(value, (list, tuple, dict))
                and _nests_deeper(data, self.max_depth)):
            check_nested(value, self.max_depth, self.too_deep)  # type: ignore[arg-type]
        return value

    def __call__(self, data: bytes) -> Any:
        return self.run(data)


class MsgpackEncode:
    """``encode(value) -> bytes``: a ``msgpack.Packer`` of each thread's own.

    A ``msgpack.Packer`` is not thread-safe, so each thread makes one, once.
    The thread that called last and its packer's ``pack`` are kept together
    (one attribute, set at once), so that a thread writing many records
    skips the thread-local lookup.

    :param make_packer: makes a ``msgpack.Packer`` with centidb's options.
    :param pack_surrogates: packs a value holding a ``str`` with a lone
        surrogate (the packer resets itself when it cannot).
    :param max_depth: the most levels of lists, tuples and dicts a value
        may nest.
    :param too_deep: ``too_deep()`` returns the exception for a deeper value.
    """

    def __init__(self, make_packer: Callable[[], Any], pack_surrogates: Callable[[Any], bytes],
                 max_depth: int, too_deep: Callable[[], Exception]) -> None:
        self.make_packer, self.pack_surrogates = make_packer, pack_surrogates
        self.max_depth, self.too_deep = max_depth, too_deep
        self.local = threading.local()
        self.last: tuple[int, Callable[[Any], bytes]] = (-1, pack_surrogates)

    def run(self, value: Any) -> bytes:
        """`value` packed.

        :param value: the value to pack.
        :raises TypeError: for a value the packer cannot store.
        :raises Exception: ``too_deep()``, for a value nested deeper than
            `max_depth`.
        """
        if isinstance(value, (list, tuple, dict)):
            check_nested(value, self.max_depth, self.too_deep)
        thread = _thread_id()
        last = self.last
        if last[0] == thread:
            pack = last[1]
        else:
            try:
                packer = self.local.packer
            except AttributeError:
                packer = self.local.packer = self.make_packer()
            pack = packer.pack
            self.last = (thread, pack)
        try:
            result: bytes = pack(value)
            return result
        except UnicodeEncodeError:
            return self.pack_surrogates(value)

    def __call__(self, value: Any) -> bytes:
        return self.run(value)


def msgpack_decoder(unpackb: Callable[..., Any], ext_hook: Callable[[int, bytes], Any],
                    max_depth: int = 0,
                    too_deep: Callable[[], Exception] | None = None) -> MsgpackDecode:
    """Return the msgpack encoder's ``decode``: a :class:`MsgpackDecode`.

    :param unpackb: ``msgpack.unpackb``.
    :param ext_hook: decodes centidb's extension types.
    :param max_depth: if above 0, the most levels of lists, tuples and dicts
        a value may nest.
    :param too_deep: ``too_deep()`` returns the exception for a deeper value.
    :returns: ``decode(data) -> value``.
    """
    return MsgpackDecode(unpackb, ext_hook, max_depth, too_deep)


def msgpack_encoder(make_packer: Callable[[], Any],
                    pack_surrogates: Callable[[Any], bytes], max_depth: int,
                    too_deep: Callable[[], Exception]) -> MsgpackEncode:
    """Return the msgpack encoder's ``encode``: a :class:`MsgpackEncode`.

    :param make_packer: makes a ``msgpack.Packer`` with centidb's options.
    :param pack_surrogates: packs a value holding a ``str`` with a lone
        surrogate.
    :param max_depth: the most levels of lists, tuples and dicts a value
        may nest.
    :param too_deep: ``too_deep()`` returns the exception for a deeper value.
    :returns: ``encode(value) -> bytes``.
    """
    return MsgpackEncode(make_packer, pack_surrogates, max_depth, too_deep)


#: :func:`may_nest_deeper` in Python, whichever is active (for the kernel's tests).
_python_may_nest_deeper = may_nest_deeper
may_nest_deeper = impl.choose(may_nest_deeper)
if not cython.compiled:
    # Compiled, msgpackcodec.pxd cimports the C functions of these names.
    _nests_deeper = may_nest_deeper
    _thread_id = threading.get_ident
