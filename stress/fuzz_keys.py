"""Fuzz the key decoder: both implementations, one process, every input.

Usage (from the repository root)::

    .venv/bin/python stress/fuzz_keys.py [--count 1000000] [--seed 1]
        [--workers N] [--chunk 5000] [--max-seconds 1800] [--no-exhaustive]
    .venv/bin/python stress/fuzz_keys.py --hex 3104 [--prefix-hex 31]

Each input (bytes, sometimes a ``bytearray`` or ``memoryview``, sometimes
with a ``prefix=``) goes to ``unpacks`` and ``unpacks_list`` of every
implementation ``centidb.keylib.available_implementations()`` returns. The
inputs: every string of 0 to 2 bytes; random bytes of edge-skewed length
and content (empty, 1 byte, all 0x00, all 0xff, tag bytes); valid encodings
of edge-skewed keys, as they are, mutated (bit flips, edge-byte writes,
insertions, deletions, truncation, duplicated or inverted ranges), cut at
every prefix, and spliced or joined with each other.

An outcome is acceptable if it is a result or a ``CentiError`` or
``ValueError``. Findings are:

* ``bad-exception``: any other exception (``TypeError``, ``IndexError``,
  ``OverflowError``, ``SystemError``, ...);
* ``crash`` / ``hang``: the worker process died or stopped making progress
  (the input is read back from the worker's shared-memory slot);
* ``round-trip``: a result that ``packs`` (same implementation, same
  prefix) does not turn back into the input bytes. ``docs/format.rst``
  says every value has exactly one encoding and the decoder rejects
  non-canonical bytes, so the round trip must hold for every accepted input;
* ``bad-result``: a result of the wrong shape (not a tuple, or a list of
  tuples), holding a type the codec does not produce, or a valid encoding
  that decodes to another key than the one packed;
* ``inconsistent``: ``unpacks`` and ``unpacks_list`` of one implementation
  disagree (``unpacks(d)`` must be ``unpacks_list(d)[0]`` when that list has
  one key, and a ``CorruptKeyError`` when it has more);
* ``disagree``: the implementations differ: different results, one raises
  and the other does not, or different exception types;
* ``pack-disagree``: the implementations pack a generated key differently.

Prints per implementation the inputs tried, decoded (ok) and rejected (by
exception type) for each function, the findings with the first inputs in
hex, and the time spent in that implementation's calls; then the wall time.
Exits 1 on any finding. Inputs are reproducible from ``--seed``,
``--chunk`` and the chunk number, and the ``--hex`` mode replays one input.
"""

import argparse
import collections
import datetime as dt
import math
import mmap
import multiprocessing
import multiprocessing.connection
import os
import random
import signal
import struct
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from centidb import keylib  # noqa: E402
from centidb.errors import CentiError, CorruptKeyError  # noqa: E402
from centidb.keyformat import Desc  # noqa: E402

if hasattr(sys, 'set_int_max_str_digits'):
    sys.set_int_max_str_digits(0)

IMPLS = keylib.available_implementations()
FUNCS = ('unpacks', 'unpacks_list')
EXAMPLES_KEPT = 5
#: Types a decoder may put in a key tuple.
RESULT_TYPES = (type(None), bool, int, float, bytes, str, uuid.UUID, dt.date, dt.datetime,
                Desc)
#: Every string of at most this many bytes is tried (the exhaustive part).
EXHAUSTIVE_BYTES = 2
EXHAUSTIVE_TOTAL = sum(256 ** n for n in range(EXHAUSTIVE_BYTES + 1))

# Bytes that mean something to the decoder: separator, tags, zone kinds,
# suffixes, continuation edges, Desc end.
EDGE_BYTES = bytes([0x00, 0x01, 0x02, 0x05, 0x10, 0x11, 0x12, 0x19, 0x1A, 0x1B, 0x1C,
                    0x23, 0x24, 0x25, 0x26, 0x30, 0x31, 0x37, 0x38, 0x39, 0x40, 0x7F, 0x80,
                    0x81, 0x82, 0xBF, 0xC0, 0xFE, 0xFF])
