"""Checked by ``mypy`` in tests/test_typing.py, never run: stub and pure signatures agree.

The compiled twin's types come from ``centidb/_speedups.pyi``; the pure
functions' and classes' from their annotations. Each check below hands
:func:`same` a pure-Python type and its twin's, which mypy accepts only if
the two are the same type (each accepts every call, or holds every value,
the other does); otherwise it reports that it cannot infer ``_T``.

A class twin is not the pure class, so the classes are compared member by
member: the constructors' parameters (:func:`params`), the attributes' types,
and each method; a method that returns a :class:`~centidb.records.Record`
is compared by its parameters, the two ``Record`` classes being compared on
their own.
"""

from __future__ import annotations

from typing import Callable, ParamSpec, TypeVar

from centidb import _speedups, collection, index, keylib
from centidb.records import record as records
from centidb.engines import fastcalls

_T = TypeVar('_T')
_P = ParamSpec('_P')


def same(pure: list[_T], twin: list[_T]) -> None:
    """Type-checks only if ``pure`` and ``twin`` hold the same type (lists are invariant)."""


def params(func: Callable[_P, object]) -> Callable[_P, None]:
    """The type of `func` with its return type dropped: its parameters only."""
    raise NotImplementedError


def key_codec_agrees() -> None:
    same([keylib.packs], [_speedups.packs])
    same([keylib.unpacks], [_speedups.unpacks])
    same([keylib.unpacks_list], [_speedups.unpacks_list])


def index_entries_agrees() -> None:
    same([records.index_entries], [_speedups.index_entries])


def record_agrees(pure: records.Record, twin: _speedups.Record) -> None:
    same([params(records.Record)], [params(_speedups.Record)])
    same([(pure.coll, pure.data, pure.key, pure._stored, pure._entries, pure._indexes,
           pure._key_bytes, pure._read_in, pure._read_at)],
         [(twin.coll, twin.data, twin.key, twin._stored, twin._entries, twin._indexes,
           twin._key_bytes, twin._read_in, twin._read_at)])


def record_writer_agrees(pure: records.RecordWriter, twin: _speedups.RecordWriter) -> None:
    same([params(records.RecordWriter)], [params(_speedups.RecordWriter)])
    same([(pure.coll, pure.txns, pure.txn_class, pure.usable, pure.counted, pure.prefix,
           pure.encode, pure.compress, pure.header, pure.key_func, pure.specs, pure.indexes,
           pure.limit, pure.old_entries, pure.too_long, pure.record_class)],
         [(twin.coll, twin.txns, twin.txn_class, twin.usable, twin.counted, twin.prefix,
           twin.encode, twin.compress, twin.header, twin.key_func, twin.specs, twin.indexes,
           twin.limit, twin.old_entries, twin.too_long, twin.record_class)])
    same([params(pure.write)], [params(twin.write)])
    same([pure.write_many], [twin.write_many])
    same([pure.merge_stored], [twin.merge_stored])


def record_reader_agrees(pure: records.RecordReader, twin: _speedups.RecordReader) -> None:
    same([params(records.RecordReader)], [params(_speedups.RecordReader)])
    same([(pure.txns, pure.txn_class, pure.prefix, pure.plain_id, pure.decode_plain,
           pure.decode, pure.limit, pure.batched, pure.batch_get, pure.missing,
           pure.corrupt_entry, pure.corrupt_record)],
         [(twin.txns, twin.txn_class, twin.prefix, twin.plain_id, twin.decode_plain,
           twin.decode, twin.limit, twin.batched, twin.batch_get, twin.missing,
           twin.corrupt_entry, twin.corrupt_record)])
    same([pure.get], [twin.get])
    same([pure.index_get], [twin.index_get])
    same([pure.index_records], [twin.index_records])


def count_groups_agrees() -> None:
    same([keylib.count_groups], [_speedups.count_groups])


def collection_methods_agree() -> None:
    same([collection._collection_get, collection._collection_put],
         [_speedups._collection_get, _speedups._collection_put])


def index_get_agrees() -> None:
    same([index._index_get], [_speedups._index_get])


def fast_calls_agree(pure: fastcalls.FastCalls, twin: _speedups.FastCalls) -> None:
    same([(pure.writes, pure.get, pure.put_many, pure.put, pure.replace, pure.delete,
           pure.seek_cursor)],
         [(twin.writes, twin.get, twin.put_many, twin.put, twin.replace, twin.delete,
           twin.seek_cursor)])
