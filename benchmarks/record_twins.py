"""Does the compiled record path pay? benchy's workload with and without it.

Usage: python benchmarks/record_twins.py [--records 100000] [--runs 5]
       [--engines LmdbEngine,PlyvelEngine]

Runs examples/benchy.py's modes on each engine in two variants, alternating
run by run in one process: ``compiled`` (the key codec and the record twins
of ``centidb._speedups``: what users get) and ``pure records`` (the same
compiled key codec, with ``centidb.records``' pure-Python ``RecordWriter``,
``RecordReader``, ``Record`` and ``index_entries``). The raw engine loop runs
in every run as the baseline. Prints, per engine and mode, the median
records/s of each variant as a ratio of the raw loop's, and the speedup of
the compiled record path (compiled / pure records). Needs the compiled
extension built.
"""

import argparse
import gc
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
from unittest import mock

from centidb import impl, keylib
from centidb.records import record as records

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ('compiled', 'pure records')


def load_benchy():
    path = os.path.join(HERE, os.pardir, 'examples', 'benchy.py')
    spec = importlib.util.spec_from_file_location('benchy', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def patched(variant):
    """A context that makes the record layer pure Python for 'pure records'."""
    names = ('Record', 'RecordWriter', 'RecordReader', 'index_entries')
    if variant == 'compiled':
        return mock.patch.multiple(records, **{name: getattr(impl.COMPILED, name)
                                               for name in names})
    return mock.patch.multiple(records, **{name: getattr(records.PYTHON, name)
                                           for name in names})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=100000)
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--engines', default='LmdbEngine,PlyvelEngine')
    args = parser.parse_args()
    if keylib.IMPL != 'speedups':
        sys.exit('the compiled extension is not active; build it first')
    benchy = load_benchy()
    engines = [name.strip() for name in args.engines.split(',') if name.strip()]
    data = benchy.Data(args.records, min(benchy.SAMPLE, args.records))
    times = {}
    tmp = tempfile.mkdtemp(prefix='centidb-twins-')
    try:
        for run in range(args.runs):
            for engine in engines:
                raw = benchy.RAW_OF[engine]
                benchy.run_once([raw], tmp, data, benchy.MODES,
                                benchy.Recorder(times.setdefault(raw, {}), None,
                                                lambda: None, None))
                order = VARIANTS if run % 2 == 0 else VARIANTS[::-1]
                for variant in order:
                    with patched(variant):
                        gc.collect()
                        benchy.run_once([engine], tmp, data, benchy.MODES,
                                        benchy.Recorder(times.setdefault((engine, variant), {}),
                                                        None, lambda: None, None))
            print(f'run {run + 1}/{args.runs} done', file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'{args.records} records, median of {args.runs} runs; ratios of records/s')
    print('engine,mode,compiled_vs_raw,pure_records_vs_raw,compiled_speedup')
    for engine in engines:
        raw = times[benchy.RAW_OF[engine]]
        for mode in benchy.MODES:
            base = statistics.median(raw[benchy.RAW_OF[engine], mode])
            compiled = statistics.median(times[engine, 'compiled'][engine, mode])
            pure = statistics.median(times[engine, 'pure records'][engine, mode])
            print(f'{engine},{mode},{base / compiled:.2f},{base / pure:.2f},{pure / compiled:.2f}')


if __name__ == '__main__':
    main()
