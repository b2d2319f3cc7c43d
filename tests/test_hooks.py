"""Change hooks: ``Store.on_commit`` and ``Collection.before_write``.

On every engine (and, through ``dev/test.sh``, both codec implementations):
every write path reports its records to the ``on_commit`` hooks once per
committed transaction, in order; aborted transactions, transactions that
changed nothing and bulk calls that failed report nothing; an exception
from a hook propagates to whoever committed while the commit stands; a
``before_write`` hook that raises makes the call write nothing. Without
hooks the collections use the common-case writer; with any, the general
path, whose engine bytes must be the same.
"""

import sys
import threading

import pytest

import centidb
from centidb.records import record as records
from centidb.records import limits, writing
from centidb import txn as txn_module
from centidb.encodings import make_json_encoder

from stores import Boom, by_id, contents, fails_cleanly, list_store, tag_of


class Recorder:
    """An ``on_commit`` hook keeping each call's changes as plain tuples."""

    def __init__(self):
        self.calls = []

    def __call__(self, changes):
        self.calls.append([tuple(change) for change in changes])

    @property
    def flat(self):
        return [change for call in self.calls for change in call]


@pytest.fixture
def seen(store):
    """The store's recorder, registered as its only ``on_commit`` hook."""
    return store.on_commit(Recorder())


@pytest.fixture
def coll(store):
    """Collection 'docs' keyed by ``id``, with an index on ``tag``."""
    coll = store.collection('docs', key_func=by_id)
    coll.add_index('tag', tag_of)
    return coll


def auto_store():
    """A memory store with an auto-increment collection 'log'."""
    store = list_store()
    return store, store.collection('log')


# --- the Change type and registering ----------------------------------------

def test_change_is_a_public_named_tuple():
    change = centidb.Change('docs', (1,), {'id': 1})
    assert centidb.Change is txn_module.Change
    assert change.collection == 'docs' and change.key == (1,) and change.value == {'id': 1}
    assert change == ('docs', (1,), {'id': 1})
    assert change._replace(value=None).value is None


def test_on_commit_returns_the_hook_and_remove_hook_removes_it(store, coll):
    seen = Recorder()
    assert store.on_commit(seen) is seen
    coll.put({'id': 1})
    store.remove_hook(seen)
    coll.put({'id': 2})
    assert seen.calls == [[('docs', (1,), {'id': 1})]]
    with pytest.raises(ValueError, match='not an on_commit hook'):
        store.remove_hook(seen)


def test_a_hook_registered_twice_is_called_twice(store, coll):
    seen = Recorder()
    store.on_commit(seen)
    store.on_commit(seen)
    coll.put({'id': 1})
    assert len(seen.calls) == 2
    store.remove_hook(seen)
    coll.put({'id': 2})
    assert len(seen.calls) == 3
    store.remove_hook(seen)
    assert coll.records.writer.usable


def test_hooks_must_be_callable(store, coll):
    with pytest.raises(TypeError, match='callable'):
        store.on_commit(42)
    with pytest.raises(TypeError, match='callable'):
        coll.before_write('no')
    with pytest.raises(ValueError, match='not a before_write hook'):
        coll.remove_hook(print)


def reporting(coll):
    return type(coll.records.writer) is writing.ReportingWriter


def unlimited(writer):
    """The writer a LimitedWriter wraps (engines with limits), else `writer`."""
    return writer.writer if type(writer) is limits.LimitedWriter else writer


def test_hooks_switch_the_write_paths(store, coll):
    other = store.collection('other', key_func=by_id)
    assert coll.records.writer.usable and other.records.writer.usable
    assert not reporting(coll)
    hook = store.on_commit(Recorder())
    # The common-case writer still writes, and records each change.
    assert reporting(coll) and reporting(other) and coll.records.writer.usable
    later = store.collection('later', key_func=by_id)     # opened while recording
    assert reporting(later)
    store.remove_hook(hook)
    assert not reporting(coll) and not reporting(later)
    assert type(unlimited(coll.records.writer)) is records.RecordWriter
    # Before-write hooks need the general path.
    check = coll.before_write(lambda key, value: None)
    assert not coll.records.writer.usable and other.records.writer.usable
    coll.remove_hook(check)
    assert coll.records.writer.usable
    # An index change rebuilds the paths: the hooks stay.
    coll.before_write(check)
    coll.add_index('id', by_id)
    assert not coll.records.writer.usable


