"""centidb.where: where() queries, their plans, and what they return, on every engine.

The differential test checks every query against a brute-force oracle written
here from the documented rules (not from centidb.expr): the codec's order is
``keylib.packs`` of a 1-tuple, a missing field fails every comparison, ``~``
is plain negation.
"""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import centidb
from centidb import F, keylib
from centidb.engines.wrappers import TraceEngine
from centidb.errors import UniqueError

from stores import fails_cleanly

# --- the oracle -----------------------------------------------------------------------------

MISSING = object()


def lookup(record, path):
    value = record
    for part in path.split('.'):
        if type(value) is not dict or part not in value:
            return MISSING
        value = value[part]
    return value


def packed(value):
    try:
        return keylib.packs((value,))
    except (TypeError, ValueError):
        return None


def holds(node, record):
    """The oracle: does `record` meet the expression tree `node`?"""
    kind = node[0]
    if kind == 'and':
        return holds(node[1], record) and holds(node[2], record)
    if kind == 'or':
        return holds(node[1], record) or holds(node[2], record)
    if kind == 'not':
        return not holds(node[1], record)
    value = lookup(record, node[1])
    if kind == 'exists':
        return value is not MISSING
    if value is MISSING:
        return False
    if kind == 'contains':
        return type(value) is list and any(packed(v) == packed(node[2]) for v in value)
    if kind == 'startswith':
        return type(value) is str and value.startswith(node[2])
    mine = packed(value)
    if mine is None:
        return False
    if kind == 'in':
        return mine in {packed(v) for v in node[2]}
    if kind == 'between':
        return packed(node[2]) <= mine <= packed(node[3])
    other = packed(node[3])
    return {'==': mine == other, '!=': mine != other, '<': mine < other,
            '<=': mine <= other, '>': mine > other, '>=': mine >= other}[node[2]]


def build(node):
    """The F() expression of the tree `node`."""
    kind = node[0]
    if kind == 'and':
        return build(node[1]) & build(node[2])
    if kind == 'or':
        return build(node[1]) | build(node[2])
    if kind == 'not':
        return ~build(node[1])
    field = F(node[1])
    if kind == 'exists':
        return field.exists()
    if kind == 'contains':
        return field.contains(node[2])
    if kind == 'startswith':
        return field.startswith(node[2])
    if kind == 'in':
        return field.is_in(node[2])
    if kind == 'between':
        return field.between(node[2], node[3])
    return {'==': field.__eq__, '!=': field.__ne__, '<': field.__lt__, '<=': field.__le__,
            '>': field.__gt__, '>=': field.__ge__}[node[2]](node[3])


def oracle_order(items, order, reverse):
    """Sort ``(key, value)`` items as order_by documents it."""
    def field_key(item):
        out = []
        for path in order:
            value = lookup(item[1], path)
            if value is MISSING:
                out.append((0, b''))
            else:
                p = packed(value)
                out.append((2, b'') if p is None else (1, p))
        return out
    items = sorted(items, key=lambda item: keylib.packs(item[0]))
    return sorted(items, key=field_key, reverse=reverse) if order else items


# --- generators -------------------------------------------------------------------------

FIELDS = ['a', 'b', 'c', 'n.x', 'tags']
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, -1.0, 2.0]),
                    st.sampled_from(['', 'x', 'xy', 'y']), st.sampled_from([b'', b'x']))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3))


@st.composite
def records(draw):
    record = {}
    for name in ('a', 'b', 'c', 'tags'):
        if draw(st.booleans()):
            record[name] = draw(VALUES)
    nested = draw(st.sampled_from(['missing', 'dict', 'scalar']))
    if nested == 'dict':
        record['n'] = {'x': draw(VALUES)} if draw(st.booleans()) else {}
    elif nested == 'scalar':
        record['n'] = draw(SCALARS)
    return record


def leaves():
    field = st.sampled_from(FIELDS)
    return st.one_of(
        st.tuples(st.just('cmp'), field, st.just('=='), SCALARS),     # equalities, often
        st.tuples(st.just('cmp'), field, st.sampled_from(['==', '!=', '<', '<=', '>', '>=']),
                  SCALARS),
        st.tuples(st.just('between'), field, SCALARS, SCALARS),
        st.tuples(st.just('in'), field, st.lists(SCALARS, max_size=3)),
        st.tuples(st.just('startswith'), field, st.sampled_from(['', 'x', 'xy'])),
        st.tuples(st.just('contains'), field, SCALARS),
        st.tuples(st.just('exists'), field))


