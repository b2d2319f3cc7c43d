"""Batch compression: space saved and read speed by packer and batch size.

Usage: python examples/batch.py [--records 5000] [--engine LmdbEngine] [--quick]

Generates N feed entries (Atom-like dicts of about 1.5 KB encoded: id,
title, link, author, timestamps, tags, summary and content paragraphs drawn
from a fixed vocabulary; the same entries on every run), keyed by
(feed, published, id) so that neighbouring records come from the same feed.
For each packer (``plain``, the uncompressed reference, then zlib and every
other compressor that is installed) and each batch size, it loads the entries
into a fresh store, calls ``Collection.batch(max_recs=size, packer=...)``
once over the whole collection, checks that a sample reads back unchanged,
and measures:

* ``bytes_stored``: len(key) + len(value) summed over the collection's
  physical records in the engine (logical bytes, not file sizes);
* ``ratio``: bytes_stored of the same records unbatched and uncompressed,
  divided by this row's bytes_stored;
* ``gets_per_s``: ``get()`` of a fixed random sample of keys, in one read
  transaction;
* ``range_recs_per_s``: a full forward iteration of ``values()``.

Timings are the median of 3 runs. CSV goes to stdout, the context (versions,
key codec, data size) to stderr. ``--quick`` is a smoke test of a few
seconds. Stores live in a temporary directory removed at the end.
"""

import argparse
import calendar
import csv
import operator
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
import zlib

import msgpack

import centidb
from centidb import encodings, keylib

COLUMNS = ['packer', 'batch_size', 'records', 'bytes_stored', 'ratio', 'gets_per_s',
           'range_recs_per_s']
ENGINES = ('LmdbEngine', 'PlyvelEngine', 'ListEngine')
SIZES = (1, 2, 4, 8, 16, 32, 64)
QUICK_SIZES = (1, 4, 32)
QUICK_RECORDS = 300
RUNS = 3
SEED = 2024

# --- the data set ---------------------------------------------------------

WORDS = '''
the of and to in a is that for it as was with be by on not he this are or
his from at which but have an they you were her she there been one all we
their has would when if so no will more can about other into some than them
its only time could new these two may first then do any like my now over
such our man me even most made after also did many before must through back
years where much your way well down should because each just those people
how too little state good very make world still own see men work long get
here between both life being under never day same another know while last
might great old year off come since against go came right used take three
database storage engine query index record batch compress server latency
cluster replica network release version update patch kernel memory cache
disk write read throughput benchmark python rust library feature support
performance security design review open source project community developer
'''.split()
FEEDS = ['planet-db', 'kernel-notes', 'py-weekly', 'ops-digest', 'storage-log',
         'release-radar', 'infra-blog', 'data-eng']
TAGS = ['databases', 'python', 'performance', 'storage', 'release', 'security',
        'linux', 'compression', 'indexing', 'networking', 'tutorial', 'opinion',
        'benchmarks', 'cloud', 'testing', 'design']
FIRST = ['Ada', 'Brian', 'Chen', 'Dana', 'Emil', 'Fatima', 'Gus', 'Hana', 'Ivo',
         'Jun', 'Kofi', 'Lena']
LAST = ['Okafor', 'Lindqvist', 'Moreau', 'Tanaka', 'Silva', 'Novak', 'Reyes',
        'Fischer', 'Kowalski', 'Haddad']


def _sentence(rng, weights, lo, hi):
    words = rng.choices(WORDS, weights, k=rng.randint(lo, hi))
    return ' '.join(words).capitalize() + rng.choice('...?!')[0]


def make_entries(n, seed=SEED):
    """`n` feed entries, the same for the same `n` and `seed`."""
    rng = random.Random(seed)
    weights = [(rank + 1) ** -0.7 for rank in range(len(WORDS))]   # Zipf-like
    authors = {feed: [{'name': f'{rng.choice(FIRST)} {rng.choice(LAST)}',
                       'email': f'{feed}.author{i}@example.org',
                       'uri': f'https://{feed}.example.org/authors/{i}'}
                      for i in range(4)] for feed in FEEDS}
    entries = []
    for i in range(n):
        feed = rng.choice(FEEDS)
        stamp = time.gmtime(1704067200 + rng.randrange(366 * 86400))   # 2024
        published = time.strftime('%Y-%m-%dT%H:%M:%SZ', stamp)
        updated = published if rng.random() < 0.7 else time.strftime(
            '%Y-%m-%dT%H:%M:%SZ', time.gmtime(calendar.timegm(stamp) + rng.randrange(86400)))
        title_words = rng.choices(WORDS, weights, k=rng.randint(4, 9))
        slug = '-'.join(title_words)
        entries.append({
            'feed': feed,
            'id': f'tag:{feed}.example.org,2024:entry-{i:07d}',
            'title': ' '.join(title_words).title(),
            'link': f'https://{feed}.example.org/{published[:10].replace("-", "/")}/{slug}',
            'author': rng.choice(authors[feed]),
            'published': published,
            'updated': updated,
            'lang': 'en',
            'tags': rng.sample(TAGS, rng.randint(1, 4)),
            'summary': ' '.join(_sentence(rng, weights, 6, 14)
                                for _ in range(rng.randint(2, 3))),
            'content': [' '.join(_sentence(rng, weights, 8, 18)
                                 for _ in range(rng.randint(3, 5)))
                        for _ in range(rng.randint(3, 4))],
            'comments': rng.randint(0, 40),
        })
    return entries


#: Records of one feed sit together, in time order.
feed_key = operator.itemgetter('feed', 'published', 'id')


