"""The general write paths of a collection (:mod:`centidb.records.writing`), on every engine.

The paths the common-case writer declines (a ``Record`` given back, another
packer, ``txn_key_func``, a JSON encoder, a batched collection, a
``before_write`` hook, unique indexes) each check, make keys and index
entries and call the hooks before their first write, so a failure writes
nothing; they keep index entries in step with records, report their changes
to ``on_commit`` hooks, fill a new index for the records already stored,
and refuse writes while a stored index is not added. The oracle is a
collection of the common case given the same calls: both must hold the same
records and index entries.
"""

import pytest

import centidb
from centidb import encodings
from centidb.encodings import make_json_encoder
from centidb.errors import IndexNotAddedError, UniqueError

from stores import Boom, contents, fails_cleanly

KINDS = ['record', 'packer', 'txn_key_func', 'json', 'batched', 'hooked']


def by_name(person):
    return person['name']


def city_of(person):
    return person['city']


def collection(store, kind, name='people'):
    """A collection whose writes take the general path for the reason `kind`."""
    options = {'txn_key_func': lambda txn, p: p['name']} if kind == 'txn_key_func' \
        else {'key_func': by_name}
    if kind == 'json':
        options['encoder'] = make_json_encoder()
    coll = store.collection(name, **options)
    coll.add_index('city', city_of)
    if kind == 'batched':
        coll.put({'name': 'zz', 'city': 'Nowhere'})
        coll.batch()
    if kind == 'hooked':
        coll.before_write(lambda key, value: None)
    return coll


def put(coll, kind, value, **options):
    if kind == 'record':
        rec = coll.get(value['name'], rec=True)
        if rec is not None:
            rec.data = value
            return coll.put(rec, **options)
    if kind == 'packer':
        options['packer'] = encodings.ZLIB_PACKER
    return coll.put(value, **options)


def state(coll):
    records = [(key, value) for key, value in coll.items() if key != ('zz',)]
    entries = [pair for pair in coll.indices['city'].pairs() if pair[1] != ('zz',)]
    return records, entries


@pytest.mark.parametrize('kind', KINDS)
def test_the_general_path_keeps_records_and_entries_as_the_common_case_does(store, kind):
    coll = collection(store, kind)
    plain = store.collection('plain', key_func=by_name)
    plain.add_index('city', city_of)
    steps = [{'name': 'ann', 'city': 'Leeds'}, {'name': 'bob', 'city': 'York'},
             {'name': 'ann', 'city': 'Hull'}, {'name': 'cy', 'city': 'Hull'},
             {'name': 'bob', 'city': 'York', 'age': 3}]
    for value in steps:
        assert put(coll, kind, value).key == plain.put(value).key
        assert state(coll) == state(plain)
    assert coll.delete('ann').data == plain.delete('ann').data
    assert coll.delete('ann') is None and plain.delete('ann') is None
    assert coll.put_many([{'name': 'dee', 'city': 'Ely'}, {'name': 'cy', 'city': 'Ely'}]) \
        == plain.put_many([{'name': 'dee', 'city': 'Ely'}, {'name': 'cy', 'city': 'Ely'}])
    assert state(coll) == state(plain)
    done = [coll.delete_many(['dee', 'nobody']), plain.delete_many(['dee', 'nobody'])]
    assert [[None if r is None else (r.key, r.data) for r in recs] for recs in done] == [
        [(('dee',), {'name': 'dee', 'city': 'Ely'}), None]] * 2
    assert state(coll) == state(plain)
    assert state(coll)[1] == [(('Ely',), ('cy',)), (('York',), ('bob',))]


@pytest.mark.parametrize('kind', KINDS)
def test_a_write_that_fails_writes_nothing(store, kind):
    coll = collection(store, kind)
    put(coll, kind, {'name': 'ann', 'city': 'Leeds'})

    @coll.before_write
    def refuse_york(key, value):
        if value is not None and value['city'] == 'York':
            raise Boom(key)
    fails_cleanly(store, Boom, lambda: put(coll, kind, {'name': 'ann', 'city': 'York'}))
    fails_cleanly(store, Boom, lambda: coll.put_many([{'name': 'bob', 'city': 'Ely'},
                                                      {'name': 'cy', 'city': 'York'}]))
    fails_cleanly(store, KeyError, lambda: put(coll, kind, {'name': 'dee'}))   # no city
    coll.remove_hook(refuse_york)
    assert coll.get('ann') == {'name': 'ann', 'city': 'Leeds'}


@pytest.mark.parametrize('kind', KINDS)
def test_before_write_sees_each_write_after_its_checks(store, kind):
    coll = collection(store, kind)
    seen = []
    coll.before_write(lambda key, value: seen.append((key, value)))
    put(coll, kind, {'name': 'ann', 'city': 'Leeds'})
    coll.put_many([{'name': 'bob', 'city': 'York'}])
    coll.delete('ann')
    coll.delete('ann')                               # missing: no call
    assert seen == [(('ann',), {'name': 'ann', 'city': 'Leeds'}),
                    (('bob',), {'name': 'bob', 'city': 'York'}), (('ann',), None)]