INVERT = bytes(range(255, -1, -1))


# --- edge-skewed key elements ---------------------------------------------------

def gen_int(rng):
    r = rng.random()
    if r < 0.15:
        return rng.choice((0, 1, -1, 2, -2, 255, 256, -256, -257))
    if r < 0.75:
        k = rng.choice((rng.randrange(0, 72), rng.randrange(0, 72), rng.randrange(0, 600),
                        rng.choice((2040, 2048, 2056, 4096))))
        value = (1 << k) + rng.choice((-1, 0, 1))
        return -value if rng.random() < 0.5 else value
    bits = rng.choice((8, 16, 63, 64, 65, 128, 1000))
    value = rng.getrandbits(bits)
    return -value if rng.random() < 0.5 else value


FLOAT_SPECIALS = (0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 5e-324, -5e-324,
                  2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
                  -1.7976931348623157e308, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 0.1, 1 / 3,
                  2.0 ** 52 + 0.5, 2.0 ** 53, -(2.0 ** 53), 2.0 ** 63, 2.0 ** 64, 2.0 ** 1023)


def gen_float(rng):
    r = rng.random()
    if r < 0.3:
        return rng.choice(FLOAT_SPECIALS)
    if r < 0.5:  # subnormals
        value = struct.unpack('<d', struct.pack('<Q', rng.getrandbits(52) or 1))[0]
    elif r < 0.75:  # 2**k plus or minus an ulp
        value = math.ldexp(1.0, rng.randrange(-1074, 1024))
        value = rng.choice((value, math.nextafter(value, math.inf),
                            math.nextafter(value, -math.inf)))
    else:  # any bit pattern
        value = struct.unpack('<d', struct.pack('<Q', rng.getrandbits(64)))[0]
    return -value if rng.random() < 0.5 else value


def gen_length(rng):
    return rng.choice((0, 0, 1, 1, 2, 6, 7, 8, 13, 14, 15, 16, rng.randrange(0, 40),
                       rng.randrange(0, 300)))


def gen_bytes(rng):
    n = gen_length(rng)
    mode = rng.randrange(5)
    if mode == 0:
        return bytes(n)
    if mode == 1:
        return b'\xff' * n
    if mode == 2:
        return bytes(rng.choice((0, 0xFF, 1, 0xFE, 0x7F, 0x80)) for _ in range(n))
    return rng.randbytes(n)


STR_CHARS = ('\x00', '\x01', '\x7f', '\x80', '\xff', '\u07ff', '\u0800', '\ud7ff', '\ud800',
             '\udbff', '\udc00', '\udfff', '\ue000', '\ufffe', '\uffff', '\U00010000',
             '\U0010ffff', 'a', 'z')


def gen_char(rng):
    r = rng.random()
    if r < 0.5:
        return rng.choice(STR_CHARS)
    if r < 0.8:
        return chr(rng.randrange(0x80))
    if r < 0.95:
        return chr(rng.randrange(0x10000))
    return chr(rng.randrange(0x110000))


def gen_str(rng):
    return ''.join(gen_char(rng) for _ in range(min(gen_length(rng), 60)))


def gen_uuid(rng):
    return uuid.UUID(int=rng.choice((0, (1 << 128) - 1, 1, rng.getrandbits(128))))


US_PER_DAY = 86_400_000_000


def gen_datetime(rng):
    r = rng.random()
    if r < 0.25:
        value = rng.choice((dt.datetime.min, dt.datetime.max, dt.datetime(1970, 1, 1),
                            dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                            dt.datetime(2000, 2, 29)))
    else:
        ordinal = rng.randrange(1, dt.date.max.toordinal() + 1)
        value = dt.datetime.combine(dt.date.fromordinal(ordinal), dt.time()) + dt.timedelta(
            microseconds=rng.randrange(US_PER_DAY))
    if rng.random() < 0.5:
        return value
    offset = rng.choice((0, 1, -1, US_PER_DAY - 1, -(US_PER_DAY - 1), 19_800_000_000,
                         -18_000_000_000, rng.randrange(-(US_PER_DAY - 1), US_PER_DAY)))
    return value.replace(tzinfo=dt.timezone(dt.timedelta(microseconds=offset)))


