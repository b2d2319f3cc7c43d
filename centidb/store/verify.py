"""Checking a whole store: what ``Store.verify()`` looks at and reports.

:func:`check_metadata` reads every metadata record through the catalog's
parser (:func:`centidb.metarecords.parse_value`) and checks them against each
other; :func:`check_collection` reads every stored record of one collection
(plain or in batches) and every entry of its indexes, in one read
transaction, and reports what does not hold; :func:`find_orphans` reports
engine keys under prefixes no collection or index owns; :func:`check_storage`
asks the engine to check its own files.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Mapping, NamedTuple, Optional

from centidb import batches, keylib, metarecords
from centidb.metarecords import CollectionInfo
from centidb.collection import Collection
from centidb.engines import EngineTransaction
from centidb.errors import CentiError, CorruptKeyError, StoreFormatError
from centidb.keylib import Key
from centidb.records.record import ENTRY_SEP, as_key, index_entries

__all__ = ['Problem', 'check_storage', 'check_metadata', 'check_collection', 'key_problem',
           'find_orphans']


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
            where += f', key {metarecords.brief_repr(self.key, 400)}'
        return f'{where}: {self.message}'


class _Metadata:
    """What :func:`check_metadata` has read so far, filed by kind."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.format: dict[str, Any] | None = None
        self.collections: dict[str, CollectionInfo] = {}
        self.indexes: dict[int, dict[str, int]] = {}
        self.encoders: dict[str, int] = {}
        self.counters: dict[str, int] = {}
        self.sys: dict[str, int] = {}
        #: Prefix id -> the records that use it.
        self.owners: dict[int, list[str]] = {}
        #: The keys of records that are there but malformed (already reported).
        self.malformed: set[Key] = set()

    def bad(self, message: str, coll: str | None = None) -> None:
        self.problems.append(Problem(coll, None, message))

    def file(self, key: Key, value: Any) -> None:
        """File the parsed record `key` (without the element 0)."""
        kind = key[0]
        if kind == 'format':
            self.format = value
        elif kind == 'sys':
            self.sys[key[1]] = value
        elif kind == 'counter':
            self.counters[key[1]] = value
        elif kind == 'encoder':
            self.encoders[key[1]] = value['id']
        else:
            if kind == 'collection':
                self.collections[key[1]] = value
            else:
                self.indexes.setdefault(key[1], {})[key[2]] = value['id']
            self.owners.setdefault(value['id'], []).append(metarecords.describe(key))


def check_storage(etxn: EngineTransaction) -> list[Problem]:
    """Report the damage the engine finds in its own files, below the records.

    An engine transaction with a ``verify_storage()`` method (LevelDB's:
    every table block's checksum) is asked; others report nothing here.

    :param etxn: a read :class:`~centidb.engines.EngineTransaction`.
    :returns: a :class:`Problem` (of the store, no key) per message.
    """
    check = getattr(etxn, 'verify_storage', None)
    if check is None:
        return []
    return [Problem(None, None, message) for message in check()]


def check_metadata(etxn: EngineTransaction) -> tuple[
        list[Problem], dict[str, CollectionInfo], dict[int, dict[str, int]], dict[str, int]]:
    """Read and check every metadata record (the keys under the element 0).

    Each record must parse (:func:`centidb.metarecords.parse_value`); the
    format record must name this format and version; no two collections
    or indexes may share a prefix id; the prefix and encoder counters must
    be above every id in use; every index's collection must exist; no two
    encoders may share an id; every collection's encoder and packer must
    have an id.

    :param etxn: a read :class:`~centidb.engines.EngineTransaction`.
    :returns: ``(problems, collections, indexes, counters)``: a list of
        :class:`Problem`, a ``dict`` from name to metadata of every readable
        collection, a ``dict`` from collection id to its index ids (name to
        id), and a ``dict`` from name to value of every readable counter.
    """
    found = _Metadata()
    lo = keylib.packs(0)        # every key starting with it, decodable or not
    for key_bytes, value in etxn.items(lo, keylib.next_prefix(lo)):
        try:
            key = metarecords.parse_key(key_bytes)
        except StoreFormatError as exc:
            found.bad(str(exc), _collection_named(key_bytes))
            continue
        try:
            found.file(key, metarecords.parse_value(key, value))
        except StoreFormatError as exc:
            found.malformed.add(key)
            found.bad(str(exc), key[1] if key[0] == 'collection' else None)
    _cross_check(found)
    return found.problems, found.collections, found.indexes, found.counters


def _collection_named(key_bytes: bytes) -> str | None:
    """The collection name in a ``(0, 'collection', name)`` key, else None."""
    try:
        key = keylib.unpacks(key_bytes)
    except CorruptKeyError:
        return None
    if len(key) == 3 and key[1] == 'collection' and type(key[2]) is str and key[2]:
        return key[2]
    return None


