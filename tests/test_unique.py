"""Unique indexes on every engine: a duplicate index tuple is refused, nothing written.

Covers put, put_many, joined and explicit transactions, adding a unique
index over duplicates, re-adding after a reopen, and two processes racing
for the same value on LMDB.
"""

import json
import subprocess
import sys
import textwrap

import pytest

import centidb
from centidb.errors import UniqueError


def users(store, **kwargs):
    coll = store.collection('users', key_func=lambda r: r['id'])
    coll.add_index('email', lambda r: r.get('email'), unique=True, **kwargs)
    coll.add_index('city', lambda r: r['city'])
    return coll


def engine_items(store):
    return list(store.engine.items())


def test_a_duplicate_is_refused_and_nothing_is_written(store):
    coll = users(store)
    coll.put({'id': 1, 'email': 'a@x', 'city': 'Leeds'})
    before = engine_items(store)
    with pytest.raises(UniqueError) as info:
        coll.put({'id': 2, 'email': 'a@x', 'city': 'York'})
    error = info.value
    assert isinstance(error, ValueError)
    assert (error.index, error.value, error.key) == ('email', ('a@x',), (1,))
    assert "'email'" in str(error) and "('a@x',)" in str(error) and '(1,)' in str(error)
    assert engine_items(store) == before
    assert coll.get(2) is None and coll.indices['city'].count() == 1


def test_same_record_again_is_fine_and_a_change_frees_the_old_value(store):
    coll = users(store)
    coll.put({'id': 1, 'email': 'a@x', 'city': 'Leeds'})
    coll.put({'id': 1, 'email': 'a@x', 'city': 'York'})         # same tuple, same record
    coll.put({'id': 1, 'email': 'b@x', 'city': 'York'})         # frees a@x
    coll.put({'id': 2, 'email': 'a@x', 'city': 'Bath'})
    assert coll.indices['email'].get('a@x')['id'] == 2
    assert coll.indices['email'].get('b@x')['id'] == 1
    coll.delete(2)                                               # a delete frees it too
    coll.put({'id': 3, 'email': 'a@x', 'city': 'Bath'})
    assert list(coll.indices['email'].pairs()) == [(('a@x',), (3,)), (('b@x',), (1,))]


def test_records_without_an_entry_do_not_collide(store):
    coll = users(store)
    for n in range(3):
        coll.put({'id': n, 'city': 'Leeds'})                     # email None: no entry
    assert coll.count() == 3 and coll.indices['email'].count() == 0


def test_a_multi_entry_unique_index(store):
    coll = store.collection('tagged', key_func=lambda r: r['id'])
    tags = coll.add_index('tags', lambda r: r['tags'], unique=True)
    coll.put({'id': 1, 'tags': ['a', 'b', 'a']})               # its own repeats are fine
    with pytest.raises(UniqueError, match="'tags'"):
        coll.put({'id': 2, 'tags': ['c', 'b']})
    coll.put({'id': 2, 'tags': ['c', 'd']})
    assert [t for t, _ in tags.pairs()] == [('a',), ('b',), ('c',), ('d',)]


def test_two_conflicting_puts_in_one_transaction_roll_it_back(store):
    coll = users(store)
    with pytest.raises(UniqueError):
        with store.begin(write=True) as txn:
            coll.put({'id': 1, 'email': 'a@x', 'city': 'Leeds'}, txn=txn)
            coll.put({'id': 2, 'email': 'a@x', 'city': 'York'}, txn=txn)
    assert coll.count() == 0 and coll.indices['email'].count() == 0


def test_a_failed_put_leaves_the_callers_transaction_as_it_was(store):
    coll = users(store)
    with store.begin(write=True) as txn:
        coll.put({'id': 1, 'email': 'a@x', 'city': 'Leeds'}, txn=txn)
        with pytest.raises(UniqueError):
            coll.put({'id': 2, 'email': 'a@x', 'city': 'York'}, txn=txn)
        coll.put({'id': 2, 'email': 'b@x', 'city': 'York'}, txn=txn)
    assert [r['email'] for r in coll.values()] == ['a@x', 'b@x']
    assert coll.indices['city'].count() == 2


def test_blind_puts_are_checked_too(store):
    coll = users(store)
    coll.put({'id': 1, 'email': 'a@x', 'city': 'Leeds'}, blind=True)
    with pytest.raises(UniqueError):
        coll.put({'id': 2, 'email': 'a@x', 'city': 'Leeds'}, blind=True)
    assert coll.count() == 1


def test_put_many_obeys_unique_indexes(store):
    coll = users(store)
    coll.put({'id': 1, 'email': 'a@x', 'city': 'Leeds'})
    before = engine_items(store)
    with pytest.raises(UniqueError):                             # against a stored record
        coll.put_many([{'id': 2, 'email': 'b@x', 'city': 'York'},
                       {'id': 3, 'email': 'a@x', 'city': 'York'}])
    with pytest.raises(UniqueError):                             # within the call
        coll.put_many([{'id': 4, 'email': 'c@x', 'city': 'York'},
                       {'id': 5, 'email': 'c@x', 'city': 'York'}])
    assert engine_items(store) == before
    assert coll.put_many([{'id': 2, 'email': 'b@x', 'city': 'York'},
                          {'id': 1, 'email': 'a@x', 'city': 'Bath'}]) == [(2,), (1,)]
    assert coll.indices['email'].count() == 2