MAX_ORDINAL = dt.date.max.toordinal()


def gen_date(rng):
    """A date: the range ends, ordinals where a byte carries, or any."""
    if rng.random() < 0.4:
        ordinal = rng.choice((1, 2, 255, 256, 257, 65535, 65536, 65537, MAX_ORDINAL - 1,
                              MAX_ORDINAL, dt.date(1970, 1, 1).toordinal()))
    else:
        ordinal = rng.randrange(1, MAX_ORDINAL + 1)
    return dt.date.fromordinal(ordinal)


PLAIN_GENERATORS = (
    (lambda rng: None), (lambda rng: rng.random() < 0.5), gen_int, gen_int, gen_float,
    gen_float, gen_bytes, gen_str, gen_str, gen_uuid, gen_datetime, gen_date,
)


def gen_element(rng):
    element = rng.choice(PLAIN_GENERATORS)(rng)
    return Desc(element) if rng.random() < 0.25 else element


def gen_key(rng):
    """A key tuple, or (one time in six) a list of 2 to 4 keys."""
    if rng.random() < 1 / 6:
        return [tuple(gen_element(rng) for _ in range(rng.randrange(0, 4)))
                for _ in range(rng.randrange(2, 5))]
    return tuple(gen_element(rng) for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4, 6))))


# --- inputs ------------------------------------------------------------------------

def random_input(rng):
    n = gen_length(rng)
    mode = rng.randrange(6)
    if mode == 0:
        return bytes(n)
    if mode == 1:
        return b'\xff' * n
    if mode == 2:  # decoder-relevant bytes and continuation bytes
        return bytes(rng.choice((rng.choice(EDGE_BYTES), rng.randrange(0x80, 0x100)))
                     for _ in range(n))
    if mode == 3:  # a tag, then anything
        return bytes([rng.choice(EDGE_BYTES)]) + rng.randbytes(n)
    return rng.randbytes(n)


def mutate(rng, data):
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        n = len(b)
        op = rng.randrange(8)
        i = rng.randrange(n + 1)
        if op == 0 and n:
            b[i % n] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            b[i % n] = rng.choice(EDGE_BYTES)
        elif op == 2:
            b[i:i] = bytes([rng.choice((rng.choice(EDGE_BYTES), rng.randrange(256)))])
        elif op == 3 and n:
            del b[i:i + rng.choice((1, 1, 2, 3, 8))]
        elif op == 4:
            del b[i:]
        elif op == 5 and n:
            j = rng.randrange(n)
            b[i:i] = b[j:j + rng.randrange(1, 10)]
        elif op == 6 and n:
            j = min(n, i + rng.randrange(1, 10))
            b[i:j] = b[i:j].translate(INVERT)
        else:
            b += bytes([rng.randrange(256)])
    return bytes(b)


def splice(rng, a, b):
    r = rng.random()
    if r < 0.5:
        return a[:rng.randrange(len(a) + 1)] + b[rng.randrange(len(b) + 1):]
    if r < 0.7:
        return a + b
    if r < 0.85:
        return a + b'\x01' + b
    # b as if it were the inside of a Desc element
    return a + b'\x40' + b.translate(INVERT) + b'\xff'


def exhaustive_input(index):
    for n in range(EXHAUSTIVE_BYTES + 1):
        if index < 256 ** n:
            return index.to_bytes(n, 'big')
        index -= 256 ** n
    raise IndexError(index)


