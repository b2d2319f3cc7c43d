"""The standing fault campaigns: full disks, damaged files, hostile values and metadata.

Usage (from the repository root)::

    .venv/bin/python stress/faults.py [--long] [--seed 1] [--engine E] [--cases N]
        [--overflow] [--check-pages] [CAMPAIGN ...]

Campaigns (all of them when none is named):

``diskfull``
    A child process writes transactions of many shapes (single puts,
    ``put_many``, deletes, index updates, values of 20 to 200 KB) to a store
    on LMDB and on LevelDB, with sync on and off, under a small
    ``RLIMIT_FSIZE`` (with SIGXFSZ ignored, a write past it fails with
    ``EFBIG``, as on a full disk); after the first failure it lifts the
    limit (space was freed) or keeps it, and goes on writing. Every
    transaction writes a marker record; the child reports each commit that
    returned. The parent then reopens the store without the limit and
    checks that every acknowledged commit is there, that the store holds
    exactly the transactions whose markers it holds (none in part), that
    each index matches its records, and that ``verify()`` finds nothing.
    The child may only succeed or raise centidb errors: a raw ``plyvel`` or
    ``lmdb`` error, or a crash, is a failure. Run as root, a variant fills
    a 2 MiB tmpfs instead (skipped where it cannot be mounted).
``damage``
    A small store on each engine (collections, indexes, large values) is
    damaged: truncated at every page boundary (LMDB's ``data.mdb``), at
    every byte of LevelDB's MANIFEST (the store's last session compacts, so
    it holds several edits) or at several cut points of each other file,
    and given seeded bit flips in every file. ``--engine`` picks one
    engine, ``--cases N`` the number of cases per engine and implementation. A child process (with ``CENTIDB_NO_SPEEDUPS=1``,
    then ``CENTIDB_REQUIRE_SPEEDUPS=1``) opens each damaged copy and reads
    everything: ``get`` of every key, scans both ways, index reads and
    ``verify()``. Allowed: correct data, or a centidb error. A crash
    (signal), a hang (timeout) or a raw exception is a failure. Data that
    differs from what was stored is counted as ``verify`` when ``verify()``
    reports the damage (an index entry's key: no checksum covers keys) and
    as ``wrong`` when nothing noticed (the stores keep checksums, which catch
    damaged values). The LMDB store holds 8 values in overflow pages, whose
    sizes random flips seldom hit; ``--overflow`` stores every 5th value
    at 3 to 30 KB and aims half the flips at the sizes of overflow values
    (a size grown past its pages makes a read ``SIGBUS``), and
    ``--check-pages`` opens the LMDB copies with ``check_pages=True``.
``values``, ``metadata``
    ``campaign(count, seed)`` of ``stress/fault_values.py`` and
    ``stress/fault_metadata.py`` (seeded fuzzing of values and raw stored
    bytes, and of metadata records), run once per implementation, each in
    a child process (``CENTIDB_NO_SPEEDUPS=1``, then
    ``CENTIDB_REQUIRE_SPEEDUPS=1``) with its address space capped at
    ``CHILD_MEMORY_MB``. Figures are reported per implementation; a child
    that crashes or runs in the other implementation is a failure.

The default is a short run (under a minute); ``--long`` is the full
campaign: at least 500 disk-full trials per engine, and per implementation
2,000 damage cases per engine, 500,000 fuzzed values, and 25,000 metadata
cases (each changes stored metadata records and hands 20 more straight to
the parser: over 500,000 records). Exits 1 if any campaign found a failure.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import resource
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

ENGINES = ('lmdb', 'leveldb')
IMPLS = {'pure': 'CENTIDB_NO_SPEEDUPS', 'compiled': 'CENTIDB_REQUIRE_SPEEDUPS'}

#: Trials and cases (damage, values and metadata: per implementation): short
#: (the default) and ``--long``.
SHORT = {'diskfull': 12, 'damage': 60, 'values': 1000, 'metadata': 1000}
LONG = {'diskfull': 500, 'damage': 2000, 'values': 500_000, 'metadata': 25_000}


def impl_env(impl: str) -> dict[str, str]:
    """This process's environment, with the variable that picks implementation `impl`."""
    env = dict(os.environ)
    for name in IMPLS.values():
        env.pop(name, None)
    env[IMPLS[impl]] = '1'
    return env


