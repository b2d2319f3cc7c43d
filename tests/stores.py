"""Stores, sample data and checks shared by the document-layer tests.

The fixtures built on these (``store``, ``docs``, ``reopen``) are in
``conftest.py``.
"""

import operator

import pytest

import centidb
from centidb.encodings import Encoder

ENGINE_NAMES = ['ListEngine', 'PlyvelEngine', 'LmdbEngine']
DISK_ENGINE_NAMES = ['PlyvelEngine', 'LmdbEngine']


def open_store(name, directory):
    """Open (creating on first use) a store of engine `name` under `directory`.

    LMDB runs without fsync on commit: reopening in this process (or
    another) still sees every commit, and the tests never need to survive a
    crash.
    """
    if name == 'ListEngine':
        return centidb.open('ListEngine')
    if name == 'PlyvelEngine':
        return centidb.open('PlyvelEngine', name=str(directory / 'db.ldb'),
                            create_if_missing=True)
    return centidb.open('LmdbEngine', path=str(directory / 'db.lmdb'), sync=False)


def list_store():
    """A fresh in-memory store."""
    return centidb.open('ListEngine')


# --- checks ------------------------------------------------------------------

def contents(store, txn=None):
    """Everything in the store's engine (as `txn` sees it), as (key, value) bytes."""
    if txn is not None:
        return [(bytes(k), bytes(v)) for k, v in txn.engine_txn.items()]
    return list(store.engine.items())


def engine_keys(store, prefix):
    """The engine keys of `store` that start with `prefix`, in order."""
    return [key for key in store.engine.keys() if key.startswith(prefix)]


def fails_cleanly(store, exc_type, call, match=None):
    """Assert `call()` raises `exc_type` and leaves the engine unchanged."""
    before = contents(store)
    with pytest.raises(exc_type, match=match) as info:
        call()
    assert contents(store) == before
    return info.value


class Boom(Exception):
    """Raised on purpose by user functions in these tests."""


# --- sample collections ------------------------------------------------------

def by_id(rec):
    return rec['id']


def tag_of(rec):
    return rec.get('tag')


def reversing_packer():
    """A fresh custom packer named 'reverse' (it reverses the bytes)."""
    return Encoder('reverse', lambda data: data[::-1], lambda data: data[::-1])


PEOPLE = [
    {'name': 'undergrown', 'location': 'UNDERGROWN', 'tags': ['a', 'b']},
    {'name': 'ash', 'location': 'LONDON', 'tags': ['b']},
    {'name': 'birch', 'location': 'LONDON', 'tags': []},
    {'name': 'cedar', 'location': 'PARIS', 'tags': None},
]


def people(store):
    """Collection 'people' keyed by (name, location) with three indexes, holding PEOPLE."""
    coll = store.collection('people', key_func=operator.itemgetter('name', 'location'))
    coll.add_index('location', lambda p: p['location'])
    coll.add_index('tags', lambda p: p['tags'])
    coll.add_index('rev_name', lambda p: p['name'][::-1])
    for person in PEOPLE:
        coll.put(person)
    return coll