def _cross_check(found: _Metadata) -> None:
    """Check the metadata records `found` holds against each other."""
    bad = found.bad
    if found.format is not None:
        try:
            metarecords.check_format_info(found.format)
        except StoreFormatError as exc:
            bad(str(exc))
    elif ('format',) not in found.malformed and (found.collections or found.encoders):
        bad('the store format record (metadata key (0, \'format\')) is missing')
    for prefix_id, owners in sorted(found.owners.items()):
        if len(owners) > 1:
            bad(f'prefix id {prefix_id} is used by {" and ".join(owners)}: their records '
                f'and entries mix')
    prefix_counter = found.sys.get('prefix', 1)
    if (found.owners and max(found.owners) >= prefix_counter
            and ('sys', 'prefix') not in found.malformed):
        bad(f'prefix id {max(found.owners)} is not below the prefix counter '
            f'{prefix_counter}')
    coll_ids = {info['id'] for info in found.collections.values()}
    for coll_id in sorted(set(found.indexes) - coll_ids):
        bad(f'indexes {sorted(found.indexes[coll_id])} belong to collection id '
            f'{coll_id}, which does not exist')
    by_id: dict[int, list[str]] = {}
    for name, encoder_id in sorted(found.encoders.items()):
        by_id.setdefault(encoder_id, []).append(name)
    for encoder_id, names in sorted(by_id.items()):
        if len(names) > 1:
            bad(f'encoder id {encoder_id} is used by {" and ".join(map(repr, names))}')
    if (by_id and max(by_id) >= found.sys.get('encoder', 1)
            and ('sys', 'encoder') not in found.malformed):
        bad(f'encoder id {max(by_id)} is not below the encoder counter '
            f'{found.sys.get("encoder", 1)}')
    for name, info in sorted(found.collections.items()):
        for field in ('encoder', 'packer'):
            if info[field] not in found.encoders:
                bad(f'its {field} {info[field]!r} has no encoder id', name)


def _brief(value: object) -> str:
    return metarecords.brief_repr(value, 200)


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
    unflagged = False       # reported once

    def bad(key_bytes: bytes, message: str) -> None:
        problems.append(Problem(coll.name, _key_of(key_bytes, prefix), message))

    for key_bytes, stored in etxn.items(prefix, view.end):
        if not stored:
            bad(key_bytes, 'the stored value is empty')
            found[bytes(key_bytes)] = None
        elif stored[0] & batches.BATCH_FLAG:
            if not records.batched and not unflagged:
                unflagged = True
                bad(key_bytes, 'a batch, but the collection\'s metadata says it holds none '
                               '(no \'batched\'): a write into the batch stores its '
                               'record twice')
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
    if coll.key_func is not None:
        for key_bytes, data in values.items():
            message = key_problem(coll, keylib.unpacks(key_bytes, prefix), data)
            if message is not None:
                problems.append(Problem(coll.name, _key_of(key_bytes, prefix), message))
    for name, index_id in sorted(index_ids.items()):
        problems += _check_index(etxn, coll, name, index_id, stored, values)
    if records.keys.kind == 'auto':
        numbers = [key[0] for key in map(lambda kb: _key_of(kb, prefix), stored)
                   if type(key) is tuple and len(key) == 1 and type(key[0]) is int]
        next_value = 1 if counter is None else counter
        if numbers and max(numbers) >= next_value:
            problems.append(Problem(coll.name, (max(numbers),),
                                    f'the counter {coll.counter_name!r} '
                                    f'({metarecords.brief_repr(next_value, 80)}) '
                                    f'would hand out this key again'))
    return problems


def key_problem(coll: Collection, key: Key, value: object) -> str | None:
    """What is wrong with storing `value` under `key` in `coll`, or None.

    A collection with a key function finds a record by ``key_func(value)``,
    and ``put()`` saves it there: a record stored under another key can
    neither be found by its key nor saved again without a second copy.
    Loading a dump and ``verify()`` check this.

    :param coll: a :class:`~centidb.collection.Collection`; if it has no
        ``key_func`` in this session, there is nothing to check (None).
    :param key: the key tuple the record is stored (or to be stored) under.
    :param value: the record's value.
    :returns: a message naming both keys, or None if they agree.
    """
    key_func = coll.key_func
    if key_func is None:
        return None
    try:
        made = as_key(key_func(value))
        same = keylib.packs(made) == keylib.packs(key)
    except Exception as exc:
        return f'its key function raised {type(exc).__name__}: {exc}'
    if same:
        return None
    return (f'the record is stored under {_brief(key)}, but its key function gives '
            f'{_brief(made)}: it cannot be found by that key, and saving it writes a '
            f'second copy')


def _check_index(etxn: EngineTransaction, coll: Collection, name: str, index_id: int,
                 stored: Mapping[bytes, bytes | None],
                 values: Mapping[bytes, object]) -> list[Problem]:
    problems: list[Problem] = []
    index_prefix = keylib.packs(index_id)
    entries = set()
    lo, hi = keylib.prefix_range((), index_prefix)
    for entry, value in etxn.items(lo, hi):
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
        if value:
            problems.append(Problem(coll.name, parts[1], f'index {name!r}: the entry for '
                                                         f'{_brief(parts[0])} holds a value '
                                                         f'({len(value)} bytes), not nothing'))
        entries.add(bytes(entry))
        if keylib.packs(parts[1], coll.prefix) not in stored:
            problems.append(Problem(coll.name, parts[1],
                                    f'index {name!r}: the entry for {_brief(parts[0])} '
                                    f'points at a missing record'))
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
                                        f'{_brief(keylib.unpacks_list(entry, index_prefix)[0])}'))
    for entry in sorted(entries - expected):
        tup, key = keylib.unpacks_list(entry, index_prefix)
        if keylib.packs(key, coll.prefix) in values:    # undecodable ones are reported
            problems.append(Problem(coll.name, key,
                                    f'index {name!r}: a stale entry for {_brief(tup)} '
                                    f'(the record does not make it)'))
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
                                                           f'{_brief(first)}, which no collection '
                                                           f'or index owns'))
        position = keylib.next_prefix(keylib.packs(first))