# --- the store both campaigns use ----------------------------------------------

def open_store(engine: str, path: str, *, sync: bool = False, create: bool = True,
               check_pages: bool = False) -> Any:
    """Open the campaign's store on `engine` ('lmdb' or 'leveldb') at `path`.

    New collections keep checksums (the recommended setup), so a damaged
    value is an error, not wrong data. `check_pages`: LMDB's
    ``check_pages`` option (read every page in use at open).
    """
    import centidb
    if engine == 'lmdb':
        store = centidb.open('LmdbEngine', path=path, sync=sync, create_if_missing=create,
                             check_pages=check_pages)
    else:
        store = centidb.open('PlyvelEngine', path=path, create_if_missing=create, sync=sync)
    store.checksums = True
    return store


def _grp(rec: dict) -> Any:
    return rec['grp']


def _tags(rec: dict) -> Any:
    return rec['tags']


def collections(store: Any) -> tuple[Any, Any]:
    """The collections ``docs`` (key ``id``; indexes ``grp``, ``tags``) and ``marks``."""
    docs = store.collection('docs', key_func=lambda r: r['id'])
    docs.add_index('grp', _grp)
    docs.add_index('tags', _tags)
    marks = store.collection('marks', key_func=lambda r: r['n'])
    return docs, marks


def is_centidb_error(exc: BaseException) -> bool:
    """True if `exc` is one of centidb's own errors."""
    from centidb.errors import CentiError
    return isinstance(exc, CentiError)


def describe(exc: BaseException) -> str:
    """``module.Class: message`` (the first line) for a report."""
    first = (str(exc).splitlines() or [''])[0][:200]
    return f'{type(exc).__module__}.{type(exc).__name__}: {first}'


# --- diskfull: transactions --------------------------------------------------------

SHAPES = ('put', 'put_many', 'delete', 'index', 'large', 'mixed')


def transaction(seed: str, n: int) -> list[tuple[str, Any]]:
    """The operations of transaction `n` of a trial: ``('put', rec)``, ``('delete', id)``.

    Made from `seed` and `n` alone, so the parent replays what the child wrote.
    """
    rng = random.Random(f'{seed}/{n}')
    shape = rng.choice(SHAPES)

    def rec(i: int, size: int = 0) -> dict:
        return {'id': i, 'n': n, 'grp': rng.randrange(8),
                'tags': sorted(rng.sample(range(20), rng.randrange(4))),
                'body': rng.randbytes(size or rng.randrange(10, 400))}

    ops: list[tuple[str, Any]] = []
    if shape == 'put':
        ops.append(('put', rec(rng.randrange(200))))
    elif shape == 'put_many':
        ops.append(('put_many', [rec(i) for i in rng.sample(range(200), rng.randrange(2, 60))]))
    elif shape == 'delete':
        ops += [('delete', i) for i in rng.sample(range(200), rng.randrange(1, 10))]
    elif shape == 'index':
        # Updates that move records between index entries.
        ops += [('put', rec(i)) for i in rng.sample(range(20), rng.randrange(1, 8))]
    elif shape == 'large':
        ops.append(('put', rec(rng.randrange(200), rng.randrange(20_000, 200_000))))
    else:
        for _ in range(rng.randrange(2, 12)):
            if rng.random() < 0.3:
                ops.append(('delete', rng.randrange(200)))
            else:
                ops.append(('put', rec(rng.randrange(200), rng.choice((0, 0, 0, 5000)))))
    return ops


def apply(model: dict[int, dict], ops: list[tuple[str, Any]]) -> None:
    """Apply `ops` (see :func:`transaction`) to `model`, a dict id -> record."""
    for op, arg in ops:
        if op == 'put':
            model[arg['id']] = arg
        elif op == 'put_many':
            for rec in arg:
                model[rec['id']] = rec
        else:
            model.pop(arg, None)


def _write(docs: Any, marks: Any, txn: Any, n: int, ops: list[tuple[str, Any]]) -> None:
    for op, arg in ops:
        if op == 'put':
            docs.put(arg, txn=txn)
        elif op == 'put_many':
            docs.put_many(arg, txn=txn)
        else:
            docs.delete(arg, txn=txn)
    marks.put({'n': n}, txn=txn)