# --- stores and measurements ------------------------------------------------

def open_store(engine, path):
    if engine == 'LmdbEngine':
        return centidb.open(engine, path=path, map_size=1 << 30, sync=False)
    if engine == 'PlyvelEngine':
        return centidb.open(engine, name=path, create_if_missing=True)
    return centidb.open(engine)


def stored_bytes(store, coll):
    """len(key) + len(value) over the collection's physical records."""
    lo, hi = keylib.prefix_range((), coll.prefix)
    return sum(len(key) + len(value) for key, value in store.engine.items(lo, hi))


def median_time(func, runs=RUNS):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(store, coll, sample):
    def gets():
        with store.begin() as txn:
            get = coll.get
            for key in sample:
                get(key, txn=txn)

    def scan():
        with store.begin() as txn:
            for _ in coll.values(txn=txn):
                pass

    return median_time(gets), median_time(scan)


def load(store, entries):
    coll = store.collection('entries', key_func=feed_key)
    with store.begin(write=True) as txn:
        put = coll.put
        for entry in entries:
            put(entry, txn=txn, blind=True)
    return coll


def run_row(engine, path, entries, by_key, sample, packer, size):
    """Load, batch, check and measure one (packer, batch size) row."""
    store = open_store(engine, path)
    try:
        coll = load(store, entries)
        unbatched = stored_bytes(store, coll)
        found, made, _ = coll.batch(max_recs=size, packer=packer)
        assert found == len(entries), (found, len(entries))
        assert made == -(-len(entries) // size), (made, size)
        for key in sample[:200]:
            assert coll.get(key) == by_key[key], key
        assert list(coll.keys()) == sorted(by_key), 'keys changed by batch()'
        assert len(coll) == len(entries)
        get_time, scan_time = measure(store, coll, sample)
        return unbatched, stored_bytes(store, coll), get_time, scan_time
    finally:
        store.close()
        if os.path.exists(path):
            shutil.rmtree(path)


def packers():
    """plain (the reference), zlib, then every other installed compressor."""
    found = [encodings.PLAIN_PACKER, encodings.ZLIB_PACKER]
    for packer in (encodings.LZ4_PACKER, encodings.ZSTD_PACKER, encodings.SNAPPY_PACKER):
        if packer is not None:
            found.append(packer)
    return found


def versions():
    parts = [f'python {platform.python_version()}', f'centidb {centidb.__version__}',
             f'msgpack {".".join(map(str, msgpack.version))}',
             f'zlib {zlib.ZLIB_RUNTIME_VERSION}']
    for module in ('lmdb', 'plyvel', 'lz4', 'zstandard', 'snappy'):
        try:
            mod = __import__(module)
        except ImportError:
            parts.append(f'{module} missing')
        else:
            parts.append(f'{module} {getattr(mod, "__version__", "?")}')
    return ', '.join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=None,
                        help=f'number of entries (default 5000, {QUICK_RECORDS} with --quick)')
    parser.add_argument('--engine', choices=ENGINES, default='LmdbEngine')
    parser.add_argument('--quick', action='store_true',
                        help=f'smoke test: batch sizes {QUICK_SIZES}, few records')
    args = parser.parse_args()
    n = args.records or (QUICK_RECORDS if args.quick else 5000)
    if n < 1:
        parser.error('--records must be at least 1')
    sizes = QUICK_SIZES if args.quick else SIZES

    entries = make_entries(n)
    by_key = {feed_key(entry): entry for entry in entries}
    assert len(by_key) == n
    sample = random.Random(SEED + 1).sample(sorted(by_key), min(n, 200 if args.quick else 2000))
    encoded = encodings.make_msgpack_encoder().pack
    avg = sum(len(encoded(entry)) for entry in entries) / n

    print(versions(), file=sys.stderr)
    print(f'key codec: {keylib.IMPL}; engine: {args.engine}; {n} records of '
          f'{avg:.0f} bytes on average (msgpack); batch sizes {", ".join(map(str, sizes))}; '
          f'{len(sample)} gets; timings: median of {RUNS} runs', file=sys.stderr)
    if keylib.IMPL != 'speedups':
        print('WARNING: compiled key codec NOT active (keylib.IMPL = '
              f'{keylib.IMPL!r}); timings are for pure Python', file=sys.stderr)

    writer = csv.writer(sys.stdout, lineterminator='\n')
    writer.writerow(COLUMNS)
    tmp = tempfile.mkdtemp(prefix='centidb-batch-')
    try:
        baseline = None
        for packer in packers():
            for size in sizes:
                unbatched, stored, get_time, scan_time = run_row(
                    args.engine, os.path.join(tmp, f'{packer.name}-{size}'),
                    entries, by_key, sample, packer, size)
                if baseline is None:
                    baseline = unbatched
                assert unbatched == baseline, (unbatched, baseline)
                writer.writerow([packer.name, size, n, stored, f'{baseline / stored:.2f}',
                                 f'{len(sample) / get_time:.0f}', f'{n / scan_time:.0f}'])
                sys.stdout.flush()
        # The reference every ratio is taken against, measured the same way.
        store = open_store(args.engine, os.path.join(tmp, 'unbatched'))
        try:
            coll = load(store, entries)
            get_time, scan_time = measure(store, coll, sample)
        finally:
            store.close()
        print(f'unbatched plain reference: {baseline} bytes, '
              f'{len(sample) / get_time:.0f} gets/s, {n / scan_time:.0f} range recs/s',
              file=sys.stderr)
    finally:
        shutil.rmtree(tmp)


if __name__ == '__main__':
    main()
