"""Crash-safety stress for the disk engines: SIGKILL a writer, again and again.

Usage (from the repository root)::

    .venv/bin/python stress/kill_writers.py --engine LmdbEngine|PlyvelEngine
        [--kills 1000] [--dir DIR] [--seed 1] [--max-delay 0.3] [--early 0.15]
        [--keep]

A child process opens the store (``centidb.open('LmdbEngine', path=...)`` or
``centidb.open('PlyvelEngine', name=..., create_if_missing=True)``), the
collection ``docs`` (key: ``r['id']``) with the indexes ``grp`` (one entry,
``r['grp']``) and ``tags`` (one entry per element of the list ``r['tags']``),
and writes transaction after transaction. Transaction ``n`` is made from
``--seed`` and ``n`` alone: 2 to 6 puts (insert or update) and deletes of
records with ids 0..299 (now and then 50 to 200 of them), each record
carrying ``'txn': n``; the marker record ``'txn%010d' % n``; and the
deletion of the marker 20 transactions older. After each commit the child
writes ``commit n`` to its stdout pipe. On start it resumes after the newest
marker it finds.

The parent kills the child with SIGKILL, most times a random delay of up to
``--max-delay`` seconds after the child said it was ready, and with
probability ``--early`` at a random moment in its first 0.4 s (while it
imports, opens the store or adds the indexes). With the child dead, the
parent opens the store (read-only use: it creates nothing) and checks:

* **lost**: every transaction the child reported committed is there (its
  marker is; the newest marker M is at least the last reported number; at
  most one more, committed but not yet reported, may show);
* **partial**: the records equal a model of transactions 1..M replayed in
  memory, so no transaction is visible in part (a transaction counts once,
  by number);
* **index**: the ``pairs()`` of each index equal the entries the index
  functions give for the records there, and no entry is duplicated or
  points at a missing record;
* ``Store.verify()``, if the store has it: the problems it reports.

Problems are counted once each, however many checks see them (the model is
re-based on what the store holds after a mismatch). Prints the counts and
the time per kill; exits 1 on any problem. LevelDB locks its directory, so
the check runs only when the child is dead (for both engines).
"""

import argparse
import os
import random
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import centidb  # noqa: E402
from centidb import keylib  # noqa: E402
from centidb.engines import get_engine_class  # noqa: E402
from centidb.errors import DatabaseNotFoundError  # noqa: E402

ENGINES = ('LmdbEngine', 'PlyvelEngine')
COLL = 'docs'
NKEYS = 300
#: Markers kept: transaction n deletes the marker of n - WINDOW.
WINDOW = 20
GROUPS = ('a', 'b', 'c', 'd', 'e')
TAGS = ('red', 'green', 'blue', 'x', 'y', 'z')
MARKER = 'txn'
#: Seconds the child gets to say it is ready before it counts as stuck.
READY_TIMEOUT = 60.0


# --- the workload (shared by the child, which writes it, and the checker's model) --------

def key_func(rec):
    return rec['id']


def grp_func(rec):
    return rec['grp']


def tags_func(rec):
    return rec['tags']


INDEXES = (('grp', grp_func), ('tags', tags_func))


def marker_id(n):
    return f'{MARKER}{n:010d}'


def marker_number(key):
    """The transaction number of a marker's key tuple, or None for a data record."""
    if len(key) == 1 and isinstance(key[0], str) and key[0].startswith(MARKER):
        return int(key[0][len(MARKER):])
    return None


def txn_ops(seed, n):
    """The operations of transaction `n`: ``('put', record)`` or ``('delete', id)``."""
    rng = random.Random(f'{seed}:{n}')
    nops = rng.randrange(50, 201) if rng.random() < 0.03 else rng.randrange(2, 7)
    ops = []
    for _ in range(nops):
        k = rng.randrange(NKEYS)
        if rng.random() < 0.7:
            ops.append(('put', {'id': k, 'grp': rng.choice(GROUPS),
                                'tags': rng.sample(TAGS, rng.randrange(4)), 'txn': n,
                                'pad': 'x' * rng.choice((0, 10, 100, 1000))}))
        else:
            ops.append(('delete', k))
    ops.append(('put', {'id': marker_id(n), 'grp': 'marker', 'tags': [], 'txn': n}))
    if n > WINDOW:
        ops.append(('delete', marker_id(n - WINDOW)))
    return ops


def apply_ops(state, ops):
    for op, arg in ops:
        if op == 'put':
            state[(arg['id'],)] = arg
        else:
            state.pop((arg,), None)