def test_counter_keys_with_a_unique_index(store):
    coll = store.collection('auto')
    coll.add_index('name', lambda r: r['name'], unique=True)
    assert coll.put({'name': 'a'}).key == (1,)
    with pytest.raises(UniqueError):
        coll.put({'name': 'a'})
    assert coll.put({'name': 'b'}).key == (2,)
    assert coll.put_many([{'name': 'c'}, {'name': 'd'}]) == [(3,), (4,)]


def test_adding_a_unique_index_over_duplicates_makes_no_index(store):
    coll = store.collection('users', key_func=lambda r: r['id'])
    coll.put({'id': 1, 'email': 'a@x'})
    coll.put({'id': 2, 'email': 'b@x'})
    coll.put({'id': 3, 'email': 'a@x'})
    before = engine_items(store)
    with pytest.raises(UniqueError) as info:
        coll.add_index('email', lambda r: r['email'], unique=True)
    assert info.value.index == 'email' and info.value.value == ('a@x',)
    assert info.value.key == (1,)
    assert 'email' not in coll.indices and engine_items(store) == before
    coll.put({'id': 4, 'email': 'a@x'})                          # writes still work
    coll.delete(3)
    coll.delete(4)
    email = coll.add_index('email', lambda r: r['email'], unique=True)
    assert email.unique and email.count() == 2


def test_reindex_of_a_unique_index(store):
    coll = users(store)
    coll.put({'id': 1, 'email': 'a@x', 'city': 'Leeds'})
    coll.put({'id': 2, 'email': 'b@x', 'city': 'Leeds'})
    coll.reindex('email')
    assert coll.indices['email'].count() == 2


def test_unique_is_stored_and_must_agree_on_reopen(reopen):
    store = reopen()
    users(store).put({'id': 1, 'email': 'a@x', 'city': 'Leeds'})
    store.close()
    store = reopen()
    coll = store.collection('users', key_func=lambda r: r['id'])
    with pytest.raises(ValueError, match='stored as unique'):
        coll.add_index('email', lambda r: r.get('email'))
    with pytest.raises(ValueError, match='stored as not unique'):
        coll.add_index('city', lambda r: r['city'], unique=True)
    assert coll.add_index('email', lambda r: r.get('email'), unique=True).unique
    coll.add_index('city', lambda r: r['city'])
    with pytest.raises(UniqueError):
        coll.put({'id': 2, 'email': 'a@x', 'city': 'York'})
    store.close()


# Runs in each worker: argv = path, worker number. Each tries to claim every
# name; prints the names it won.
WORKER = textwrap.dedent('''
    import json, sys
    import centidb
    from centidb.errors import UniqueError

    path, me = sys.argv[1], int(sys.argv[2])
    store = centidb.open('LmdbEngine', path=path)
    coll = store.collection('claims', key_func=lambda r: (r['who'], r['name']))
    coll.add_index('name', lambda r: r['name'], unique=True)
    won = []
    for n in range(40):
        name = f'name{(n + me * 13) % 40}'     # each name once, in its own order
        try:
            coll.put({'who': me, 'name': name})
            won.append(name)
        except UniqueError:
            pass
    print(json.dumps(won))
    store.close()
''')


def test_two_processes_cannot_both_claim_a_value(tmp_path):
    path = str(tmp_path / 'db.lmdb')
    store = centidb.open('LmdbEngine', path=path)
    coll = store.collection('claims', key_func=lambda r: (r['who'], r['name']))
    coll.add_index('name', lambda r: r['name'], unique=True)
    store.close()
    procs = [subprocess.Popen([sys.executable, '-c', WORKER, path, str(me)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for me in range(3)]
    won = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            pytest.fail('a worker did not finish in time')
        assert proc.returncode == 0, err
        won += json.loads(out)
    assert sorted(won) == sorted(f'name{n}' for n in range(40))     # each exactly once
    store = centidb.open('LmdbEngine', path=path)
    coll = store.collection('claims', key_func=lambda r: (r['who'], r['name']))
    coll.add_index('name', lambda r: r['name'], unique=True)
    assert coll.count() == 40 and [g for g, n in coll.indices['name'].group_counts()
                                   if n != 1] == []
    assert store.verify() == []
    store.close()


@pytest.mark.parametrize('unique', [True, False])
def test_a_failed_reindex_in_a_transaction_leaves_the_index_as_it_was(store, unique):
    coll = store.collection('users', key_func=lambda r: r['id'])
    fold = [False]      # an index function changed between versions

    def email(r):
        if fold[0] and r['email'] == 'bad':
            raise ValueError('cannot index this record')
        return r['email'].lower() if fold[0] else r['email']
    index = coll.add_index('email', email, unique=unique)
    coll.put({'id': 1, 'email': 'A@x'})
    coll.put({'id': 2, 'email': 'a@x' if unique else 'bad'})
    before = list(index.pairs())
    fold[0] = True
    with store.begin(write=True) as txn:
        coll.put({'id': 9, 'email': 'z@z'}, txn=txn)
        with pytest.raises(UniqueError if unique else ValueError):
            coll.reindex('email')                               # joins txn
    assert list(index.pairs()) == sorted(before + [(('z@z',), (9,))])
    if unique:
        with pytest.raises(UniqueError):
            coll.put({'id': 3, 'email': 'z@z'})
