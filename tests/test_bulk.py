"""Bulk calls: ``Collection.put_many``, ``Collection.delete_many``, ``Index.get_many``.

On every engine, for every way a collection makes keys (``key_func``,
``txn_key_func``, the counter) and on both put paths (the common-case
``RecordWriter.write_many`` and the general path through a savepoint: a JSON
encoder, a batched collection, ``Record`` arguments). The oracle is a second
store given the same calls one by one: ``put_many`` must leave exactly the
engine bytes a loop of ``put()`` leaves, and a failure at any record must
leave the store, or the caller's transaction, exactly as it was. Also
``Index.get(rec=True)`` and the keyword-only options of ``Index.get/has``.
"""

from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

import centidb
from centidb.records import record as records
from centidb.records import access
from centidb.encodings import make_json_encoder
from centidb.engines import MemoryEngine
from centidb.engines.wrappers import TraceEngine
from centidb.errors import IndexInconsistentError, IndexNotAddedError, UnsupportedKeyTypeError

from stores import ENGINE_NAMES, Boom, contents, fails_cleanly, open_store

KINDS = ['key_func', 'auto', 'txn_key_func', 'json', 'batched']
#: The kinds whose put_many takes the common-case writer.
FAST_KINDS = ('key_func', 'auto')
#: The engine's longest key in these tests (set on every engine).
LIMIT = 100

#: Makes the index function raise for records marked ``'old'`` (see ``tag``).
strict = {'old': False}


def key_of(rec):
    if rec.get('fail') == 'key':
        raise Boom('key function')
    return rec['id']


def tag(rec):
    if rec.get('fail') == 'index' or (strict['old'] and rec.get('old')):
        raise Boom('index function')
    return rec.get('tag')


def many(rec):
    return rec.get('many')


def make(store, kind):
    """Collection 'c' of `kind` with two indexes (an optional tag; a list)."""
    store.engine.max_key_size = LIMIT
    if kind == 'auto':
        coll = store.collection('c')
    elif kind == 'txn_key_func':
        # Reads and moves a counter in the caller's transaction: it sees
        # what earlier records of the same call wrote.
        coll = store.collection('c', txn_key_func=lambda txn, rec: (
            rec['id'], store.counter('seq', txn=txn)))
    elif kind == 'json':
        coll = store.collection('c', key_func=key_of, encoder=make_json_encoder())
    else:
        coll = store.collection('c', key_func=key_of)
    coll.add_index('tag', tag)
    coll.add_index('many', many)
    return coll


def rec(i, **fields):
    return dict({'id': i, 'tag': f't{i % 3}', 'many': [i % 2, 'all']}, **fields)


FIRST = [rec(i) for i in range(0, 20, 2)]


#: Replaces some records of FIRST (with other index tuples), adds others and
#: names one key twice (with counter keys, every record is new).
SECOND = [rec(i, tag=f'new{i % 4}', many=None if i % 3 else ['x', i]) for i in range(8, 30, 3)]
SECOND.insert(3, rec(8, tag='twice', many=[]))


@pytest.fixture(params=ENGINE_NAMES)
def engine_name(request):
    return request.param


@pytest.fixture
def pair(engine_name, tmp_path):
    """Two fresh stores on the same engine: one for bulk calls, one for loops."""
    stores = []
    for name in ('bulk', 'loop'):
        (tmp_path / name).mkdir()
        stores.append(open_store(engine_name, tmp_path / name))
    yield stores
    for store in stores:
        store.close()


@pytest.fixture
def store(engine_name, tmp_path):
    store = open_store(engine_name, tmp_path)
    yield store
    store.close()


def filled(store, kind):
    coll = make(store, kind)
    for value in FIRST:
        coll.put(value)
    if kind == 'batched':
        coll.batch(max_recs=4)
    return coll


# --- put_many does what a loop of put() does -----------------------------------

@pytest.mark.parametrize('blind', [False, True], ids=['read', 'blind'])
@pytest.mark.parametrize('kind', KINDS)
def test_put_many_leaves_the_bytes_a_loop_of_put_leaves(pair, kind, blind):
    bulk, loop = (filled(store, kind) for store in pair)
    keys = bulk.put_many(SECOND, blind=blind)
    with loop.store.begin(write=True) as txn:
        expected = [loop.put(value, blind=blind, txn=txn).key for value in SECOND]
    assert keys == expected and len(keys) == len(SECOND)
    assert contents(pair[0]) == contents(pair[1])
    assert bulk.put_many([]) == []
    assert contents(pair[0]) == contents(pair[1])


