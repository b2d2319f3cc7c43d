"""benchy's ``ratio_vs_raw`` for two checkouts, measured taking turns.

Usage: python benchmarks/benchy_turns.py --before PYTHON --after PYTHON
[--turns N] [-- benchy options...]

Each interpreter (and so the centidb checkout installed in it) runs
``examples/benchy.py`` of this checkout N times (default 3), alternating
before, after, before, ... so that a noisy machine slows both alike. Each
run's ``ratio_vs_raw`` (centidb's time over a raw engine loop's, measured in
the same run) is collected per engine and mode; the script prints CSV with
the median of each side and after / before. Options after ``--`` go to
benchy (for example ``-- --records 50000 --engines lmdb``).
"""

import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHY = os.path.join(os.path.dirname(HERE), 'examples', 'benchy.py')


def ratios(python: str, benchy_args: list[str]) -> dict[tuple[str, str], float]:
    """``{(engine, mode): ratio_vs_raw}`` of one benchy run by `python`."""
    run = subprocess.run([python, BENCHY, *benchy_args], capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f'benchy failed under {python}:\n{run.stderr[-2000:]}')
    found = {}
    for row in csv.DictReader(io.StringIO(run.stdout)):
        if row.get('ratio_vs_raw'):
            found[row['engine'], row['mode']] = float(row['ratio_vs_raw'])
    return found


def main() -> None:
    """Run benchy under both interpreters in turn and print the medians."""
    argv = sys.argv[1:]
    benchy_args: list[str] = []
    if '--' in argv:
        benchy_args = argv[argv.index('--') + 1:]
        argv = argv[:argv.index('--')]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--before', required=True, help='interpreter of the old checkout')
    parser.add_argument('--after', required=True, help='interpreter of the new checkout')
    parser.add_argument('--turns', type=int, default=3)
    args = parser.parse_args(argv)
    seen: dict[str, dict[tuple[str, str], list[float]]] = {'before': {}, 'after': {}}
    for turn in range(args.turns):
        for side in ('before', 'after'):
            print(f'turn {turn + 1}/{args.turns}: {side}', file=sys.stderr, flush=True)
            for row, ratio in ratios(getattr(args, side), benchy_args).items():
                seen[side].setdefault(row, []).append(ratio)
    out = csv.writer(sys.stdout)
    out.writerow(['engine', 'mode', 'runs', 'before_median', 'after_median', 'after_over_before'])
    for row in sorted(seen['before'].keys() & seen['after'].keys()):
        before = statistics.median(seen['before'][row])
        after = statistics.median(seen['after'][row])
        out.writerow([*row, len(seen['after'][row]), f'{before:.3f}', f'{after:.3f}',
                      f'{after / before:.3f}' if before else ''])


if __name__ == '__main__':
    main()