@pytest.mark.parametrize('kind', KINDS)
def test_a_unique_index_refuses_a_second_record_with_a_tuple(store, kind):
    coll = collection(store, kind)
    emails = coll.add_index('email', lambda p: p.get('email', p['name']), unique=True)
    put(coll, kind, {'name': 'ann', 'city': 'Leeds', 'email': 'a@x'})
    put(coll, kind, {'name': 'ann', 'city': 'Hull', 'email': 'a@x'})       # the same record
    error = fails_cleanly(store, UniqueError,
                          lambda: put(coll, kind, {'name': 'bob', 'city': 'York',
                                                   'email': 'a@x'}),
                          match=r"unique index 'email' of collection 'people' already has "
                                r"\('a@x',\), for the record \('ann',\)")
    assert (error.index, error.value, error.key) == ('email', ('a@x',), ('ann',))
    fails_cleanly(store, UniqueError, lambda: coll.put_many(
        [{'name': 'bob', 'city': 'York'}, {'name': 'cy', 'city': 'Ely', 'email': 'a@x'}]))
    put(coll, kind, {'name': 'ann', 'city': 'Hull', 'email': 'ann@x'})     # frees 'a@x'
    put(coll, kind, {'name': 'bob', 'city': 'York', 'email': 'a@x'})
    assert emails.get('a@x')['name'] == 'bob' and emails.get('ann@x')['name'] == 'ann'


@pytest.mark.parametrize('kind', KINDS)
def test_a_new_index_is_filled_for_the_records_already_stored(store, kind):
    coll = collection(store, kind)
    coll.put_many([{'name': n, 'city': c} for n, c in
                   [('ann', 'Leeds'), ('bob', 'York'), ('cy', 'Leeds')]])
    if kind == 'batched':
        coll.batch()
    initials = coll.add_index('initial', lambda p: p['name'][0])
    assert [(t, k) for t, k in initials.pairs() if k != ('zz',)] == [
        (('a',), ('ann',)), (('b',), ('bob',)), (('c',), ('cy',))]
    before = contents(store)
    with pytest.raises(UniqueError, match="'Leeds'"):
        coll.add_index('one_per_city', city_of, unique=True)
    assert contents(store) == before and 'one_per_city' not in coll.indices
    with pytest.raises(Boom):
        coll.add_index('failing', lambda p: (_ for _ in ()).throw(Boom()))
    assert contents(store) == before and 'failing' not in coll.indices


@pytest.mark.parametrize('kind', KINDS)
def test_on_commit_hooks_get_every_change_of_the_general_path(store, kind):
    coll = collection(store, kind)
    reports = []
    store.on_commit(reports.append)
    with store.begin(write=True) as txn:
        put(coll, kind, {'name': 'ann', 'city': 'Leeds'}, txn=txn)
        coll.put_many([{'name': 'bob', 'city': 'York'}], txn=txn)
        coll.delete('ann', txn=txn)
        coll.delete_many(['bob'], txn=txn)
    with store.begin(write=True) as txn:
        put(coll, kind, {'name': 'cy', 'city': 'Ely'}, txn=txn)
        txn.abort()
    assert reports == [[
        centidb.Change('people', ('ann',), {'name': 'ann', 'city': 'Leeds'}),
        centidb.Change('people', ('bob',), {'name': 'bob', 'city': 'York'}),
        centidb.Change('people', ('ann',), None),
        centidb.Change('people', ('bob',), None)]]


def test_writes_wait_until_every_stored_index_is_added(store):
    coll = collection(store, 'json')
    coll.put({'name': 'ann', 'city': 'Leeds'})
    other = centidb.Store(store.engine)
    again = other.collection('people', key_func=by_name, encoder=make_json_encoder())
    assert again.get('ann') == {'name': 'ann', 'city': 'Leeds'}       # reads need no index
    for write in (lambda: again.put({'name': 'bob', 'city': 'York'}),
                  lambda: again.delete('ann'), lambda: again.put_many([{'name': 'cy'}])):
        with pytest.raises(IndexNotAddedError, match=r"stored index\(es\) 'city'"):
            write()
    again.add_index('city', city_of)
    again.put({'name': 'bob', 'city': 'York'})
    assert coll.indices['city'].get('York')['name'] == 'bob'


def test_a_key_or_entry_longer_than_the_engine_stores_is_refused_before_writing(tmp_path):
    store = centidb.open('LmdbEngine', path=str(tmp_path / 'db'), sync=False)
    limit = store.engine.max_key_size
    coll = collection(store, 'json')
    fails_cleanly(store, ValueError, lambda: coll.put({'name': 'n' * limit, 'city': 'Leeds'}),
                  match=r"key \('n+',\) of collection 'people' packs to \d+ bytes; the engine "
                        rf'stores at most {limit}')
    fails_cleanly(store, ValueError, lambda: coll.put({'name': 'ann', 'city': 'c' * limit}),
                  match=rf"index 'city' entry for key \('ann',\) packs to \d+ bytes; "
                        rf'the engine stores at most {limit}')
    store.close()