@pytest.mark.parametrize('kind', KINDS)
def test_put_many_removes_the_stale_entries_of_replaced_records(store, kind):
    coll = filled(store, kind)
    tags = coll.indices['tag']
    if kind in ('auto', 'txn_key_func'):
        targets = [coll.get(key, rec=True) for key in list(coll.keys())[:3]]
        for target in targets:
            target.data = dict(target.data, tag='replaced')
        replaced = [target.key for target in targets]
        coll.put_many(targets)
    else:
        replaced = [(0,), (2,), (4,)]
        coll.put_many([rec(0, tag='replaced'), rec(2, tag='replaced'), rec(4, tag='replaced')])
    tups_of = {}
    for tup, key in tags.pairs():
        tups_of.setdefault(key, []).append(tup)
    assert sorted(tups_of) == sorted(coll.keys())       # no entry of an old version left
    assert all(tups_of[key] == [('replaced',)] for key in replaced)
    assert all(len(tups) == 1 for tups in tups_of.values())
    assert all(coll.get(key)['tag'] == 'replaced' for key in replaced)


def test_put_many_with_a_key_twice_keeps_the_later_record_and_its_entries_only(store):
    coll = make(store, 'key_func')
    coll.put(rec(1, tag='stored'))
    assert coll.put_many([rec(1, tag='first'), rec(2), rec(1, tag='last')]) == [(1,), (2,), (1,)]
    assert coll.get(1)['tag'] == 'last'
    assert [tup for tup, key in coll.indices['tag'].pairs() if key == (1,)] == [('last',)]


def test_put_many_with_a_key_twice_into_an_empty_collection_writes_the_later_only(store):
    # Nothing stored to read, but the earlier record's entries must not be written.
    coll = make(store, 'key_func')
    assert coll.put_many([rec(1, tag='first'), rec(2), rec(1, tag='last')]) == [(1,), (2,), (1,)]
    assert coll.get(1)['tag'] == 'last'
    assert sorted(coll.indices['tag'].pairs()) == [(('last',), (1,)), (('t2',), (2,))]


def test_put_many_without_a_fast_getter_reads_the_stored_versions_in_one_call():
    """An engine transaction with no unchecked getter (a networked engine's,
    here a tracing wrapper's) gets one get_many of every key when records
    may be stored under them, and none when the keys' range is empty."""
    engine = TraceEngine(MemoryEngine())
    store = centidb.Store(engine)
    coll = make(store, 'key_func')
    for value in FIRST:
        coll.put(value)
    with store.begin(write=True) as txn:
        assert txn.engine_txn.fast.get is None
    reads = engine.counts['txn.get_many']
    assert coll.put_many([rec(0, tag='new'), rec(1), rec(0, tag='last')]) == [(0,), (1,), (0,)]
    assert engine.counts['txn.get_many'] == reads + 1
    assert coll.get(0)['tag'] == 'last'
    assert [tup for tup, key in coll.indices['tag'].pairs() if key == (0,)] == [('last',)]
    assert sorted(key for _, key in coll.indices['tag'].pairs()) == sorted(coll.keys())
    # Above every stored key, twice: nothing stored to read.
    with store.begin(write=True) as txn:
        reads, gets = engine.counts['txn.get_many'], engine.counts['txn.get']
        coll.put_many([rec(50, tag='first'), rec(50, tag='again')], txn=txn)
        assert (engine.counts['txn.get_many'], engine.counts['txn.get']) == (reads, gets)
    assert [tup for tup, key in coll.indices['tag'].pairs() if key == (50,)] == [('again',)]
    store.close()


def test_put_many_blind_over_a_key_twice_leaves_entries_as_two_blind_puts_do(pair):
    bulk, loop = (make(store, 'key_func') for store in pair)
    batch = [rec(1, tag='first'), rec(1, tag='last')]
    bulk.put_many(batch, blind=True)
    for value in batch:
        loop.put(value, blind=True)
    assert contents(pair[0]) == contents(pair[1])
    assert list(bulk.indices['tag'].tups()) == [('first',), ('last',)]


def test_put_many_takes_an_iterator(store):
    coll = make(store, 'key_func')
    assert coll.put_many(rec(i) for i in range(3)) == [(0,), (1,), (2,)]
    assert list(coll.keys()) == [(0,), (1,), (2,)]


# --- keys ------------------------------------------------------------------------