# --- every write path reports -----------------------------------------------

def test_put_reports_each_record(store, coll, seen):
    rec = coll.put({'id': 1, 'tag': 'a'})
    coll.put({'id': 2}, blind=True)
    coll.put({'id': 3}, packer=centidb.encodings.ZLIB_PACKER)
    coll.put({'id': 4}, key=40)
    rec.data = dict(rec.data, tag='b')
    coll.put(rec)                                   # a Record: its data
    assert seen.calls == [
        [('docs', (1,), {'id': 1, 'tag': 'a'})],
        [('docs', (2,), {'id': 2})],
        [('docs', (3,), {'id': 3})],
        [('docs', (40,), {'id': 4})],
        [('docs', (1,), {'id': 1, 'tag': 'b'})],
    ]
    assert coll.get(40) == {'id': 4} and coll.indices['tag'].get('b') == {'id': 1, 'tag': 'b'}


def test_mapping_writes_report(store, coll, seen):
    coll[7] = {'id': 7}
    del coll[7]
    with pytest.raises(KeyError):
        del coll[7]
    assert seen.calls == [[('docs', (7,), {'id': 7})], [('docs', (7,), None)]]


def test_delete_reports_only_records_that_existed(store, coll, seen):
    coll.put({'id': 1})
    assert coll.delete(1) is not None
    assert coll.delete(1) is None                   # nothing to delete: no call
    rec = coll.put({'id': 2})
    coll.delete(rec)
    assert seen.flat == [('docs', (1,), {'id': 1}), ('docs', (1,), None),
                         ('docs', (2,), {'id': 2}), ('docs', (2,), None)]


@pytest.mark.parametrize('kind', ['key_func', 'auto', 'txn_key_func', 'json', 'records'])
def test_put_many_reports_each_record_in_order(store, kind):
    if kind == 'auto':
        coll = store.collection('docs')
    elif kind == 'txn_key_func':
        coll = store.collection('docs', txn_key_func=lambda txn, rec: rec['id'])
    elif kind == 'json':
        coll = store.collection('docs', key_func=by_id, encoder=make_json_encoder())
    else:
        coll = store.collection('docs', key_func=by_id)
    coll.add_index('tag', tag_of)
    seen = store.on_commit(Recorder())
    recs = [{'id': 3, 'tag': 'x'}, {'id': 1}, {'id': 2, 'tag': 'y'}, {'id': 3}]
    if kind == 'records':
        recs = [centidb.Record(coll, rec) for rec in recs]
    keys = coll.put_many(recs)
    values = [rec.data if kind == 'records' else rec for rec in recs]
    assert seen.calls == [[('docs', key, value) for key, value in zip(keys, values)]]
    if kind == 'auto':
        assert keys == [(1,), (2,), (3,), (4,)]


def test_delete_many_reports_the_records_deleted(store, coll, seen):
    coll.put_many([{'id': 1}, {'id': 2}, {'id': 3}])
    coll.delete_many([3, 9, 1, 3])
    assert seen.calls[1:] == [[('docs', (3,), None), ('docs', (1,), None)]]
    coll.delete_many([9])                           # deletes nothing: no call
    assert len(seen.calls) == 2


def test_batched_collection_reports_and_batch_does_not(store, coll, seen):
    coll.put_many([{'id': n} for n in range(5)])
    assert coll.batch()[1] == 1
    coll.put({'id': 2, 'tag': 'new'})               # into a batch
    coll.delete(3)                                  # out of a batch
    coll.delete_many([0, 4])
    assert seen.calls[1:] == [[('docs', (2,), {'id': 2, 'tag': 'new'})],
                              [('docs', (3,), None)],
                              [('docs', (0,), None), ('docs', (4,), None)]]


def test_metadata_changes_report_nothing(store, coll, seen):
    coll.put({'id': 1, 'tag': 'a'})
    del seen.calls[:]
    coll.add_index('id', by_id)
    coll.reindex('id')
    coll.drop_index('id')
    store.counter('n', 5)
    store.collection('fresh')
    store.rename_collection('fresh', 'renamed')
    store.drop_collection('docs')
    assert seen.calls == []