class Case:
    """One input: the data, how it is passed, and (for a valid encoding) its key."""

    __slots__ = ('data', 'prefix', 'kind', 'source', 'key')

    def __init__(self, data, source, prefix=b'', kind='bytes', key=None):
        self.data = data
        self.prefix = prefix
        self.kind = kind
        self.source = source
        self.key = key

    def arg(self):
        if self.kind == 'bytearray':
            return bytearray(self.data)
        if self.kind == 'memoryview':
            return memoryview(self.data)
        return self.data

    def describe(self):
        text = self.data.hex() or '(empty)'
        if self.prefix:
            text += f' prefix={self.prefix.hex()}'
        if self.kind != 'bytes':
            text += f' as {self.kind}'
        return text


def dress(rng, case):
    """Now and then pass the data as another type, or with a prefix."""
    r = rng.random()
    if r < 0.03:
        case.kind = 'bytearray'
    elif r < 0.05:
        case.kind = 'memoryview'
    r = rng.random()
    if r < 0.04:
        case.prefix = case.data[:rng.randrange(len(case.data) + 1)]
    elif r < 0.05:
        case.prefix = rng.randbytes(rng.randrange(1, 4))
    return case


def make_pool(rng, findings, size=48):
    """Valid encodings of random keys: (key, bytes) pairs, packed by python."""
    pool = []
    while len(pool) < size:
        key = gen_key(rng)
        data = IMPLS['python'].packs(key)
        for name, impl in IMPLS.items():
            if name != 'python':
                other = impl.packs(key)
                if other != data:
                    findings.add('both', 'pack-disagree', Case(data, 'valid'),
                                 f'{name} packs {safe_repr(key)} as {other.hex()}')
        pool.append((key, data))
    return pool


def chunk_cases(seed, chunk, size, exhaustive, findings):
    """Yield ``size`` cases for chunk number `chunk`; the same for the same arguments.

    The first `exhaustive` inputs of the run are the strings of 0 to 2 bytes.
    Packing disagreements met while making valid encodings go to `findings`.
    """
    start = chunk * size
    produced = 0
    while produced < size and start + produced < exhaustive:
        yield Case(exhaustive_input(start + produced), 'exhaustive')
        produced += 1
    if produced == size:
        return
    rng = random.Random(f'{seed}:{chunk}')
    pool = make_pool(rng, findings)
    while produced < size:
        r = rng.random()
        # Shares of the inputs: about 15 % random, 10 % valid, 45 % mutated,
        # 15 % prefix cuts (one draw in 300 gives every prefix of an encoding),
        # 15 % spliced.
        if r < 0.0033:
            data = rng.choice(pool)[1]
            cases = [Case(data[:i], 'prefix-cut') for i in range(len(data))]
        elif r < 0.18:
            cases = [Case(random_input(rng), 'random')]
        elif r < 0.30:
            key, data = rng.choice(pool)
            cases = [Case(data, 'valid', key=key)]
        elif r < 0.82:
            cases = [Case(mutate(rng, rng.choice(pool)[1]), 'mutated')]
        else:
            cases = [Case(splice(rng, rng.choice(pool)[1], rng.choice(pool)[1]), 'spliced')]
        for case in cases:
            if produced == size:
                return
            yield dress(rng, case)
            produced += 1
        if rng.random() < 0.02:
            pool[rng.randrange(len(pool))] = make_pool(rng, findings, 1)[0]


# --- checking one input --------------------------------------------------------------

def safe_repr(value, limit=200):
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - only for a message
        text = f'<unrepresentable {type(value).__name__}: {exc!r}>'
    return text if len(text) <= limit else text[:limit] + '...'


def sig(value):
    """A comparable, type-exact signature of a decoded value (NaN equals NaN)."""
    kind = type(value)
    if kind is tuple or kind is list:
        return (kind.__name__, tuple(sig(item) for item in value))
    if kind is Desc:
        return ('Desc', sig(value.value))
    if kind is float:
        return ('float', value.hex())
    if kind is dt.datetime:
        tz = value.tzinfo
        return ('datetime', value.isoformat(), type(tz).__name__, value.fold)
    if kind is dt.date:
        return ('date', value.toordinal())
    if kind is bytes or kind is str or kind is int or kind is bool:
        return (kind.__name__, value)
    return (kind.__name__, safe_repr(value))