def diskfull_child(args: list[str]) -> None:
    """Run the trials named in `args` (JSON), reporting on stdout, one line per event.

    ``A n``: commit n returned; ``F n error``: it raised a centidb error;
    ``X n error``: it raised anything else (a failure); ``D``: trial done.
    """
    spec = json.loads(args[0])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    out = sys.stdout

    def say(line: str) -> None:
        out.write(line + '\n')
        out.flush()

    for trial in spec['trials']:
        rng = random.Random(trial['seed'])
        path, engine, mode = trial['path'], trial['engine'], trial['mode']
        store = open_store(engine, path, sync=trial['sync'])
        docs, marks = collections(store)
        if mode == 'rlimit':
            sizes = [os.path.getsize(os.path.join(path, name)) for name in os.listdir(path)]
            limit = max(sizes) + rng.randrange(32_768, 2_000_000)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        failed_at = None
        after = rng.randrange(3, 20)
        free = rng.random() < 0.5
        n = 0
        while n < 3000 and (failed_at is None or n < failed_at + after):
            n += 1
            ops = transaction(trial['seed'], n)
            try:
                with store.begin(write=True) as txn:
                    _write(docs, marks, txn, n, ops)
            except Exception as exc:
                if not is_centidb_error(exc):
                    say(f'X {n} {describe(exc)}')
                    continue
                say(f'F {n} {describe(exc)}')
                if failed_at is None:
                    failed_at = n
                    if free:
                        if mode == 'rlimit':
                            resource.setrlimit(resource.RLIMIT_FSIZE,
                                               (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                        else:
                            os.unlink(trial['filler'])
                continue
            say(f'A {n}')
        if trial.get('abandon'):
            say('D')
            os._exit(0)     # as a crash would: no close
        try:
            store.close()
        except Exception as exc:
            if not is_centidb_error(exc):
                say(f'X 0 close: {describe(exc)}')
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        say('D')


def check_trial(trial: dict, acked: set[int], attempted: int) -> list[str]:
    """Reopen a trial's store (no limit) and list what is wrong with it."""
    problems: list[str] = []
    name = f"{trial['engine']} {trial['mode']} sync={trial['sync']} seed={trial['seed']}"
    try:
        store = open_store(trial['engine'], trial['path'], create=False)
    except Exception as exc:
        return [f'{name}: reopen failed: {describe(exc)}']
    try:
        docs, marks = collections(store)
        present = {rec['n'] for rec in marks.values()}
        lost = sorted(acked - present)
        if lost:
            problems.append(f'{name}: {len(lost)} acknowledged commits lost: {lost[:10]}')
        model: dict[int, dict] = {}
        for n in range(1, attempted + 1):
            if n in present:
                apply(model, transaction(trial['seed'], n))
        stored = dict(docs.items())
        if stored != {(i,): rec for i, rec in model.items()}:
            differ = sorted(set(stored) ^ {(i,) for i in model}) or [
                key for key in stored if stored[key] != model.get(key[0])]
            problems.append(f'{name}: the records are not those of the commits present '
                            f'(partial commit?): keys {differ[:10]}')
        for index, func in (('grp', _grp), ('tags', _tags)):
            pairs = sorted(docs.indices[index].pairs())
            want = []
            for key, rec in stored.items():
                value = func(rec)
                for entry in (value if isinstance(value, list) else [value]):
                    want.append(((entry,), key))
            if pairs != sorted(want):
                problems.append(f'{name}: index {index} does not match the records')
        found = store.verify()
        if found:
            problems.append(f'{name}: verify() found {len(found)} problems: {found[0]}')
    except Exception as exc:
        problems.append(f'{name}: reading after reopen raised {describe(exc)}')
    finally:
        store.close()
    return problems


def _tmpfs(directory: str) -> str | None:
    """Mount a 2 MiB tmpfs under `directory` (root only); its path, or None."""
    if os.geteuid() != 0:
        return None
    mount = os.path.join(directory, 'tmpfs')
    os.mkdir(mount)
    done = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mount],
                          capture_output=True)
    return mount if done.returncode == 0 else None


def _resize(mount: str | None, size: str) -> None:
    subprocess.run(['mount', '-o', f'remount,size={size}', mount or ''],
                   capture_output=True, check=True)


