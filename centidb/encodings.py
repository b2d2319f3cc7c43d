"""Record encoders and packers.

An *encoder* turns a record (any Python value the encoder supports) into
bytes and back; a *packer* turns those bytes into other bytes and back,
usually to compress them. Both are :class:`Encoder` objects: a name plus two
functions. A store remembers each encoder and packer it has seen by name,
under a small persistent id, so a reopened store knows how every record was
written.

Built in:

* :func:`make_msgpack_encoder` (the default for collections): safe for
  files from untrusted sources (decoding never runs code). Every type a key
  may hold comes back as it went in, nested at any depth: ``None``,
  ``bool``, ``int`` of any size, ``float`` (NaN, ±inf and -0.0 included),
  ``str`` (lone surrogates included), ``bytes``, ``uuid.UUID``,
  ``datetime.datetime`` (naive, or aware with its UTC offset kept exactly as
  a fixed-offset ``datetime.timezone``: a ``zoneinfo`` zone comes back as
  its offset at that moment), ``datetime.date`` and ``decimal.Decimal``
  (NaN, infinities, -0 and the exponent kept, so the ``repr`` is the same),
  and also lists, **tuples** and dicts with keys of any of these types.
  Tuples, ints beyond 64 bits and the last four types are msgpack extension
  types 1 to 6 (see :doc:`format`). ``bytearray`` and ``memoryview`` come
  back as ``bytes``; subclasses (``IntEnum``, ``(str, Enum)`` members,
  namedtuples, ``datetime`` subclasses) come back as their base type.
* :func:`make_json_encoder`: compact UTF-8 JSON, not ``exact``. ``None``,
  bools, ``str`` and lists come back as they went in; ints of any size too
  (but where Python limits int-to-string conversion, as 3.11 does, an int of
  more than ``sys.get_int_max_str_digits()`` digits raises ``ValueError``);
  floats too, NaN and ±inf written as the non-standard tokens ``NaN``,
  ``Infinity`` and ``-Infinity``, which it reads back. Tuples (namedtuples
  included) come back as lists. Dict keys must be ``str``, ``int``,
  ``float``, ``bool`` or ``None`` and come back as strings (``1`` as
  ``'1'``, ``True`` as ``'true'``, ``None`` as ``'null'``). A ``str`` holding
  a lone surrogate raises ``UnicodeEncodeError``; ``bytes``, ``bytearray``,
  ``uuid.UUID``, ``datetime.datetime``, ``datetime.date`` and
  ``decimal.Decimal`` raise ``TypeError`` naming the type. Subclasses of
  ``int``, ``float`` and ``str`` are written as their base type's value.
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

from __future__ import annotations

import datetime
import decimal
import json
import pickle
import uuid
from typing import Any, Callable, Protocol

import msgpack

from centidb import compressors
from centidb.errors import ValueTooDeepError
from centidb.msgpackcodec import check_nested, msgpack_decoder, msgpack_encoder

__all__ = ['Encoder', 'Packer', 'make_msgpack_encoder', 'make_json_encoder',
           'PICKLE_ENCODER', 'PLAIN_PACKER', 'ZLIB_PACKER', 'LZ4_PACKER',
           'ZSTD_PACKER', 'SNAPPY_PACKER', 'BUILTIN_ENCODERS', 'msgpack_decoder',
           'msgpack_encoder', 'MAX_DEPTH', 'check_depth', 'MAX_UNPACKED_SIZE',
           'make_packers', 'builtin_encoders']


class Encoder:
    """A named pair of functions: ``encode(value) -> bytes`` and its inverse.

    Used both for record encoders and for packers (compressors), which map
    bytes to bytes. The functions are kept as :attr:`encode` and
    :attr:`decode`; ``pack`` and ``unpack`` are their older names, kept as
    aliases, as attributes and as keyword arguments.

    :param name: a non-empty ``str`` that identifies the encoder inside a
        store, so it must stay the same for as long as data written with it
        exists.
    :param encode: ``encode(value) -> bytes``, kept as :attr:`encode`.
    :param decode: ``decode(bytes) -> value``, the inverse of `encode`, kept
        as :attr:`decode`.
    :param exact: True if ``decode(encode(value)) == value`` always holds
        for the values index functions look at; lets ``put()`` skip decoding
        its own output.
    :param pack: the older name of `encode`, as a keyword.
    :param unpack: the older name of `decode`, as a keyword.
    :raises TypeError: if `name` is not a non-empty ``str``, `encode` or
        `decode` is missing or not callable, or a function is given under
        both its names.
    """

    __slots__ = ('name', 'encode', 'decode', 'exact')

    def __init__(self, name: str, encode: Callable[[Any], bytes] | None = None,
                 decode: Callable[[bytes], Any] | None = None, exact: bool = False, *,
                 pack: Callable[[Any], bytes] | None = None,
                 unpack: Callable[[bytes], Any] | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f'Encoder name must be a non-empty str, not {name!r}')
        if (encode is not None and pack is not None) or (decode is not None
                                                         and unpack is not None):
            raise TypeError(f'Encoder {name!r}: give encode and decode, or their older '
                            f'names pack and unpack, not both')
        encode = encode if pack is None else pack
        decode = decode if unpack is None else unpack
        if not callable(encode) or not callable(decode):
            raise TypeError(f'Encoder {name!r}: encode and decode must be callable')
        self.name = name
        #: ``encode(value) -> bytes``.
        self.encode = encode
        #: ``decode(bytes) -> value``, the inverse of :attr:`encode`.
        self.decode = decode
        #: True if decode(encode(value)) always equals value (for the values
        #: index functions look at). Lets put() skip decoding its own output.
        self.exact = bool(exact)

    @property
    def pack(self) -> Callable[[Any], bytes]:
        """Alias of :attr:`encode` (the older name)."""
        return self.encode

    @property
    def unpack(self) -> Callable[[bytes], Any]:
        """Alias of :attr:`decode` (the older name)."""
        return self.decode

    def __repr__(self) -> str:
        return f'<Encoder {self.name!r}>'


class Packer(Protocol):
    """What the record and batch formats need of a packer: bytes to bytes, and back.

    Every packer is an :class:`Encoder` whose functions take and return
    ``bytes``; this protocol gives those two functions their types for the
    code that compresses and decompresses stored values.
    """

    def encode(self, data: bytes, /) -> bytes:
        """Compress `data` (an encoder's output; the plain packer returns it as it is).

        :param data: the encoded bytes.
        :returns: the compressed bytes.
        """

    def decode(self, data: bytes, /) -> bytes:
        """Decompress `data`, the inverse of :meth:`encode`.

        :param data: compressed bytes.
        :returns: the bytes given to :meth:`encode`.
        """


# --- msgpack ---------------------------------------------------------------
#
# ON-DISK FORMAT: the extension type codes and payload layouts below are
# specified in docs/format.rst ("Value format (msgpack encoder)") and checked
# byte for byte by tests/test_encodings.py. Never change or reuse a code.

_TUPLE_EXT = 1      # msgpack array of the elements
_INT_EXT = 2        # int outside -2**63 .. 2**64-1: shortest two's complement, big-endian
_UUID_EXT = 3       # the 16 bytes of UUID.bytes
_DATETIME_EXT = 4   # 8 bytes wall-clock microseconds since 0001-01-01 [+ 5 bytes offset]
_DATE_EXT = 5       # 4 bytes: date.toordinal()
_DECIMAL_EXT = 6    # ASCII str(Decimal)

_EXT_NAMES = {_TUPLE_EXT: 'tuple', _INT_EXT: 'int', _UUID_EXT: 'uuid.UUID',
              _DATETIME_EXT: 'datetime.datetime', _DATE_EXT: 'datetime.date',
              _DECIMAL_EXT: 'decimal.Decimal'}

#: The most levels of lists, tuples and dicts nested in one value. ``put()``
#: refuses deeper values (:class:`~centidb.errors.ValueTooDeepError`), and
#: reading refuses stored tuples nested deeper, whatever the bytes say.
MAX_DEPTH = 100

_INT64_MIN = -2 ** 63           # msgpack's native ints: int64 and uint64
_UINT64_MAX = 2 ** 64 - 1
_MICROSECOND = datetime.timedelta(microseconds=1)
_DATETIME_MAX_US = (datetime.datetime.max - datetime.datetime.min) // _MICROSECOND
_DATE_MAX_ORDINAL = datetime.date.max.toordinal()


def _ext_tuple(value: tuple[Any, ...]) -> msgpack.ExtType:
    return msgpack.ExtType(_TUPLE_EXT, _msgpack_encode(list(value)))


def _ext_int(value: int) -> msgpack.ExtType:
    """Only called for ints msgpack cannot store natively (beyond 64 bits)."""
    return msgpack.ExtType(_INT_EXT, value.to_bytes(
        (value.bit_length() + 8) // 8, 'big', signed=True))


def _ext_uuid(value: uuid.UUID) -> msgpack.ExtType:
    return msgpack.ExtType(_UUID_EXT, value.bytes)


def _ext_datetime(value: datetime.datetime) -> msgpack.ExtType:
    """The wall-clock time as microseconds, then the UTC offset if aware."""
    micros = (((value.toordinal() - 1) * 86400 + value.hour * 3600
               + value.minute * 60 + value.second) * 1000000 + value.microsecond)
    data = micros.to_bytes(8, 'big')
    offset = value.utcoffset()
    if offset is not None:
        data += (offset // _MICROSECOND).to_bytes(5, 'big', signed=True)
    return msgpack.ExtType(_DATETIME_EXT, data)


def _ext_date(value: datetime.date) -> msgpack.ExtType:
    return msgpack.ExtType(_DATE_EXT, value.toordinal().to_bytes(4, 'big'))


def _ext_decimal(value: decimal.Decimal) -> msgpack.ExtType:
    # Decimal.__str__, not str(): a subclass may change its own str().
    return msgpack.ExtType(_DECIMAL_EXT, decimal.Decimal.__str__(value).encode('ascii'))


def _base_int(value: int) -> int | msgpack.ExtType:
    """An int subclass (IntEnum, ...) as a plain int, or extension 2 if it needs one.

    msgpack calls ``default`` at most once per value, so a big plain int
    returned here would not reach :func:`_ext_int`.
    """
    value = int.__int__(value)
    return value if _INT64_MIN <= value <= _UINT64_MAX else _ext_int(value)


def _base_bytes(value: bytes | bytearray) -> bytes:
    return bytes(memoryview(value))


# The other exact types that msgpack hands to ``default`` (tuples are tested
# first), with one lookup: an int only when it is beyond 64 bits.
_EXT_ENCODERS: dict[type, Callable[[Any], msgpack.ExtType]] = {int: _ext_int, uuid.UUID: _ext_uuid,
                 datetime.datetime: _ext_datetime, datetime.date: _ext_date,
                 decimal.Decimal: _ext_decimal}

# Subclasses, as their base type. datetime comes before date, its base class.
# The base types' own methods (str.__str__, ...) give the value itself, even
# where a subclass changes what str() or float() return.
_SUBCLASS_ENCODERS: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (int, _base_int), (float, float.__float__), (str, str.__str__),
    (bytes, _base_bytes), (bytearray, _base_bytes), (dict, dict), (list, list),
    (tuple, _ext_tuple), (datetime.datetime, _ext_datetime),
    (datetime.date, _ext_date), (uuid.UUID, _ext_uuid),
    (decimal.Decimal, _ext_decimal))


def _msgpack_default(value: Any) -> Any:
    """Pack what strict msgpack types refuse: the extension types, and subclasses."""
    if type(value) is tuple:        # the usual caller: spare it the lookup
        return msgpack.ExtType(_TUPLE_EXT, _msgpack_encode(list(value)))
    to_ext = _EXT_ENCODERS.get(type(value))
    if to_ext is not None:
        return to_ext(value)
    for base, convert in _SUBCLASS_ENCODERS:
        if isinstance(value, base):
            return convert(value)
    raise TypeError(
        f'msgpack encoder cannot store {type(value).__name__!r} values (it stores '
        f'None, bool, int, float, str, bytes, list, tuple, dict, uuid.UUID, '
        f'datetime.datetime, datetime.date and decimal.Decimal)')


def _decode_int(data: bytes) -> int:
    value = int.from_bytes(data, 'big', signed=True)
    if len(data) != (value.bit_length() + 8) // 8:
        raise ValueError('not the shortest two\'s complement of the int')
    if _INT64_MIN <= value <= _UINT64_MAX:
        raise ValueError('the int is in the 64-bit range msgpack stores natively')
    return value


def _decode_uuid(data: bytes) -> uuid.UUID:
    if len(data) != 16:
        raise ValueError(f'{len(data)} bytes, not 16')
    return uuid.UUID(bytes=data)


def _decode_datetime(data: bytes) -> datetime.datetime:
    tz: datetime.timezone | None
    if len(data) == 8:
        tz = None
    elif len(data) == 13:
        offset = int.from_bytes(data[8:], 'big', signed=True)
        tz = datetime.timezone(datetime.timedelta(microseconds=offset))
    else:
        raise ValueError(f'{len(data)} bytes, not 8 (naive) or 13 (aware)')
    micros = int.from_bytes(data[:8], 'big')
    if micros > _DATETIME_MAX_US:
        raise ValueError('the time is after datetime.max')
    return (datetime.datetime.min + datetime.timedelta(microseconds=micros)).replace(tzinfo=tz)


def _decode_date(data: bytes) -> datetime.date:
    if len(data) != 4:
        raise ValueError(f'{len(data)} bytes, not 4')
    ordinal = int.from_bytes(data, 'big')
    if not 1 <= ordinal <= _DATE_MAX_ORDINAL:
        raise ValueError(f'ordinal {ordinal} is outside 1 .. {_DATE_MAX_ORDINAL}')
    return datetime.date.fromordinal(ordinal)


def _decode_decimal(data: bytes) -> decimal.Decimal:
    text = data.decode('ascii')
    value: decimal.Decimal | None
    try:
        value = decimal.Decimal(text)
    except ArithmeticError:     # decimal.InvalidOperation, when the context traps it
        value = None
    # Only the one spelling str() gives: no '1e5', ' 1', '1_0' or 'nan'.
    if value is None or decimal.Decimal.__str__(value) != text:
        raise ValueError(f'{text!r} is not the str() of a Decimal')
    return value


_EXT_DECODERS: dict[int, Callable[[bytes], Any]] = {_INT_EXT: _decode_int, _UUID_EXT: _decode_uuid,
                 _DATETIME_EXT: _decode_datetime, _DATE_EXT: _decode_date,
                 _DECIMAL_EXT: _decode_decimal}


def _decode_other_ext(code: int, data: bytes) -> Any:
    """Decode an extension value other than a tuple (unknown codes as ``ExtType``)."""
    decode = _EXT_DECODERS.get(code)
    if decode is None:
        return msgpack.ExtType(code, data)
    try:
        return decode(data)
    except (ValueError, OverflowError) as exc:
        shown = data[:40].hex(' ') + (' ...' if len(data) > 40 else '')
        raise ValueError(f'malformed msgpack extension type {code} ({_EXT_NAMES[code]}), '
                         f'payload [{shown}]: {exc}') from None


def _make_ext_hook(decode_items: Callable[[bytes], Any] | None) -> Callable[[int, bytes], Any]:
    """msgpack's ``ext_hook`` for one level of tuple nesting; never runs stored code.

    :param decode_items: decodes the payload of a tuple met at this level
        (its own tuples are one level deeper); None at ``MAX_DEPTH + 1``,
        where a tuple is refused.
    """
    def ext_hook(code: int, data: bytes) -> Any:
        if code != _TUPLE_EXT:
            return _decode_other_ext(code, data)
        if decode_items is None:
            raise ValueError(f'tuples nested more than {MAX_DEPTH} deep '
                             f'(centidb.encodings.MAX_DEPTH)')
        items = decode_items(data)
        if type(items) is not list:
            raise ValueError(f'malformed msgpack extension type 1 (tuple): the payload '
                             f'holds {type(items).__name__!r}, not an array')
        return tuple(items)
    return ext_hook


# Tuple levels whose payloads are parsed with their tuples decoded inside
# msgpack.unpackb's call, by the next level's ext_hook (about 45 KB of C
# stack per level). Deeper levels are parsed with their tuples left as
# _Pending, which are decoded after unpackb returns (see _deferring_decoder),
# so at most one such unpackb call is active at a time: a value nested
# MAX_DEPTH deep decodes in a thread with a 320 KB stack.
_STACKED_LEVELS = 1


class _Pending:
    """A tuple met while a deferring level was parsed: its payload, until it is decoded."""

    __slots__ = ('data',)

    def __init__(self, data: bytes | None) -> None:
        self.data = data


def _tuple_resolver(decode_items: Callable[[_Pending], Any] | None) -> Callable[[_Pending], Any]:
    """Decode a :class:`_Pending` tuple of one deferring level, as :func:`_make_ext_hook` does.

    :param decode_items: the level's payload decoder (it takes the payload
        out of the ``_Pending``); None at ``MAX_DEPTH + 1``.
    """
    def resolve(pending: _Pending) -> Any:
        if decode_items is None:
            raise ValueError(f'tuples nested more than {MAX_DEPTH} deep '
                             f'(centidb.encodings.MAX_DEPTH)')
        items = decode_items(pending)
        if type(items) is not list:
            raise ValueError(f'malformed msgpack extension type 1 (tuple): the payload '
                             f'holds {type(items).__name__!r}, not an array')
        return tuple(items)
    return resolve


def _defer(code: int, payload: bytes) -> Any:
    """The ext_hook of a deferring level: a tuple is left as a :class:`_Pending`."""
    if code != _TUPLE_EXT:
        return _decode_other_ext(code, payload)
    return _Pending(payload)


def _deferring_decoder(next_level: Callable[[_Pending], Any]) -> Callable[[_Pending], Any]:
    """The payload decoder of a tuple level deeper than :data:`_STACKED_LEVELS`.

    It takes the payload out of the ``_Pending`` and parses it with its
    tuples left as new ``_Pending`` objects; then the parser and the payload
    are let go, and each tuple is decoded by `next_level` and put in place.
    So a level holds only its decoded items while deeper levels decode:
    tuples nested deep around large data hold one or two copies of it in
    all, not two per level.
    """
    def decode(pending: _Pending) -> Any:
        data, pending.data = pending.data, None
        try:
            value = _unpackb(data, strict_map_key=False, ext_hook=_defer)
        except UnicodeDecodeError:
            try:
                value = _unpackb(data, strict_map_key=False, ext_hook=_defer,
                                 unicode_errors='surrogatepass')
            except UnicodeDecodeError as exc:
                raise ValueError(f'a msgpack str holds bytes that are not UTF-8: {exc}') from None
        del data
        return _put_tuples(value, next_level)
    return decode


def _put_tuples(value: Any, resolve: Callable[[_Pending], Any]) -> Any:
    """`value` with each :class:`_Pending` in it replaced by ``resolve(pending)``.

    Walks lists and dicts (keys too) with a stack of its own: the parsed
    value may nest deeper than Python recurses.
    """
    if type(value) is _Pending:
        return resolve(value)
    todo = [value]
    while todo:
        item = todo.pop()
        if type(item) is list:
            for i, element in enumerate(item):
                if type(element) is _Pending:
                    item[i] = resolve(element)
                elif type(element) is list or type(element) is dict:
                    todo.append(element)
        elif type(item) is dict:
            if any(type(key) is _Pending for key in item):
                pairs = [(resolve(key) if type(key) is _Pending else key, element)
                         for key, element in item.items()]
                item.clear()
                item.update(pairs)
            for key, element in item.items():
                if type(element) is _Pending:
                    item[key] = resolve(element)
                elif type(element) is list or type(element) is dict:
                    todo.append(element)
    return value


def _ext_hooks() -> Callable[[int, bytes], Any]:
    """Chain one ext_hook per tuple level, from ``MAX_DEPTH + 1`` (refuses) up to 1.

    The depth of a tuple is known from the hook that meets it, with no
    counter to keep per thread: each hook decodes a tuple's payload with the
    next level's hook (deeper than :data:`_STACKED_LEVELS`, once the payload
    is parsed: see :func:`_deferring_decoder`).
    """
    resolve = _tuple_resolver(None)
    for _ in range(MAX_DEPTH, _STACKED_LEVELS, -1):
        resolve = _tuple_resolver(_deferring_decoder(resolve))
    first_deferred = resolve

    def deferring_hook(code: int, data: bytes) -> Any:
        if code != _TUPLE_EXT:
            return _decode_other_ext(code, data)
        return first_deferred(_Pending(data))
    hook: Callable[[int, bytes], Any] = deferring_hook
    for _ in range(_STACKED_LEVELS, 0, -1):
        hook = _make_ext_hook(msgpack_decoder(_unpackb, hook))
    return hook


def _msgpack_encode(value: Any) -> bytes:
    """Pack `value` with a packer of its own (for a tuple's payload)."""
    try:
        return _packb(value, use_bin_type=True, strict_types=True,
                      default=_msgpack_default)
    except UnicodeEncodeError:
        return _msgpack_encode_surrogates(value)


def _msgpack_encode_surrogates(value: Any) -> bytes:
    """Pack `value` holding a ``str`` with a lone surrogate (the slow path)."""
    return _packb(value, use_bin_type=True, strict_types=True,
                  default=_msgpack_default, unicode_errors='surrogatepass')


_CONTAINERS = (list, tuple, dict)


def _too_deep() -> ValueTooDeepError:
    return ValueTooDeepError(f'the value nests lists, tuples and dicts more than '
                             f'{MAX_DEPTH} levels deep (centidb.encodings.MAX_DEPTH)')


def check_depth(value: Any) -> None:
    """Check that `value` nests lists, tuples and dicts at most :data:`MAX_DEPTH` deep.

    A scalar has depth 0, ``[1]`` depth 1, ``{'a': (1,)}`` depth 2; dict
    keys count as well as values. The msgpack and JSON encoders call it
    before encoding.

    :param value: the value about to be encoded.
    :raises ~centidb.errors.ValueTooDeepError: if it is deeper, naming the
        limit.
    """
    if isinstance(value, _CONTAINERS):
        check_nested(value, MAX_DEPTH, _too_deep)


def _too_deep_stored() -> ValueError:
    return ValueError(f'the stored value nests lists, tuples and dicts more than '
                      f'{MAX_DEPTH} levels deep (centidb.encodings.MAX_DEPTH)')


# msgpack has no type information: these say what its two functions return.
_packb: Callable[..., bytes] = msgpack.packb
_unpackb: Callable[..., Any] = msgpack.unpackb


class _MsgpackPacker(Protocol):
    """The one method used of a ``msgpack.Packer`` (msgpack has no type information)."""

    def pack(self, obj: Any, /) -> bytes: ...


def make_msgpack_encoder() -> Encoder:
    """Return a new msgpack encoder (named ``'msgpack'``).

    Every type a key may hold round-trips, and so do lists, tuples and dicts
    of them; the module docstring lists the types and :doc:`format` the
    bytes.

    :returns: an exact :class:`Encoder`. Its ``encode`` raises ``TypeError``
        for a value of a type it cannot store (``set``, ``datetime.time``,
        ...) and :class:`~centidb.errors.ValueTooDeepError` for a value
        nested deeper than :data:`MAX_DEPTH`. Its ``decode`` raises
        ``ValueError`` for bytes that are not msgpack, hold a malformed
        extension payload or nest tuples deeper than :data:`MAX_DEPTH`
        (reading a record, the store reports that as
        :class:`~centidb.errors.CorruptRecordError`).
    """
    def make_packer() -> _MsgpackPacker:
        packer: _MsgpackPacker = msgpack.Packer(
            use_bin_type=True, strict_types=True, default=_msgpack_default)
        return packer

    encode = msgpack_encoder(make_packer, _msgpack_encode_surrogates, MAX_DEPTH, _too_deep)
    return Encoder('msgpack', encode, _msgpack_decode, exact=True)


def make_json_encoder() -> Encoder:
    """Return a new JSON encoder (named ``'json'``), writing compact UTF-8.

    What it does with each type is in the module docstring: ``bytes``,
    UUIDs, datetimes, dates and Decimals raise ``TypeError``; tuples come
    back as lists and non-``str`` dict keys as strings; NaN and ±inf are
    written as the non-standard tokens Python's ``json`` reads back.

    :returns: an inexact :class:`Encoder`. Its ``encode`` raises
        ``TypeError`` for a value JSON cannot store, ``UnicodeEncodeError``
        for a ``str`` holding a lone surrogate, ``ValueError`` for an
        ``int`` of more digits than ``sys.get_int_max_str_digits()`` allows,
        and :class:`~centidb.errors.ValueTooDeepError` for a value nested
        deeper than :data:`MAX_DEPTH`. Its ``decode`` raises ``ValueError``
        for bytes that are not JSON, nested too deeply included.
    """
    dumps = json.JSONEncoder(separators=(',', ':'), ensure_ascii=False).encode

    def encode(value: Any) -> bytes:
        check_depth(value)
        return dumps(value).encode('utf-8')

    return Encoder('json', encode, _json_loads)


def _json_loads(data: bytes) -> Any:
    """``json.loads``, with nesting too deep for Python's parser as ``ValueError``."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError('the JSON nests arrays and objects too deeply to parse') from None


def _pickle_dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


#: Encodes any picklable value. Never use it on files you did not write.
PICKLE_ENCODER = Encoder('pickle', _pickle_dumps, pickle.loads, exact=True)


def _identity(data: bytes) -> bytes:
    return data


#: Stores the encoded bytes as they are.
PLAIN_PACKER = Encoder('plain', _identity, _identity)

#: The most bytes a built-in packer decompresses one stored value (a record or a
#: batch) to, unless the store was opened with another ``max_unpacked_size``.
#: A stored value claiming more raises ``ValueError`` before more than this
#: is unpacked (reading a record, :class:`~centidb.errors.CorruptRecordError`),
#: so a small crafted value cannot take a reader's memory; packing more
#: raises :class:`~centidb.errors.ValueTooLargeError`, so none is written.
MAX_UNPACKED_SIZE = 64 * 1024 * 1024


def make_packers(max_unpacked_size: int = MAX_UNPACKED_SIZE) -> list[Encoder]:
    """Return the built-in compressing packers, unpacking at most `max_unpacked_size` bytes.

    :data:`ZLIB_PACKER` and the others are made by this function with
    :data:`MAX_UNPACKED_SIZE`; a store opened with another
    ``max_unpacked_size`` reads and writes with packers made by it.
    Unpacking more than the limit raises ``ValueError`` without unpacking it
    all; packing more raises :class:`~centidb.errors.ValueTooLargeError`
    (a ``ValueError``), as such a value could never be read back.

    :param max_unpacked_size: the most bytes one stored value decompresses to.
    :returns: a ``list`` of :class:`Encoder`: zlib, then lz4, zstd and
        snappy where their packages are installed.
    :raises TypeError: if `max_unpacked_size` is not an ``int``.
    :raises ValueError: if it is below 1.
    """
    limit = max_unpacked_size
    if type(limit) is not int:
        raise TypeError(f'max_unpacked_size must be an int, not {type(limit).__name__!r}')
    if limit < 1:
        raise ValueError(f'max_unpacked_size must be at least 1, not {limit}')
    return [Encoder(name, compress, decompress)
            for name, compress, decompress in compressors.bounded_functions(limit)]


def builtin_encoders(max_unpacked_size: int = MAX_UNPACKED_SIZE) -> list[Encoder]:
    """:data:`BUILTIN_ENCODERS`, with packers made by :func:`make_packers`.

    :param max_unpacked_size: as for :func:`make_packers`.
    :returns: a new ``list``; the encoders (and the plain packer) are the
        module's own objects.
    """
    if max_unpacked_size == MAX_UNPACKED_SIZE and type(max_unpacked_size) is int:
        return list(BUILTIN_ENCODERS)
    packers = {packer.name: packer for packer in make_packers(max_unpacked_size)}
    return [packers.get(encoder.name, encoder) for encoder in BUILTIN_ENCODERS]


_PACKERS = {packer.name: packer for packer in make_packers()}
#: Compresses with zlib (level 6).
ZLIB_PACKER = _PACKERS['zlib']
#: Compresses with lz4 (block format); ``None`` without the ``lz4`` package.
LZ4_PACKER = _PACKERS.get('lz4')
#: Compresses with zstd (level 3); ``None`` without the ``zstandard`` package.
ZSTD_PACKER = _PACKERS.get('zstd')
#: Compresses with snappy; ``None`` without the ``python-snappy`` package.
SNAPPY_PACKER = _PACKERS.get('snappy')


#: msgpack's ``ext_hook`` for a whole value: its tuples are at level 1.
_msgpack_ext = _ext_hooks()
_msgpack_decode = msgpack_decoder(_unpackb, _msgpack_ext, MAX_DEPTH, _too_deep_stored)

#: Encoders and packers every store knows without ``add_encoder()``.
BUILTIN_ENCODERS = [encoder for encoder in (
    make_msgpack_encoder(), make_json_encoder(), PICKLE_ENCODER, PLAIN_PACKER,
    ZLIB_PACKER, LZ4_PACKER, ZSTD_PACKER, SNAPPY_PACKER) if encoder is not None]
