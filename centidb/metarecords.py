"""The format of a store's metadata records: their keys, their values and the checks on both.

Every metadata record lives under the element ``0`` (layout in
``docs/format.rst``). :func:`parse_key` and :func:`parse_value` are the one
parser of these records: the catalog, ``Store.verify()`` and the command
line read every record through them, and a malformed one raises
:class:`~centidb.errors.StoreFormatError` naming it.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, Mapping, cast

from centidb import checksums, keylib
from centidb.engines import EngineTransaction
from centidb.errors import CorruptKeyError, StoreFormatError
from centidb.fieldpaths import check_fields
from centidb.keylib import Key

__all__ = ['CollectionInfo', 'FORMAT_NAME', 'FORMAT_VERSION', 'MAX_ENCODER_ID',
           'MAX_PREFIX_ID', 'MAX_GENERATION', 'MAX_META_BYTES', 'KEY_KINDS', 'CHECKSUM',
           'META', 'FORMAT_KEY', 'PREFIX_COUNTER', 'ENCODER_COUNTER', 'GENERATION',
           'GENERATION_KEY', 'SYS_COUNTERS', 'meta_key', 'dump_json', 'brief_repr', 'describe',
           'bad_record', 'parse_key', 'parse_value', 'int_value', 'read_record', 'scan',
           'check_format_info']


#: A collection's metadata ``dict``, as stored (JSON): ``'id'`` (its prefix
#: id, an ``int``), ``'encoder'``, ``'packer'`` and ``'counter'`` (names),
#: ``'key'`` (its key kind, one of :data:`KEY_KINDS`; absent in stores from
#: before kinds were recorded), ``'batched'`` (true once it held a batch),
#: ``'checksum'`` (``'crc32'`` if its stored values carry a CRC-32 trailer;
#: absent: none) and ``'packers'`` (names of the packers its records may use
#: besides its own and the built-in ones; absent in stores from before packers
#: were recorded).
CollectionInfo = Dict[str, Any]

#: Written to ``(0, 'format')`` when a store is created.
FORMAT_NAME = 'centidb'
#: The store format version this code reads and writes.
FORMAT_VERSION = 1
#: Encoder ids fit in the one-byte record header; 0x80 and up are reserved.
MAX_ENCODER_ID = 0x7F

#: The largest prefix id. Ids are numbered from 1 by the prefix counter,
#: which no store counts that far; a larger one is damage.
MAX_PREFIX_ID = 2 ** 63 - 1
#: The largest metadata generation (it counts metadata changes).
MAX_GENERATION = 2 ** 63 - 1
#: The largest JSON metadata value read: a real one holds a few short fields.
MAX_META_BYTES = 1 << 16

#: The first key element of every metadata record.
META = 0
#: The engine key of the format record.
FORMAT_KEY = keylib.packs((META, 'format'))
#: The key (without ``0``) of the counter that numbers collection and index prefixes.
PREFIX_COUNTER = ('sys', 'prefix')
#: The key (without ``0``) of the counter that numbers encoders and packers.
ENCODER_COUNTER = ('sys', 'encoder')
#: The key (without ``0``) of the metadata generation, which counts metadata changes.
GENERATION = ('sys', 'generation')
#: The engine key of the generation, read as each write transaction begins.
GENERATION_KEY = keylib.packs((META,) + GENERATION)

#: The key kinds a collection records: how its records get their keys.
KEY_KINDS = ('key_func', 'txn_key_func', 'auto')

#: ``sys`` counter -> (its name in messages, lowest value, highest value).
SYS_COUNTERS = {
    'prefix': ('the prefix counter', 1, MAX_PREFIX_ID + 1),
    'encoder': ('the encoder id counter', 1, MAX_ENCODER_ID + 1),
    'generation': ('the metadata generation', 0, MAX_GENERATION),
}


def meta_key(*parts: Any) -> bytes:
    """The engine key of a metadata record.

    :param parts: the record's key without the element 0.
    """
    return keylib.packs((META,) + parts)


def dump_json(info: Mapping[str, Any]) -> bytes:
    """The stored bytes of a JSON metadata value: sorted keys, UTF-8.

    :param info: the value.
    """
    return json.dumps(info, sort_keys=True).encode('utf-8')


def brief_repr(value: object, limit: int = 120) -> str:
    """``repr(value)`` for a message, cut to `limit` characters.

    An int too long for ``repr`` (Python refuses more than 4300 digits by
    default) is described by its size instead.

    :param value: any object.
    :param limit: the longest text returned.
    """
    try:
        text = repr(value)
    except ValueError:
        text = (f'<an int of {value.bit_length()} bits>' if isinstance(value, int)
                else f'<a {type(value).__name__} holding an int too long to print>')
    return text if len(text) <= limit else text[:limit - 3] + '...'


def describe(key: Key) -> str:
    """Words naming the metadata record `key` (its key without the element 0).

    :param key: a key tuple from :func:`parse_key`.
    """
    kind = key[0]
    if kind == 'format':
        return 'the store format record'
    if kind == 'sys':
        return SYS_COUNTERS[key[1]][0]
    if kind == 'index':
        return f'index {brief_repr(key[2])} of collection id {key[1]}'
    return f'{kind} {brief_repr(key[1])}'


def bad_record(key: Key, problem: str) -> StoreFormatError:
    """The error for a malformed metadata record.

    :param key: the record's key without the element 0.
    :param problem: what is wrong with it.
    :returns: a :class:`~centidb.errors.StoreFormatError` naming the record.
    """
    return StoreFormatError(f'{describe(key)} (metadata key {brief_repr((META,) + key)}): '
                            f'{problem}')


def _named(key: Key, position: int, nonempty: bool = True) -> bool:
    return type(key[position]) is str and (key[position] != '' or not nonempty)


def _known_shape(key: Key) -> bool:
    """True if `key` (without the element 0) is the key of a metadata record."""
    kind, size = key[0] if key else None, len(key)
    if kind == 'format':
        return size == 1
    if kind in ('collection', 'encoder', 'counter'):
        return size == 2 and _named(key, 1, kind != 'counter')
    if kind == 'index':
        return (size == 3 and type(key[1]) is int and 1 <= key[1] <= MAX_PREFIX_ID
                and _named(key, 2))
    if kind == 'sys':
        return size == 2 and type(key[1]) is str and key[1] in SYS_COUNTERS
    return False


def parse_key(key_bytes: bytes) -> Key:
    """The key of a metadata record, without its element 0, checked.

    :param key_bytes: an engine key under the metadata element ``0``.
    :raises ~centidb.errors.StoreFormatError: naming the key, if it does not
        decode or is not the key of any metadata record.
    """
    try:
        key = keylib.unpacks(key_bytes)
    except CorruptKeyError as exc:
        raise StoreFormatError(f'metadata key {brief_repr(bytes(key_bytes))} cannot be '
                               f'decoded ({exc})') from None
    if not key or type(key[0]) is not int or key[0] != META or not _known_shape(key[1:]):
        raise StoreFormatError(f'unknown metadata record {brief_repr(key)}: no metadata '
                               f'record has this key')
    return key[1:]


def _json_object(key: Key, value: bytes) -> dict[str, Any]:
    data = bytes(value)
    if len(data) > MAX_META_BYTES:
        raise bad_record(key, f'its value is {len(data)} bytes, more than the '
                        f'{MAX_META_BYTES} a metadata record may hold')
    try:
        info = json.loads(data.decode('utf-8'))
    except (ValueError, RecursionError) as exc:
        raise bad_record(key, f'its value is unreadable ({type(exc).__name__}: '
                        f'{brief_repr(str(exc), 100)}): {brief_repr(data[:80])}') from None
    if not isinstance(info, dict):
        raise bad_record(key, f'its value is not a JSON object: {brief_repr(info)}')
    return info


def _check_field(key: Key, info: Mapping[str, Any], name: str, kind: type,
                 lo: int | None = None, hi: int | None = None,
                 optional: bool = False) -> None:
    """Check that field `name` of `info` is a `kind` (an int from `lo` to `hi`)."""
    if optional and name not in info:
        return
    if name not in info:
        raise bad_record(key, f'it has no {name!r} field')
    value: Any = info[name]
    if type(value) is not kind:
        article = 'an' if kind is int else 'a'
        raise bad_record(key, f'its {name!r} is {brief_repr(value, 80)}, not {article} {kind.__name__}')
    if lo is not None and hi is not None and not lo <= cast(int, value) <= hi:
        raise bad_record(key, f'its {name!r} is {brief_repr(value, 80)}, outside {lo} to {hi}')


def int_value(key: Key, value: bytes) -> int:
    """The int a counter record holds (a 1-tuple packed as a key), checked.

    :param key: the record's key without the element 0.
    :param value: its stored bytes.
    """
    try:
        held = keylib.unpacks(value)
    except CorruptKeyError as exc:
        raise bad_record(key, f'its value is unreadable ({exc})') from None
    if len(held) != 1 or type(held[0]) is not int:
        raise bad_record(key, f'it holds {brief_repr(held, 80)}, not an int')
    number: int = held[0]
    if key[0] == 'sys':
        _, lo, hi = SYS_COUNTERS[key[1]]
        if not lo <= number <= hi:
            raise bad_record(key, f'it holds {brief_repr(number, 80)}, outside {lo} to {hi}')
    return number


def _check_index_fields(key: Key, fields: Any) -> None:
    try:
        if type(fields) is not list:
            raise TypeError('not a list')
        check_fields(fields)
    except (TypeError, ValueError) as exc:
        raise bad_record(key, f'its \'fields\' is {brief_repr(fields, 80)}, not a list of '
                              f'field paths ({exc})') from None


def parse_value(key: Key, value: bytes) -> Any:
    """What the metadata record `key` holds, checked field by field.

    The one parser of metadata values: the catalog, ``Store.verify()`` and
    the command line read every record through it.

    :param key: the record's key, as :func:`parse_key` returns it.
    :param value: its stored bytes.
    :returns: an ``int`` for a counter (``'counter'`` and ``'sys'``
        records), else the JSON object, a ``dict`` whose fields
        ``docs/format.rst`` lists, each of its type (ids are ints in range).
    :raises ~centidb.errors.StoreFormatError: naming the record and what is
        wrong with it.
    """
    kind = key[0]
    if kind in ('counter', 'sys'):
        return int_value(key, value)
    info = _json_object(key, value)
    if kind == 'format':
        _check_field(key, info, 'format', str)
        _check_field(key, info, 'version', int)
    elif kind == 'encoder':
        _check_field(key, info, 'id', int, 1, MAX_ENCODER_ID)
    else:
        _check_field(key, info, 'id', int, 1, MAX_PREFIX_ID)
        if kind == 'index':
            _check_field(key, info, 'unique', bool, optional=True)
            if 'fields' in info:
                _check_index_fields(key, info['fields'])
        else:
            for field in ('encoder', 'packer', 'counter'):
                _check_field(key, info, field, str)
            if info.get('key', 'auto') not in KEY_KINDS:
                raise bad_record(key, f'its key kind {brief_repr(info["key"], 80)} is not one of '
                                f'{", ".join(KEY_KINDS)}')
            _check_field(key, info, 'batched', bool, optional=True)
            _check_field(key, info, 'checksum', str, optional=True)
            if info.get('checksum', CHECKSUM) != CHECKSUM:
                raise bad_record(key, f'its checksum {brief_repr(info["checksum"], 80)} is not '
                                f'{CHECKSUM!r}')
            packers = info.get('packers', [])
            if type(packers) is not list or any(type(name) is not str for name in packers):
                raise bad_record(key, f'its \'packers\' is {brief_repr(packers, 80)}, not a list of '
                                f'names')
    return info


def read_record(etxn: EngineTransaction, *key: Any) -> Any:
    """What the metadata record `key` holds (see :func:`parse_value`), or None if absent.

    :param etxn: an :class:`~centidb.engines.EngineTransaction`.
    :param key: the record's key without the element 0, for example
        ``'collection', name``.
    :raises ~centidb.errors.StoreFormatError: if it is malformed.
    """
    stored = etxn.get(meta_key(*key))
    return None if stored is None else parse_value(key, stored)


def scan(etxn: EngineTransaction, *parts: Any) -> Iterator[tuple[Key, Any]]:
    """Every metadata record whose key starts with `parts`, as ``(key, value)``.

    Keys are without the element 0; values as :func:`parse_value` returns
    them. Any record in the range that is not a well-formed metadata record
    raises, so nothing malformed is skipped.

    :param etxn: an :class:`~centidb.engines.EngineTransaction`.
    :param parts: the first elements of the keys, for example
        ``'index', collection id``.
    :raises ~centidb.errors.StoreFormatError: naming the first malformed
        record.
    """
    lo, hi = keylib.prefix_range((META,) + parts)
    for key_bytes, value in etxn.items(lo, hi):
        key = parse_key(key_bytes)
        yield key, parse_value(key, value)


def check_format_info(info: Mapping[str, Any]) -> None:
    """Check that a parsed format record names this format and version.

    :param info: the format record, as :func:`parse_value` returns it.
    :raises ~centidb.errors.StoreFormatError: for another format or version.
    """
    name, version = info['format'], info['version']
    if name != FORMAT_NAME:
        raise StoreFormatError(f'the engine holds a {brief_repr(name)} store, not {FORMAT_NAME!r}')
    if version != FORMAT_VERSION:
        raise StoreFormatError(
            f'the store has format version {brief_repr(version)}; this centidb reads '
            f'version {FORMAT_VERSION}')


#: The ``checksum`` a collection's metadata may name (see :mod:`centidb.checksums`).
CHECKSUM = checksums.NAME