def diskfull(trials: int, seed: int, engines: tuple[str, ...] = ENGINES,
             log: Callable[[str], object] = print) -> dict:
    """Run `trials` disk-full trials per engine; return the figures and failures."""
    total: dict[str, Any] = {'errors': []}
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix='centidb-diskfull-') as top:
        mount = _tmpfs(top)
        try:
            for engine in engines:
                figures: dict[str, Any] = {'trials': 0, 'acked': 0, 'refused': 0, 'lost': 0,
                                           'raw': 0, 'crashes': 0, 'tmpfs': 0, 'errors': []}
                plan = []
                for t in range(trials):
                    mode = 'tmpfs' if mount and t % 10 == 9 else 'rlimit'
                    plan.append({'engine': engine, 'mode': mode, 'sync': t % 2 == 1,
                                 'seed': f'{seed}-{engine}-{t}'})
                for start in range(0, len(plan), 10):
                    _diskfull_batch(plan[start:start + 10], top, mount, rng, figures)
                log(f'diskfull {engine}: ' + ', '.join(
                    f'{k} {v}' for k, v in figures.items() if k != 'errors'))
                total['errors'] += figures.pop('errors')
                total[engine] = figures
                for k, v in figures.items():
                    if k != 'classes':
                        total[k] = total.get(k, 0) + v
        finally:
            if mount:
                subprocess.run(['umount', mount], capture_output=True)
    total['errors'] = total['errors'][:50]
    return total


def _diskfull_batch(batch: list[dict], top: str, mount: str | None,
                    rng: random.Random, figures: dict) -> None:
    for trial in batch:
        base = mount if trial['mode'] == 'tmpfs' else top
        assert base is not None
        trial['path'] = os.path.join(base, f"db-{trial['seed']}")
        trial['filler'] = os.path.join(base, f"filler-{trial['seed']}")
    # A tmpfs trial runs alone, in the emptied mount.
    groups = [[t] for t in batch] if mount else [batch]
    for group in groups:
        if group[0]['mode'] == 'tmpfs':
            assert mount is not None
            for name in os.listdir(mount):
                path = os.path.join(mount, name)
                shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
            _resize(mount, '2m')
            with open(group[0]['filler'], 'wb') as f:
                f.write(b'\0' * 300_000)
        group[-1]['abandon'] = rng.random() < 0.3
        child = subprocess.run(
            [sys.executable, os.path.abspath(__file__), '--diskfull-child',
             json.dumps({'trials': group})],
            capture_output=True, text=True, timeout=600)
        events = child.stdout.splitlines()
        if child.returncode != 0:
            figures['crashes'] += 1
            tail = (child.stderr.strip().splitlines() or [''])[-1]
            figures['errors'].append(f'child exited {child.returncode}: {tail}')
        it = iter(events)
        for trial in group:
            acked: set[int] = set()
            attempted = 0
            for line in it:
                if line == 'D':
                    break
                kind, n, *rest = line.split(' ', 2)
                attempted = max(attempted, int(n))
                if kind == 'A':
                    acked.add(int(n))
                elif kind == 'F':
                    figures['refused'] += 1
                    name = rest[0].split(':')[0].rsplit('.', 1)[-1]
                    classes = figures.setdefault('classes', {})
                    classes[name] = classes.get(name, 0) + 1
                else:
                    figures['raw'] += 1
                    figures['errors'].append(f"{trial['engine']}: raw error: {' '.join(rest)}")
            figures['trials'] += 1
            figures['tmpfs'] += trial['mode'] == 'tmpfs'
            figures['acked'] += len(acked)
            if trial['mode'] == 'tmpfs':
                _resize(mount, '64m')     # space freed: LevelDB's reopen writes
            problems = check_trial(trial, acked, attempted)
            figures['lost'] += sum(1 for p in problems if 'acknowledged commits lost' in p)
            figures['errors'] += problems


# --- damage ------------------------------------------------------------------------

#: Records in each of the damage store's collections ``docs`` and ``log``.
DAMAGE_RECORDS = 180


