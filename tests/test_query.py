"""centidb.query: the query parameters of collections and indexes, on every engine.

``lo``, ``hi``, ``prefix``, ``reverse``, ``max`` and ``include`` on
collection reads and ``count()``/``find()``; falsy values are real bounds;
bad parameters raise before anything is read. The randomized comparison of
every parameter against a model is in ``test_batch_differential.py`` and
``test_collection_stateful.py``.
"""

import pytest

from centidb.errors import UnsupportedKeyTypeError

from stores import PEOPLE, fails_cleanly, people


def test_query_parameters(store):
    coll = people(store)
    keys = sorted((p['name'], p['location']) for p in PEOPLE)
    assert list(coll.keys(reverse=True)) == keys[::-1]
    assert list(coll.keys(lo='b')) == keys[1:]
    assert list(coll.keys(hi='birch')) == keys[:1]
    assert list(coll.keys(hi=('birch', 'LONDON'), include=True)) == keys[:2]
    assert list(coll.keys(startswith='ce')) == [('cedar', 'PARIS')]
    assert list(coll.keys(prefix='ce')) == []
    assert list(coll.keys(prefix='cedar')) == [('cedar', 'PARIS')]
    assert list(coll.keys(startswith=('cedar', 'PA'))) == [('cedar', 'PARIS')]
    assert list(coll.keys(prefix=('ash', 'LONDON'))) == [('ash', 'LONDON')]
    assert list(coll.keys(max=2, reverse=True)) == keys[::-1][:2]
    assert list(coll.keys(max=0)) == []
    assert coll.count(lo='b', hi='c') == 1
    assert coll.find(startswith='b')['name'] == 'birch'
    assert coll.find(prefix='b') is None
    assert coll.find(prefix='zzz', default='none') == 'none'
    assert [k for k, _ in coll.items(lo='a', hi='b')] == [('ash', 'LONDON')]
    assert [v['name'] for v in coll.values(startswith='u')] == ['undergrown']


def test_falsy_bounds_are_real_bounds(store):
    coll = store.collection('nums', key_func=lambda r: r['n'])
    for n in (-2, -1, 0, 1, 2):
        coll.put({'n': n})
    assert [k[0] for k in coll.keys(lo=0)] == [0, 1, 2]
    assert [k[0] for k in coll.keys(hi=0)] == [-2, -1]
    assert [k[0] for k in coll.keys(hi=0, include=True)] == [-2, -1, 0]
    texts = store.collection('texts', key_func=lambda r: r)
    for t in ('', 'a', 'b'):
        texts.put(t)
    assert list(texts.keys(lo='')) == [('',), ('a',), ('b',)]
    assert list(texts.keys(hi='')) == []
    assert list(texts.keys(startswith='')) == [('',), ('a',), ('b',)]
    assert list(texts.keys(prefix='')) == [('',)]


@pytest.mark.parametrize('max,error', [(-1, ValueError), ('x', TypeError),
                                       (1.5, TypeError), (True, TypeError)])
def test_bad_max(docs, max, error):
    tags = docs.indices['tag']
    for method in (docs.items, docs.keys, docs.values, docs.count,
                   tags.pairs, tags.keys, tags.values, tags.count):
        fails_cleanly(docs.store, error, lambda: method(max=max), match='max')
    assert docs.count(max=0) == 0 and list(docs.items(max=1)) == [((1,), {'id': 1, 'tag': 'a'})]


def test_bad_query_bounds(docs):
    for kwargs in ({'lo': object()}, {'hi': [1]}, {'prefix': {'a'}}):
        fails_cleanly(docs.store, UnsupportedKeyTypeError, lambda: docs.items(**kwargs))
        fails_cleanly(docs.store, UnsupportedKeyTypeError,
                      lambda: docs.indices['tag'].pairs(**kwargs))