def trees(depth=4):
    if depth == 1:
        return leaves()
    sub = trees(depth - 1)
    return st.one_of(leaves(), st.tuples(st.just('and'), sub, sub),
                     st.tuples(st.just('or'), sub, sub), st.tuples(st.just('not'), sub))


def plannable():
    """Flat conjunctions and disjunctions of leaves: the shapes plans use indexes for."""
    def joined(kind, parts):
        tree = parts[0]
        for part in parts[1:]:
            tree = (kind, tree, part)
        return tree
    return st.one_of(st.lists(leaves(), min_size=1, max_size=3).map(lambda p: joined('and', p)),
                     st.lists(leaves(), min_size=2, max_size=3).map(lambda p: joined('or', p)))


INDEXES = st.one_of(
    st.lists(st.sampled_from([('a',), ('b',), ('tags',), ('n.x',), ('a', 'b'), ('b', 'c'),
                              ('c', 'a', 'n.x')]), max_size=4, unique=True),
    st.just([(field,) for field in FIELDS] + [('a', 'b')]))    # every field: plans vary most


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_every_query_returns_what_a_brute_force_filter_returns(store, data):
    name = f'c{next(NAMES)}'
    coll = store.collection(name, key_func=lambda r: r['id'])
    txn = None
    try:
        for at, fields in enumerate(data.draw(INDEXES)):
            coll.add_index(f'i{at}', fields=fields)
        coll.add_index('id', fields='id', unique=True)
        model = {}
        for step in range(data.draw(st.integers(1, 3))):
            batch = data.draw(st.lists(records(), max_size=12))
            txn = store.begin(write=True) if data.draw(st.booleans()) else None
            for record in batch:
                record['id'] = data.draw(st.integers(0, 15))
                coll.put(record, txn=txn)
                model[(record['id'],)] = record
            for key in data.draw(st.lists(st.integers(0, 15), max_size=2)):
                coll.delete(key, txn=txn)
                model.pop((key,), None)
            tree = data.draw(st.one_of(trees(), plannable()))
            order = data.draw(st.lists(st.sampled_from(FIELDS), max_size=2, unique=True))
            if order and data.draw(st.booleans()):
                # A condition every scalar meets: the order's index may be walked.
                for path in order:
                    tree = ('and', tree, ('cmp', path, '>=', None))
            reverse = data.draw(st.booleans())
            offset = data.draw(st.integers(0, 3))
            limit = data.draw(st.one_of(st.none(), st.integers(0, 5)))
            query = coll.where(build(tree))
            if order:
                query = query.order_by(order, reverse=reverse)
            query = query.offset(offset).limit(limit)
            expected = oracle_order([(k, v) for k, v in model.items() if holds(tree, v)],
                                    order, reverse)
            expected = expected[offset:None if limit is None else offset + limit]
            assert query.items(txn=txn) == expected, query.explain()
            assert query.count(txn=txn) == len(expected)
            if txn is not None:
                txn.commit()
                txn = None
    finally:
        if txn is not None:
            txn.abort()
        store.drop_collection(name)


NAMES = itertools.count()


# --- plans ------------------------------------------------------------------------------------

def people(store):
    coll = store.collection('people', key_func=lambda r: r['id'])
    coll.put_many([{'id': i, 'city': ['Leeds', 'York', 'Bath'][i % 3], 'age': 20 + i % 7,
                    'tags': ['red'] if i % 2 else ['blue', 'red']} for i in range(30)])
    coll.add_index('city', fields='city')
    coll.add_index('age', fields='age')
    coll.add_index('city_age', fields=('city', 'age'))
    coll.add_index('tags', fields='tags')
    coll.add_index('id', fields='id', unique=True)
    return coll


