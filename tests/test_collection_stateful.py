"""Stateful test: a collection and two indexes against a plain dict model.

A hypothesis state machine puts, blind-puts and deletes records (also inside
committed and aborted transactions, and with index functions that raise),
then checks every read method of the collection and its indexes against a
dict. Keys, tags and index values come from small pools, so updates,
collisions and shared index entries are frequent. Expected orders are
computed with ``keylib.packs``; prefix queries with ``keylib.prefix_range``.
The machine runs once per engine.
"""

import shutil
import tempfile
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine, invariant, precondition, rule,
)

import centidb
from centidb import encodings, keylib

import keyorder

# Strings that are prefixes of one another exercise prefix queries.
KEYS = [(s, n) for s in ('', 'a', 'ab', 'b') for n in (-1, 0, 1)]
MISSING_KEY = ('a', 7)
TAGS = ['', 'x', 'xy', 'y']
VALUES = [-1, 0, 2, 'z']

keys = st.sampled_from(KEYS)
tag_lists = st.one_of(st.none(), st.lists(st.sampled_from(TAGS), max_size=4))
values = st.sampled_from(VALUES)

COLL_BOUNDS = [None, (), '', 0, 'a', ('a',), ('a', 0), ('ab', -1), 'b',
               ('b', 1), 'c']
COLL_PREFIXES = [None, (), '', 'a', ('a',), ('a', 0), ('ab',), 'b', ('b', 1),
                 0]
COLL_STARTS = [None, '', 'a', ('a',), ('ab',), ('a', 'b')]
INDEX_STARTS = [None, '', 'x', ('x',), 'y']
INDEX_BOUNDS = [None, (), '', 'x', ('x',), 'xy', ('y',), -1, 0, (2,), 'z',
                ('z', 0)]
INDEX_PREFIXES = [None, (), '', 'x', ('x',), 'y', 0, (2,), 'z']
INDEX_TUPLES = sorted({(t,) for t in TAGS} | {(v,) for v in VALUES}
                      | {('q',)}, key=keylib.packs)


class Boom(Exception):
    """Raised by the tags index function for records marked ``boom``."""


def tags_of(rec):
    if rec.get('boom'):
        raise Boom('index function failed')
    return rec['tags']


def value_of(rec):
    return rec['v']


def key_of(rec):
    return (rec['s'], rec['n'])


def make_record(key, tags, value, boom=False):
    rec = {'s': key[0], 'n': key[1], 'tags': tags, 'v': value}
    if boom:
        rec['boom'] = True
    return rec


def as_key(value):
    return value if type(value) is tuple else (value,)


def model_entries(model, func):
    """The set of (index tuple, key) pairs `func` gives for the model."""
    entries = set()
    for key, rec in model.items():
        result = func(rec)
        if result is None:
            continue
        for item in (result if type(result) is list else [result]):
            entries.add((as_key(item), key))
    return entries


def matches(packed, lo, hi, prefix, include, startswith=None, key=None):
    """Whether a packed key (or index tuple) passes the query bounds.

    `prefix` and `startswith` are checked on the decoded `key` with the
    reference model in ``keyorder``, not with the codec's ranges.
    """
    if lo is not None and packed < keylib.packs(as_key(lo)):
        return False
    if hi is not None:
        bound = keylib.packs(as_key(hi))
        if packed > bound or (packed == bound and not include):
            return False
    if key is None:
        key = keylib.unpacks(packed)
    if prefix is not None and not keyorder.has_prefix(key, as_key(prefix)):
        return False
    if startswith is not None and not keyorder.starts_with(key, as_key(startswith)):
        return False
    return True


def apply_query(items, packed_of, sort_key, lo, hi, prefix, reverse, max,
                include, startswith=None):
    chosen = [item for item in items
              if matches(packed_of(item), lo, hi, prefix, include, startswith)]
    chosen.sort(key=sort_key, reverse=reverse)
    return chosen if max is None else chosen[:max]


def group_counts(keys, size):
    """The model of ``group_counts()``: runs of equal leading elements."""
    groups = []
    for key in keys:
        group = tuple(key[:size])
        if groups and groups[-1][0] == group:
            groups[-1] = (group, groups[-1][1] + 1)
        else:
            groups.append((group, 1))
    return groups


def entry_order(pair):
    return keylib.packs([pair[0], pair[1]])


