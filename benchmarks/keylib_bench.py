"""Key codec speed: the pure-Python reference against the compiled twin.

Usage: python benchmarks/keylib_bench.py [--repeat 7] [--seconds 0.2]

For each typical key it times packs() and unpacks() with both
implementations (each timing is the median of --repeat runs) and prints a
table with the speedup ratio. Context (versions, machine) goes to stderr.
"""

import argparse
import csv
import platform
import statistics
import sys
import timeit

from centidb import keylib

TYPICAL_KEYS = [
    ('2-string tuple', ('undergrown', 'UNDERGROWN')),
    ('(str, int) tuple', ('user', 123456)),
    ('single int', (42,)),
    ('float', (3.14159,)),
]


def per_call_seconds(func, arg, repeat, seconds):
    """Median seconds per call of func(arg) over `repeat` timed runs."""
    timer = timeit.Timer('func(arg)', globals={'func': func, 'arg': arg})
    number, elapsed = timer.autorange()
    number = max(1, int(number * seconds / max(elapsed, 1e-9)))
    runs = timer.repeat(repeat=repeat, number=number)
    return statistics.median(runs) / number


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=7)
    parser.add_argument('--seconds', type=float, default=0.2,
                        help='approximate length of one timed run')
    args = parser.parse_args()
    impls = keylib.available_implementations()
    print(f'python {platform.python_version()} on {platform.machine()} '
          f'({platform.processor() or "unknown cpu"}); active codec: {keylib.IMPL}',
          file=sys.stderr)
    if 'speedups' not in impls:
        print('WARNING: centidb._speedups is not built; only pure Python is timed',
              file=sys.stderr)
    writer = csv.writer(sys.stdout, lineterminator='\n')
    writer.writerow(['operation', 'key', 'python_ns', 'speedups_ns', 'ratio'])
    for name, key in TYPICAL_KEYS:
        packed = keylib.PYTHON.packs(key)
        for op, arg in (('packs', key), ('unpacks', packed)):
            pure = per_call_seconds(getattr(impls['python'], op), arg, args.repeat, args.seconds)
            if 'speedups' in impls:
                fast = per_call_seconds(getattr(impls['speedups'], op), arg,
                                        args.repeat, args.seconds)
                writer.writerow([op, name, f'{pure * 1e9:.0f}', f'{fast * 1e9:.0f}',
                                 f'{pure / fast:.1f}'])
            else:
                writer.writerow([op, name, f'{pure * 1e9:.0f}', '', ''])


if __name__ == '__main__':
    main()
