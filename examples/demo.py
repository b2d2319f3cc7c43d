"""A tour of centidb's core: the key codec and the three storage engines.

Run: python examples/demo.py   (the README quick start runs it in .venv)

It stores the same small set of keys in each engine inside one transaction,
runs a prefix query forwards and backwards, shows that an aborted
transaction leaves nothing behind, and prints what it found. Files go to a
temporary directory that is removed at the end.
"""

import datetime
import sys
import tempfile

from centidb import keylib
from centidb.engines import ListEngine, LmdbEngine, PlyvelEngine
from centidb.keylib import Desc

PEOPLE = [
    ('smith', 'ann', datetime.datetime(1990, 5, 17)),
    ('smith', 'bob', datetime.datetime(1985, 1, 2)),
    ('smithers', 'carl', datetime.datetime(1970, 1, 1)),
    ('jones', 'dee', datetime.datetime(2001, 12, 31)),
]


def tour(engine):
    """Write, query and roll back on one engine; return printable lines."""
    with engine.begin(write=True) as txn:
        for surname, name, born in PEOPLE:
            # Newest first within a surname: Desc reverses the datetime order.
            txn.put(keylib.packs((surname, Desc(born), name)), name.encode())
    lo, hi = keylib.prefix_range(('smith',))   # also matches 'smithers'
    forwards = [keylib.unpacks(key)[2] for key, _ in engine.items(lo, hi)]
    backwards = [keylib.unpacks(key)[2] for key, _ in engine.items(lo, hi, reverse=True)]
    try:
        with engine.begin(write=True) as txn:
            txn.put(keylib.packs(('zed', Desc(datetime.datetime.now()), 'eve')), b'eve')
            raise RuntimeError('changed my mind')
    except RuntimeError:
        pass
    total = sum(1 for _ in engine.keys())
    return [f'  prefix smith*: {forwards} (reverse: {backwards})',
            f'  records after aborted insert: {total}']


def main():
    print(f'centidb key codec: {keylib.IMPL}')
    if keylib.IMPL != 'speedups':
        print('WARNING: compiled key codec not active; running pure Python', file=sys.stderr)
    packed = keylib.packs(('smith', 42, 1.5, None))
    print(f"packs(('smith', 42, 1.5, None)) = {packed.hex(' ')}")
    with tempfile.TemporaryDirectory(prefix='centidb-demo-') as tmp:
        engines = [('ListEngine', ListEngine()),
                   ('PlyvelEngine', PlyvelEngine(name=f'{tmp}/demo.ldb', create_if_missing=True)),
                   ('LmdbEngine', LmdbEngine(path=f'{tmp}/demo.lmdb'))]
        for name, engine in engines:
            with engine:
                print(name)
                for line in tour(engine):
                    print(line)


if __name__ == '__main__':
    main()