class Model:
    """The records expected after transactions 1..n, replayed from a base."""

    def __init__(self, seed):
        self.seed = seed
        self.base_n, self.base_state = 0, {}
        self.n, self.state = 0, {}

    def at(self, n):
        if n < self.n:
            if n >= self.base_n:
                self.n, self.state = self.base_n, dict(self.base_state)
            else:
                self.n, self.state = 0, {}
        while self.n < n:
            self.n += 1
            apply_ops(self.state, txn_ops(self.seed, self.n))
        return self.state

    def rebase(self, n, state):
        """Take what the store holds as the truth from now on (after a mismatch)."""
        self.base_n, self.base_state = n, dict(state)
        self.n, self.state = n, dict(state)


def open_args(engine, path, create):
    if engine == 'LmdbEngine':
        return {'path': path, 'create_if_missing': create}
    return {'name': path, 'create_if_missing': create}


# --- the child ----------------------------------------------------------------------------

def emit(line):
    os.write(1, (line + '\n').encode())


def child_main(args):
    parent = os.getppid()
    store = centidb.open(args.engine, **open_args(args.engine, args.path, True))
    coll = store.collection(COLL, key_func=key_func)
    for name, func in INDEXES:
        coll.add_index(name, func)
    newest = next(iter(coll.keys(reverse=True, max=1)), None)
    n = (marker_number(newest) or 0) if newest is not None else 0
    emit(f'ready {n}')
    while os.getppid() == parent:
        n += 1
        with store.begin(write=True) as txn:
            for op, arg in txn_ops(args.seed, n):
                if op == 'put':
                    coll.put(arg, txn=txn)
                else:
                    coll.delete(arg, txn=txn)
        emit(f'commit {n}')
    return 0


# --- the checker ----------------------------------------------------------------------------

class Problems:
    """Distinct problems by kind; the first few described."""

    KINDS = ('lost', 'partial', 'index', 'verify', 'child', 'other')

    def __init__(self):
        self.seen = {kind: set() for kind in self.KINDS}
        self.examples = {kind: [] for kind in self.KINDS}
        self.lost_txns = 0

    def add(self, kind, ident, text):
        if ident in self.seen[kind]:
            return
        self.seen[kind].add(ident)
        if len(self.examples[kind]) < 5:
            self.examples[kind].append(text)

    def count(self, kind=None):
        if kind is None:
            return sum(len(s) for s in self.seen.values())
        return len(self.seen[kind])


def expected_entries(func, records):
    entries = set()
    for key, rec in records.items():
        result = func(rec)
        if result is None:
            continue
        for item in (result if type(result) is list else [result]):
            entries.add((item if isinstance(item, tuple) else (item,), key))
    return entries


def count_verify_problems(report):
    """Problems in whatever Store.verify() returns (its API is not settled yet)."""
    if report is None or report is True:
        return []
    if report is False:
        return ['verify() returned False']
    if isinstance(report, int):
        return [f'verify() counted {report}'] * report
    if isinstance(report, str):
        return [report] if report else []
    if isinstance(report, dict):
        items = []
        for name, value in report.items():
            if isinstance(value, (list, tuple, set)):
                items += [f'{name}: {v!r}' for v in value]
            elif isinstance(value, int) and not isinstance(value, bool):
                items += [f'{name}: {value}'] * value
            elif value:
                items.append(f'{name}: {value!r}')
        return items
    return [repr(p) for p in report]


def read_store(engine, path):
    """What the store holds: (records, {index name: pairs}, verify problems, notes).

    Returns None when nothing was created yet (no database, or an empty one).
    Opens nothing that does not exist and writes nothing.
    """
    engine_class = get_engine_class(engine)
    try:
        eng = engine_class(**open_args(engine, path, False))
    except DatabaseNotFoundError:
        return None
    try:
        if eng.first() is None:
            eng.close()
            return None
        store = centidb.Store(eng)
    except BaseException:
        eng.close()
        raise
    notes = []
    with store:
        if eng.get(keylib.packs((0, 'collection', COLL))) is None:
            return {}, {}, [], ['no collection yet']
        coll = store.collection(COLL, key_func=key_func)
        lo, hi = keylib.prefix_range((0, 'index', coll.coll_id))
        stored = {keylib.unpacks(k)[-1] for k in eng.keys(lo, hi)}
        indexes = {}
        for name, func in INDEXES:
            if name in stored:
                indexes[name] = coll.add_index(name, func)
            else:
                notes.append(f'index {name!r} not stored')
        with store.begin() as txn:
            records = dict(coll.items(txn=txn))
            pairs = {name: list(index.pairs(txn=txn)) for name, index in indexes.items()}
        verify = []
        if hasattr(store, 'verify'):
            try:
                verify = count_verify_problems(store.verify())
            except Exception as exc:  # noqa: BLE001 - reported as a problem
                verify = [f'verify() raised {type(exc).__name__}: {exc}']
    return records, pairs, verify, notes