def test_explain_names_the_index_its_bounds_the_filter_and_the_sort(store):
    coll = people(store)
    assert coll.where(F('city') == 'Leeds', F('age') >= 24).explain() == '\n'.join([
        "read index 'city_age' (city, age): city == 'Leeds' and age >= 24",
        'read the candidate records in key order',
        "filter: (F('city') == 'Leeds') & (F('age') >= 24)",
        'order: record key (no sort)'])
    assert coll.where(city='Bath', id=3).explain().splitlines()[0] == (
        "read index 'id' (id, unique): id == 3")
    assert coll.where(F('tags').contains('blue'), F('age') == 21).explain().splitlines()[:3] == [
        'intersect, in record key order:',
        "  index 'age' (age): age == 21",
        "  index 'tags' (tags): tags == 'blue'"]
    text = coll.where((F('city') == 'Bath') | F('age').is_in([20, 21])).order_by(
        'age', reverse=True).limit(3).offset(1).explain()
    assert text.splitlines() == [
        'union, each record once:',
        "  index 'city' (city): city == 'Bath'",
        "  index 'age' (age): age in [20, 21]",
        'read the candidate records in key order',
        "filter: (F('city') == 'Bath') | F('age').is_in([20, 21])",
        'sort by age descending (ties in key order), keeping the first 4']
    assert coll.where(F('name').exists()).explain().splitlines()[0] == (
        'scan the collection in key order')
    assert coll.where(F('city').startswith('Le')).explain().splitlines()[0] == (
        "read index 'city' (city): city startswith 'Le'")
    assert coll.where().explain().splitlines()[:2] == [
        'scan the collection in key order', 'filter: none (every record)']


def test_the_plan_reads_only_the_matching_entries_and_records():
    """100,000 records, 10 of them in Leeds: the query reads 10 entries and 10 records."""
    engine = TraceEngine(centidb.engines.get_engine_class('ListEngine')())
    store = centidb.Store(engine)
    coll = store.collection('people', key_func=lambda r: r['id'])
    coll.add_index('city', fields='city')
    with store.begin(write=True) as txn:
        coll.put_many(({'id': i, 'city': 'Leeds' if i % 10_000 == 7 else f'town{i % 97}'}
                       for i in range(100_000)), txn=txn)
    query = coll.where(city='Leeds')
    engine.calls.clear()
    assert query.keys() == [(i * 10_000 + 7,) for i in range(10)]
    names = [name for name, _ in engine.calls]
    assert names == ['begin', 'txn.keys', 'txn.get_many', 'txn.commit'], names
    index = coll.indices['city']
    lo, hi = engine.calls[1][1][:2]
    # One range read: exactly the 'Leeds' entries, then the 10 records in one call.
    entries = [key for key in store.engine.keys() if key.startswith(index.prefix)]
    assert len([key for key in entries if lo <= key < hi]) == 10
    assert len(engine.calls[2][1][0]) == 10
    store.close()


# --- terminal calls, bad input, transactions ---------------------------------------------

def test_terminal_calls(store):
    coll = people(store)
    leeds = coll.where(city='Leeds')
    assert leeds.keys() == [(i,) for i in range(0, 30, 3)]
    assert [p['id'] for p in leeds] == list(range(0, 30, 3))
    assert leeds.values() == [coll.get(i) for i in range(0, 30, 3)]
    assert leeds.items()[0] == ((0,), coll.get(0))
    assert leeds.first()['id'] == 0 and coll.where(city='Hull').first('none') == 'none'
    assert leeds.count() == 10 and leeds.limit(3).count() == 3 and leeds.offset(8).count() == 2
    assert leeds.offset(2).limit(2).keys() == [(6,), (9,)]
    assert leeds.limit(0).keys() == [] and leeds.limit(None).count() == 10
    assert coll.where(F('age') > 24).order_by('age').limit(2).first()['age'] == 25
    by_age = coll.where(F('age').between(21, 22)).order_by(['age', 'city'], reverse=True)
    assert [(p['age'], p['city'], p['id']) for p in by_age][:3] == [
        (22, 'York', 16), (22, 'Leeds', 9), (22, 'Bath', 2)]
    assert coll.where().count() == 30
    assert repr(leeds) == "<WhereQuery 'people': F('city') == 'Leeds'>"


def test_where_reads_in_the_transaction_given(store):
    coll = people(store)
    with store.begin(write=True) as txn:
        coll.put({'id': 100, 'city': 'Leeds', 'age': 90, 'tags': []}, txn=txn)
        assert coll.where(F('age') == 90).keys(txn=txn) == [(100,)]
        read = store.begin()
        assert coll.where(F('age') == 90).keys(txn=read) == []
        read.abort()
        assert coll.where(city='Leeds').count(txn=txn) == 11
        txn.abort()
    assert coll.where(F('age') == 90).keys() == []


