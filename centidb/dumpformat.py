"""The dump format: a store as JSON Lines, one record or metadata entry a line.

The full specification, with an example of every line type and every tag, is
:doc:`dumpformat`. In short:

* each line is one JSON object with a ``"type"``: a ``"header"`` line first,
  then ``"collection"`` and ``"counter"`` lines (metadata), then
  ``"record"`` lines, each naming its collection and key, and last a
  ``"trailer"`` line with the number of lines before it, each collection's
  record count and the SHA-256 of those lines, so a dump cut short or
  changed is refused;
* values are JSON where JSON says exactly the same (``null``, booleans, ints
  within +-(2**53 - 1), finite floats other than -0.0, strings, arrays,
  objects with string keys); every other value is a *tag*, an object with
  exactly one member whose name starts with ``$``, such as
  ``{"$bytes": "AAE="}``. A dict that would look like a tag is written in
  the general ``$dict`` form, so no value reads as something else.

:func:`to_json` and :func:`from_json` convert values; :func:`record_line`,
the ``text()`` method of each line class and :func:`parse_line` convert
lines. Reading never runs code from the dump. This module only converts: a
whole dump, its order and its trailer are :mod:`centidb.dumpfile`'s, and
reading a store and loading one are the command line's work.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
import math
import re
import struct
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, NoReturn, Tuple, Union

import msgpack

from centidb import keylib
from centidb.errors import CentiError, DumpFormatError, DumpTypeError
from centidb.fieldpaths import check_fields
from centidb.keyformat import Desc, Key

__all__ = ['DUMP_FORMAT', 'DUMP_VERSION', 'SAFE_INT_MAX', 'to_json', 'from_json',
           'HeaderLine', 'IndexSpec', 'CollectionLine', 'CounterLine', 'RecordLine',
           'TrailerLine', 'Line', 'header_line', 'record_line', 'parse_line']

#: The ``"format"`` of a dump's header line.
DUMP_FORMAT = 'centidb-dump'
#: The dump format version this code writes and reads.
DUMP_VERSION = 1
#: The largest int written as a plain JSON number (2**53 - 1, the largest
#: int every JSON reader holds exactly); larger ints, and ints below
#: ``-SAFE_INT_MAX``, are tagged ``$int``.
SAFE_INT_MAX = 2 ** 53 - 1

_SURROGATES = re.compile('([\ud800-\udfff])')
_INT_TEXT = re.compile(r'-?(0x[0-9a-f]+|0|[1-9][0-9]*)\Z')
_ISO_DATETIME = re.compile(r'(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{6}))?'
                           r'(?:([+-])(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{6}))?)?)?\Z')
_NAN_BITS = re.compile(r'nan:([0-9a-f]{16})\Z')
_DEFAULT_NAN = struct.pack('>d', math.nan).hex()
_SPECIAL_FLOATS = {'inf': math.inf, '-inf': -math.inf, '-0.0': -0.0, 'nan': math.nan}


# --- values -> JSON ----------------------------------------------------------

def _int_json(value: int) -> Any:
    if -SAFE_INT_MAX <= value <= SAFE_INT_MAX:
        return value
    try:
        text = str(value)
    except ValueError:      # more digits than Python converts (sys.set_int_max_str_digits)
        text = ('-' if value < 0 else '') + hex(abs(value))
    return {'$int': text}


def _float_json(value: float) -> Any:
    if value != value:
        bits = struct.pack('>d', value).hex()
        return {'$float': 'nan' if bits == _DEFAULT_NAN else f'nan:{bits}'}
    if math.isinf(value):
        return {'$float': 'inf' if value > 0 else '-inf'}
    if value == 0 and math.copysign(1.0, value) < 0:
        return {'$float': '-0.0'}
    return value


def _str_json(value: str) -> Any:
    if _SURROGATES.search(value) is None:
        return value
    return {'$str': [ord(part) if _SURROGATES.match(part) else part
                     for part in _SURROGATES.split(value) if part]}


def _dict_json(value: Mapping[Any, Any]) -> Any:
    plain = all(isinstance(key, str) and _SURROGATES.search(key) is None for key in value)
    if plain and not (len(value) == 1 and next(iter(value)).startswith('$')):
        return {str.__str__(key): to_json(item) for key, item in value.items()}
    return {'$dict': [[to_json(key), to_json(item)] for key, item in value.items()]}


def _bytes_text(value: bytes) -> str:
    return base64.b64encode(value).decode('ascii')


def _datetime_json(value: datetime.datetime) -> Any:
    return {'$datetime': datetime.datetime.isoformat(value)}


def _date_json(value: datetime.date) -> Any:
    return {'$date': datetime.date.isoformat(value)}


# Exact types; subclasses go through _SUBCLASS_WRITERS. datetime precedes date.
_WRITERS: dict[type, Callable[[Any], Any]] = {
    int: _int_json, float: _float_json, str: _str_json, dict: _dict_json,
    bytes: lambda value: {'$bytes': _bytes_text(value)},
    list: lambda value: [to_json(item) for item in value],
    tuple: lambda value: {'$tuple': [to_json(item) for item in value]},
    uuid.UUID: lambda value: {'$uuid': str(value)},
    datetime.datetime: _datetime_json, datetime.date: _date_json,
    decimal.Decimal: lambda value: {'$decimal': decimal.Decimal.__str__(value)},
    Desc: lambda value: {'$desc': to_json(value.value)},
    msgpack.ExtType: lambda value: {'$ext': [value.code, _bytes_text(value.data)]},
    msgpack.Timestamp: lambda value: {'$timestamp': [value.seconds, value.nanoseconds]},
}
_SUBCLASS_WRITERS: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (int, lambda value: _int_json(int.__int__(value))),
    (float, lambda value: _float_json(float.__float__(value))),
    (str, lambda value: _str_json(str.__str__(value))),
    (bytes, lambda value: {'$bytes': _bytes_text(bytes(value))}),
    (bytearray, lambda value: {'$bytes': _bytes_text(bytes(value))}),
    (memoryview, lambda value: {'$bytes': _bytes_text(bytes(value))}),
    (dict, _dict_json), (list, _WRITERS[list]), (tuple, _WRITERS[tuple]),
    (datetime.datetime, _datetime_json), (datetime.date, _date_json),
    (uuid.UUID, _WRITERS[uuid.UUID]), (decimal.Decimal, _WRITERS[decimal.Decimal]))


def to_json(value: Any) -> Any:
    """The JSON form of `value`: plain JSON where that is exact, else tagged.

    Every type the msgpack encoder stores is written, nested at any depth,
    and also :class:`~centidb.keylib.Desc` (for keys). Subclasses are
    written as their base type, as the msgpack encoder writes them;
    ``bytearray`` and ``memoryview`` as ``bytes``.

    :param value: the value to write.
    :returns: ``None``, a ``bool``, ``int``, ``float``, ``str``, ``list`` or
        ``dict`` with ``str`` keys, nested; ``json.dumps`` writes it with
        ``allow_nan=False``.
    :raises ~centidb.errors.DumpTypeError: if `value` holds a value of
        another type.
    """
    if value is None or value is True or value is False:
        return value
    writer = _WRITERS.get(type(value))
    if writer is not None:
        return writer(value)
    for base, write in _SUBCLASS_WRITERS:
        if isinstance(value, base):
            return write(value)
    raise DumpTypeError(
        f'the dump format cannot write {type(value).__name__!r} values (it writes None, '
        f'bool, int, float, str, bytes, list, tuple, dict, uuid.UUID, datetime.datetime, '
        f'datetime.date, decimal.Decimal, Desc, msgpack.ExtType and msgpack.Timestamp)')


# --- JSON -> values ----------------------------------------------------------

def _text_payload(tag: str, payload: Any) -> str:
    if type(payload) is not str:
        raise DumpFormatError(f'{{"{tag}": ...}} holds {_shown(payload)}, not a string')
    return payload


def _list_payload(tag: str, payload: Any, length: int | None = None) -> list[Any]:
    if type(payload) is not list or (length is not None and len(payload) != length):
        what = 'an array' if length is None else f'an array of {length}'
        raise DumpFormatError(f'{{"{tag}": ...}} holds {_shown(payload)}, not {what}')
    return payload


def _bytes_payload(tag: str, payload: Any) -> bytes:
    text = _text_payload(tag, payload)
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        data = None
    if data is None or _bytes_text(data) != text:
        raise DumpFormatError(f'{{"{tag}": {text!r:.60}}}: not padded standard base64')
    return data


def _int_from(payload: Any) -> int:
    text = _text_payload('$int', payload)
    if not _INT_TEXT.match(text):
        raise DumpFormatError(f'{{"$int": {text!r:.60}}}: not decimal or 0x-hex digits')
    try:
        return int(text, 16 if 'x' in text else 10)
    except ValueError as exc:      # more digits than Python converts
        raise DumpFormatError(f'{{"$int": {text!r:.60}}}: {exc}') from None


def _float_from(payload: Any) -> float:
    text = _text_payload('$float', payload)
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    match = _NAN_BITS.match(text)
    if match:
        value: float = struct.unpack('>d', bytes.fromhex(match.group(1)))[0]
        if value != value:
            return value
    raise DumpFormatError(f'{{"$float": {text!r:.60}}}: not "nan", "inf", "-inf", "-0.0" '
                          f'or "nan:" and the 16 hex digits of a NaN')


def _str_from(payload: Any) -> str:
    parts = []
    for part in _list_payload('$str', payload):
        if type(part) is int and 0xD800 <= part <= 0xDFFF:
            parts.append(chr(part))
        elif type(part) is str:
            parts.append(part)
        else:
            raise DumpFormatError(f'{{"$str": [...]}} holds {_shown(part)}, not a string '
                                  f'or a surrogate code point (55296 to 57343)')
    return ''.join(parts)


def _dict_from(payload: Any) -> dict[Any, Any]:
    result: dict[Any, Any] = {}
    for pair in _list_payload('$dict', payload):
        key, value = _list_payload('$dict', pair, 2)
        key = from_json(key)
        try:
            if key in result:
                raise DumpFormatError(f'{{"$dict": [...]}} holds the key {key!r:.60} twice')
        except TypeError:
            raise DumpFormatError(f'{{"$dict": [...]}} holds a key of unhashable type '
                                  f'{type(key).__name__!r}') from None
        result[key] = from_json(value)
    return result


def _checked(tag: str, parse: Callable[[str], Any],
             write: Callable[[Any], str]) -> Callable[[Any], Any]:
    """A reader of tag `tag`: `parse` its text, which must be what `write` gives back."""
    def read(payload: Any) -> Any:
        text = _text_payload(tag, payload)
        try:
            value = parse(text)
        except (ValueError, ArithmeticError):
            value = None
        if value is None or write(value) != text:
            raise DumpFormatError(f'{{"{tag}": {text!r:.60}}}: not the text of a '
                                  f'{tag[1:]} (see docs/dumpformat.rst)')
        return value
    return read


def _parse_datetime(text: str) -> datetime.datetime | None:
    """The datetime `text` spells as ``isoformat()`` does; None if it spells none.

    Not ``datetime.fromisoformat``: some Python versions drop the
    microseconds of a UTC offset under one minute.
    """
    match = _ISO_DATETIME.match(text)
    if match is None:
        return None
    year, month, day, hour, minute, second, micro = (
        int(part or 0) for part in match.group(1, 2, 3, 4, 5, 6, 7))
    tz = None
    if match.group(8):
        hours, minutes, seconds, micros = (int(part or 0) for part in match.group(9, 10, 11, 12))
        offset = datetime.timedelta(hours=hours, minutes=minutes, seconds=seconds,
                                    microseconds=micros)
        tz = datetime.timezone(-offset if match.group(8) == '-' else offset)
    return datetime.datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)


def _desc_from(payload: Any) -> Desc:
    value = from_json(payload)
    if isinstance(value, Desc):
        raise DumpFormatError('{"$desc": ...} holds another $desc')
    return Desc(value)


def _ext_from(payload: Any) -> Any:
    code, data = _list_payload('$ext', payload, 2)
    if type(code) is not int or not 0 <= code <= 127:
        raise DumpFormatError(f'{{"$ext": [...]}}: the code {_shown(code)} is not 0 to 127')
    return msgpack.ExtType(code, _bytes_payload('$ext', data))


def _timestamp_from(payload: Any) -> Any:
    seconds, nanoseconds = _list_payload('$timestamp', payload, 2)
    if type(seconds) is not int or type(nanoseconds) is not int:
        raise DumpFormatError('{"$timestamp": [...]} holds other than two ints')
    try:
        return msgpack.Timestamp(seconds, nanoseconds)
    except (ValueError, TypeError) as exc:
        raise DumpFormatError(f'{{"$timestamp": [...]}}: {exc}') from None


_READERS: dict[str, Callable[[Any], Any]] = {
    '$int': _int_from, '$float': _float_from, '$str': _str_from,
    '$bytes': lambda payload: _bytes_payload('$bytes', payload),
    '$tuple': lambda payload: tuple(from_json(item) for item in _list_payload('$tuple', payload)),
    '$dict': _dict_from,
    '$uuid': _checked('$uuid', uuid.UUID, str),
    '$datetime': _checked('$datetime', _parse_datetime, datetime.datetime.isoformat),
    '$date': _checked('$date', datetime.date.fromisoformat, datetime.date.isoformat),
    '$decimal': _checked('$decimal', decimal.Decimal, decimal.Decimal.__str__),
    '$desc': _desc_from, '$ext': _ext_from, '$timestamp': _timestamp_from,
}


def _shown(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:57] + '...'


def from_json(obj: Any) -> Any:
    """The value that `obj`, a JSON form :func:`to_json` gives, stands for.

    An object with exactly one member whose name starts with ``$`` is a
    tag; every other object is a ``dict``.

    :param obj: JSON data as ``json.loads`` returns it.
    :returns: the value; ``from_json(to_json(value)) == value`` for every
        value :func:`to_json` writes (NaN aside, which is never equal: it
        comes back with the same bits).
    :raises ~centidb.errors.DumpFormatError: if `obj` holds an unknown tag,
        a tag's payload not in the form :doc:`dumpformat` gives, a
        non-finite float or a type JSON does not have.
    """
    kind = type(obj)
    if obj is None or kind is bool or kind is int or kind is str:
        return obj
    if kind is float:
        if not math.isfinite(obj):
            raise DumpFormatError(f'the float {obj!r} is not a JSON number (write '
                                  f'{json.dumps(_float_json(obj))})')
        return obj
    if kind is list:
        return [from_json(item) for item in obj]
    if kind is dict:
        if len(obj) == 1:
            name, payload = next(iter(obj.items()))
            if type(name) is str and name.startswith('$'):
                reader = _READERS.get(name)
                if reader is None:
                    raise DumpFormatError(
                        f'unknown tag {name!r} in {_shown(obj)} (a dict whose one key '
                        f'starts with "$" is written {{"$dict": [[key, value], ...]}})')
                return reader(payload)
        if not all(type(name) is str for name in obj):
            raise DumpFormatError(f'a JSON object with a key that is not a string: {obj!r:.60}')
        return {name: from_json(item) for name, item in obj.items()}
    raise DumpFormatError(f'{kind.__name__!r} is not a JSON type: {obj!r:.60}')


# --- lines -------------------------------------------------------------------

@dataclass(frozen=True)
class HeaderLine:
    """The first line of a dump: its format name and version.

    :param format: :data:`DUMP_FORMAT`.
    :param version: :data:`DUMP_VERSION`.
    """

    format: str = DUMP_FORMAT
    version: int = DUMP_VERSION

    def text(self) -> str:
        """This line as JSON text, without a newline."""
        return _line({'type': 'header', 'format': self.format, 'version': self.version})


@dataclass(frozen=True)
class IndexSpec:
    """One index of a collection, as a collection line lists it.

    :param name: the index's name.
    :param unique: whether it is a unique index.
    :param fields: a field index's field paths; None for a function index
        (a loader's program must add those).
    """

    name: str
    unique: bool = False
    fields: Tuple[str, ...] | None = None


@dataclass(frozen=True)
class CollectionLine:
    """A collection's metadata: everything but its records and index functions.

    :param name: the collection's name.
    :param key_kind: how its records get keys: ``'key_func'``,
        ``'txn_key_func'`` or ``'auto'`` (see
        :data:`~centidb.metarecords.KEY_KINDS`), or None for a collection from a
        store that did not record kinds.
    :param encoder: its encoder's name.
    :param packer: its packer's name.
    :param counter: the name of the counter numbering its keys; the value is
        on a :class:`CounterLine`.
    :param batched: whether it has held a batch.
    :param indexes: its stored indexes.
    :param checksum: whether its stored values carry a CRC-32 checksum (see
        :mod:`centidb.checksums`); a loader creates the collection with the
        same setting.
    """

    name: str
    key_kind: str | None
    encoder: str
    packer: str
    counter: str
    batched: bool = False
    indexes: Tuple[IndexSpec, ...] = ()
    checksum: bool = False

    @classmethod
    def from_info(cls, name: str, info: Mapping[str, Any], indexes: Mapping[str, bool],
                  fields: Mapping[str, Tuple[str, ...] | None] | None = None) -> CollectionLine:
        """The line for a collection, from the metadata the store keeps.

        :param name: the collection's name.
        :param info: its metadata ``dict``, as
            :meth:`~centidb.catalog.Catalog.collection_info` returns it.
        :param indexes: ``{name: unique flag}`` of its stored indexes.
        :param fields: ``{name: field paths}`` of its field indexes.
        """
        fields = fields or {}
        return cls(name, info.get('key'), info['encoder'], info['packer'], info['counter'],
                   bool(info.get('batched')),
                   tuple(IndexSpec(index, bool(unique), fields.get(index))
                         for index, unique in indexes.items()),
                   'checksum' in info)

    def text(self) -> str:
        """This line as JSON text, without a newline (``"checksum"`` only when true)."""
        obj = {'type': 'collection', 'name': _str_json(self.name),
               'key': None if self.key_kind is None else _str_json(self.key_kind),
               'encoder': _str_json(self.encoder), 'packer': _str_json(self.packer),
               'counter': _str_json(self.counter), 'batched': self.batched,
               'indexes': [_index_json(index) for index in self.indexes]}
        if self.checksum:
            obj['checksum'] = True
        return _line(obj)


@dataclass(frozen=True)
class CounterLine:
    """A store counter's value.

    :param name: the counter's name.
    :param value: its value.
    """

    name: str
    value: int

    def text(self) -> str:
        """This line as JSON text, without a newline."""
        return _line({'type': 'counter', 'name': _str_json(self.name),
                      'value': _int_json(self.value)})


@dataclass(frozen=True)
class RecordLine:
    """One record: its collection, key and value.

    :param collection: the collection's name.
    :param key: the record's key, a tuple.
    :param value: the record.
    """

    collection: str
    key: Key
    value: Any

    def text(self) -> str:
        """This line as JSON text, without a newline (as :func:`record_line`)."""
        return record_line(self.collection, self.key, self.value)


@dataclass(frozen=True)
class TrailerLine:
    """The last line of a dump: what came before it, to check the dump is whole.

    :param lines: the number of lines before the trailer, the header's
        included.
    :param records: ``(collection name, record count)`` for each collection
        line, in the order of those lines.
    :param sha256: the SHA-256, as 64 lowercase hex digits, of the lines
        before the trailer, each as :func:`centidb.dumpfile.line_digest`
        takes it.
    """

    lines: int
    records: Tuple[Tuple[str, int], ...]
    sha256: str

    def text(self) -> str:
        """This line as JSON text, without a newline."""
        return _line({'type': 'trailer', 'lines': self.lines,
                      'records': [[_str_json(name), count] for name, count in self.records],
                      'sha256': self.sha256})


#: What :func:`parse_line` returns: one of the five line classes.
Line = Union[HeaderLine, CollectionLine, CounterLine, RecordLine, TrailerLine]


# Characters str.splitlines() ends a line at that JSON leaves unescaped: they
# are escaped too, so that every way of splitting lines finds the same lines.
_LINE_BREAKS = re.compile('[\x85\u2028\u2029]')


def _line(obj: Mapping[str, Any]) -> str:
    text = json.dumps(obj, ensure_ascii=False, separators=(',', ':'), allow_nan=False)
    return _LINE_BREAKS.sub(lambda match: f'\\u{ord(match.group()):04x}', text)


def header_line() -> str:
    """The header line of a dump of this version, without a newline."""
    return HeaderLine().text()


def record_line(collection: str, key: Key, value: Any) -> str:
    """A record's line, without a newline.

    :param collection: the collection's name.
    :param key: the record's key, a tuple (written as a JSON array).
    :param value: the record.
    :raises ~centidb.errors.DumpTypeError: if the key or value holds a type
        :func:`to_json` does not write.
    """
    return _line({'type': 'record', 'collection': _str_json(collection),
                  'key': [to_json(element) for element in key], 'value': to_json(value)})


# The members of each line type, in the order they are written.
_MEMBERS = {
    'header': ('type', 'format', 'version'),
    'collection': ('type', 'name', 'key', 'encoder', 'packer', 'counter', 'batched', 'indexes'),
    'counter': ('type', 'name', 'value'),
    'record': ('type', 'collection', 'key', 'value'),
    'trailer': ('type', 'lines', 'records', 'sha256'),
}
# Members a line may leave out, with the value that stands for them.
_OPTIONAL = {'collection': {'checksum': False}}
_SHA256_HEX = re.compile('[0-9a-f]{64}\\Z')


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        names = [name for name, _ in pairs]
        twice = next(name for name in names if names.count(name) > 1)
        raise DumpFormatError(f'an object has the member {twice!r} twice')
    return obj


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise DumpFormatError(f'the number {text[:40]} is out of the float range')
    return value


def _constant(text: str) -> NoReturn:
    raise DumpFormatError(f'{text} is not JSON (write {json.dumps(_float_json(float(text)))})')


def _typed(obj: Mapping[str, Any], name: str, kind: type, what: str) -> Any:
    value = from_json(obj[name])
    if type(value) is not kind:
        raise DumpFormatError(f'the "{name}" of a {what} line is {_shown(obj[name])}, '
                              f'not {"an" if kind is int else "a"} {kind.__name__}')
    return value


def _parse(obj: Any) -> Line:
    if type(obj) is not dict:
        raise DumpFormatError(f'the line is {_shown(obj)}, not a JSON object')
    kind = obj.get('type')
    if type(kind) is not str or kind not in _MEMBERS:
        raise DumpFormatError(f'the line\'s "type" is {_shown(kind)}, not one of '
                              f'{", ".join(map(json.dumps, _MEMBERS))}')
    members = _MEMBERS[kind]
    optional = _OPTIONAL.get(kind, {})
    missing = [name for name in members if name not in obj]
    extra = [name for name in obj if name not in members and name not in optional]
    if missing or extra:
        raise DumpFormatError(f'a {kind} line has the members {", ".join(members)}; this one '
                              f'lacks {missing or "none"} and has extra {extra or "none"}')
    if kind == 'record':
        key = obj['key']
        if type(key) is not list:
            raise DumpFormatError(f'the "key" of a record line is {_shown(key)}, not an array')
        record = RecordLine(_typed(obj, 'collection', str, kind),
                            tuple(from_json(element) for element in key), from_json(obj['value']))
        try:
            keylib.packs(record.key)
        except (CentiError, TypeError, ValueError) as exc:
            raise DumpFormatError(f'the key {record.key!r:.60} is not a valid key: {exc}') from None
        return record
    if kind == 'header':
        header = HeaderLine(_typed(obj, 'format', str, kind), _typed(obj, 'version', int, kind))
        if header.format != DUMP_FORMAT or header.version != DUMP_VERSION:
            raise DumpFormatError(f'this is a dump of format {header.format!r} version '
                                  f'{header.version}; this centidb reads {DUMP_FORMAT!r} '
                                  f'version {DUMP_VERSION}')
        return header
    if kind == 'counter':
        return CounterLine(_typed(obj, 'name', str, kind), _typed(obj, 'value', int, kind))
    if kind == 'trailer':
        return _trailer(obj)
    indexes = obj['indexes']
    if type(indexes) is not list or not all(
            type(index) is dict and set(index) - {'fields'} == {'name', 'unique'}
            for index in indexes):
        raise DumpFormatError(f'the "indexes" of a collection line are {_shown(indexes)}, not '
                              f'an array of {{"name": ..., "unique": ...}} objects (with '
                              f'"fields" for a field index)')
    return CollectionLine(
        _typed(obj, 'name', str, kind),
        None if obj['key'] is None else _typed(obj, 'key', str, kind),
        _typed(obj, 'encoder', str, kind), _typed(obj, 'packer', str, kind),
        _typed(obj, 'counter', str, kind), _typed(obj, 'batched', bool, kind),
        tuple(IndexSpec(_typed(index, 'name', str, 'collection'),
                        _typed(index, 'unique', bool, 'collection'),
                        _index_fields(index)) for index in indexes),
        'checksum' in obj and _typed(obj, 'checksum', bool, kind))


def _index_json(index: IndexSpec) -> dict[str, Any]:
    obj: dict[str, Any] = {'name': _str_json(index.name), 'unique': index.unique}
    if index.fields is not None:
        obj['fields'] = list(index.fields)     # checked: no lone surrogate
    return obj


def _index_fields(index: Mapping[str, Any]) -> Tuple[str, ...] | None:
    if 'fields' not in index:
        return None
    fields = index['fields']
    try:
        if type(fields) is not list:
            raise TypeError('not an array')
        return check_fields(fields)
    except (TypeError, ValueError) as exc:
        raise DumpFormatError(f'the "fields" of index {_shown(index.get("name"))} are '
                              f'{_shown(fields)}, not an array of field paths ({exc})') from None


def _trailer(obj: Mapping[str, Any]) -> TrailerLine:
    lines = _typed(obj, 'lines', int, 'trailer')
    records = obj['records']
    if type(records) is not list or not all(
            type(pair) is list and len(pair) == 2 and type(pair[1]) is int and pair[1] >= 0
            for pair in records):
        raise DumpFormatError(f'the "records" of a trailer line are {_shown(records)}, not '
                              f'an array of [collection name, record count] pairs')
    names = []
    for pair in records:
        name = from_json(pair[0])
        if type(name) is not str:
            raise DumpFormatError(f'the trailer counts the records of {_shown(pair[0])}, '
                                  f'not of a collection name')
        names.append(name)
    sha256 = _typed(obj, 'sha256', str, 'trailer')
    if lines < 1 or not _SHA256_HEX.match(sha256):
        raise DumpFormatError(f'a trailer line has "lines" of at least 1 and a "sha256" of 64 '
                              f'lowercase hex digits, not {lines} and {_shown(sha256)}')
    return TrailerLine(lines, tuple(zip(names, (pair[1] for pair in records))), sha256)


def parse_line(text: str, line_number: int | None = None) -> Line:
    """The line class instance that one line of a dump stands for.

    :param text: the line, with or without its newline.
    :param line_number: its number in the dump (from 1), named in errors.
    :returns: a :class:`HeaderLine`, :class:`CollectionLine`,
        :class:`CounterLine`, :class:`RecordLine` or :class:`TrailerLine`.
    :raises ~centidb.errors.DumpFormatError: if the line is not valid: not
        JSON, not an object of a known ``"type"`` with exactly its members,
        a member of the wrong type, a value :func:`from_json` refuses, a
        key :func:`~centidb.keylib.packs` refuses, or a header of another
        format or version. The message names the line number and shows
        the start of the line.
    """
    try:
        try:
            obj = json.loads(text, object_pairs_hook=_object, parse_float=_finite,
                             parse_constant=_constant)
        except json.JSONDecodeError as exc:
            raise DumpFormatError(f'not JSON ({exc})') from None
        return _parse(obj)
    except (RecursionError, ValueError) as exc:     # DumpFormatError is a ValueError
        where = 'a dump line' if line_number is None else f'line {line_number}'
        problem = 'the nesting is too deep' if isinstance(exc, RecursionError) else str(exc)
        shown = text.rstrip('\r\n')
        shown = shown if len(shown) <= 100 else shown[:97] + '...'
        raise DumpFormatError(f'{where}: {problem}: {shown}') from None
