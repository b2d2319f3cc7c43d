"""Instructions per pass of every callgrind_ops.py row, as a table.

Usage: python benchmarks/callgrind_table.py [--engine lmdb|leveldb]
[--who centidb,raw] [--ops get,scan,...] [--passes N] [--python PATH]

Each row runs ``callgrind_ops.py`` under ``valgrind --tool=callgrind`` at 0
and at N passes (default 1); one pass costs the difference divided by N,
which leaves out loading and start-up. Only the main thread is counted
(LevelDB compacts in threads of its own). ``PYTHONHASHSEED`` is 0 unless
set: with a random seed, dict and set layouts change from run to run and
move a row's count by several percent. ``--python`` names the interpreter
(and so the centidb checkout installed in it) to measure, which lets one
copy of this script compare two commits. Prints CSV: engine, op, who,
instructions per pass, and raw / centidb when both ran.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

OPS = ('get', 'iget', 'range', 'scan', 'groups', 'update', 'update_rec',
       'insert2', 'insert2r', 'put_many', 'blind0')
HERE = os.path.dirname(os.path.abspath(__file__))


def instructions(python: str, who: str, op: str, passes: int, engine: str) -> int:
    """Instructions callgrind counts in the main thread of one run of callgrind_ops.py."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'cg.out')
        run = subprocess.run(
            ['valgrind', '--tool=callgrind', '--separate-threads=yes',
             f'--callgrind-out-file={out}', python, os.path.join(HERE, 'callgrind_ops.py'),
             who, op, str(passes), engine], capture_output=True, text=True,
            env={**os.environ, 'PYTHONHASHSEED': os.environ.get('PYTHONHASHSEED', '0')})
        main_thread = out + '-01'
        if run.returncode or not os.path.exists(main_thread):
            raise RuntimeError(f'callgrind failed for {who} {op}:\n{run.stderr[-2000:]}')
        with open(main_thread) as f:
            found = re.search(r'^totals: (\d+)', f.read(), re.M)
    if found is None:
        raise RuntimeError(f'no totals in callgrind output for {who} {op}')
    return int(found.group(1))


def main() -> None:
    """Measure the rows asked for and print them as CSV."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--engine', default='lmdb', choices=('lmdb', 'leveldb'))
    parser.add_argument('--who', default='centidb,raw')
    parser.add_argument('--ops', default=','.join(OPS))
    parser.add_argument('--passes', type=int, default=1)
    parser.add_argument('--python', default=sys.executable)
    args = parser.parse_args()
    print('engine,op,who,instructions_per_pass,raw_over_centidb', flush=True)
    for op in args.ops.split(','):
        per_pass = {}
        for who in args.who.split(','):
            base = instructions(args.python, who, op, 0, args.engine)
            full = instructions(args.python, who, op, args.passes, args.engine)
            per_pass[who] = (full - base) // args.passes
            ratio = ''
            if who == 'raw' and 'centidb' in per_pass:
                ratio = f"{per_pass['raw'] / per_pass['centidb']:.3f}"
            print(f'{args.engine},{op},{who},{per_pass[who]},{ratio}', flush=True)


if __name__ == '__main__':
    main()