def bad_types(key):
    """Names of the element types in `key` a decoder must not produce."""
    bad = []
    for element in key:
        if type(element) is Desc:
            element = element.value
            if type(element) is Desc:
                bad.append('Desc(Desc)')
                continue
        if type(element) not in RESULT_TYPES:
            bad.append(type(element).__name__)
    return bad


class Findings:
    """Findings by (implementation, kind): a count and the first few inputs."""

    def __init__(self):
        self.items = {}

    def add(self, impl, kind, case, detail):
        entry = self.items.setdefault((impl, kind), [0, []])
        entry[0] += 1
        if len(entry[1]) < EXAMPLES_KEPT:
            entry[1].append(f'{case.describe()}  [{case.source}] {detail}')

    def merge(self, other):
        for key, (count, examples) in other.items.items():
            entry = self.items.setdefault(key, [0, []])
            entry[0] += count
            entry[1].extend(examples[:EXAMPLES_KEPT - len(entry[1])])

    def count(self, impl=None):
        return sum(count for (i, _), (count, _) in self.items.items()
                   if impl is None or i == impl)


class Stats:
    def __init__(self):
        self.inputs = 0
        self.sources = collections.Counter()
        self.outcomes = {name: {f: collections.Counter() for f in FUNCS} for name in IMPLS}
        self.seconds = dict.fromkeys(IMPLS, 0.0)
        self.findings = Findings()

    def merge(self, other):
        self.inputs += other.inputs
        self.sources.update(other.sources)
        for name in IMPLS:
            self.seconds[name] += other.seconds[name]
            for f in FUNCS:
                self.outcomes[name][f].update(other.outcomes[name][f])
        self.findings.merge(other.findings)


class Slot:
    """A worker's shared-memory note of what it is doing, read after a crash or hang.

    Layout: progress counter (8 bytes), chunk (8), index in chunk (8), stage (1),
    data length (4), prefix length (4), kind (1), data, prefix.
    """

    HEADER = struct.Struct('<QqqBIIB')
    SIZE = 1 << 16
    STAGES = ('generating',) + tuple(f'{i} {f}' for i in IMPLS for f in FUNCS) + ('checking',)
    KINDS = ('bytes', 'bytearray', 'memoryview')

    def __init__(self):
        # Anonymous and shared: a forked worker writes, the parent reads.
        self.map = mmap.mmap(-1, self.SIZE)

    def note(self, counter, chunk, index, case):
        data, prefix = case.data, case.prefix
        room = self.SIZE - self.HEADER.size
        data = data[:room]
        prefix = prefix[:room - len(data)]
        self.HEADER.pack_into(self.map, 0, counter, chunk, index, 0, len(data), len(prefix),
                              self.KINDS.index(case.kind))
        start = self.HEADER.size
        self.map[start:start + len(data)] = data
        self.map[start + len(data):start + len(data) + len(prefix)] = prefix

    def stage(self, stage):
        self.map[24] = stage

    def read(self):
        counter, chunk, index, stage, n, m, kind = self.HEADER.unpack_from(self.map, 0)
        start = self.HEADER.size
        case = Case(bytes(self.map[start:start + n]), 'unknown',
                    prefix=bytes(self.map[start + n:start + n + m]), kind=self.KINDS[kind])
        return counter, chunk, index, self.STAGES[stage], case


def call(func, case):
    try:
        return True, func(case.arg(), case.prefix)
    except Exception as exc:  # noqa: BLE001 - classifying every exception is the point
        return False, exc


