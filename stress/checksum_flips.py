"""Checksum campaign: flip one bit in each of many stored values of an LMDB store.

Usage (from the repository root)::

    .venv/bin/python stress/checksum_flips.py [--flips 1000] [--seed 1] [--dir DIR]

It creates an LMDB store holding ``--flips`` records in the collection
``docs`` (a collection that keeps checksums: each stored value ends with a
CRC-32 trailer; key ``r['id']``, an index on ``r['name']``), each record
``{'id': i, 'name': 'Example i', 'note': ...}``, and closes it. Then, in the
file ``data.mdb`` itself, it finds the bytes of every stored value (each
must occur exactly once) and flips one bit of each, at a position and bit
chosen from ``--seed``: header byte, packed value or trailer alike. LMDB
keeps no checksums of its own, so it hands the damaged bytes back as they
are.

The store is opened again and ``Store.verify()`` must report every damaged
record by its key, and only those records; ``get()`` of each must raise
:class:`~centidb.errors.ChecksumError` naming the collection and key,
never return a value. Prints ``found F/T`` (flipped records ``verify()``
reported, of those flipped) and the other counts; exits 1 unless every flip
was found and nothing else was reported. ``--without-checksums`` runs the
same campaign on a collection without checksums, to show what they catch.
"""

import argparse
import os
import random
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import centidb  # noqa: E402
from centidb import keylib  # noqa: E402
from centidb.errors import ChecksumError, CorruptRecordError  # noqa: E402


def make_store(path, n, rnd, checksum=True):
    """The store at `path` with `n` records; returns ``{engine key: stored value}``.

    It is written elsewhere and copied to `path` by a compacting backup,
    which leaves out free pages: each value's bytes are then in the file
    once, where LMDB reads them.
    """
    written = path + '.written'
    store = centidb.open('LmdbEngine', path=written)
    docs = store.collection('docs', key_func=lambda r: r['id'], checksum=checksum)
    docs.add_index('name', lambda r: r['name'])
    with store.begin(write=True) as txn:
        for i in range(n):
            docs.put({'id': i, 'name': f'Example {i}',
                      'note': '%032x' % rnd.getrandbits(128)}, txn=txn)
    lo, hi = keylib.prefix_range((), docs.prefix)
    stored = dict(store.engine.items(lo, hi))
    store.engine.backup(path, compact=True)
    store.close()
    shutil.rmtree(written)
    return stored


def flip_file(path, stored, rnd):
    """Flip one bit of each stored value in ``path/data.mdb``; return the flipped keys."""
    data_path = os.path.join(path, 'data.mdb')
    with open(data_path, 'rb') as fp:
        data = bytearray(fp.read())
    flipped = set()
    for key_bytes, value in stored.items():
        at = data.find(value)
        if at < 0 or data.find(value, at + 1) >= 0:
            raise SystemExit(f'the value under {key_bytes!r} is not in data.mdb exactly once')
        bit = rnd.randrange(len(value) * 8)
        data[at + bit // 8] ^= 1 << (bit % 8)
        flipped.add(key_bytes)
    with open(data_path, 'r+b') as fp:
        fp.write(data)
    return flipped


def check(path, flipped, checksum=True):
    """Open the damaged store; return ``(found, extra, returned)``.

    found: flipped records verify() reported; extra: problems about anything
    else; returned: flipped records get() returned a value for.
    """
    store = centidb.open('LmdbEngine', path=path)
    docs = store.collection('docs', key_func=lambda r: r['id'])
    docs.add_index('name', lambda r: r['name'])
    keys = {keylib.unpacks(key_bytes, docs.prefix) for key_bytes in flipped}
    found, extra = set(), []
    for problem in store.verify():
        if problem.collection == 'docs' and problem.key in keys:
            found.add(problem.key)      # (a damaged record's entries may be reported too)
        else:
            extra.append(problem)
    returned = 0
    for key in keys:
        try:
            docs.get(key)
            returned += 1
        except CorruptRecordError as exc:
            if ("'docs'" not in str(exc) or repr(key) not in str(exc)
                    or (checksum and not isinstance(exc, ChecksumError))):
                extra.append(exc)
    store.close()
    return len(found), extra, returned


def main(argv=None):
    """Run the campaign; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--flips', type=int, default=1000, help='records, one flip each')
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--dir', help='directory for the store (default: a temporary one)')
    parser.add_argument('--without-checksums', action='store_true',
                        help='a collection without checksums, for comparison')
    args = parser.parse_args(argv)
    rnd = random.Random(args.seed)
    base = args.dir or tempfile.mkdtemp(prefix='checksum_flips-')
    path = os.path.join(base, 'store')
    if os.path.exists(path):
        shutil.rmtree(path)
    try:
        stored = make_store(path, args.flips, rnd, not args.without_checksums)
        flipped = flip_file(path, stored, rnd)
        found, extra, returned = check(path, flipped, not args.without_checksums)
    finally:
        if not args.dir:
            shutil.rmtree(base)
    print(f'found {found}/{len(flipped)}')
    print(f'reads that returned a damaged record: {returned}')
    print(f'other problems: {len(extra)}')
    for problem in extra[:10]:
        print(f'  {problem}')
    return 0 if found == len(flipped) == args.flips and not extra and not returned else 1


if __name__ == '__main__':
    sys.exit(main())