def build_damage_store(engine: str, path: str, overflow: bool = False) -> dict:
    """Write the small store the damage campaign damages; return what it holds.

    Every 25th record holds 6,000 bytes (in LMDB, a value in overflow
    pages); with `overflow`, every 5th holds 3 to 30 KB.
    """
    store = open_store(engine, path)
    docs, marks = collections(store)
    log = store.collection('log')
    log.add_index('level', lambda r: r['level'])
    rng = random.Random(7)
    per_part = DAMAGE_RECORDS // 3
    for part in range(3):
        # Three sessions: LevelDB makes table files and a fresh log.
        with store.begin(write=True) as txn:
            for i in range(part * per_part, (part + 1) * per_part):
                size = 6000 if i % 25 == 0 else rng.randrange(10, 200)
                if overflow and i % 5 == 0:
                    size = rng.randrange(3000, 30_000)
                docs.put({'id': i, 'n': i, 'grp': i % 7, 'tags': [i % 3, 3 + i % 5],
                          'body': rng.randbytes(size)}, txn=txn)
                log.put({'level': i % 4, 'text': f'line {i}'}, txn=txn)
            marks.put({'n': part}, txn=txn)
        if engine == 'leveldb' and part == 2:
            # The last session compacts too, then writes a table that only
            # adds a file (plyvel's compact_range() with no range writes the
            # memtable out), so its MANIFEST holds several edits: cut short,
            # it names fewer table files than there are.
            store.engine.compact()
            marks.put({'n': 3})
            store.engine._db.compact_range()
        if part < 2:
            store.close()
            if engine == 'leveldb':
                # Compact into table files, so damage hits them too.
                from centidb.engines.leveldb import PlyvelEngine
                engine_ = PlyvelEngine(path)
                engine_.compact()
                engine_.close()
            store = open_store(engine, path)
            docs, marks = collections(store)
            log = store.collection('log')
            log.add_index('level', lambda r: r['level'])
    store.close()
    # Read a copy: opening the store itself would make LevelDB start a new
    # MANIFEST, holding one record, in place of the one with the edits.
    copy = path + '-read'
    shutil.copytree(path, copy)
    try:
        return read_all(engine, copy)
    finally:
        shutil.rmtree(copy)


def read_all(engine: str, path: str, check_pages: bool = False) -> dict:
    """Everything the store at `path` holds, read every way, as JSON-able data."""
    store = open_store(engine, path, create=False, check_pages=check_pages)
    try:
        docs, marks = collections(store)
        log = store.collection('log')
        level = log.add_index('level', lambda r: r['level'])
        out: dict[str, Any] = {}
        # Gets first, of the keys the store was built with: each reaches its
        # pages before a scan has.
        for name, coll, keys in (('docs', docs, range(DAMAGE_RECORDS)),
                                 ('marks', marks, range(3)),
                                 ('log', log, range(1, DAMAGE_RECORDS + 1))):
            out[name + ' get'] = _plain([coll.get(key) for key in keys])
        for name, coll in (('docs', docs), ('marks', marks), ('log', log)):
            out[name] = _plain(list(coll.items()))
            out[name + ' reverse'] = _plain(list(coll.items(reverse=True))[::-1])
            out[name + ' count'] = len(coll)
        for name, index in (('grp', docs.indices['grp']), ('tags', docs.indices['tags']),
                            ('level', level)):
            out['index ' + name] = _plain(list(index.pairs()))
            out['index values ' + name] = _plain(list(index.values()))
        out['verify'] = [str(problem) for problem in store.verify()]
        return out
    finally:
        store.close()


