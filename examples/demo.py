"""A tour of centidb: a collection with indexes on each engine.

Run: python examples/demo.py   (the README quick start runs it in .venv)

It stores a few people in a collection keyed by (surname, name) with two
indexes, queries by key range, by index prefix and in reverse, shows that an
aborted transaction leaves nothing behind, and reopens the on-disk stores to
show the data is still there. Files go to a temporary directory that is
removed at the end.
"""

import operator
import sys
import tempfile

import centidb
from centidb import keylib

PEOPLE = [
    {'surname': 'smith', 'name': 'ann', 'city': 'Leeds', 'tags': ['admin', 'ops']},
    {'surname': 'smith', 'name': 'bob', 'city': 'York', 'tags': ['ops']},
    {'surname': 'smithers', 'name': 'carl', 'city': 'Leeds', 'tags': []},
    {'surname': 'jones', 'name': 'dee', 'city': 'Bath', 'tags': ['admin']},
]


def open_people(store):
    """The collection and its indexes (index functions are re-added on reopen)."""
    people = store.collection('people', key_func=operator.itemgetter('surname', 'name'))
    people.add_index('city', lambda p: p['city'])
    people.add_index('tag', lambda p: p['tags'])      # a list: one entry each
    return people


def tour(store):
    """Write and query; return printable lines."""
    people = open_people(store)
    with store.begin(write=True) as txn:
        for person in PEOPLE:
            people.put(person, txn=txn)
    lines = [
        f"  key prefix 'smith': {[k for k in people.keys(prefix='smith')]}",
        f"  city == Leeds:      {[p['name'] for p in people.indices['city'].values('Leeds', 'Leeds', include=True)]}",
        f"  tag admin, reverse: {[k for k in people.indices['tag'].keys(prefix='admin', reverse=True)]}",
    ]
    try:
        with store.begin(write=True) as txn:
            people.put({'surname': 'zed', 'name': 'eve', 'city': 'Hull', 'tags': []}, txn=txn)
            raise RuntimeError('changed my mind')
    except RuntimeError:
        pass
    lines.append(f'  records after an aborted insert: {len(people)}')
    return lines


def main():
    print(f'centidb {centidb.__version__}, key codec: {keylib.IMPL}')
    if keylib.IMPL != 'speedups':
        print('WARNING: compiled key codec not active; running pure Python', file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix='centidb-demo-') as tmp:
        on_disk = {'PlyvelEngine': {'name': f'{tmp}/demo.ldb', 'create_if_missing': True},
                   'LmdbEngine': {'path': f'{tmp}/demo.lmdb'}}
        for engine, options in [('ListEngine', {})] + list(on_disk.items()):
            print(engine)
            with centidb.open(engine, **options) as store:
                for line in tour(store):
                    print(line)
        for engine, options in on_disk.items():
            with centidb.open(engine, **options) as store:
                people = open_people(store)
                print(f"{engine} reopened: {len(people)} people, "
                      f"ann lives in {people.get(('smith', 'ann'))['city']}")


if __name__ == '__main__':
    main()
