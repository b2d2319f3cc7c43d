"""Checking a whole store: what ``Store.verify()`` looks at and reports.

:func:`check_collection` reads every stored record of one collection (plain
or in batches) and every entry of its indexes, in one read transaction, and
reports what does not hold; :func:`find_orphans` reports engine keys under
prefixes no collection or index owns. The metadata itself is checked by
:func:`centidb.catalog.check`.
"""

from __future__ import annotations

from typing import AbstractSet, Mapping, NamedTuple, Optional

from centidb import batches, keylib
from centidb.collection import Collection
from centidb.engines import EngineTransaction
from centidb.errors import CentiError, CorruptKeyError
from centidb.keylib import Key
from centidb.records import ENTRY_SEP, index_entries

__all__ = ['Problem', 'check_collection', 'find_orphans']


class Problem(NamedTuple):
    """One thing :meth:`~centidb.store.Store.verify` found wrong."""

    #: The collection's name, or None for the store's metadata.
    collection: Optional[str]
    #: The record key (a tuple, or the engine key's bytes when it cannot be
    #: decoded), or None.
    key: object
    #: What is wrong.
    message: str

    def __str__(self) -> str:
        where = 'store' if self.collection is None else f'collection {self.collection!r}'
        if self.key is not None:
            where += f', key {self.key!r}'
        return f'{where}: {self.message}'


def _key_of(key_bytes: bytes, prefix: bytes) -> Key | bytes:
    try:
        return keylib.unpacks(key_bytes, prefix)
    except CorruptKeyError:
        return bytes(key_bytes)


def _records(etxn: EngineTransaction, coll: Collection,
             problems: list[Problem]) -> dict[bytes, bytes | None]:
    """``{engine key: stored value}`` of every record, batch members expanded.

    An empty stored value is reported here and kept as None.
    """
    records = coll.records
    view = records.view
    prefix = coll.prefix
    found: dict[bytes, bytes | None] = {}

    def bad(key_bytes: bytes, message: str) -> None:
        problems.append(Problem(coll.name, _key_of(key_bytes, prefix), message))

    for key_bytes, stored in etxn.items(prefix, view.end):
        if not stored:
            bad(key_bytes, 'the stored value is empty')
            found[bytes(key_bytes)] = None
        elif stored[0] & batches.BATCH_FLAG:
            try:
                members = view.encoded_members(stored, key_bytes)
            except CentiError as exc:
                bad(key_bytes, f'a batch cannot be read: {exc}')
                continue
            except Exception as exc:
                bad(key_bytes, f'a batch cannot be read ({type(exc).__name__}: {exc})')
                continue
            keys = [key for key, _ in members]
            if keys != sorted(set(keys)):
                bad(key_bytes, 'the members of a batch are not in strict key order')
            elif batches.batch_key(prefix, members) != key_bytes:
                bad(key_bytes, 'a batch is stored under a key that does not match '
                               'its first and last members')
            for member_key, member_stored in view.members(stored, key_bytes):
                if member_key in found:
                    bad(member_key, 'the record is stored twice (plain and in a batch)')
                found[member_key] = member_stored
        else:
            if key_bytes in found:
                bad(key_bytes, 'the record is stored twice (plain and in a batch)')
            found[key_bytes] = stored
    return found


def check_collection(etxn: EngineTransaction, coll: Collection, index_ids: Mapping[str, int],
                     counter: int | None) -> list[Problem]:
    """Check one collection's records and index entries.

    :param etxn: a read :class:`~centidb.engines.EngineTransaction`.
    :param coll: the :class:`~centidb.collection.Collection`; its added
        indexes are checked both ways (every record has its entries, every
        entry is a record's), the others one way (every entry points at a
        record).
    :param index_ids: name to prefix id of every index stored for it.
    :param counter: the value of its counter, or None if it has none.
    :returns: a list of :class:`Problem`.
    """
    problems: list[Problem] = []
    records = coll.records
    prefix = coll.prefix
    stored = _records(etxn, coll, problems)
    values = {}
    for key_bytes, value in stored.items():
        if value is None:
            continue
        try:
            keylib.unpacks(key_bytes, prefix)
            values[key_bytes] = records.decoded(key_bytes, value)
        except CentiError as exc:
            problems.append(Problem(coll.name, _key_of(key_bytes, prefix), str(exc)))
    for name, index_id in sorted(index_ids.items()):
        problems += _check_index(etxn, coll, name, index_id, stored, values)
    if records.keys.kind == 'auto':
        numbers = [key[0] for key in map(lambda kb: _key_of(kb, prefix), stored)
                   if type(key) is tuple and len(key) == 1 and type(key[0]) is int]
        next_value = 1 if counter is None else counter
        if numbers and max(numbers) >= next_value:
            problems.append(Problem(coll.name, (max(numbers),),
                                    f'the counter {coll.counter_name!r} ({next_value}) '
                                    f'would hand out this key again'))
    return problems