def _plain(value: Any) -> Any:
    """`value` with bytes as hex and tuples as lists, for JSON."""
    if isinstance(value, bytes):
        return 'b:' + value.hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def damage_cases(engine: str, pristine: str, count: int, seed: int,
                 overflow: bool = False) -> list[dict]:
    """The damage cases for the store at `pristine`: truncations first, then bit flips.

    With `count` at most the number of truncations, a seeded sample of them
    and of flips; else every truncation and the rest flips, spread over the
    files. With `overflow` (LMDB), half the flips hit the size of a leaf
    node of an overflow value (bits 8 to 31).
    """
    rng = random.Random(f'{seed}-{engine}')
    files = sorted(name for name in os.listdir(pristine)
                   if name not in ('LOCK', 'LOG', 'LOG.old'))
    sizes = {name: os.path.getsize(os.path.join(pristine, name)) for name in files}
    cuts: list[dict] = []
    for name in files:
        size = sizes[name]
        if engine == 'lmdb' and name == 'data.mdb':
            points = range(0, size, 4096)
        elif name.startswith('MANIFEST-'):
            points = range(size)            # every prefix of LevelDB's version log
        else:
            points = sorted({0, 1, size // 2, size - 1, *(rng.randrange(size) for _ in range(4))}
                            if size else {0})
        cuts += [{'file': name, 'truncate': p} for p in points if p < size]
    flips = max(count - len(cuts), count // 2)
    if len(cuts) > count - flips:
        cuts = rng.sample(cuts, count - flips)
    flippable = [name for name in files if sizes[name]]
    weights = [max(sizes[name], 4096) ** 0.5 for name in flippable]
    cases = list(cuts)
    if overflow and engine == 'lmdb':
        nodes = overflow_nodes(os.path.join(pristine, 'data.mdb'))
        for _ in range(flips // 2):
            cases.append({'file': 'data.mdb',
                          'flip': [(rng.choice(nodes) + rng.randrange(1, 4), rng.randrange(8))]})
        flips -= flips // 2
    for _ in range(flips):
        name = rng.choices(flippable, weights)[0]
        bits = [(rng.randrange(sizes[name]), rng.randrange(8))
                for _ in range(rng.choice((1, 1, 1, 2, 8)))]
        cases.append({'file': name, 'flip': bits})
    return cases


def overflow_nodes(data_file: str, page_size: int = 4096) -> list[int]:
    """The offsets in LMDB's `data_file` of every leaf node naming an overflow run.

    Live or not: the pages of older commits hold such nodes too.
    """
    with open(data_file, 'rb') as f:
        raw = f.read()
    found = []
    for start in range(2 * page_size, len(raw), page_size):
        flags, lower = struct.unpack_from('<HH', raw, start + 10)
        if flags & 0x26 != 0x02 or lower > page_size:      # leaf pages only
            continue
        for offset in struct.unpack_from(f'<{(lower - 16) // 2}H', raw, start + 16):
            if offset + 8 <= page_size and raw[start + offset + 4] & 0x01:   # F_BIGDATA
                found.append(start + offset)
    return found


def apply_damage(case: dict, directory: str) -> None:
    """Apply one damage `case` to the copy of the store in `directory`."""
    path = os.path.join(directory, case['file'])
    if 'truncate' in case:
        os.truncate(path, case['truncate'])
        return
    with open(path, 'r+b') as f:
        for offset, bit in case['flip']:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ (1 << bit)]))


def damage_reader() -> None:
    """The child of the damage campaign: for each ``engine path`` line on stdin, read all.

    Writes one JSON line per case: ``{"outcome": "ok"|"error"|"raw", ...}``
    with ``"data"`` (what was read) when it read everything.
    """
    for line in sys.stdin:
        engine, path, check = line.split()
        try:
            data = read_all(engine, path, check == '1')
        except Exception as exc:
            outcome = {'outcome': 'error' if is_centidb_error(exc) else 'raw',
                       'error': describe(exc)}
        else:
            outcome = {'outcome': 'ok', 'data': data}
        sys.stdout.write(json.dumps(outcome) + '\n')
        sys.stdout.flush()


class _Reader:
    """A damage_reader child process, restarted after a crash or a hang."""

    def __init__(self, impl: str) -> None:
        self.env = impl_env(impl)
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        if self.proc is None:
            self.proc = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), '--damage-reader'],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, env=self.env, cwd=ROOT)
        return self.proc

    def read(self, engine: str, path: str, timeout: float, check_pages: bool = False) -> dict:
        proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(f'{engine} {path} {int(check_pages)}\n')
            proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                proc.kill()
                proc.wait()
                self.proc = None
                return {'outcome': 'hang'}
        line = proc.stdout.readline()
        if not line:
            return self._died()
        result: dict = json.loads(line)
        return result

    def _died(self) -> dict:
        assert self.proc is not None
        code = self.proc.wait()
        tail = (self.proc.stderr.read() if self.proc.stderr else '').strip().splitlines()
        self.proc = None
        return {'outcome': 'crash', 'error': f'exit {code}: {tail[-1] if tail else ""}'}

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait()
            self.proc = None


#: What a damage case may come to: ``ok`` (correct data), ``error`` (a centidb
#: error), ``verify`` (reads differ, and ``verify()`` reports the damage: an
#: index entry's key, which no checksum covers), ``wrong`` (other data, and
#: ``verify()`` finds nothing), ``raw``, ``crash``, ``hang``.
DAMAGE_OUTCOMES = ('cases', 'ok', 'error', 'verify', 'wrong', 'raw', 'crash', 'hang')