def test_auto_increment_keys_are_reported():
    store, log = auto_store()
    seen = store.on_commit(Recorder())
    log.put('a')
    log.put('b', key=10)
    log.put('c')
    assert seen.flat == [('log', (1,), 'a'), ('log', (10,), 'b'), ('log', (11,), 'c')]


# --- once per transaction, in order -----------------------------------------

def test_a_transaction_reports_once_with_every_change_in_order(store, coll, seen):
    other = store.collection('other')
    with store.begin(write=True) as txn:
        coll.put({'id': 1}, txn=txn)
        other.put('x')                              # joins txn
        coll.put_many([{'id': 2}, {'id': 1, 'tag': 'b'}])
        coll[5] = {'id': 5}
        coll.delete(2)
        coll.delete_many([5, 6])
        assert seen.calls == []                     # not before the commit
    assert seen.calls == [[
        ('docs', (1,), {'id': 1}), ('other', (1,), 'x'), ('docs', (2,), {'id': 2}),
        ('docs', (1,), {'id': 1, 'tag': 'b'}), ('docs', (5,), {'id': 5}),
        ('docs', (2,), None), ('docs', (5,), None),
    ]]


def test_explicit_commit_reports(store, coll, seen):
    txn = store.begin(write=True)
    coll.put({'id': 1}, txn=txn)
    txn.commit()
    assert seen.calls == [[('docs', (1,), {'id': 1})]]


def test_each_hook_gets_its_own_list(store, coll):
    got = []
    store.on_commit(lambda changes: (got.append(changes), changes.clear()))
    store.on_commit(got.append)
    coll.put({'id': 1})
    assert got[0] is not got[1]
    assert got[1] == [centidb.Change('docs', (1,), {'id': 1})]


def test_a_hook_registered_inside_a_transaction_sees_later_writes(store, coll):
    seen = Recorder()
    with store.begin(write=True):
        coll.put({'id': 1})
        store.on_commit(seen)
        coll.put({'id': 2})
    assert seen.calls == [[('docs', (2,), {'id': 2})]]


# --- nothing to report --------------------------------------------------------

def test_aborted_transactions_report_nothing(store, coll, seen):
    with pytest.raises(Boom):
        with store.begin(write=True):
            coll.put({'id': 1})
            raise Boom('abort')
    txn = store.begin(write=True)
    coll.put({'id': 2}, txn=txn)
    txn.abort()
    with store.begin(write=True) as txn:
        coll.put({'id': 3}, txn=txn)
        txn.abort()
    assert seen.calls == [] and len(coll) == 0
    coll.put({'id': 4})                             # the aborted ones never leak in
    assert seen.calls == [[('docs', (4,), {'id': 4})]]


def test_transactions_without_changes_report_nothing(store, coll, seen):
    with store.begin(write=True):
        coll.delete(1)
        coll.delete_many([1, 2])
        store.counter('n')
    with store.begin() as txn:
        coll.get(1, txn=txn)
    assert seen.calls == []


def test_a_failed_put_many_is_not_reported(store, coll, seen):
    def tag(rec):
        if rec.get('bad'):
            raise Boom('index function')
        return rec.get('tag')

    coll.add_index('checked', tag)
    fails_cleanly(store, Boom, lambda: coll.put_many([{'id': 1}, {'id': 2, 'bad': 1}]))
    assert seen.calls == []
    with store.begin(write=True):
        coll.put({'id': 3})
        with pytest.raises(Boom):
            coll.put_many([{'id': 4}, {'id': 5}, {'id': 6, 'bad': 1}])
        coll.put({'id': 7})
    assert seen.calls == [[('docs', (3,), {'id': 3}), ('docs', (7,), {'id': 7})]]
    assert list(coll.keys()) == [(3,), (7,)]


def test_a_failed_put_is_not_reported(store, coll, seen):
    with store.begin(write=True):
        coll.put({'id': 1})
        with pytest.raises(centidb.errors.UnsupportedKeyTypeError):
            coll.put({'id': 2, 'tag': {'a dict': 'is no key'}})
    assert seen.calls == [[('docs', (1,), {'id': 1})]]