def test_delete_deletes_every_match_or_none(store):
    coll = people(store)
    assert coll.where(city='York', age=21).delete() == 2      # ids 1 and 22
    assert coll.where(city='York').count() == 8 and coll.get(1) is coll.get(22) is None
    seen = []

    @coll.before_write
    def refuse_the_third(key, value):
        seen.append(key)
        if len(seen) == 3:
            raise ValueError('the third delete is refused')

    fails_cleanly(store, ValueError, lambda: coll.where(city='Bath').delete(), 'third')
    assert coll.where(city='Bath').count() == 10
    coll.remove_hook(refuse_the_third)
    with store.begin(write=True) as txn:
        assert coll.where(city='Bath').delete(txn=txn) == 10
        txn.abort()
    assert coll.where(city='Bath').count() == 10


@pytest.mark.parametrize('make, error, words', [
    (lambda coll: coll.where(F('') == 1), ValueError, 'empty part'),
    (lambda coll: coll.where(F('a') == [1]), TypeError, 'cannot be compared'),
    (lambda coll: coll.where(city=object()), TypeError, 'cannot be compared'),
    (lambda coll: coll.where('city'), TypeError, "where\\(\\) takes expressions .*, not 'str'"),
    (lambda coll: coll.where(True), TypeError, "not 'bool'"),
    (lambda coll: coll.where().limit(-1), ValueError, 'limit must not be negative'),
    (lambda coll: coll.where().limit(1.5), TypeError, 'limit must be an int or None'),
    (lambda coll: coll.where().offset(None), TypeError, 'offset must be an int'),
    (lambda coll: coll.where().order_by(''), ValueError, 'empty part'),
    (lambda coll: coll.where().order_by([3]), TypeError, "not 'int'"),
])
def test_bad_queries_name_what_is_wrong(store, make, error, words):
    coll = people(store)
    fails_cleanly(store, error, lambda: make(coll), words)


def test_a_read_only_store_is_queried_as_any_read(tmp_path):
    path = str(tmp_path / 'db.lmdb')
    with centidb.open('LmdbEngine', path=path) as store:
        people(store)
    with centidb.open('LmdbEngine', path=path, readonly=True) as store:
        coll = store.collection('people')
        assert coll.where(city='Leeds').count() == 10
        with pytest.raises(centidb.errors.CentiError):
            coll.where(city='Leeds').delete()
        assert coll.where(city='Leeds').count() == 10


def test_a_unique_field_index_answers_where_as_any_other(store):
    coll = people(store)
    with pytest.raises(UniqueError):
        coll.put({'id': 5, 'city': 'Ely', 'age': 1, 'tags': []}, key=(500,))
    assert coll.where(id=5).keys() == [(5,)]


def test_model_where_gives_instances(store):
    class Person(centidb.Model, collection='persons', key='name'):
        name: str
        city: str
        age: int = 0
        by_city = centidb.index_on('city')

    Person.bind(store)
    Person.put_many([Person(name='ann', city='Leeds', age=41), Person(name='bob', city='York'),
                     Person(name='cy', city='Leeds', age=29)])
    found = Person.where(F('age') > 20, city='Leeds').order_by('age')
    assert [(p.name, p.age) for p in found] == [('cy', 29), ('ann', 41)]
    assert found.first().name == 'cy' and found.count() == 2
    assert [key for key, _ in found.items()] == [('cy',), ('ann',)]


def test_an_order_by_on_an_index_walks_it_instead_of_sorting(store):
    coll = store.collection('walks', key_func=lambda r: r['id'])
    coll.add_index('city_age_n', fields=('city', 'age', 'n'))
    coll.add_index('age', fields='age')
    ages = [30, 1.0, 1, True, None, 'x', 30, 2, 30, 1]
    coll.put_many([{'id': i, 'city': 'Leeds' if i % 4 else 'York', 'age': age, 'n': -i}
                   for i, age in enumerate(ages)])
    coll.put({'id': 99, 'city': 'Leeds', 'age': [1, 2], 'n': 0})     # a list: never in a walk
    query = coll.where(F('city') == 'Leeds', F('age') >= 1, F('n') <= 0).order_by('age')
    assert query.explain().splitlines() == [
        "walk index 'city_age_n' (city, age, n): city == 'Leeds' and age >= 1, ascending",
        'read each candidate record in that order',
        "filter: (F('city') == 'Leeds') & (F('age') >= 1) & (F('n') <= 0)",
        "order: the walk's, by age (no sort)"]
    # Codec order: 1 < True < 1.0 < 2 < 30 < "x"; equal ages in record key order
    # (the index orders them by n, descending here).
    expected = [(key, value) for key, value in sorted(
        ((k, v) for k, v in coll.items() if v['city'] == 'Leeds' and v['n'] <= 0
         and not isinstance(v['age'], list) and v['age'] is not None
         and keylib.packs((v['age'],)) >= keylib.packs((1,))),
        key=lambda item: (keylib.packs((item[1]['age'],)), item[0]))]
    assert [v["id"] for v in query] == [v["id"] for _, v in expected] == [2, 9, 3, 1, 7, 6, 5]
    backwards = query.order_by('age', reverse=True)
    assert [v["id"] for v in backwards] == [5, 6, 7, 1, 3, 2, 9]
    assert backwards.limit(2).offset(1).keys() == [(6,), (7,)]
    assert backwards.explain().splitlines()[0].endswith(', descending')
    # Without a condition on every field of the index, no walk: a sort.
    assert coll.where(F('age') >= 1).order_by('city').explain().splitlines()[-1].startswith(
        'sort by city')
    assert coll.where(F('age') > 1).order_by('age').explain().startswith("walk index 'age'")