def damage(count: int, seed: int, engines: tuple[str, ...] = ENGINES,
           impls: tuple[str, ...] = tuple(IMPLS), timeout: float = 20.0,
           log: Callable[[str], object] = print, overflow: bool = False,
           check_pages: bool = False) -> dict:
    """Run `count` damage cases per engine and implementation; return the figures.

    `overflow`: more large values, and flips aimed at their sizes (see
    :func:`damage_cases`); `check_pages`: LMDB stores are opened with
    ``check_pages=True``.
    """
    total: dict[str, Any] = {'errors': [], 'error classes': {}}
    with tempfile.TemporaryDirectory(prefix='centidb-damage-') as top:
        for engine in engines:
            pristine = os.path.join(top, f'{engine}-pristine')
            expected = _plain(build_damage_store(engine, pristine, overflow))
            assert expected['verify'] == [], expected['verify']
            cases = damage_cases(engine, pristine, count, seed, overflow)
            for impl in impls:
                figures: dict[str, Any] = dict.fromkeys(DAMAGE_OUTCOMES, 0)
                figures.update(errors=total['errors'], classes=total['error classes'])
                reader = _Reader(impl)
                try:
                    for i, case in enumerate(cases):
                        work = os.path.join(top, 'case')
                        shutil.rmtree(work, ignore_errors=True)
                        shutil.copytree(pristine, work)
                        apply_damage(case, work)
                        result = reader.read(engine, work, timeout, check_pages)
                        _count(figures, engine, impl, case, result, expected)
                finally:
                    reader.close()
                log(f'damage {engine} {impl}: ' + ', '.join(
                    f'{k} {figures[k]}' for k in DAMAGE_OUTCOMES))
                total[f'{engine} {impl}'] = {k: figures[k] for k in DAMAGE_OUTCOMES}
                for k in DAMAGE_OUTCOMES:
                    total[k] = total.get(k, 0) + figures[k]
    total['errors'] = total['errors'][:50]
    return total


def _count(figures: dict, engine: str, impl: str, case: dict, result: dict,
           expected: dict) -> None:
    figures['cases'] += 1
    outcome = result['outcome']
    what = f'{engine} {impl} {json.dumps(case)}'
    if outcome == 'ok':
        if result['data'] == expected:
            figures['ok'] += 1
        elif result['data'].get('verify'):
            figures['verify'] += 1          # reads differ, and verify() reports the damage
        else:
            figures['wrong'] += 1
            differ = sorted(name for name in set(expected) | set(result['data'])
                            if expected.get(name) != result['data'].get(name))
            figures['errors'].append(f'{what}: wrong data in {", ".join(differ)}')
        return
    figures[outcome] += 1
    if outcome == 'error':
        name = result['error'].split(':')[0].rsplit('.', 1)[-1]
        figures['classes'][name] = figures['classes'].get(name, 0) + 1
    else:
        figures['errors'].append(f"{what}: {outcome} {result.get('error', '')}")


# --- the campaigns of other modules --------------------------------------------------

#: The address space (MB) of a ``values`` or ``metadata`` child, as
#: ``stress/fault_values.py``'s ``--max-memory``: a case that runs away with
#: memory fails as ``MemoryError``, not the machine.
CHILD_MEMORY_MB = 4096