# --- exceptions from hooks ----------------------------------------------------

def failing(changes):
    raise Boom('hook')


@pytest.mark.parametrize('how', ['with', 'commit', 'put', 'put_many', 'setitem', 'delete',
                                 'delete_many'])
def test_a_hook_exception_propagates_after_a_durable_commit(store, coll, how):
    coll.put({'id': 0})
    store.on_commit(failing)
    with pytest.raises(Boom, match='hook'):
        if how == 'with':
            with store.begin(write=True) as txn:
                coll.put({'id': 1}, txn=txn)
        elif how == 'commit':
            txn = store.begin(write=True)
            coll.put({'id': 1}, txn=txn)
            txn.commit()
        elif how == 'put':
            coll.put({'id': 1})
        elif how == 'put_many':
            coll.put_many([{'id': 1}])
        elif how == 'setitem':
            coll[1] = {'id': 1}
        elif how == 'delete':
            coll.delete(0)
        else:
            coll.delete_many([0])
    store.remove_hook(failing)
    if how.startswith('delete'):
        assert 0 not in coll
    else:
        assert coll.get(1) == {'id': 1}
    # The transaction ended: this thread may begin another.
    with store.begin(write=True) as txn:
        coll.put({'id': 2}, txn=txn)
    assert len(coll) == (1 if how.startswith('delete') else 3)


def test_a_commit_a_hook_failed_after_survives_reopening(reopen):
    store = reopen()
    coll = store.collection('docs', key_func=by_id)
    store.on_commit(failing)
    with pytest.raises(Boom):
        with store.begin(write=True):
            coll.put_many([{'id': 1}, {'id': 2}])
            coll.delete(1)
    store.close()
    store = reopen()
    try:
        assert list(store.collection('docs').items()) == [((2,), {'id': 2})]
    finally:
        store.close()


def test_every_hook_runs_and_the_first_exception_is_raised(store, coll):
    order = []

    def first(changes):
        order.append('first')
        raise Boom('first')

    def second(changes):
        order.append('second')
        raise KeyError('second')

    store.on_commit(first)
    store.on_commit(second)
    store.on_commit(lambda changes: order.append('third'))
    with pytest.raises(Boom, match='first') as info:
        coll.put({'id': 1})
    assert order == ['first', 'second', 'third']
    if sys.version_info >= (3, 11):
        assert any('KeyError' in note for note in info.value.__notes__)
    assert coll.get(1) == {'id': 1}


def test_a_hook_may_write_in_a_transaction_of_its_own(store, coll):
    log = store.collection('log')
    seen = []

    @store.on_commit
    def audit(changes):
        seen.append(changes)
        if changes[0].collection == 'docs':
            log.put_many([f'{change.key}' for change in changes])

    coll.put_many([{'id': 1}, {'id': 2}])
    assert list(log.values()) == ['(1,)', '(2,)']
    assert [[change.collection for change in call] for call in seen] == [
        ['docs', 'docs'], ['log', 'log']]


# --- before_write ---------------------------------------------------------------

def test_before_write_sees_every_write_in_its_transaction(store, coll):
    calls = []

    @coll.before_write
    def check(key, value):
        # Runs in the write transaction: a read joins it and sees the old record.
        calls.append((key, value, coll.get(key)))

    assert check is not None
    coll.put({'id': 1})
    coll.put({'id': 1, 'tag': 'b'})
    coll.put_many([{'id': 2}])
    coll[3] = {'id': 3}
    coll.delete(1)
    coll.delete(9)                                  # missing: not called
    coll.delete_many([2, 3, 9])
    assert calls == [
        ((1,), {'id': 1}, None), ((1,), {'id': 1, 'tag': 'b'}, {'id': 1}),
        ((2,), {'id': 2}, None), ((3,), {'id': 3}, None),
        ((1,), None, {'id': 1, 'tag': 'b'}),
        ((2,), None, {'id': 2}), ((3,), None, {'id': 3}),
    ]
    coll.remove_hook(check)
    coll.put({'id': 4})
    assert len(calls) == 7


def refuse_odd(key, value):
    if key[0] % 2:
        raise Boom(f'odd key {key}')


