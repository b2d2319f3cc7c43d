"""Fuzz record values: encoder input through put()/get(), and raw stored bytes.

Usage (from the repository root)::

    .venv/bin/python stress/fault_values.py [--count 20000] [--seed 1] [--first 0]
        [--until HH:MM] [--report 10000] [--max-memory 4096]

or, from another program (``stress/faults.py`` runs it as ``values``)::

    from fault_values import campaign
    result = campaign(count=20000, seed=1)

Runs in whichever implementation :mod:`centidb.impl` chose (set
``CENTIDB_NO_SPEEDUPS=1`` or ``CENTIDB_REQUIRE_SPEEDUPS=1``). Each case is
one of:

* ``value``: a seeded random value (every type the msgpack encoder stores,
  edge values included; nested to a depth skewed towards
  ``encodings.MAX_DEPTH``, one level under, at and over it; sometimes long
  lists, long strings or a type no encoder stores) is put in a collection
  with the msgpack or the JSON encoder and a random packer, then read back
  by ``get()`` and a scan. A value deeper than ``MAX_DEPTH`` must raise
  ``ValueTooDeepError``; a value of an unsupported type ``TypeError``; one
  the encoder takes must come back exactly (msgpack) or as ``json`` gives it
  back (JSON). A refused put must leave nothing behind.
* ``raw``: seeded stored bytes (random; a valid record mutated by bit flips,
  truncation, insertion, splicing; tuples nested thousands deep; deep JSON;
  compressed payloads, compression bombs; a random header byte) are written
  under a record key with the engine, then read by ``get()`` and a scan.
  Every read must return a value or raise a ``centidb.errors`` exception.
  Every 500 cases ``verify()`` runs over what is stored (the last 100 of
  every 50th raw record stay stored for it) and must return.

A case is reproducible from the seed and its number alone, so a long run can
be split: ``--first`` starts at another case number, ``--until`` stops
before the first case that would start after a UTC time of day. Every
``--report`` cases a progress line (cases, resident and peak memory) goes to
stderr. The command line caps the process's address space (``--max-memory``
MB), so a case that runs away with memory fails as ``MemoryError`` naming
its number, not the machine.

Everything else (another exception, a wrong value, an accepted value that
should have been refused or the reverse) is an error, listed with the case
number and the input. The process exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import decimal
import json
import math
import random
import resource
import sys
import time
import uuid
import zlib
from typing import Any, Callable

import centidb
from centidb import encodings, impl, keylib
from centidb.errors import CentiError, ValueTooDeepError

MAX = encodings.MAX_DEPTH
RAW_LIMIT = 256 * 1024          # max_unpacked_size of the raw-bytes store: bombs stay cheap

EDGE_INTS = [0, 1, -1, 127, 128, -32, -33, 255, 256, 2 ** 31 - 1, -2 ** 31, 2 ** 32,
             2 ** 63 - 1, -2 ** 63, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 63 - 1,
             2 ** 200, -2 ** 200, 10 ** 300]
EDGE_FLOATS = [0.0, -0.0, 1.5, math.inf, -math.inf, math.nan, 5e-324, -5e-324,
               1.7976931348623157e308, 2.0 ** 53 + 2]
EDGE_STRS = ['', 'a', '\x00', 'é', '\uffff', '\U0010ffff', '\ud800', 'x\udfffy', '$tuple',
             'a' * 32, 'b' * 256]
EDGE_BYTES = [b'', b'\x00', b'\xff' * 3, bytes(range(256))]
UTC_PLUS = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
EDGE_DATETIMES = [datetime.datetime.min, datetime.datetime.max,
                  datetime.datetime(2024, 2, 29, 12, 0, 0, 1),
                  datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc),
                  datetime.datetime(2000, 1, 1, tzinfo=UTC_PLUS),
                  datetime.datetime.max.replace(
                      tzinfo=datetime.timezone(-datetime.timedelta(hours=23, microseconds=1)))]
EDGE_DATES = [datetime.date.min, datetime.date.max, datetime.date(2024, 2, 29)]
EDGE_DECIMALS = [decimal.Decimal(text) for text in
                 ('0', '-0', '1.50', 'NaN', '-NaN', 'sNaN', 'Infinity', '-Infinity',
                  '1E+999999', '-1.000E-999999', '123456789012345678901234567890.5')]
EDGE_UUIDS = [uuid.UUID(int=0), uuid.UUID(int=2 ** 128 - 1), uuid.UUID(int=12345)]
UNSUPPORTED = [set(), frozenset([1]), object(), datetime.time(1, 2), 1j, range(3)]


# --- comparing ---------------------------------------------------------------

def exact(value: Any) -> Any:
    """A form equal only for equal types and contents (NaN equals NaN, -0.0 not 0.0)."""
    kind = type(value)
    if kind is float:
        return 'float', repr(value)
    if kind is decimal.Decimal:
        return 'Decimal', repr(value)
    if kind is datetime.datetime:
        return 'datetime', value.replace(tzinfo=None), value.utcoffset()
    if kind in (list, tuple):
        return kind.__name__, [exact(item) for item in value]
    if kind is dict:
        return 'dict', [(exact(k), exact(v)) for k, v in value.items()]
    return kind.__name__, value


def depth(value: Any) -> int:
    """Levels of lists, tuples and dicts (dict keys included), counted without recursion."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            stack.extend((part, level + 1) for part in (*item.keys(), *item.values()))
        elif isinstance(item, (list, tuple)):
            stack.extend((part, level + 1) for part in item)
        else:
            deepest = max(deepest, level)
            continue
        deepest = max(deepest, level + 1)
    return deepest