def test_counter_keys_continue_from_the_counter_and_move_it_past_the_batch(store):
    coll = make(store, 'auto')
    assert coll.put({'tag': 'a'}).key == (1,)
    assert coll.put_many([{'tag': 'b'}, {'tag': 'c'}, {'n': 3}]) == [(2,), (3,), (4,)]
    assert coll.put({'tag': 'd'}).key == (5,)
    assert store.counter(coll.counter_name, n=0) == 6
    # A Record's key is reused and the counter raised past it, as put() does.
    assert coll.put_many([centidb.Record(coll, {'tag': 'e'}, (10,)), {'tag': 'f'}]) == [
        (10,), (11,)]
    assert coll.put({}).key == (12,)
    assert list(coll.indices['tag'].pairs()) == [
        (('a',), (1,)), (('b',), (2,)), (('c',), (3,)), (('d',), (5,)), (('e',), (10,)),
        (('f',), (11,))]


def test_txn_key_func_sees_the_earlier_records_of_the_call(store):
    coll = make(store, 'txn_key_func')
    assert coll.put_many([rec(5), rec(5), rec(6)]) == [(5, 1), (5, 2), (6, 3)]
    assert coll.put(rec(5)).key == (5, 4)


@pytest.mark.parametrize('kind', FAST_KINDS)
def test_the_common_case_writes_without_the_general_put(store, kind):
    coll = filled(store, kind)
    with mock.patch.object(access.Records, 'put', side_effect=AssertionError('general put')):
        with store.begin(write=True) as txn:
            writes = txn.engine_txn.fast.writes
            keys = coll.put_many([rec(i, tag=None, many=None) for i in (100, 101)], txn=txn)
            assert txn.engine_txn.fast.writes - writes == 2 + (kind == 'auto')  # + the counter
    assert [coll.get(key)['id'] for key in keys] == [100, 101]


# --- atomic: a failure anywhere writes nothing -----------------------------------

FAILURES = {
    'key function': (Boom, lambda i: rec(i, fail='key')),
    'index function': (Boom, lambda i: rec(i, fail='index')),
    'encoder': (TypeError, lambda i: rec(i, value=object())),
    'key codec': (UnsupportedKeyTypeError, lambda i: rec(i, tag={'no': 'dicts'})),
    'key too long': (ValueError, lambda i: rec(i, id='k' * LIMIT)),
    'entry too long': (ValueError, lambda i: rec(i, many=['x' * LIMIT])),
    'old version': (Boom, lambda i: rec(i)),
}


def failing_batch(failure, where):
    """A batch of 30 (replacing records, adding others) failing at `where`."""
    exc, bad = FAILURES[failure]
    # Record 4 is the one an 'old version' failure replaces: only at `where`.
    batch = [rec(i, tag='new') for i in range(31) if i != 4]
    at = {'first': 0, 'middle': 15, 'last': 29}[where]
    batch[at] = bad(4 if failure == 'old version' else at)
    return exc, batch


def applicable(kind, failure):
    """Whether a `kind` collection can fail that way (counter keys cannot
    be too long, and only key functions replace records by value)."""
    if failure in ('key function', 'old version'):
        return kind not in ('auto', 'txn_key_func')
    return not (kind == 'auto' and failure == 'key too long')


def cases(failures):
    return [(kind, failure) for kind in KINDS for failure in failures
            if applicable(kind, failure)]


def prepared(store, kind, failure):
    coll = filled(store, kind)
    if failure == 'old version':
        # Record 4's stored version makes the index function raise from now
        # on: replacing it must fail while reading its old entries.
        coll.put(rec(4, old=True))
        if kind == 'batched':
            coll.batch(max_recs=4)
        strict['old'] = True
    return coll


@pytest.fixture(autouse=True)
def _lenient():
    yield
    strict['old'] = False


@pytest.mark.parametrize('where', ['first', 'middle', 'last'])
@pytest.mark.parametrize('kind, failure', cases(FAILURES))
def test_a_failure_at_any_record_writes_nothing(store, kind, failure, where):
    coll = prepared(store, kind, failure)
    exc, batch = failing_batch(failure, where)
    for blind in (False, True):
        if failure == 'old version' and blind:
            continue        # a blind put reads no old version
        fails_cleanly(store, exc, lambda: coll.put_many(batch, blind=blind))
    strict['old'] = False
    assert len(coll.put_many(batch[:1] if where != 'first' else batch[1:2])) == 1


@pytest.mark.parametrize('joined', [False, True], ids=['txn=', 'joined'])
@pytest.mark.parametrize('where', ['first', 'last'])
@pytest.mark.parametrize('kind, failure', cases(['index function', 'encoder',
                                                  'entry too long', 'old version']))