def check(args, model, problems, reported):
    """Check the store after a kill; return the newest committed transaction in it."""
    found = read_store(args.engine, args.path)
    if found is None:
        records, pairs, verify, notes = {}, {}, [], ['no store yet']
    else:
        records, pairs, verify, notes = found
    markers = sorted(n for n in map(marker_number, records) if n is not None)
    newest = markers[-1] if markers else 0
    if newest < reported:
        problems.lost_txns += reported - newest
        problems.add('lost', ('lost', newest, reported),
                     f'transactions {newest + 1}..{reported} reported committed, '
                     f'newest marker is {newest}')
    elif newest > reported + 1:
        problems.add('other', ('ahead', newest, reported),
                     f'newest marker {newest} but only {reported} reported committed')
    want = list(range(max(1, newest - WINDOW + 1), newest + 1))
    if markers != want:
        problems.add('partial', ('markers', tuple(markers)),
                     f'markers {markers[:3]}..{markers[-3:]} are not {want[0]}..{want[-1]}')
    expected = model.at(newest)
    mismatched = [k for k in set(records) | set(expected)
                  if records.get(k) != expected.get(k)]
    if mismatched:
        for k in sorted(mismatched, key=repr):
            txns = {r['txn'] for r in (records.get(k), expected.get(k)) if r}
            for t in txns:
                problems.add('partial', ('txn', t),
                             f'after transaction {newest}: key {k!r} holds '
                             f'{short(records.get(k))}, expected {short(expected.get(k))}')
        model.rebase(newest, records)
    if records and set(pairs) != {name for name, _ in INDEXES}:
        problems.add('index', ('missing index', tuple(sorted(pairs))),
                     f'records exist but stored indexes are {sorted(pairs)}: {notes}')
    for name, func in INDEXES:
        if name not in pairs:
            continue
        actual = pairs[name]
        want_entries = expected_entries(func, records)
        have = set(actual)
        if len(have) != len(actual):
            problems.add('index', (name, 'duplicate', newest),
                         f'{name}: {len(actual) - len(have)} duplicate entries')
        for tup, key in sorted(have - want_entries, key=repr):
            what = 'dangling' if key not in records else 'stale'
            problems.add('index', (name, tup, key, 'extra'),
                         f'{name}: {what} entry {tup!r} -> {key!r}')
        for tup, key in sorted(want_entries - have, key=repr):
            problems.add('index', (name, tup, key, 'missing'),
                         f'{name}: record {key!r} lacks entry {tup!r}')
    for text in verify:
        problems.add('verify', (newest, text), f'verify() after {newest}: {text}')
    return newest


def short(rec):
    if rec is None:
        return 'nothing'
    return f"txn {rec['txn']} grp {rec['grp']!r} tags {rec['tags']!r}"


# --- the parent --------------------------------------------------------------------------------

def run_child(args, rng):
    """Start the child, kill it, return (commits, ready number, killed early, seconds, log)."""
    stderr_path = os.path.join(args.workdir, 'child.stderr')
    cmd = [sys.executable, os.path.abspath(__file__), '--child', '--engine', args.engine,
           '--path', args.path, '--seed', str(args.seed)]
    with open(stderr_path, 'wb') as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, cwd=ROOT)
    early = rng.random() < args.early
    kill_at = start + rng.uniform(0, 0.4) if early else None
    ready = None
    commits = []
    buf = b''
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    fd = proc.stdout.fileno()
    eof = False

    def take_lines(data):
        nonlocal buf, ready
        buf += data
        *lines, buf = buf.split(b'\n')
        for line in lines:
            word, _, number = line.decode().partition(' ')
            if word == 'ready':
                ready = int(number)
            elif word == 'commit':
                commits.append(int(number))

    while not eof:
        now = time.monotonic()
        if kill_at is None and ready is not None:
            kill_at = now + rng.uniform(0, args.max_delay)
        deadline = kill_at if kill_at is not None else start + READY_TIMEOUT
        if now >= deadline:
            break
        for _ in sel.select(timeout=min(deadline - now, 0.05)):
            data = os.read(fd, 65536)
            if not data:
                eof = True
            take_lines(data)
    stuck = kill_at is None
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    sel.close()
    while True:  # what the child wrote before it died
        data = os.read(fd, 65536)
        if not data:
            break
        take_lines(data)
    proc.stdout.close()
    with open(stderr_path, 'rb') as err:
        log = err.read().decode(errors='replace')
    exited = proc.returncode != -signal.SIGKILL
    return commits, ready, early, time.monotonic() - start, stuck, exited, log