def test_before_write_refusing_a_put_writes_nothing(store, coll):
    coll.put({'id': 2, 'tag': 'x'})
    coll.before_write(refuse_odd)
    fails_cleanly(store, Boom, lambda: coll.put({'id': 1, 'tag': 'y'}), match='odd')
    fails_cleanly(store, Boom, lambda: coll.put_many([{'id': 4}, {'id': 5}, {'id': 6}]))
    coll.put({'id': 2, 'tag': 'z'})
    assert coll.indices['tag'].get('z') == {'id': 2, 'tag': 'z'}


def test_before_write_refusing_a_delete_writes_nothing(store, coll):
    coll.put_many([{'id': 1}, {'id': 2}])

    def keep_one(key, value):
        if value is None and key == (1,):
            raise Boom('keep 1')

    coll.before_write(keep_one)
    fails_cleanly(store, Boom, lambda: coll.delete(1))
    fails_cleanly(store, Boom, lambda: coll.delete_many([2, 1]))
    with pytest.raises(Boom):
        del coll[1]
    coll.delete(2)
    assert list(coll.keys()) == [(1,)]


def test_before_write_refusal_inside_a_transaction_reports_nothing_of_it(store, coll, seen):
    coll.before_write(refuse_odd)
    with store.begin(write=True) as txn:
        coll.put({'id': 2}, txn=txn)
        with pytest.raises(Boom):
            coll.put({'id': 3}, txn=txn)
        with pytest.raises(Boom):
            coll.put_many([{'id': 4}, {'id': 5}], txn=txn)
        coll.put({'id': 6}, txn=txn)
    assert seen.calls == [[('docs', (2,), {'id': 2}), ('docs', (6,), {'id': 6})]]
    assert list(coll.keys()) == [(2,), (6,)]


def test_before_write_hooks_are_per_collection(store, coll):
    other = store.collection('other', key_func=by_id)
    coll.before_write(refuse_odd)
    other.put({'id': 1})
    with pytest.raises(Boom):
        coll.put({'id': 1})


def test_before_write_auto_increment_refusal_keeps_the_counter():
    store, log = auto_store()
    log.before_write(lambda key, value: refuse_odd((key[0] + 1,), value))
    log.put('one')
    with pytest.raises(Boom):
        log.put('two')
    assert store.counter('log:key', 0) == 2
    assert list(log.items()) == [((1,), 'one')]


# --- the general path writes what the fast path writes --------------------------

@pytest.mark.parametrize('hooks', [('on_commit',), ('before_write',),
                                   ('on_commit', 'before_write')])
def test_hooks_leave_the_same_engine_bytes(hooks):
    def workload(store, hooked):
        coll = store.collection('docs', key_func=by_id)
        coll.add_index('tag', tag_of)
        if 'on_commit' in hooked:
            store.on_commit(Recorder())
        if 'before_write' in hooked:
            coll.before_write(lambda key, value: None)
        coll.put({'id': 1, 'tag': 'a'})
        coll.put({'id': 1, 'tag': 'b'})
        coll.put_many([{'id': n, 'tag': str(n % 3)} for n in range(10)])
        coll.put_many([{'id': 5, 'tag': 'z'}], blind=True)
        coll.delete(3)
        coll.delete_many([4, 6])
        return contents(store)

    assert workload(list_store(), hooks) == workload(list_store(), ())


# --- threads ----------------------------------------------------------------------

def test_two_threads_each_report_their_own_transactions(store, coll):
    calls = []
    lock = threading.Lock()

    @store.on_commit
    def record(changes):
        with lock:
            calls.append((threading.current_thread().name, changes))

    def writer(base):
        for n in range(base, base + 20):
            with store.begin(write=True):
                coll.put({'id': n})
                coll.put({'id': n, 'tag': 'again'})

    threads = [threading.Thread(target=writer, args=(base,)) for base in (0, 100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 40
    for _, changes in calls:
        assert [change.key for change in changes] == [changes[0].key] * 2
        assert changes[1].value == {'id': changes[0].key[0], 'tag': 'again'}
    by_thread = {}
    for name, changes in calls:
        by_thread.setdefault(name, []).append(changes[0].key[0])
    assert sorted(map(sorted, by_thread.values())) == [list(range(20)),
                                                      list(range(100, 120))]