def campaign_child(args: list[str]) -> None:
    """The child of :func:`external`: run ``campaign(count, seed)`` of module ``fault_<name>``.

    `args` are the name, the count and the seed. Prints the result as one
    JSON line, with ``'impl'`` set to the implementation that ran.
    """
    name, count, seed = args[0], int(args[1]), int(args[2])
    limit = CHILD_MEMORY_MB << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    from centidb import impl
    result = importlib.import_module(f'fault_{name}').campaign(count, seed)
    result['impl'] = {'speedups': 'compiled', 'python': 'pure'}.get(impl.IMPL, impl.IMPL)
    result.setdefault('peak_mb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10)
    sys.stdout.write(json.dumps(result) + '\n')


def external(name: str, count: int, seed: int, impls: tuple[str, ...] = tuple(IMPLS),
             log: Callable[[str], object] = print) -> dict:
    """Run ``campaign(count, seed)`` of ``stress/fault_<name>.py`` once per implementation.

    Each run is a child process (with ``CENTIDB_NO_SPEEDUPS=1``, then
    ``CENTIDB_REQUIRE_SPEEDUPS=1``), so a crash is a finding, not the end of
    the driver. Returns each implementation's figures under its name
    (``'pure'``, ``'compiled'``), the ``'cases'`` of all, and ``'errors'``
    prefixed with the implementation; a campaign module that is not present
    gives ``{'cases': 0, 'errors': [], 'note': 'not present'}``.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.exists(os.path.join(here, f'fault_{name}.py')):
        return {'cases': 0, 'errors': [], 'note': 'not present'}
    total: dict[str, Any] = {'cases': 0, 'errors': []}
    for impl in impls:
        child = subprocess.run(
            [sys.executable, os.path.abspath(__file__), '--campaign-child', name,
             str(count), str(seed)],
            capture_output=True, text=True, env=impl_env(impl), cwd=ROOT)
        lines = child.stdout.strip().splitlines()
        figures: dict[str, Any]
        try:
            figures = json.loads(lines[-1]) if child.returncode == 0 else {}
        except (IndexError, json.JSONDecodeError):
            figures = {}
        if not figures:
            tail = (child.stderr.strip().splitlines() or [''])[-1]
            figures = {'cases': 0, 'errors': [f'the child exited {child.returncode}: {tail}']}
        elif figures.get('impl') != impl:
            figures['errors'].append(f"ran in the {figures.get('impl')} implementation")
        errors = figures.pop('errors')
        total['errors'] += [f'{impl}: {error}' for error in errors]
        total['cases'] += figures['cases']
        total[impl] = figures
        log(f'{name} {impl}: {figures["cases"]} cases, {len(errors)} errors, '
            + ', '.join(f'{k} {json.dumps(v)}' for k, v in figures.items()
                        if k not in ('cases', 'impl')))
    total['errors'] = total['errors'][:50]
    return total


def failures(name: str, figures: dict) -> int:
    """How many failures `figures` of campaign `name` count."""
    if name == 'diskfull':
        return figures['lost'] + figures['raw'] + figures['crashes'] + len(figures['errors'])
    if name == 'damage':
        return figures['raw'] + figures['crash'] + figures['hang'] + figures['wrong']
    return len(figures.get('errors', []))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('campaigns', nargs='*', metavar='CAMPAIGN',
                        help='diskfull, damage, values, metadata (default: all)')
    parser.add_argument('--long', action='store_true', help='the full campaign')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--engine', choices=ENGINES, action='append',
                        help='damage: only this engine (repeatable; default: all)')
    parser.add_argument('--cases', type=int, metavar='N',
                        help='damage: N cases per engine and implementation')
    parser.add_argument('--overflow', action='store_true',
                        help='damage: more large values (LMDB overflow pages), and half '
                             'the flips aimed at their sizes')
    parser.add_argument('--check-pages', action='store_true',
                        help="damage: open LMDB stores with check_pages=True")
    args = parser.parse_args(argv)
    names = args.campaigns or ['diskfull', 'damage', 'values', 'metadata']
    sizes = LONG if args.long else SHORT
    failed = 0
    for name in names:
        if name not in sizes:
            parser.error(f'unknown campaign {name!r}: pick from {", ".join(sizes)}')
        started = time.monotonic()
        if name == 'diskfull':
            figures = diskfull(sizes[name], args.seed)
        elif name == 'damage':
            figures = damage(args.cases or sizes[name], args.seed,
                             tuple(args.engine or ENGINES), overflow=args.overflow,
                             check_pages=args.check_pages)
        else:
            figures = external(name, sizes[name], args.seed)
        bad = failures(name, figures)
        failed += bad
        shown = {k: v for k, v in figures.items() if k != 'errors'}
        print(f'{name}: {json.dumps(shown)} in {time.monotonic() - started:.0f} s; '
              f'{bad} failures')
        for error in figures.get('errors', [])[:20]:
            print(f'  {error}')
    return 1 if failed else 0


if __name__ == '__main__':
    if sys.argv[1:2] == ['--diskfull-child']:
        diskfull_child(sys.argv[2:])
    elif sys.argv[1:2] == ['--campaign-child']:
        campaign_child(sys.argv[2:])
    elif sys.argv[1:2] == ['--damage-reader']:
        damage_reader()
    else:
        sys.exit(main())
