"""Fuzz a store's metadata: hostile records under the element 0, then use the store.

Usage (from the repository root)::

    .venv/bin/python stress/fault_metadata.py [--count 20000] [--seed 1] [--parses 20]
        [--until HH:MM]

Each case copies a small store (collections with and without key
functions, indexes, a unique index, a zlib collection, a batched one,
counters) into a fresh engine (``MemoryEngine``; every 25th case LMDB),
changes one to three of its metadata records, and then uses the store as a
program and the command line would: it opens the store, lists, opens and
reads every collection, runs ``verify()``, reads the catalog as the CLI does
(``catalog.read_metadata``), creates a collection with an index and
writes to it, and runs ``verify()`` again.

Each case also hands 20 more mutated records straight to the parser
(``metarecords.parse_key`` and ``parse_value``), which must raise
``StoreFormatError`` or return what ``docs/format.rst`` allows: that is
where most of the volume comes from.

The changes: hostile JSON in a record (nested thousands deep, wrong types,
huge, negative or fractional numbers, NaN, surrogates, missing and extra
fields), bytes that are not JSON or not UTF-8, counters holding huge ints,
bools, strings or garbage, new records under keys of every shape (and keys
that do not decode), deleted records, a collection or index given another
one's prefix id, and the prefix counter set back.

An outcome is allowed if it is correct or a ``centidb.errors`` exception.
Errors (each a line in the result's ``'errors'``) are:

* any other exception escaping a call (``RecursionError``, ``KeyError``,
  ``TypeError``, ...);
* ``verify()`` finding nothing while a collection reads other records than
  were written, or fails to read;
* a collection created in the damaged store sharing its prefix with
  another, or changing another collection's records.

:func:`campaign` is what ``stress/faults.py`` calls (campaign
``'metadata'``); ``tests/test_fault_metadata.py`` runs the same checks
under hypothesis.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Iterator, NamedTuple

if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import centidb  # noqa: E402
from centidb import encodings, keylib, metarecords  # noqa: E402
from centidb.catalog import read_metadata  # noqa: E402
from centidb.engines import Engine, MemoryEngine  # noqa: E402
from centidb.engines.lmdb import LmdbEngine  # noqa: E402
from centidb.errors import CentiError  # noqa: E402
from fault_values import deadline  # noqa: E402

__all__ = ['campaign', 'base_store', 'mutate', 'given_mutation', 'run_case', 'exercise',
           'parse_directly', 'Mutation']



class Mutation(NamedTuple):
    """One change to the metadata records."""

    #: What it does, for the error lines.
    what: str
    #: The engine key.
    key: bytes
    #: The new value, or None to delete the record.
    value: bytes | None
    #: False when no check can see it: a collection's encoder renamed to
    #: another registered encoder that decodes its records (the format
    #: records no encoder per record; ``plain`` decodes anything).
    visible: bool = True

#: What the base store holds: collection name -> {key tuple: value}.
Expected = dict[str, dict[Any, Any]]

#: The new collection each case creates (never in the base store).
NEW = 'fuzz_new'

#: A case uses LMDB instead of MemoryEngine once in this many.
LMDB_EVERY = 25
#: Each case also hands this many mutated records straight to the parser.
PARSES_PER_CASE = 20


def _by_id(rec: Any) -> Any:
    return rec['id']


def _tag(rec: Any) -> Any:
    return rec['tag'] if isinstance(rec, dict) else None


def base_store() -> tuple[list[tuple[bytes, bytes]], Expected]:
    """The small store every case starts from: its engine items and its records."""
    store = centidb.Store(MemoryEngine())
    keyed = store.collection('keyed', key_func=_by_id)
    keyed.add_index('tag', _tag)
    keyed.add_index('id', _by_id, unique=True)
    auto = store.collection('auto')
    auto.add_index('tag', _tag)
    packed = store.collection('packed', packer=encodings.ZLIB_PACKER)
    batched = store.collection('batched', counter_name='shared')
    for i in range(6):
        keyed.put({'id': f'k{i}', 'tag': i % 3})
        auto.put({'tag': f't{i % 2}', 'n': i})
        packed.put('x' * (50 + i))
        batched.put([i, str(i)])
    batched.batch(max_recs=3)
    store.counter('hits', 41)
    expected = {name: dict(store.collection(name).items())
                for name in ('keyed', 'auto', 'packed', 'batched')}
    items = [(bytes(k), bytes(v)) for k, v in store.engine.items()]
    store.close()
    return items, expected


# --- hostile values ----------------------------------------------------------

_INTS = [0, 1, -1, 2, 3, 5, 127, 128, 255, 256, 2 ** 31, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63,
         2 ** 64, -2 ** 63, 2 ** 2000, -2 ** 2000]
#: Counters may also hold ints longer than ``repr`` prints (over 4300 digits).
_COUNTER_INTS = _INTS + [2 ** 20000, -2 ** 20000]
_STRS = ['', 'msgpack', 'plain', 'zlib', 'json', 'pickle', 'keyed', 'auto', 'shared',
         'auto:key', 'key_func', 'txn_key_func', '\ud800', '\x00', 'é' * 3, 'x' * 300]
_FIELDS = ['id', 'encoder', 'packer', 'counter', 'key', 'batched', 'unique', 'format',
           'version']


def _scalar(rng: random.Random) -> Any:
    pick = rng.randrange(8)
    if pick == 0:
        return None
    if pick == 1:
        return rng.random() < 0.5
    if pick in (2, 3):
        return rng.choice(_INTS) if rng.random() < 0.7 else rng.randrange(-10 ** 6, 10 ** 6)
    if pick == 4:
        return rng.choice([0.0, -0.0, 1.0, 1.5, float('nan'), float('inf'), 1e308])
    return rng.choice(_STRS)


def hostile_json(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value: scalars, lists and objects of them, a few levels deep."""
    pick = rng.randrange(6)
    if depth > 3 or pick < 3:
        return _scalar(rng)
    if pick == 3:
        return [hostile_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = rng.sample(_FIELDS, rng.randrange(len(_FIELDS) + 1))
    return {key: hostile_json(rng, depth + 1) for key in keys}


def _deep(rng: random.Random) -> bytes:
    n = rng.choice([100, 900, 1000, 3000, 20000, 40000])
    inner = rng.choice([b'[' * n + b']' * n, b'{"a":' * n + b'1' + b'}' * n,
                        b'[' * n])
    return b'{"id": 1, "x": ' + inner + b'}' if rng.random() < 0.5 else inner


def hostile_bytes(rng: random.Random, original: bytes | None) -> bytes:
    """Bytes for a JSON record: deep, non-UTF-8, huge numbers, damaged originals."""
    pick = rng.randrange(10)
    if pick == 0:
        return _deep(rng)
    if pick == 1:
        return rng.choice([b'', b'\xff\xfe', b'{"id": 1, "s": "\xc3"}', b'\x00', b'null',
                           b'NaN', b'-Infinity', b'1e999', b'"str"', b'[]', b'{}'])
    if pick == 2:
        return b'{"id": ' + b'9' * rng.choice([20, 4000, 5000]) + b'}'
    if pick == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    if pick == 4:
        return b'{"pad": "' + b'x' * rng.choice([1000, 70000]) + b'", "id": 1}'
    if original:
        data = bytearray(original)
        if pick < 7:
            del data[rng.randrange(len(data)):]
        else:
            for _ in range(rng.randrange(1, 4)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data)
    return json.dumps(hostile_json(rng)).encode('utf-8', 'surrogatepass')


def _counter_value(rng: random.Random) -> bytes:
    pick = rng.randrange(6)
    if pick < 3:
        return keylib.packs(rng.choice(_COUNTER_INTS))
    if pick == 3:
        return keylib.packs(rng.choice([True, False, 'ten', 1.5, b'x', None]))
    if pick == 4:
        return keylib.packs((1, 2))
    return bytes(rng.randrange(256) for _ in range(rng.randrange(6)))


def _element(rng: random.Random) -> Any:
    return rng.choice([0, 1, 2, 3, -1, 2 ** 63, 2 ** 70, True, False, None, 1.5, '', 'x',
                       'docs', 'keyed', 'tag', 'prefix', 'generation', 'encoder', b'\x00',
                       -0.0, float('inf')])


def _new_key(rng: random.Random) -> bytes:
    pick = rng.randrange(4)
    if pick == 0:
        return keylib.packs((0,)) + bytes(rng.randrange(0x80) for _ in range(rng.randrange(1, 8)))
    if pick == 1:
        kind = rng.choice(['collection', 'index', 'encoder', 'counter', 'sys'])
        return keylib.packs((0, kind)) + bytes(rng.randrange(0x80)
                                                for _ in range(rng.randrange(1, 6)))
    any_kind: Any = rng.choice(['format', 'collection', 'index', 'encoder', 'counter', 'sys',
                                'other', 7, None])
    return keylib.packs((0, any_kind) + tuple(_element(rng) for _ in range(rng.randrange(4))))


# --- mutations -----------------------------------------------------------------

def _json_of(value: bytes) -> dict[str, Any] | None:
    try:
        info = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return info if isinstance(info, dict) else None


def _kind(key: bytes) -> Any:
    parts = keylib.unpacks(key)
    return parts[1] if len(parts) > 1 else None


def _ids(meta: dict[bytes, bytes]) -> list[tuple[bytes, int]]:
    """(key, prefix id) of every collection and index record."""
    found = []
    for key, value in meta.items():
        info = _json_of(value)
        if _kind(key) in ('collection', 'index') and info and type(info.get('id')) is int:
            found.append((key, info['id']))
    return found


def given_mutation(key: bytes, value: bytes | None, meta: dict[bytes, bytes]) -> Mutation:
    """A :class:`Mutation` writing `value` (None: deleting) under `key`, from outside.

    :param key: an engine key.
    :param value: the bytes to store there, or None.
    :param meta: the metadata records it changes (to tell whether it is visible).
    """
    info = _json_of(value) if value is not None else None
    original = _json_of(meta.get(key, b'')) or {}
    visible = not (info is not None and isinstance(info.get('encoder'), str)
                   and info['encoder'] != original.get('encoder'))
    return Mutation(f'{key!r} = {value!r:.80}', key, value, visible)


def mutate(rng: random.Random, meta: dict[bytes, bytes]) -> Mutation:
    """One random change to the metadata records `meta` (key -> value bytes)."""
    keys = sorted(meta)
    key = rng.choice(keys)
    parts = keylib.unpacks(key)
    counter_like = _kind(key) in ('counter', 'sys')
    pick = rng.randrange(12)
    if pick < 3 and not counter_like:
        info = _json_of(meta[key]) or {}
        field = rng.choice(sorted(info) + _FIELDS)
        if rng.random() < 0.2:
            info.pop(field, None)
            what = f'drop field {field!r}'
        else:
            info[field] = hostile_json(rng)
            what = f'field {field!r} = {info[field]!r:.60}'
        text = json.dumps(info).encode('utf-8', 'surrogatepass')
        visible = not (field == 'encoder' and isinstance(info.get(field), str))
        return Mutation(f'{parts!r}: {what}', key, text, visible)
    if pick < 5:
        value = (_counter_value(rng) if counter_like
                 else hostile_bytes(rng, meta[key]))
        return Mutation(f'{parts!r} = {value[:60]!r} ({len(value)} bytes)', key, value)
    if pick == 5:
        return Mutation(f'delete {parts!r}', key, None)
    if pick == 6:
        new = _new_key(rng)
        value = (_counter_value(rng) if rng.random() < 0.3
                 else json.dumps(hostile_json(rng)).encode('utf-8', 'surrogatepass'))
        return Mutation(f'new record {new!r} = {value[:60]!r}', new, value)
    if pick == 7:
        ids = _ids(meta)
        if not ids:
            return Mutation('delete the format record', keylib.packs((0, 'format')), None)
        (target, _), (_, other_id) = rng.choice(ids), rng.choice(ids)
        info = _json_of(meta[target]) or {}
        info['id'] = other_id
        return Mutation(f'{keylib.unpacks(target)!r}: id = {other_id}', target,
                json.dumps(info).encode())
    if pick == 8:
        value = keylib.packs(rng.randrange(0, 12))
        return Mutation(f'prefix counter = {keylib.unpacks(value)[0]}', keylib.packs((0, 'sys',
                                                                              'prefix')), value)
    if pick == 9:
        target = rng.choice([k for k in keys if _kind(k) == 'encoder']
                            or [keylib.packs((0, 'encoder', 'plain'))])
        value = json.dumps({'id': rng.choice([0, 1, 2, 3, 4, 5, 6, 127, 128, 255, 300, -1,
                                              True])}).encode()
        return Mutation(f'{keylib.unpacks(target)!r} = {value!r}', target, value)
    if pick == 10:
        new = keylib.packs((0, rng.choice(['collection', 'index']),) + (
            (rng.choice([1, 2, 3, 50, 2 ** 63 - 1]), rng.choice(['tag', 'other']))
            if rng.random() < 0.5 else (rng.choice(['ghost', 'keyed2']),)))
        if keylib.unpacks(new)[1] == 'index':
            new = keylib.packs((0, 'index', rng.choice([1, 2, 3, 50]), 'ghost'))
        info = {'id': rng.choice([1, 2, 3, 4, 5, 50, 0, -1]), 'encoder': 'msgpack',
                'packer': 'plain', 'counter': 'ghost:key'}
        return Mutation(f'new record {keylib.unpacks(new)!r} = {info!r}', new,
                        json.dumps(info).encode())
    value = keylib.packs(rng.choice(_COUNTER_INTS))
    return Mutation(f'generation = {metarecords.brief_repr(keylib.unpacks(value)[0], 40)}',
            keylib.packs((0, 'sys', 'generation')), value)


# --- exercising a damaged store ----------------------------------------------------

class _Run:
    """Calls on one damaged store; non-centidb exceptions become errors."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.errors: list[str] = []

    def call(self, what: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
        """``(True, result)``, or ``(False, the CentiError)``; other exceptions are errors."""
        try:
            return True, fn()
        except CentiError as exc:
            return False, exc
        except Exception as exc:        # the finding: anything else escaping
            where = traceback.extract_tb(exc.__traceback__)[-1]
            self.errors.append(f'{self.label}: {what}: {type(exc).__name__}: '
                               f'{str(exc)[:160]} (at {os.path.basename(where.filename)}:'
                               f'{where.lineno})')
            return False, exc

    def wrong(self, message: str) -> None:
        self.errors.append(f'{self.label}: {message}')


def _read_all(store: centidb.Store, name: str) -> dict[Any, Any]:
    coll = store.collection(name)
    data = dict(coll.items())
    for key in list(data)[:2]:
        if coll.get(key) != data[key]:
            raise AssertionError(f'get({key!r}) differs from items()')
    return data


def _prefix_owners(engine: Engine) -> dict[int, list[str]]:
    owners: dict[int, list[str]] = {}
    with engine.begin() as etxn:
        for kind in ('collection', 'index'):
            for key, info in metarecords.scan(etxn, kind):
                owners.setdefault(info['id'], []).append(metarecords.describe(key))
    return owners


def exercise(engine: Engine, expected: Expected, label: str, visible: bool = True) -> list[str]:
    """Use the (damaged) store on `engine` every way the checks allow; return the errors.

    :param engine: the engine holding the damaged store.
    :param expected: what :func:`base_store` wrote.
    :param label: starts each error line.
    :param visible: False if the damage is one no check can see (then a
        collection may read other records while ``verify()`` finds nothing).
    """
    run = _Run(label)
    ok, store = run.call('Store()', lambda: centidb.Store(engine))
    with_txn = run.call
    with_txn('read_metadata', lambda: _read_metadata(engine))
    if not ok:
        return run.errors
    try:
        _exercise_store(run, engine, store, expected if visible else {})
    finally:
        run.call('close', store.close)
    return run.errors


def _read_metadata(engine: Engine) -> Any:
    with engine.begin() as etxn:
        return read_metadata(etxn)


def _exercise_store(run: _Run, engine: Engine, store: centidb.Store,
                    expected: Expected) -> None:
    ok, names = run.call('collections()', store.collections)
    listed = names if ok else sorted(expected)
    ok, problems = run.call('verify()', store.verify)
    sound = ok and problems == []
    before: dict[str, dict[Any, Any]] = {}
    for name in listed:
        read, data = run.call(f'read {name!r}', functools.partial(_read_all, store, name))
        if read:
            before[name] = data
        if sound and name in expected:
            if not read:
                run.wrong(f'verify() found nothing, but reading {name!r} raised {data!r:.120}')
            elif data != expected[name]:
                run.wrong(f'verify() found nothing, but {name!r} reads other records')
    made, new = run.call('create', lambda: store.collection(NEW))
    if made:
        run.call('add_index', lambda: new.add_index('v', lambda v: v))
        wrote, _ = run.call('put', lambda: new.put(123456789))
        if wrote:
            _check_not_aliased(run, engine, store, new, before)
    run.call('verify() after create', store.verify)
    run.call('read_metadata after create', lambda: _read_metadata(engine))


def _check_not_aliased(run: _Run, engine: Engine, store: centidb.Store, new: Any,
                       before: dict[str, dict[Any, Any]]) -> None:
    ok, values = run.call('read new', lambda: list(new.values()))
    if ok and values != [123456789]:
        run.wrong(f'the new collection reads {values!r:.120}, not its one record')
    ok, owners = run.call('prefix owners', lambda: _prefix_owners(engine))
    if ok:
        for prefix_id in [new.coll_id] + [idx.index_id for idx in new.indices.values()]:
            if len(owners.get(prefix_id, [])) > 1:
                run.wrong(f'new prefix id {prefix_id} is shared: {owners[prefix_id]}')
    for name, data in before.items():
        if name == NEW:
            continue
        ok, after = run.call(f'reread {name!r}', functools.partial(_read_all, store, name))
        if ok and after != data:
            run.wrong(f'creating {NEW!r} changed the records of {name!r}')


def _parsed_well(key: Any, value: Any) -> str | None:
    """What a record the parser accepted breaks of ``docs/format.rst``, or None."""
    kind = key[0]
    if kind in ('counter', 'sys'):
        return None if type(value) is int else f'a counter parsed to {value!r:.60}'
    if type(value) is not dict:
        return f'parsed to {type(value).__name__}'
    if kind == 'format':
        ok = type(value.get('format')) is str and type(value.get('version')) is int
    else:
        hi = metarecords.MAX_ENCODER_ID if kind == 'encoder' else metarecords.MAX_PREFIX_ID
        ok = type(value.get('id')) is int and 1 <= value['id'] <= hi
        if kind == 'collection':
            ok = ok and all(type(value.get(f)) is str for f in ('encoder', 'packer', 'counter'))
            ok = ok and value.get('key', 'auto') in metarecords.KEY_KINDS
            ok = ok and type(value.get('batched', False)) is bool
        if kind == 'index':
            ok = ok and type(value.get('unique', False)) is bool
    return None if ok else f'accepted {value!r:.100}'


def parse_directly(rng: random.Random, meta: dict[bytes, bytes], count: int,
                   label: str) -> list[str]:
    """Hand `count` mutated records to ``parse_key``/``parse_value``; return the errors.

    Each must raise ``StoreFormatError`` or parse to what ``docs/format.rst``
    allows.
    """
    errors = []
    for _ in range(count):
        mutation = mutate(rng, meta)
        if mutation.value is None:
            continue
        try:
            key = metarecords.parse_key(mutation.key)
            wrong = _parsed_well(key, metarecords.parse_value(key, mutation.value))
        except CentiError:
            continue
        except Exception as exc:        # the finding
            errors.append(f'{label}: parse {mutation.what}: {type(exc).__name__}: '
                          f'{str(exc)[:160]}')
            continue
        if wrong is not None:
            errors.append(f'{label}: parse {mutation.what}: {wrong}')
    return errors


# --- the campaign ---------------------------------------------------------------------

def _cases(count: int, seed: int, items: list[tuple[bytes, bytes]]) -> Iterator[
        tuple[int, list[Mutation]]]:
    meta = {k: v for k, v in items if k[:1] == keylib.packs(0)}
    for case in range(count):
        rng = random.Random(seed * 1_000_003 + case)
        changed = dict(meta)
        mutations = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            mutation = mutate(rng, changed)
            mutations.append(mutation)
            key, value = mutation.key, mutation.value
            if value is None:
                changed.pop(key, None)
            elif key[:1] == keylib.packs(0):
                try:
                    keylib.unpacks(key)
                    changed[key] = value
                except CentiError:
                    pass
        yield case, mutations


def _engine(case: int, tmp: str) -> Engine:
    if case % LMDB_EVERY == LMDB_EVERY - 1:
        path = os.path.join(tmp, f'case{case}')
        shutil.rmtree(path, ignore_errors=True)
        return LmdbEngine(path, sync=False, map_size=1 << 24)
    return MemoryEngine()


def run_case(items: list[tuple[bytes, bytes]], expected: Expected, mutations: list[Mutation],
             engine: Engine, label: str) -> list[str]:
    """Load the base store into `engine`, apply `mutations`, exercise it; return the errors."""
    with engine.begin(write=True) as etxn:
        for key, value in items:
            etxn.put(key, value)
        for mutation in mutations:
            if mutation.value is None:
                etxn.delete(mutation.key)
            else:
                etxn.put(mutation.key, mutation.value)
    try:
        return exercise(engine, expected, label + ': ' + '; '.join(m.what for m in mutations),
                        all(m.visible for m in mutations))
    finally:
        engine.close()


def campaign(count: int, seed: int, until: float | None = None,
             parses: int = PARSES_PER_CASE) -> dict[str, Any]:
    """Run `count` seeded cases; see the module doc.

    :param count: how many damaged stores to try.
    :param seed: the seed; a case is reproducible from (seed, case number).
    :param until: a ``time.time()`` after which no case starts (None: no
        limit); ``'cases'`` then says how many ran.
    :param parses: records handed straight to the parser per case.
    :returns: ``{'cases', 'mutations', 'parsed', 'records', 'lmdb_cases',
        'errors', 'seconds'}``: ``'mutations'`` records changed in stores,
        ``'parsed'`` records handed straight to the parser
        (`parses` per case), ``'records'`` both, and
        ``'errors'`` a description of every finding.
    """
    started = time.monotonic()
    items, expected = base_store()
    errors: list[str] = []
    mutations_done = lmdb_cases = parsed = done = 0
    meta = {k: v for k, v in items if k[:1] == keylib.packs(0)}
    tmp = tempfile.mkdtemp(prefix='centidb-fault-metadata-')
    try:
        for case, mutations in _cases(count, seed, items):
            if until is not None and time.time() > until:
                break
            done += 1
            engine = _engine(case, tmp)
            lmdb_cases += isinstance(engine, LmdbEngine)
            mutations_done += len(mutations)
            errors += run_case(items, expected, mutations, engine,
                               f'seed {seed} case {case} ({type(engine).__name__})')
            if isinstance(engine, LmdbEngine):
                shutil.rmtree(os.path.join(tmp, f'case{case}'), ignore_errors=True)
            rng = random.Random(seed * 1_000_003 + case + 0x5EED)
            errors += parse_directly(rng, meta, parses, f'seed {seed} case {case}')
            parsed += parses
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {'cases': done, 'mutations': mutations_done, 'parsed': parsed,
            'records': mutations_done + parsed, 'lmdb_cases': lmdb_cases,
            'errors': errors, 'seconds': round(time.monotonic() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    """The command line: run a campaign, print its figures and findings; 1 on any."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--count', type=int, default=20000, help='cases to run')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--until', metavar='HH:MM', type=deadline,
                        help='start no case after this UTC time')
    parser.add_argument('--parses', type=int, default=PARSES_PER_CASE, metavar='N',
                        help='records handed straight to the parser per case')
    args = parser.parse_args(argv)
    result = campaign(args.count, args.seed, args.until, args.parses)
    print(f"metadata: {result['cases']} cases ({result['lmdb_cases']} on LMDB), "
          f"{result['mutations']} records changed in stores, {result['parsed']} parsed "
          f"directly, {len(result['errors'])} errors, "
          f"{result['seconds']} s, peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MB "
          f"resident")
    for line in result['errors'][:50]:
        print('  ' + line)
    return 1 if result['errors'] else 0


if __name__ == '__main__':
    sys.exit(main())