# --- values --------------------------------------------------------------------

def gen_scalar(rng: random.Random, json_only: bool) -> Any:
    kind = rng.randrange(12 if not json_only else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice(EDGE_INTS) if rng.random() < 0.5 else rng.randint(-2 ** 70, 2 ** 70)
    if kind == 2:
        return (rng.choice(EDGE_FLOATS) if rng.random() < 0.5
                else rng.uniform(-1e6, 1e6) * 10.0 ** rng.randint(-300, 300))
    if kind in (3, 4, 5):
        if rng.random() < 0.3:
            return rng.choice(EDGE_STRS)
        size = rng.choice([0, 1, 5, 20, 200, 5000]) if rng.random() < 0.99 else 100000
        alphabet = rng.choice(['abc', 'aé\u4e2d\U0001f600', 'xyz\x00\x7f'])
        piece = ''.join(rng.choices(alphabet, k=min(size, 50)))
        return piece * max(1, size // 50)
    if kind == 6:
        return rng.choice(EDGE_BYTES) if rng.random() < 0.5 else rng.randbytes(
            rng.choice([1, 16, 300, 70000]))
    if kind == 7:
        return rng.choice(EDGE_UUIDS) if rng.random() < 0.5 else uuid.UUID(int=rng.getrandbits(128))
    if kind == 8:
        if rng.random() < 0.5:
            return rng.choice(EDGE_DATETIMES)
        moment = datetime.datetime(1, 1, 1) + datetime.timedelta(
            microseconds=rng.randrange(int(3e17)))
        return moment.replace(tzinfo=rng.choice([None, datetime.timezone.utc, UTC_PLUS]))
    if kind == 9:
        return rng.choice(EDGE_DATES)
    if kind == 10:
        return rng.choice(EDGE_DECIMALS) if rng.random() < 0.5 else decimal.Decimal(
            f'{rng.randint(-10 ** 20, 10 ** 20)}E{rng.randint(-50, 50)}')
    return rng.choice(EDGE_INTS)


def gen_key(rng: random.Random, json_only: bool) -> Any:
    """A dict key: a hashable scalar, sometimes a tuple (msgpack only)."""
    if json_only:
        return rng.choice(['', 'a', 'k', 'é', str(rng.randrange(100))])
    value = gen_scalar(rng, False)
    if rng.random() < 0.1:
        value = (value, gen_scalar(rng, False))
    try:
        hash(value)
    except TypeError:           # a signalling NaN Decimal
        return 'unhashable'
    return value


def _wrap(rng: random.Random, spine: Any, level: int, json_only: bool, long: bool) -> Any:
    """A container holding `spine` and a few shallower siblings (`level`: its depth).

    With `long`, a list at level 1 is sometimes made long with ints.
    """
    width = (rng.choice([0, 1, 2]) if not long or level > 3 else
             rng.choice([0, 1, 3, 8, 40]))
    siblings = [gen_value(rng, rng.randrange(min(level, 3)), json_only, False, False)
                for _ in range(width)]
    kind = rng.randrange(3 if not json_only else 2)
    if kind == 2 or (json_only and kind == 1):
        result: dict[Any, Any] = {}
        for sibling in siblings:
            result[gen_key(rng, json_only) if level > 1 else 'k'] = sibling
        result['spine'] = spine
        return result
    items = siblings + [spine]
    rng.shuffle(items)
    if kind == 1:
        return tuple(items)
    if long and level == 1 and rng.random() < 0.1:
        return items + [rng.randrange(-2 ** 40, 2 ** 40) for _ in range(rng.choice([100, 3000]))]
    return items


def gen_value(rng: random.Random, target: int, json_only: bool, unsupported: bool,
              long: bool = True) -> Any:
    """A value `target` levels deep (built from the inside out), with shallower siblings."""
    if unsupported and rng.random() < 0.5:
        value = rng.choice(UNSUPPORTED)
    else:
        value = gen_scalar(rng, json_only)
    for level in range(1, target + 1):
        value = _wrap(rng, value, level, json_only, long)
    return value


def gen_depth(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.9:
        return rng.randrange(5)
    if roll < 0.98:
        return MAX + rng.choice([-2, -1, 0, 0, 1, 1, 2])
    return rng.choice([MAX + 50, 300, 1000])


# --- raw bytes ---------------------------------------------------------------

def crafted_tuples(levels: int, inner: bytes = b'\x90') -> bytes:
    data = inner
    for _ in range(levels):
        size = len(data)
        header = (b'\xc7' + bytes([size]) + b'\x01' if size < 256 else
                  b'\xc8' + size.to_bytes(2, 'big') + b'\x01' if size < 65536 else
                  b'\xc9' + size.to_bytes(4, 'big') + b'\x01')
        data = b'\x91' + header + data
    return data


def mutate(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 5])):
        action = rng.randrange(6)
        if not data or action == 0:
            data[rng.randrange(len(data) + 1):0] = rng.randbytes(rng.randrange(1, 5))
        elif action == 1:
            spot = rng.randrange(len(data))
            data[spot] ^= 1 << rng.randrange(8)
        elif action == 2:
            del data[rng.randrange(len(data)):]
        elif action == 3:
            data[rng.randrange(len(data))] = rng.choice([0x00, 0x7f, 0x80, 0xc1, 0xc7, 0xc9,
                                                         0xd4, 0xdc, 0xdd, 0xde, 0xdf, 0xff])
        elif action == 4:
            start = rng.randrange(len(data))
            data[start:start] = data[start:start + rng.randrange(1, 16)]
        else:
            spot = rng.randrange(len(data))
            data[spot:spot + 4] = rng.randrange(2 ** 32).to_bytes(4, 'big')
    return bytes(data)


def gen_raw(rng: random.Random, packers: dict[str, Any], msgpack_coll: bool) -> tuple[str, bytes]:
    """(packer name or '?', payload bytes) of a hostile stored value."""
    roll = rng.randrange(40)
    if roll >= 10:
        roll = rng.choice([0, 4, 5, 6, 7, 8, 9])
    if roll == 0:
        payload = rng.randbytes(rng.choice([0, 1, 2, 5, 40, 300]))
    elif roll == 1:
        payload = crafted_tuples(rng.choice([MAX - 1, MAX, MAX + 1, 1000] * 5 + [20000]),
                                 rng.choice([b'\x90', b'\xc0', b'\x91\x91\x91\x90']))
        if rng.random() < 0.3:
            payload = mutate(rng, payload)
    elif roll == 2:
        open_, close = rng.choice([('[', ']'), ('{"a":', '}')])
        levels = rng.choice([10, MAX + 1, 3000] * 5 + [200000])
        payload = (open_ * levels + '1' + close * levels).encode()
        if rng.random() < 0.3:
            payload = payload[:-rng.randrange(1, 4)]
    elif roll == 3:
        payload = b'\x91' * rng.choice([500, 1100, 50000]) + b'\xc0'
    else:
        value = gen_value(rng, rng.randrange(4), not msgpack_coll, False)
        try:
            payload = (encodings.make_msgpack_encoder() if msgpack_coll
                       else encodings.make_json_encoder()).encode(value)
        except (TypeError, ValueError):
            payload = b'\xc0'
        if roll >= 6:
            payload = mutate(rng, payload)
    name = rng.choice(['plain', 'plain', 'zlib', 'lz4', 'zstd', '?'])
    packer = packers.get(name)
    if name == 'zlib' and rng.random() < 0.15:
        payload = zlib.compress(bytes(rng.choice([RAW_LIMIT + 1, 4 * RAW_LIMIT])), 9)
    elif packer is not None and name != 'plain':
        payload = packer.encode(payload)
        if rng.random() < 0.3:
            payload = mutate(rng, payload)
    return name, payload


# --- the campaign --------------------------------------------------------------

#: How many damaged raw records a campaign keeps stored at once for verify().
KEPT_RAW = 100


class _Run:
    """The stores and collections one campaign writes to, and what it found."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.errors: list[str] = []
        self.outcomes: dict[str, int] = {}
        self.store = centidb.open('ListEngine')
        self.colls = {'msgpack': self.store.collection('m'),
                      'json': self.store.collection('j', encoder=encodings.make_json_encoder())}
        self.raw_store = centidb.open('ListEngine', max_unpacked_size=RAW_LIMIT)
        self.raw_colls = {'msgpack': self.raw_store.collection('m'),
                          'json': self.raw_store.collection(
                              'j', encoder=encodings.make_json_encoder())}
        self.packers = {p.name: p for p in encodings.BUILTIN_ENCODERS
                        if p.name in ('plain', 'zlib', 'lz4', 'zstd', 'snappy')}
        self.ids = {name: self.raw_store._catalog.encoder_id(p)
                    for name, p in self.packers.items()}
        self.slowest = (0.0, '')
        self.kept: collections.deque[bytes] = collections.deque()

    def note(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def error(self, case: int, kind: str, what: str, shown: str) -> None:
        self.errors.append(f'case {case} ({kind}, seed {self.seed}): {what}; input {shown}')

    def value_case(self, case: int, rng: random.Random) -> None:
        encoder = rng.choice(['msgpack', 'msgpack', 'json'])
        coll = self.colls[encoder]
        unsupported = rng.random() < 0.05
        value = gen_value(rng, gen_depth(rng), encoder == 'json', unsupported)
        packer = self.packers[rng.choice(sorted(self.packers))]
        deep = depth(value) > MAX
        key = case
        try:
            coll.put(value, key=key, packer=packer)
        except ValueTooDeepError:
            self.note('refused-deep')
            if not deep:
                self.error(case, 'value', f'ValueTooDeepError for depth {depth(value)}',
                           _shown(value))
            self._check_absent(case, coll, key, value)
            return
        except (TypeError, ValueError) as exc:
            self.note(f'refused-{type(exc).__name__}')
            if deep:
                self.error(case, 'value', f'{type(exc).__name__} ({exc}), not '
                           f'ValueTooDeepError, for depth {depth(value)}', _shown(value))
            elif encoder == 'msgpack' and not unsupported:
                self.error(case, 'value', f'msgpack refused a value it stores: '
                           f'{type(exc).__name__}: {exc}', _shown(value))
            self._check_absent(case, coll, key, value)
            return
        except Exception as exc:
            self.error(case, 'value', f'put raised {type(exc).__name__}: {exc}', _shown(value))
            return
        if deep:
            self.error(case, 'value', f'put accepted depth {depth(value)}', _shown(value))
        self.note('stored')
        try:
            got = coll.get(key)
            scanned = dict(coll.items(lo=key, hi=key + 1))
        except Exception as exc:
            self.error(case, 'value', f'reading back raised {type(exc).__name__}: {exc}',
                       _shown(value))
            return
        expected = value if encoder == 'msgpack' else _json_image(value)
        if exact(got) != exact(expected) or exact(scanned.get((key,))) != exact(expected):
            self.error(case, 'value', f'read back {_shown(got)}', _shown(value))
        coll.delete(key)

    def _check_absent(self, case: int, coll: Any, key: int, value: Any) -> None:
        if coll.get(key) is not None:
            self.error(case, 'value', 'a refused put left a record behind', _shown(value))

    def raw_case(self, case: int, rng: random.Random) -> None:
        encoder = rng.choice(['msgpack', 'json'])
        coll = self.raw_colls[encoder]
        name, payload = gen_raw(rng, self.packers, encoder == 'msgpack')
        header = self.ids.get(name, rng.choice([0, 1, 99, 127, 0x80 | self.ids['plain'], 0xff]))
        stored = bytes([header]) + payload
        key_bytes = keylib.packs(case, coll.prefix)
        with self.raw_store.engine.begin(write=True) as etxn:
            etxn.put(key_bytes, stored)
        for read in ('get', 'scan'):
            try:
                if read == 'get':
                    coll.get(case)
                else:
                    list(coll.items(lo=case, hi=case + 1))
                self.note(f'raw-{read}-ok')
            except CentiError as exc:
                self.note(f'raw-{read}-{type(exc).__name__}')
            except Exception as exc:
                self.error(case, 'raw', f'{read} raised {type(exc).__name__}: {exc}',
                           f'{encoder} collection, stored {stored[:120].hex()}'
                           f'{"..." if len(stored) > 120 else ""} ({len(stored)} bytes)')
        if case % 500 == 499:
            try:
                self.raw_store.verify()
                self.note('verify-ok')
            except Exception as exc:
                self.error(case, 'raw', f'verify raised {type(exc).__name__}: {exc}', '')
        if case % 100 == 1:
            # Every 50th raw record stays for verify(); only the last KEPT_RAW,
            # so memory and verify()'s work stay bounded in a long run.
            self.kept.append(key_bytes)
            if len(self.kept) <= KEPT_RAW:
                return
            key_bytes = self.kept.popleft()
        with self.raw_store.engine.begin(write=True) as etxn:
            etxn.delete(key_bytes)

    def close(self) -> None:
        self.store.close()
        self.raw_store.close()


def _json_image(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False))


def _shown(value: Any, limit: int = 200) -> str:
    try:
        text = repr(value)
    except RecursionError:
        text = f'<{type(value).__name__} nested too deep to repr>'
    return text if len(text) <= limit else text[:limit - 3] + '...'


def _memory_mb() -> tuple[int, int]:
    """This process's resident and peak resident memory, in MB."""
    with open('/proc/self/statm') as statm:
        resident = int(statm.read().split()[1]) * resource.getpagesize()
    return resident >> 20, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10


def campaign(count: int, seed: int, first: int = 0, until: float | None = None,
             report: int = 0) -> dict[str, Any]:
    """Run seeded cases `first` to ``first + count - 1`` (half values, half raw bytes).

    :param count: how many cases.
    :param seed: the seed; a case's inputs depend on the seed and its number only.
    :param first: the first case's number.
    :param until: a ``time.time()`` after which no case starts (None: no limit).
    :param report: print a progress line to stderr every this many cases (0: none).
    :returns: a ``dict``: ``'cases'`` (run), ``'first'``, ``'errors'`` (a
        ``list`` of ``str``, one per wrong outcome: empty when all is well),
        ``'outcomes'`` (how many of each outcome), ``'impl'``, ``'seconds'``,
        ``'slowest'`` (the slowest case's seconds and number) and
        ``'peak_mb'`` (the process's peak resident memory).
    """
    run = _Run(seed)
    started = time.perf_counter()
    slowest = (0.0, -1)
    done = 0
    try:
        for case in range(first, first + count):
            if until is not None and time.time() > until:
                break
            rng = random.Random(f'{seed}:{case}')
            began = time.perf_counter()
            if case % 2:
                run.raw_case(case, rng)
            else:
                run.value_case(case, rng)
            spent = time.perf_counter() - began
            if spent > slowest[0]:
                slowest = (spent, case)
            done += 1
            if report and done % report == 0:
                resident, peak = _memory_mb()
                print(f'values: {done} cases (to {case}), {len(run.errors)} errors, '
                      f'{resident} MB resident, peak {peak} MB, '
                      f'{time.perf_counter() - started:.0f} s', file=sys.stderr, flush=True)
    finally:
        run.close()
    return {'cases': done, 'first': first, 'errors': run.errors,
            'outcomes': dict(sorted(run.outcomes.items())),
            'impl': impl.IMPL, 'seconds': round(time.perf_counter() - started, 2),
            'slowest': (round(slowest[0], 4), slowest[1]), 'peak_mb': _memory_mb()[1]}


def deadline(text: str) -> float:
    """The next ``time.time()`` at UTC time of day `text` (``HH:MM``)."""
    hours, minutes = map(int, text.split(':'))
    now = time.time()
    midnight = now - now % 86400
    moment = midnight + hours * 3600 + minutes * 60
    return moment if moment > now else moment + 86400


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--count', type=int, default=20000)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--first', type=int, default=0, help='the first case number')
    parser.add_argument('--until', metavar='HH:MM', type=deadline,
                        help='start no case after this UTC time')
    parser.add_argument('--report', type=int, default=0, metavar='N',
                        help='a progress line on stderr every N cases')
    parser.add_argument('--max-memory', type=int, default=4096, metavar='MB',
                        help='cap on the address space (0: none)')
    args = parser.parse_args(argv)
    if args.max_memory:
        limit = args.max_memory << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    result = campaign(args.count, args.seed, args.first, args.until, args.report)
    print(f"{result['cases']} cases from {result['first']} (seed {args.seed}) in "
          f"{result['seconds']} s ({result['impl']}); slowest case {result['slowest'][1]}: "
          f"{result['slowest'][0]} s; peak {result['peak_mb']} MB resident")
    for outcome, number in result['outcomes'].items():
        print(f'  {outcome}: {number}')
    print(f"{len(result['errors'])} errors")
    for error in result['errors'][:50]:
        print('  ' + error)
    return 1 if result['errors'] else 0


if __name__ == '__main__':
    sys.exit(main())