def check_case(case, stats, slot=None):
    """Run one case through every implementation and record the outcomes."""
    stats.inputs += 1
    stats.sources[case.source] += 1
    findings = stats.findings
    results = {}
    stage = 1
    for name, impl in IMPLS.items():
        t0 = time.perf_counter()
        outcome = {}
        for f in FUNCS:
            if slot is not None:
                slot.stage(stage)
            stage += 1
            outcome[f] = call(getattr(impl, f), case)
        stats.seconds[name] += time.perf_counter() - t0
        if slot is not None:
            slot.stage(len(Slot.STAGES) - 1)
        results[name] = outcome
        for f in FUNCS:
            ok, value = outcome[f]
            counter = stats.outcomes[name][f]
            if ok:
                counter['ok'] += 1
                check_result(name, impl, f, case, value, findings)
            else:
                counter[type(value).__name__] += 1
                if not isinstance(value, (CentiError, ValueError)):
                    findings.add(name, 'bad-exception', case,
                                 f'{f}: {type(value).__name__}: {safe_repr(str(value))}')
        check_consistent(name, case, outcome, findings)
    names = list(IMPLS)
    reference = names[0]
    for name in names[1:]:
        for f in FUNCS:
            a, b = results[reference][f], results[name][f]
            if a[0] != b[0]:
                findings.add('both', 'disagree', case, f'{f}: {reference} {describe(a)}, '
                             f'{name} {describe(b)}')
            elif a[0] and sig(a[1]) != sig(b[1]):
                findings.add('both', 'disagree', case, f'{f}: {reference} {describe(a)}, '
                             f'{name} {describe(b)}')
            elif not a[0] and type(a[1]) is not type(b[1]):
                findings.add('both', 'disagree', case, f'{f}: {reference} {describe(a)}, '
                             f'{name} {describe(b)}')


def describe(outcome):
    ok, value = outcome
    if ok:
        return f'returns {safe_repr(value)}'
    return f'raises {type(value).__name__}: {safe_repr(str(value), 120)}'


def check_result(name, impl, f, case, value, findings):
    if f == 'unpacks':
        if type(value) is not tuple:
            findings.add(name, 'bad-result', case, f'{f} returned {type(value).__name__}')
            return
        keys = [value]
    else:
        if type(value) is not list or not value or any(type(k) is not tuple for k in value):
            findings.add(name, 'bad-result', case, f'{f} returned {safe_repr(value)}')
            return
        keys = value
    for key in keys:
        bad = bad_types(key)
        if bad:
            findings.add(name, 'bad-result', case, f'{f} gave element types {bad}')
            return
    try:
        again = impl.packs(value, case.prefix)
    except Exception as exc:  # noqa: BLE001
        findings.add(name, 'round-trip', case, f'{f} -> {safe_repr(value)}; packs raises '
                     f'{type(exc).__name__}: {exc}')
        return
    if again != case.data:
        findings.add(name, 'round-trip', case, f'{f} -> {safe_repr(value)} -> packs -> '
                     f'{again.hex()}')
    if case.key is not None and not case.prefix:
        expected = case.key if type(case.key) is list else [case.key]
        got = value if f == 'unpacks_list' else [value]
        if f == 'unpacks' and len(expected) != 1:
            return
        if sig(expected) != sig(got):
            findings.add(name, 'bad-result', case, f'{f}: packed {safe_repr(case.key)}, '
                         f'decoded {safe_repr(value)}')


def check_consistent(name, case, outcome, findings):
    (ok1, one), (ok2, many) = outcome['unpacks'], outcome['unpacks_list']
    if ok1:
        problem = not ok2 or sig(many) != sig([one])
    elif ok2:
        problem = len(many) == 1 or not isinstance(one, CorruptKeyError)
    else:
        problem = False
    if problem:
        findings.add(name, 'inconsistent', case, f'unpacks {describe(outcome["unpacks"])}; '
                     f'unpacks_list {describe(outcome["unpacks_list"])}')


# --- workers ---------------------------------------------------------------------------