def test_a_failure_in_the_callers_transaction_leaves_it_as_it_was(store, kind, failure,
                                                                  where, joined):
    coll = prepared(store, kind, failure)
    exc, batch = failing_batch(failure, where)
    with store.begin(write=True) as txn:
        strict['old'] = False
        earlier = coll.put(rec(1000, tag='earlier')).key      # the caller's own write
        strict['old'] = failure == 'old version'
        before = contents(store, txn)
        with pytest.raises(exc):
            if joined:
                coll.put_many(batch)
            else:
                coll.put_many(batch, txn=txn)
        assert contents(store, txn) == before
        strict['old'] = False
        keys = coll.put_many([rec(2000, tag='later')], txn=txn)    # still usable
    assert coll.get(earlier)['tag'] == 'earlier' and coll.get(keys[0])['tag'] == 'later'
    assert coll.indices['tag'].get('later', rec=True).key == keys[0]


@pytest.mark.parametrize('own', [True, False], ids=['own', 'txn='])
def test_a_failure_after_records_took_the_general_path_rolls_them_back(store, own):
    """Records (their keys reused, the counter raised past them) and values
    given counter keys are written one by one through a savepoint; a failure
    at the last puts back every key, entry and counter it wrote."""
    coll = filled(store, 'auto')
    first = coll.get(1, rec=True)
    first.data = dict(first.data, tag='replaced')
    batch = [first, centidb.Record(coll, rec(50), (50,)), rec(51), rec(52, fail='index')]
    if own:
        fails_cleanly(store, Boom, lambda: coll.put_many(batch))
    else:
        with store.begin(write=True) as txn:
            before = contents(store, txn)
            with pytest.raises(Boom):
                coll.put_many(batch, txn=txn)
            assert contents(store, txn) == before
    assert store.counter(coll.counter_name, n=0) == len(FIRST) + 1
    assert coll.put_many(batch[:3]) == [(1,), (50,), (51,)]
    assert coll.put({}).key == (52,)
    assert coll.indices['tag'].get('replaced', rec=True).key == (1,)


def test_an_unbound_index_refuses_put_many_and_delete_many(reopen):
    store = reopen()
    make(store, 'key_func').put(rec(1))
    store.close()
    store = reopen()
    try:
        coll = store.collection('c', key_func=key_of)
        coll.add_index('tag', tag)          # 'many' is not added again
        fails_cleanly(store, IndexNotAddedError, lambda: coll.put_many([rec(2)]))
        fails_cleanly(store, IndexNotAddedError, lambda: coll.delete_many([1]))
    finally:
        store.close()


# --- delete_many -------------------------------------------------------------------

@pytest.mark.parametrize('kind', ['key_func', 'json', 'batched'])
def test_delete_many_mirrors_a_loop_of_delete(pair, kind):
    bulk, loop = (filled(store, kind) for store in pair)
    keys = [2, (4,), 5, 2, 18, 'missing', 0]
    deleted = bulk.delete_many(keys)
    with loop.store.begin(write=True) as txn:
        expected = [loop.delete(key, txn=txn) for key in keys]
    assert [(r.key, r.data) if r else None for r in deleted] == [
        (r.key, r.data) if r else None for r in expected]
    assert [r is None for r in deleted] == [False, False, True, True, False, True, False]
    assert all(r.coll is bulk for r in deleted if r)
    assert contents(pair[0]) == contents(pair[1])
    assert bulk.delete_many([]) == []


def test_delete_many_takes_stored_records_and_refuses_unstored_ones(store):
    coll = filled(store, 'key_func')
    stored = coll.get(2, rec=True)
    assert coll.delete_many([stored, (6,)])[0] == stored
    unstored = centidb.Record(coll, rec(8))
    fails_cleanly(store, ValueError, lambda: coll.delete_many([8, unstored]),
                  match='never stored')
    assert list(coll.keys(hi=10)) == [(0,), (4,), (8,)]
    assert sorted(key for _, key in coll.indices['tag'].pairs()) == sorted(coll.keys())