def _check_index(etxn: EngineTransaction, coll: Collection, name: str, index_id: int,
                 stored: Mapping[bytes, bytes | None],
                 values: Mapping[bytes, object]) -> list[Problem]:
    problems: list[Problem] = []
    index_prefix = keylib.packs(index_id)
    entries = set()
    lo, hi = keylib.prefix_range((), index_prefix)
    for entry in etxn.keys(lo, hi):
        try:
            parts = keylib.unpacks_list(entry, index_prefix)
        except CorruptKeyError as exc:
            parts, why = None, str(exc)
        else:
            why = 'it does not hold an index tuple and a record key'
        if parts is None or len(parts) != 2:
            problems.append(Problem(coll.name, None, f'index {name!r}: entry '
                                                     f'{bytes(entry)!r} is corrupt: {why}'))
            continue
        entries.add(bytes(entry))
        if keylib.packs(parts[1], coll.prefix) not in stored:
            problems.append(Problem(coll.name, parts[1], f'index {name!r}: the entry for '
                                                         f'{parts[0]!r} points at a missing record'))
    index = coll.indices.get(name)
    if index is None or index.index_id != index_id:
        return problems
    expected = set()
    specs = ((index.func, index_prefix),)
    for key_bytes, data in values.items():
        tail = ENTRY_SEP + key_bytes[len(coll.prefix):]
        try:
            made = index_entries(specs, data, tail)
        except Exception as exc:
            problems.append(Problem(coll.name, _key_of(key_bytes, coll.prefix),
                                    f'index {name!r}: its function raised '
                                    f'{type(exc).__name__}: {exc}'))
            continue
        for entry in made:
            expected.add(entry)
            if entry not in entries:
                problems.append(Problem(coll.name, _key_of(key_bytes, coll.prefix),
                                        f'index {name!r}: the record has no entry for '
                                        f'{keylib.unpacks_list(entry, index_prefix)[0]!r}'))
    for entry in sorted(entries - expected):
        tup, key = keylib.unpacks_list(entry, index_prefix)
        if keylib.packs(key, coll.prefix) in values:    # undecodable ones are reported
            problems.append(Problem(coll.name, key, f'index {name!r}: a stale entry for '
                                                    f'{tup!r} (the record does not make it)'))
    return problems


def find_orphans(etxn: EngineTransaction, owned: AbstractSet[int]) -> list[Problem]:
    """Report engine keys under prefix ids that nothing owns.

    :param etxn: a read :class:`~centidb.engines.EngineTransaction`.
    :param owned: the prefix ids of every collection and index.
    :returns: a list of :class:`Problem`.
    """
    problems: list[Problem] = []
    position = keylib.next_prefix(keylib.packs(0))
    while True:
        found = etxn.first(position)
        if found is None:
            return problems
        key_bytes = found[0]
        try:
            first = keylib.unpacks_list(key_bytes)[0][0]
        except (CorruptKeyError, IndexError):
            problems.append(Problem(None, bytes(key_bytes), 'an engine key that no '
                                                           'centidb prefix starts'))
            position = bytes(key_bytes) + b'\x00'
            continue
        if first not in owned:
            problems.append(Problem(None, bytes(key_bytes), f'data under prefix id '
                                                           f'{first!r}, which no collection '
                                                           f'or index owns'))
        position = keylib.next_prefix(keylib.packs(first))