def test_a_limited_walk_reads_few_records():
    engine = TraceEngine(centidb.engines.get_engine_class('ListEngine')())
    store = centidb.Store(engine)
    coll = store.collection('c', key_func=lambda r: r['id'])
    coll.add_index('score', fields='score')
    coll.put_many({'id': i, 'score': (i * 7919) % 5000} for i in range(5000))
    query = coll.where(F('score') >= 0).order_by('score').limit(3)
    assert query.explain().startswith("walk index 'score'")
    engine.calls.clear()
    assert [v['score'] for v in query] == [0, 1, 2]
    gets = sum(len(args[0]) if name == 'txn.get_many' else 1
               for name, args in engine.calls if name in ('txn.get', 'txn.get_many'))
    assert gets <= 16, gets        # the first chunk only, not 5,000 records
    store.close()


# Queries of every plan kind, each checked against the oracle on one fixed data set.
PLANNED = [
    ('index', ('cmp', 'a', '==', 1), ()),
    ('index', ('between', 'b', 0, 2), ()),
    ('index', ('in', 'a', [1, 'x', None]), ()),
    ('index', ('contains', 'tags', 'x'), ()),
    ('index', ('startswith', 'c', 'x'), ()),
    ('index', ('and', ('cmp', 'a', '==', 2), ('cmp', 'b', '>', 0)), ()),
    ('intersection', ('and', ('cmp', 'c', '==', 'x'), ('cmp', 'n.x', '==', 1)), ()),
    ('intersection', ('and', ('in', 'c', ['x', 'y']), ('contains', 'tags', 1)), ()),
    ('union', ('or', ('cmp', 'a', '==', 1), ('cmp', 'c', '<', 'xy')), ()),
    ('union', ('or', ('contains', 'tags', None),
               ('or', ('cmp', 'n.x', '>=', 2), ('in', 'c', []))), ()),
    ('walk', ('cmp', 'b', '>=', None), ('b',)),
    ('walk', ('and', ('cmp', 'a', '==', 1), ('cmp', 'b', '<', 3)), ('b',)),
    ('scan', ('not', ('cmp', 'a', '==', 1)), ('c',)),
    ('scan', ('or', ('exists', 'a'), ('cmp', 'b', '==', 1)), ('a', 'tags')),
]


@pytest.mark.parametrize('kind, tree, order', PLANNED)
def test_each_plan_kind_returns_what_the_oracle_does(store, kind, tree, order):
    import random
    rng = random.Random(5)
    coll = store.collection('planned', key_func=lambda r: r['id'])
    coll.add_index('a_b', fields=('a', 'b'))
    for field in ('a', 'b', 'c', 'n.x', 'tags'):
        coll.add_index(field, fields=field)
    pool = [None, True, 0, 1, 2, 1.0, -1, 'x', 'xy', 'y', b'x', [1, 'x'], [None], []]
    model = {}
    for i in range(80):
        record = {'id': i}
        for field in ('a', 'b', 'c', 'tags'):
            if rng.random() < 0.8:
                record[field] = rng.choice(pool)
        if rng.random() < 0.7:
            record['n'] = {'x': rng.choice(pool)} if rng.random() < 0.8 else rng.choice(pool)
        model[(i,)] = record
    coll.put_many(model.values())
    for reverse in (False, True):
        query = coll.where(build(tree))
        if order:
            query = query.order_by(order, reverse=reverse)
        assert query.plan().kind == kind, query.explain()
        expected = oracle_order([(k, v) for k, v in model.items() if holds(tree, v)],
                                order, reverse)
        assert query.items() == expected, query.explain()
        assert query.offset(2).limit(3).items() == expected[2:5]