@pytest.mark.parametrize('joined', [None, False, True], ids=['own', 'txn=', 'joined'])
@pytest.mark.parametrize('kind', ['key_func', 'batched'])
def test_delete_many_writes_nothing_when_any_record_fails(store, kind, joined):
    coll = filled(store, kind)
    coll.put(rec(12, old=True))
    if kind == 'batched':
        coll.batch(max_recs=4)
    strict['old'] = True            # record 12's index entries cannot be made
    cases = [(Boom, [0, 2, 12, 14]), (UnsupportedKeyTypeError, [0, 2, {'a': 1}])]
    for exc, keys in cases:
        if joined is None:
            fails_cleanly(store, exc, lambda: coll.delete_many(keys))
            continue
        with store.begin(write=True) as txn:
            before = contents(store, txn)
            with pytest.raises(exc):
                coll.delete_many(keys) if joined else coll.delete_many(keys, txn=txn)
            assert contents(store, txn) == before
            assert coll.delete_many([0], txn=txn)[0].key == (0,)
            txn.abort()
    strict['old'] = False
    assert len(list(coll.keys())) == len(FIRST)


# --- Index.get_many, Index.get(rec=True), Index.has -----------------------------------

@pytest.mark.parametrize('kind', ['key_func', 'json', 'batched'])
def test_index_get_many_returns_the_first_record_of_each_tuple(store, kind):
    coll = filled(store, kind)
    tags, multi = coll.indices['tag'], coll.indices['many']
    tups = ['t0', 'nope', 't1', 't0', ('t2',), 'nope']
    expected = [tags.get(tup, default='-') for tup in tups]
    assert tags.get_many(tups, default='-') == expected
    assert [value['id'] if value != '-' else value for value in expected] == [
        0, '-', 4, 0, 2, '-']      # keys 0..18 step 2: t0 first at 0, t1 at 4, t2 at 2
    assert multi.get_many([1, 'all', 0]) == [None, coll.get(0), coll.get(0)]
    with store.begin() as txn:
        assert tags.get_many(iter(tups), default='-', txn=txn) == expected
    records = tags.get_many(tups, rec=True)
    assert [r.key if r else None for r in records] == [(0,), None, (4,), (0,), (2,), None]
    assert all(r.coll is coll and r.data == coll.get(r.key) for r in records if r)
    assert tags.get_many([]) == []


def test_index_get_rec_returns_the_record_as_collection_get_does(store):
    coll = filled(store, 'key_func')
    tags = coll.indices['tag']
    record = tags.get('t1', rec=True)
    assert record == coll.get(4, rec=True) and record.key == (4,)
    assert tags.get('nope', rec=True) is None
    assert tags.get('nope', default='-', rec=True) == '-'
    with store.begin() as txn:
        assert tags.get('t1', rec=True, txn=txn) == record
    record.data['tag'] = 'changed'
    coll.put(record)            # the Record's key is reused, its old entry goes
    assert tags.get('t1')['id'] == 10
    assert tags.get('changed', rec=True).key == (4,)


def test_index_get_rec_names_a_missing_record(store):
    coll = make(store, 'key_func')
    coll.put(rec(1, tag='a'))
    coll.put(rec(2, tag='b'), blind=True)
    coll.put(rec(1, tag='b'), blind=True)   # leaves 'a' -> (1,) behind
    coll.delete(1)                          # removes only the entries of 'b'
    with pytest.raises(IndexInconsistentError):
        coll.indices['tag'].get('a', rec=True)
    with pytest.raises(IndexInconsistentError):
        coll.indices['tag'].get_many(['b', 'a'])


def test_index_get_and_has_take_options_by_keyword_only(store):
    coll = filled(store, 'key_func')
    tags = coll.indices['tag']
    with store.begin() as txn:
        with pytest.raises(TypeError):
            tags.get('t0', None, txn)
        with pytest.raises(TypeError):
            tags.has('t0', txn)
        with pytest.raises(TypeError):
            tags.get_many(['t0'], None, False)
        assert tags.has(tup='t0', txn=txn) and tags.get(tup='t0', txn=txn)['id'] == 0


def test_bulk_calls_refuse_a_transaction_they_cannot_use(store):
    coll = filled(store, 'key_func')
    with store.begin() as reader:
        for call in (lambda: coll.put_many([rec(1)], txn=reader),
                     lambda: coll.delete_many([0], txn=reader)):
            fails_cleanly(store, centidb.errors.TransactionError, call)
    for call in (lambda: coll.put_many([rec(1)], txn='txn'),
                 lambda: coll.delete_many([0], txn='txn'),
                 lambda: coll.indices['tag'].get_many(['t0'], txn='txn')):
        fails_cleanly(store, TypeError, call)


# --- write_many agrees with the general put_many ----------------------------------

#: The active class, kept before any test patches the module.
RecordWriter = records.RecordWriter