ENGINE_OPTIONS = {
    'ListEngine': lambda directory: {},
    'PlyvelEngine': lambda directory: {
        'name': str(directory / 'leveldb'), 'create_if_missing': True},
    'LmdbEngine': lambda directory: {
        'path': str(directory / 'lmdb'), 'sync': False},
}


class CollectionMachine(RuleBasedStateMachine):
    ENGINE = None  # set by the per-engine subclasses below

    def __init__(self):
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix='centidb-stateful-'))
        self.store = centidb.open(self.ENGINE,
                                  **ENGINE_OPTIONS[self.ENGINE](self.directory))
        self._open_collections()
        self.model = {}
        # Neighbouring collections (created before and after 'docs', so their
        # prefixes surround it) that batch() must never touch.
        for name, coll in self.neighbours.items():
            for n in range(3):
                coll.put({'n': n, 'of': name})

    def _open_collections(self):
        self.neighbours = {'before': self.store.collection('before', key_func=lambda r: r['n'])}
        self.coll = self.store.collection('docs', key_func=key_of)
        self.neighbours['after'] = self.store.collection('after', key_func=lambda r: r['n'])
        self.tags = self.coll.add_index('tags', tags_of)
        self.value = self.coll.add_index('value', value_of)

    def teardown(self):
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    # --- writes ---------------------------------------------------------------

    @rule(key=keys, tags=tag_lists, value=values)
    def put(self, key, tags, value):
        rec = make_record(key, tags, value)
        stored = self.coll.put(rec)
        assert stored.key == key
        self.model[key] = rec

    @precondition(lambda self: len(self.model) < len(KEYS))
    @rule(data=st.data(), tags=tag_lists, value=values)
    def blind_put_new_key(self, data, tags, value):
        free = [key for key in KEYS if key not in self.model]
        key = data.draw(st.sampled_from(free), label='new key')
        rec = make_record(key, tags, value)
        self.coll.put(rec, blind=True)
        self.model[key] = rec

    @precondition(lambda self: self.model)
    @rule(data=st.data(), tags=tag_lists, value=values)
    def put_record_read_back(self, data, tags, value):
        # A Record from get(rec=True) carries its old index entries, which
        # put() reuses instead of decoding the stored version again.
        key = data.draw(st.sampled_from(sorted(self.model, key=keylib.packs)),
                        label='existing key')
        record = self.coll.get(key, rec=True)
        assert record.key == key and record.data == self.model[key]
        record.data = make_record(key, tags, value)
        stored = self.coll.put(record)
        assert stored.key == key
        self.model[key] = record.data

    @rule(key=st.sampled_from(KEYS + [MISSING_KEY]))
    def delete(self, key):
        deleted = self.coll.delete(key)
        if key in self.model:
            assert deleted is not None and deleted.key == key
            assert deleted.data == self.model.pop(key)
        else:
            assert deleted is None

    @rule(key=keys, value=values)
    def failing_index_function(self, key, value):
        before = list(self.store.engine.items())
        try:
            self.coll.put(make_record(key, ['x'], value, boom=True))
        except Boom:
            pass
        else:
            raise AssertionError('put with a raising index function succeeded')
        assert list(self.store.engine.items()) == before

    ops = st.lists(st.one_of(
        st.tuples(st.just('put'), keys, tag_lists, values, st.booleans()),
        st.tuples(st.just('delete'), keys, st.booleans()),
        st.tuples(st.just('boom'), keys, st.booleans()),
    ), min_size=1, max_size=6)

    def _run_ops(self, txn, ops):
        """Apply `ops` in `txn`; return the model as the txn should see it.

        Each op passes ``txn=`` or joins the open transaction implicitly;
        reads inside the transaction must see its own writes.
        """
        working = dict(self.model)
        for op in ops:
            kind, key, explicit = op[0], op[1], op[-1]
            kwargs = {'txn': txn} if explicit else {}
            if kind == 'put':
                rec = make_record(key, op[2], op[3])
                self.coll.put(rec, **kwargs)
                working[key] = rec
            elif kind == 'delete':
                deleted = self.coll.delete(key, **kwargs)
                assert (deleted is None) == (key not in working)
                working.pop(key, None)
            else:
                try:
                    self.coll.put(make_record(key, [], 0, boom=True), **kwargs)
                except Boom:
                    pass
                else:
                    raise AssertionError('put with a raising index function succeeded')
            assert self.coll.get(key, **kwargs) == working.get(key)
        expected = sorted(working.items(), key=lambda kv: keylib.packs(kv[0]))
        assert list(self.coll.items(txn=txn)) == expected
        assert list(self.coll.items()) == expected  # joins the open txn
        assert self.coll.count(txn=txn) == len(working)
        assert sorted(self.tags.pairs(), key=entry_order) == list(self.tags.pairs())
        assert set(self.tags.pairs(txn=txn)) == model_entries(working, tags_of)
        return working

    @rule(ops=ops, how=st.sampled_from(['abort', 'raise']))
    def aborted_transaction(self, ops, how):
        before = list(self.store.engine.items())
        if how == 'abort':
            txn = self.store.begin(write=True)
            try:
                self._run_ops(txn, ops)
            finally:
                txn.abort()
        else:
            try:
                with self.store.begin(write=True) as txn:
                    self._run_ops(txn, ops)
                    raise Boom('roll back')
            except Boom:
                pass
        assert list(self.store.engine.items()) == before

    @rule(ops=ops)
    def committed_transaction(self, ops):
        with self.store.begin(write=True) as txn:
            working = self._run_ops(txn, ops)
        self.model = working

    # --- queries ----------------------------------------------------------------

    @rule(lo=st.sampled_from(COLL_BOUNDS), hi=st.sampled_from(COLL_BOUNDS),
          prefix=st.sampled_from(COLL_PREFIXES), reverse=st.booleans(),
          max=st.sampled_from([None, 0, 1, 3]), include=st.booleans(),
          startswith=st.sampled_from(COLL_STARTS))
    def query_collection(self, lo, hi, prefix, reverse, max, include, startswith=None):
        query = dict(lo=lo, hi=hi, prefix=prefix, reverse=reverse, max=max,
                     include=include, startswith=startswith)
        expected = apply_query(
            list(self.model.items()), lambda kv: keylib.packs(kv[0]),
            lambda kv: keylib.packs(kv[0]), **query)
        assert list(self.coll.items(**query)) == expected, query
        assert list(self.coll.keys(**query)) == [k for k, _ in expected]
        assert list(self.coll.values(**query)) == [v for _, v in expected]
        assert self.coll.count(**query) == len(expected)
        unlimited = dict(query, max=None)
        everything = [k for k, _ in apply_query(
            list(self.model.items()), lambda kv: keylib.packs(kv[0]),
            lambda kv: keylib.packs(kv[0]), **unlimited)]
        for size in (1, 2, 3):
            groups = group_counts(everything, size)
            assert self.coll.group_counts(size, **query) == groups[:max], (size, query)
        first = apply_query(
            list(self.model.items()), lambda kv: keylib.packs(kv[0]),
            lambda kv: keylib.packs(kv[0]), **unlimited)[:1]
        del unlimited['max']
        assert self.coll.find(**unlimited) == (first[0][1] if first else None)

    @rule(which=st.sampled_from(['tags', 'value']),
          lo=st.sampled_from(INDEX_BOUNDS), hi=st.sampled_from(INDEX_BOUNDS),
          prefix=st.sampled_from(INDEX_PREFIXES), reverse=st.booleans(),
          max=st.sampled_from([None, 0, 1, 3]), include=st.booleans(),
          startswith=st.sampled_from(INDEX_STARTS))
    def query_index(self, which, lo, hi, prefix, reverse, max, include, startswith=None):
        index = self.coll.indices[which]
        func = tags_of if which == 'tags' else value_of
        query = dict(lo=lo, hi=hi, prefix=prefix, reverse=reverse, max=max,
                     include=include, startswith=startswith)
        expected = apply_query(
            list(model_entries(self.model, func)),
            lambda pair: keylib.packs(pair[0]), entry_order, **query)
        assert list(index.pairs(**query)) == expected, query
        assert list(index.tups(**query)) == [t for t, _ in expected]
        assert list(index.keys(**query)) == [k for _, k in expected]
        assert list(index.items(**query)) == [(t, self.model[k]) for t, k in expected]
        assert list(index.values(**query)) == [self.model[k] for _, k in expected]
        assert index.count(**query) == len(expected)
        everything = [t for t, _ in apply_query(
            list(model_entries(self.model, func)),
            lambda pair: keylib.packs(pair[0]), entry_order, **dict(query, max=None))]
        assert index.group_counts(**query) == group_counts(everything, 1)[:max], query

    # --- invariant ------------------------------------------------------------------

    # --- batches and reopening ------------------------------------------------

    @rule(lo=st.sampled_from(COLL_BOUNDS), hi=st.sampled_from(COLL_BOUNDS),
          prefix=st.sampled_from(COLL_PREFIXES),
          max_recs=st.sampled_from([None, 1, 2, 3, 5]),
          max_bytes=st.sampled_from([None, 1, 60, 500]),
          packer=st.sampled_from([p for p in (encodings.ZLIB_PACKER, encodings.PLAIN_PACKER,
                                              encodings.LZ4_PACKER) if p is not None]))
    def batch(self, lo, hi, prefix, max_recs, max_bytes, packer):
        in_range = [key for key in self.model
                    if matches(keylib.packs(key), lo, hi, prefix, False)]
        found, made, last = self.coll.batch(lo=lo, hi=hi, prefix=prefix, max_recs=max_recs,
                                            max_bytes=max_bytes, packer=packer)
        assert found >= len(in_range)
        assert made <= found and (made > 0) == (found > 0)
        if in_range:
            assert keylib.packs(last) >= max(keylib.packs(key) for key in in_range)

    @rule(max_recs=st.sampled_from([None, 2, 3]))
    def batch_everything(self, max_recs):
        found, made, last = self.coll.batch(max_recs=max_recs)
        assert found == len(self.model)
        if self.model:
            assert last == max(self.model, key=keylib.packs)
            assert made == -(-found // (max_recs or found))

    @precondition(lambda self: self.ENGINE != 'ListEngine')
    @rule()
    def reopen(self):
        self.store.close()
        self.store = centidb.open(self.ENGINE, **ENGINE_OPTIONS[self.ENGINE](self.directory))
        self._open_collections()

    @invariant()
    def neighbours_untouched(self):
        for name, coll in self.neighbours.items():
            assert list(coll.items()) == [((n,), {'n': n, 'of': name}) for n in range(3)]

    @invariant()
    def matches_model(self):
        expected = sorted(self.model.items(), key=lambda kv: keylib.packs(kv[0]))
        assert list(self.coll.items()) == expected
        assert list(self.coll.items(reverse=True)) == expected[::-1]
        assert len(self.coll) == len(self.model)
        for key, rec in self.model.items():
            assert self.coll.get(key) == rec
        assert self.coll.get(MISSING_KEY) is None
        assert self.coll.get(MISSING_KEY, default='nothing') == 'nothing'
        for index, func in ((self.tags, tags_of), (self.value, value_of)):
            pairs = sorted(model_entries(self.model, func), key=entry_order)
            assert list(index.pairs()) == pairs
            assert list(index.pairs(reverse=True)) == pairs[::-1]
            assert list(index.values()) == [self.model[k] for _, k in pairs]
            assert index.count() == len(pairs)
            for tup in INDEX_TUPLES:
                hits = [k for t, k in pairs if t == tup]
                assert index.has(tup) == bool(hits), tup
                assert index.count(lo=tup, hi=tup, include=True) == len(hits)
                assert index.get(tup) == (self.model[hits[0]] if hits else None)
        # A few fixed range queries; query_* rules draw random ones.
        self.query_collection(lo=('a',), hi=('b',), prefix=None, reverse=False,
                              max=None, include=False)
        self.query_collection(lo=None, hi=('ab', 0), prefix='a', reverse=True,
                              max=None, include=True)
        self.query_index('tags', lo='x', hi='y', prefix=None, reverse=False,
                         max=None, include=True)
        self.query_index('value', lo=None, hi=None, prefix=None, reverse=True,
                         max=2, include=False)


MACHINE_SETTINGS = settings(
    max_examples=30, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])


def machine_test_case(engine_name):
    """A unittest TestCase running the machine on a fresh `engine_name` store."""
    machine = type(f'CollectionMachine{engine_name}', (CollectionMachine,),
                   {'ENGINE': engine_name})
    case = machine.TestCase
    case.settings = MACHINE_SETTINGS
    return case


TestListEngine = machine_test_case('ListEngine')
TestPlyvelEngine = machine_test_case('PlyvelEngine')
TestLmdbEngine = machine_test_case('LmdbEngine')