def run_chunk(seed, chunk, size, exhaustive, skip, slot=None, counter=0):
    stats = Stats()
    index = 0
    for case in chunk_cases(seed, chunk, size, exhaustive, stats.findings):
        if index not in skip:
            if slot is not None:
                counter += 1
                slot.note(counter, chunk, index, case)
            check_case(case, stats, slot)
            if slot is not None:
                slot.stage(0)
        index += 1
    return stats, counter


def worker_main(conn, slot, seed, exhaustive):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    counter = 0
    while True:
        task = conn.recv()
        if task is None:
            return
        chunk, size, skip = task
        stats, counter = run_chunk(seed, chunk, size, exhaustive, skip, slot, counter)
        conn.send((chunk, stats))


class Worker:
    def __init__(self, ctx, args, exhaustive):
        self.slot = Slot()
        self.conn, child_conn = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, daemon=True,
                                args=(child_conn, self.slot, args.seed, exhaustive))
        self.proc.start()
        child_conn.close()
        self.task = None
        self.last_counter = -1
        self.last_progress = time.monotonic()

    def assign(self, task):
        self.task = task
        self.last_progress = time.monotonic()
        self.conn.send(task)

    def stop(self):
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.join()


def run_parallel(args):
    exhaustive = 0 if args.no_exhaustive else min(EXHAUSTIVE_TOTAL, args.count)
    nchunks = (args.count + args.chunk - 1) // args.chunk
    pending = collections.deque(
        (c, min(args.chunk, args.count - c * args.chunk), frozenset()) for c in range(nchunks))
    ctx = multiprocessing.get_context('fork')
    workers = [Worker(ctx, args, exhaustive) for _ in range(args.workers)]
    total = Stats()
    restarts = collections.Counter()
    deadline = time.monotonic() + args.max_seconds
    done = 0
    stopped_early = False
    while pending or any(w.task for w in workers):
        if time.monotonic() > deadline and pending:
            stopped_early = True
            pending.clear()
        for w in workers:
            if w.task is None and pending:
                w.assign(pending.popleft())
        busy = [w for w in workers if w.task is not None]
        if not busy:
            break
        ready = multiprocessing.connection.wait(
            [w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0)
        for i, w in enumerate(workers):
            if w.task is None:
                continue
            if w.conn in ready and w.conn.poll():
                try:
                    chunk, stats = w.conn.recv()
                except (EOFError, OSError):
                    pass
                else:
                    total.merge(stats)
                    w.task = None
                    done += 1
                    if args.progress:
                        print(f'  {done}/{nchunks} chunks, {total.inputs} inputs',
                              file=sys.stderr, flush=True)
                    continue
            counter, chunk, index, stage, case = w.slot.read()
            dead = not w.proc.is_alive()
            hung = False
            if not dead:
                if counter != w.last_counter:
                    w.last_counter = counter
                    w.last_progress = time.monotonic()
                elif time.monotonic() - w.last_progress > args.hang_seconds:
                    hung = True
                    os.kill(w.proc.pid, signal.SIGKILL)
                    w.proc.join()
            if dead or hung:
                task_chunk, task_size, skip = w.task
                what = 'hang' if hung else 'crash'
                detail = (f'in {stage} (chunk {chunk}, input {index}); exit code '
                          f'{w.proc.exitcode}' if dead else
                          f'no progress for {args.hang_seconds} s in {stage} '
                          f'(chunk {chunk}, input {index})')
                culprit = 'both' if stage in ('generating', 'checking') else stage.split()[0]
                total.findings.add(culprit, what, case, detail)
                restarts[task_chunk] += 1
                if chunk == task_chunk and restarts[task_chunk] <= 20:
                    pending.appendleft((task_chunk, task_size, skip | {index}))
                w.conn.close()
                workers[i] = Worker(ctx, args, exhaustive)
    for w in workers:
        w.stop()
    return total, stopped_early


# --- reporting ------------------------------------------------------------------------

def report(stats, wall, args, stopped_early):
    print(f'centidb key-decoder fuzz: seed {args.seed}, {stats.inputs} inputs '
          f'(target {args.count}), {args.workers} worker(s), chunk {args.chunk}')
    print('  inputs by source: ' + ', '.join(f'{k} {v}' for k, v in
                                              sorted(stats.sources.items())))
    for name in IMPLS:
        print(f'[{name}] inputs tried: {stats.inputs}; time in its calls: '
              f'{stats.seconds[name]:.1f} s (summed over workers)')
        for f in FUNCS:
            outcomes = stats.outcomes[name][f]
            rejected = {k: v for k, v in outcomes.items() if k != 'ok'}
            print(f'  {f}: decoded ok {outcomes["ok"]}, rejected {sum(rejected.values())} ('
                  + ', '.join(f'{k} {v}' for k, v in sorted(rejected.items())) + ')')
        print(f'  findings: {stats.findings.count(name)}')
        print_findings(stats.findings, name)
    print(f'[both] findings (implementations compared): {stats.findings.count("both")}')
    print_findings(stats.findings, 'both')
    skipped = sum(count for (_, kind), (count, _) in stats.findings.items.items()
                  if kind in ('crash', 'hang'))
    if skipped:
        print(f'{skipped} input(s) skipped after a crash or hang (not in the counts above)')
    if stopped_early:
        print(f'WARNING: stopped after --max-seconds {args.max_seconds}; not every chunk ran')
    print(f'elapsed (wall): {wall:.1f} s; {stats.inputs / max(wall, 1e-9):.0f} inputs/s')
    print(f'TOTAL FINDINGS: {stats.findings.count()}')


def print_findings(findings, impl):
    for (i, kind), (count, examples) in sorted(findings.items.items()):
        if i != impl:
            continue
        print(f'    {kind}: {count}')
        for example in examples:
            print(f'      {example}')


def replay(args):
    case = Case(bytes.fromhex(args.hex), 'command line',
                prefix=bytes.fromhex(args.prefix_hex), kind=args.kind)
    for name, impl in IMPLS.items():
        for f in FUNCS:
            print(f'{name}.{f}({case.describe()}): {describe(call(getattr(impl, f), case))}')
    stats = Stats()
    check_case(case, stats)
    print_findings(stats.findings, 'both')
    for name in IMPLS:
        print_findings(stats.findings, name)
    return 1 if stats.findings.count() else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--count', type=int, default=1_000_000,
                        help='inputs, each given to every implementation (default 10**6)')
    parser.add_argument('--seed', default='1')
    parser.add_argument('--workers', type=int, default=os.cpu_count() or 1)
    parser.add_argument('--chunk', type=int, default=5000, help='inputs per task')
    parser.add_argument('--max-seconds', type=float, default=1800,
                        help='stop handing out chunks after this long')
    parser.add_argument('--hang-seconds', type=float, default=60,
                        help='a worker stuck on one input this long is a hang')
    parser.add_argument('--no-exhaustive', action='store_true',
                        help='skip the every-string-of-0-to-2-bytes part')
    parser.add_argument('--progress', action='store_true')
    parser.add_argument('--hex', help='replay one input given in hex')
    parser.add_argument('--prefix-hex', default='')
    parser.add_argument('--kind', default='bytes', choices=Slot.KINDS)
    args = parser.parse_args()
    if args.hex is not None:
        return replay(args)
    if 'speedups' not in IMPLS:
        print('WARNING: the compiled twin is not built; only pure Python is fuzzed',
              file=sys.stderr)
    print(f'implementations: {", ".join(IMPLS)}; python {sys.version.split()[0]}')
    t0 = time.monotonic()
    stats, stopped_early = run_parallel(args)
    report(stats, time.monotonic() - t0, args, stopped_early)
    return 1 if stats.findings.count() or stopped_early else 0


if __name__ == '__main__':
    sys.exit(main())