def declining_writer(coll, txns, txn_class, usable, *args):
    """A RecordWriter made as the collection makes it, but declining every put."""
    return RecordWriter(coll, txns, txn_class, False, *args)


def _paths_store(general, kind):
    """A store with collection 'c' of `kind`; with `general`, its writer
    declines, so put_many takes the general path (a put each, through a
    savepoint)."""
    store = centidb.open('ListEngine')
    with mock.patch.object(records, 'RecordWriter',
                           declining_writer if general else RecordWriter):
        coll = make(store, kind)
    assert type(coll.records.writer) is RecordWriter
    assert coll.records.writer.usable is not general
    return store, coll


def _outcome(coll, batch, blind):
    try:
        return 'ok', coll.put_many(batch, blind=blind)
    except Exception as exc:   # the type is what is compared
        return 'error', type(exc)


values = st.fixed_dictionaries({
    'id': st.one_of(st.integers(0, 4), st.text(max_size=3), st.just('k' * LIMIT)),
    'tag': st.one_of(st.none(), st.integers(0, 3), st.text(max_size=2), st.just(object())),
    'many': st.one_of(st.none(), st.lists(st.integers(0, 2), max_size=3)),
    'fail': st.sampled_from([None, None, None, 'key', 'index']),
})


@given(st.lists(st.tuples(st.lists(values, max_size=5), st.booleans()), max_size=4),
       st.sampled_from(FAST_KINDS))
def test_write_many_agrees_with_the_general_put_many(calls, kind):
    """Same keys, same exception types, the same engine bytes."""
    fast, general = _paths_store(False, kind), _paths_store(True, kind)
    try:
        for batch, blind in calls:
            assert _outcome(fast[1], batch, blind) == _outcome(general[1], batch, blind)
            assert list(fast[0].engine.items()) == list(general[0].engine.items())
    finally:
        fast[0].close()
        general[0].close()


def test_write_many_declines_before_calling_user_code():
    """A Record among the values, no key function and no counter value, an
    inexact encoder: None, no call, no write. The writer itself never moves
    the counter."""
    calls = []
    store = centidb.open('ListEngine')
    coll = store.collection('c', key_func=lambda value: calls.append(value) or 1)
    counted = store.collection('counted')
    as_json = store.collection('json', key_func=lambda value: calls.append(value) or 1,
                               encoder=make_json_encoder())
    with store.begin(write=True) as txn:
        etxn = txn.engine_txn
        for record in (records.Record(coll, {}), records.Record(counted, {}, (1,))):
            assert coll.records.writer.write_many(etxn, [{}, record], False, None) is None
        assert counted.records.writer.write_many(etxn, [{}], False, None) is None
        assert counted.records.writer.write(txn, {}, (3,), False) is None
        assert as_json.records.writer.write_many(etxn, [{}], False, None) is None
        assert as_json.records.writer.write_many(etxn, [{}], False, 1) is None
        assert calls == [] and etxn.fast.writes == 0
        assert coll.records.writer.write_many(etxn, [{}, {'a': 1}], False, None) == [(1,), (1,)]
        assert counted.records.writer.write_many(etxn, [{}, {}], True, 7) == [(7,), (8,)]
        assert calls == [{}, {'a': 1}]
    assert coll.get(1) == {'a': 1} and counted.get(8) == {}
    assert store.counter(counted.counter_name, n=0) == 1
    store.close()


def test_the_savepoint_offers_every_read_of_an_engine_transaction():
    from centidb.engines import EngineTransaction
    from centidb.records.savepoint import Savepoint
    for name in ('get', 'first', 'items', 'keys', 'count'):
        assert callable(getattr(EngineTransaction, name))
        assert callable(getattr(Savepoint, name)), name


def test_a_hook_counting_an_index_during_a_general_put_many(store):
    coll = store.collection('c', txn_key_func=lambda txn, r: r['id'])
    groups = coll.add_index('grp', lambda r: r['g'])

    @coll.before_write
    def at_most_two(key, value):
        if value is not None and groups.count(prefix=value['g']) >= 2:
            raise ValueError(f'group {value["g"]!r} is full')
    assert coll.put_many([{'id': 1, 'g': 'x'}, {'id': 2, 'g': 'x'}]) == [(1,), (2,)]
    with pytest.raises(ValueError, match='full'):
        coll.put_many([{'id': 3, 'g': 'y'}, {'id': 4, 'g': 'x'}])
    assert coll.count() == 2 and groups.count(prefix='y') == 0