def test_counter_keys_move_past_keys_given_and_past_put_many(store):
    coll = store.collection('log', encoder=make_json_encoder())
    coll.add_index('kind', lambda r: r['kind'])
    assert coll.put({'kind': 'a'}).key == (1,)
    assert coll.put({'kind': 'b'}, key=10).key == (10,)
    assert coll.put({'kind': 'c'}).key == (11,)
    assert coll.put_many([{'kind': 'd'}, {'kind': 'e'}]) == [(12,), (13,)]
    assert coll.put({'kind': 'f'}).key == (14,)
    with pytest.raises(KeyError):
        coll.put_many([{'kind': 'g'}, {}])            # no key is taken
    assert coll.put({'kind': 'h'}).key == (15,)
    assert [k for k, _ in coll.indices['kind'].pairs()] == [(c,) for c in 'abcdefh']


def test_deleting_records_inside_a_batch_keeps_the_others(store):
    coll = store.collection('docs', key_func=lambda r: r['n'])
    coll.add_index('odd', lambda r: r['n'] % 2)
    coll.put_many([{'n': n} for n in range(10)])
    coll.batch()
    assert coll.delete(3).data == {'n': 3}
    deleted = coll.delete_many([4, 40, 5])
    assert [None if r is None else r.data for r in deleted] == [{'n': 4}, None, {'n': 5}]
    assert [k[0] for k in coll.keys()] == [0, 1, 2, 6, 7, 8, 9]
    assert [k[0] for _, k in coll.indices['odd'].pairs()] == [0, 2, 6, 8, 1, 7, 9]
    coll.put({'n': 3})
    assert coll.get(3) == {'n': 3} and coll.count() == 8


def test_deleting_a_record_that_cannot_be_decoded_names_the_call_that_can(store):
    from centidb import keylib
    from centidb.errors import CorruptRecordError
    coll = store.collection('docs', key_func=lambda r: r['n'])
    coll.add_index('n', lambda r: r['n'])
    coll.put({'n': 1})
    with store.engine.begin(write=True) as etxn:
        key_bytes = keylib.packs((1,), coll.prefix)
        etxn.put(key_bytes, etxn.get(key_bytes)[:1] + b'\xc1')
    fails_cleanly(store, CorruptRecordError, lambda: coll.delete(1),
                  match=r"call store.remove_record\('docs', \(1,\)\)")


@pytest.mark.parametrize('kind', KINDS)
def test_reindex_replaces_the_entries_or_leaves_them_as_they_were(store, kind):
    coll = collection(store, kind)
    coll.put_many([{'name': n, 'city': c} for n, c in
                   [('ann', 'Leeds'), ('bob', 'York'), ('cy', 'Leeds')]])
    mode = {'upper': False, 'fail': False}

    def town_of(person):
        if mode['fail'] and person['name'] == 'cy':
            raise Boom()
        return person['city'].upper() if mode['upper'] else person['city']
    town = coll.add_index('town', town_of)
    mode['upper'] = True
    coll.reindex('town')
    assert [t for t, k in town.pairs() if k != ('zz',)] == [('LEEDS',), ('LEEDS',), ('YORK',)]
    before = contents(store)
    mode.update(upper=False, fail=True)
    fails_cleanly(store, Boom, lambda: coll.reindex('town'))
    mode['fail'] = False
    coll.reindex('town')
    assert [t for t, k in town.pairs() if k != ('zz',)] == [('Leeds',), ('Leeds',), ('York',)]
    assert contents(store) != before


def test_a_collection_reopened_without_its_key_function_needs_the_key(store):
    from centidb.errors import KeyKindMismatchError
    collection(store, 'json')
    other = centidb.Store(store.engine)
    again = other.collection('people', encoder=make_json_encoder())
    again.add_index('city', city_of)
    with pytest.raises(KeyKindMismatchError, match="makes its keys with a key_func.*pass "
                                                   "key_func=, or give put.. the key"):
        again.put({'name': 'ann', 'city': 'Leeds'})
    assert again.put({'name': 'ann', 'city': 'Leeds'}, key='ann').key == ('ann',)


def test_the_reporting_writer_reports_each_record_write_stores_and_passes_write_many_on():
    from types import SimpleNamespace
    from centidb.records import Record
    from centidb.records.writing import ReportingWriter

    class Declining:
        """A common-case writer storing records with a value, declining None."""
        usable = False

        def write(self, txn, data, key, blind):
            return None if data is None else Record(None, data, (key,))

        def write_many(self, etxn, datas, blind, first_id):
            return [(first_id + i,) for i in range(len(datas))] if datas else None

    writer = ReportingWriter(Declining(), 'people')
    assert writer.usable is False
    txn = SimpleNamespace(changes=[])
    assert writer.write(txn, {'a': 1}, 'k', False) == Record(None, {'a': 1}, ('k',))
    assert writer.write(txn, None, 'k', False) is None
    assert txn.changes == [centidb.Change('people', ('k',), {'a': 1})]
    assert writer.write_many(None, ['x', 'y'], False, 5) == [(5,), (6,)]
    assert writer.write_many(None, [], False, 5) is None
    assert txn.changes == [centidb.Change('people', ('k',), {'a': 1})]