def main_parent(args):
    if args.dir:
        os.makedirs(args.dir, exist_ok=True)
        workdir = args.dir
    else:
        workdir = tempfile.mkdtemp(prefix='centidb-kill-')
    args.workdir = workdir
    args.path = os.path.join(workdir, args.engine)
    if os.path.exists(args.path):
        sys.exit(f'{args.path} exists; give an empty --dir (the checker replays the '
                 f'writes from an empty store)')
    rng = random.Random(f'parent:{args.seed}')
    model = Model(args.seed)
    problems = Problems()
    reported = 0
    stats = {'commits': 0, 'early': 0, 'before_ready': 0, 'child_s': 0.0, 'check_s': 0.0,
             'unreported': 0}
    print(f'kill_writers: {args.engine}, {args.kills} kills, seed {args.seed}, '
          f'store {args.path}, python {sys.version.split()[0]}, '
          f'codec {keylib.IMPL}', flush=True)
    t0 = time.monotonic()
    last_checked = 0
    try:
        for kill in range(1, args.kills + 1):
            commits, ready, early, child_s, stuck, exited, log = run_child(args, rng)
            stats['child_s'] += child_s
            stats['early'] += early
            stats['before_ready'] += ready is None
            if ready is not None and ready != last_checked:
                problems.add('other', ('ready', kill),
                             f'kill {kill}: child resumed after {ready}, the check saw '
                             f'{last_checked}')
            if stuck:
                problems.add('child', ('stuck', kill), f'kill {kill}: child not ready '
                             f'after {READY_TIMEOUT} s: {log[-300:]}')
            if exited:
                problems.add('child', ('exit', kill), f'kill {kill}: child exited by '
                             f'itself: {log.strip()[-500:]}')
            expected_next = (ready or 0) + 1
            for n in commits:
                if n != expected_next:
                    problems.add('other', ('order', kill, n), f'kill {kill}: child reported '
                                 f'{n} after {expected_next - 1}')
                expected_next = n + 1
            stats['commits'] += len(commits)
            if commits:
                reported = commits[-1]
            t1 = time.monotonic()
            newest = check(args, model, problems, reported)
            stats['check_s'] += time.monotonic() - t1
            stats['unreported'] += newest == reported + 1
            last_checked = newest
            # After a loss, the child redoes the lost numbers: count them again.
            reported = newest
            if args.progress and kill % 10 == 0:
                print(f'  kill {kill}: transaction {newest}, problems {problems.count()}',
                      file=sys.stderr, flush=True)
    finally:
        wall = time.monotonic() - t0
        if not args.dir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    kills = args.kills
    print(f'kills: {kills} ({stats["early"]} aimed at start-up; {stats["before_ready"]} '
          f'landed before the child was ready)')
    print(f'committed transactions reported: {stats["commits"]}; newest in the store: '
          f'{last_checked}; committed but not yet reported when killed: '
          f'{stats["unreported"]}')
    print(f'lost transactions (committed, then missing): {problems.lost_txns}')
    print(f'partial transactions: {problems.count("partial")}')
    print(f'index problems: {problems.count("index")}')
    print('Store.verify(): ' + (f'{problems.count("verify")} problems' if
                                hasattr(centidb.Store, 'verify') else 'not available'))
    print(f'child problems (stuck or exited by itself): {problems.count("child")}; '
          f'other: {problems.count("other")}')
    for kind in Problems.KINDS:
        for text in problems.examples[kind]:
            print(f'  {kind}: {text}')
    print(f'time: {wall:.1f} s, {wall / kills:.3f} s per kill (child {stats["child_s"] / kills:.3f}'
          f' s, check {stats["check_s"] / kills:.3f} s)')
    total = problems.count()
    print(f'TOTAL PROBLEMS: {total}')
    return 1 if total else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--engine', required=True, choices=ENGINES)
    parser.add_argument('--kills', type=int, default=1000)
    parser.add_argument('--dir', help='where to put the store (default: a temporary '
                        'directory, removed at the end)')
    parser.add_argument('--seed', default='1')
    parser.add_argument('--max-delay', type=float, default=0.3,
                        help='longest run after the child is ready, in seconds')
    parser.add_argument('--early', type=float, default=0.15,
                        help='share of kills aimed at the first 0.4 s of the child')
    parser.add_argument('--keep', action='store_true', help='keep the temporary directory')
    parser.add_argument('--progress', action='store_true')
    parser.add_argument('--child', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--path', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child_main(args)
    return main_parent(args)


if __name__ == '__main__':
    sys.exit(main())
