"""Batch compression: randomized differential test against a dict.

Random puts (blind for new keys), deletes and batch() calls over ranges that
cut through earlier batches, on keys that are tuple-prefixes of each other
(``()``, ``(1,)``, ``(1, None)``, ``(1, 'a')``, ...), strings sharing
prefixes and Desc elements, between neighbouring collections. After each
step every read is compared with the model: get/get_many, items/keys/count/
find with lo/hi/prefix/include/reverse/max, and two indexes (one of them
multi-valued), and the neighbours are checked untouched. Half the seeds run
each step inside a joined write transaction.
"""

import random

import pytest

from centidb import encodings, keylib, query
from centidb.keyformat import Desc

from stores import ENGINE_NAMES, open_store

POOL = [(), (1,), (1, None), (1, 0), (1, 'a'), (1, 'a', 2), (1, 'ab'), (1, 'abcdefg'),
        (1, 'abcdefgh'), (2,), (2, 5), (2, 5, 1), (0,), (-1,), (None,), (1.5,), (255,),
        (256,), ('a',), ('ab',), ('abc',), ('abcdefg',), ('abcdefgh',), ('b',), (b'',),
        (b'a',), (Desc(1),), (Desc(1), 2), (Desc('a'),), (Desc('ab'),), (Desc(None),),
        (Desc(2), None)]
QUERY = POOL + [(1, 'a', 1), (3,), (Desc(0),)]


def _expected(model, q, reverse):
    lo, hi = query.key_range(b'', q.get('lo'), q.get('hi'), q.get('prefix'),
                                   q.get('include', False))
    keys = [k for k in model if keylib.packs(k) >= lo and (hi is None or keylib.packs(k) < hi)]
    return sorted(keys, key=keylib.packs, reverse=reverse)


def _query(rng, include=True):
    q = {}
    for name, p in (('lo', .5), ('hi', .5), ('prefix', .3)):
        if rng.random() < p:
            q[name] = rng.choice(QUERY)
    if include and rng.random() < .3:
        q['include'] = True
    return q


def _check(rng, coll, idx, multi, neighbours, model):
    for key in QUERY:
        assert coll.get(key) == model.get(key), key
    assert coll.get_many(QUERY) == [model.get(k) for k in QUERY]
    ordered = sorted(model, key=keylib.packs)
    assert list(coll.keys()) == ordered
    assert list(coll.keys(reverse=True)) == ordered[::-1]
    for _ in range(4):
        q = _query(rng)
        for reverse in (False, True):
            exp = _expected(model, q, reverse)
            assert list(coll.items(reverse=reverse, **q)) == [(k, model[k]) for k in exp], q
            m = rng.randint(0, 3)
            assert list(coll.keys(reverse=reverse, max=m, **q)) == exp[:m], q
            assert coll.count(reverse=reverse, max=m, **q) == len(exp[:m])
            assert coll.count(reverse=reverse, **q) == len(exp)
    by_v = sorted(((r['v'],), k) for k, r in model.items())
    assert list(idx.keys()) == [k for _, k in by_v]
    assert [v['v'] for v in idx.values(reverse=True)] == [t[0] for t, _ in by_v][::-1]
    for t in range(3):
        exp = sorted(r['v'] for r in model.values() if r['v'] % 5 and t in {r['v'] % 3, r['v'] % 2})
        assert sorted(v['v'] for v in multi.values(lo=t, hi=t, include=True)) == exp
    for other in neighbours:
        assert list(other.items()) == [(k, other.name) for k in sorted(POOL[:8], key=keylib.packs)]


@pytest.mark.parametrize('engine', ENGINE_NAMES)
@pytest.mark.parametrize('seed', range(6))
def test_batches_match_a_dict_model(engine, seed, tmp_path):
    rng = random.Random(seed)
    store = open_store(engine, tmp_path)
    before = store.collection('a_before')
    for i in range(seed % 3):
        store.collection(f'pad{i}')
    coll = store.collection('main')
    after = store.collection('z_after')
    for other in (before, after):
        for key in POOL[:8]:
            other.put(other.name, key=key)
    idx = coll.add_index('v', lambda r: r['v'])
    multi = coll.add_index('m', lambda r: [r['v'] % 3, r['v'] % 2] if r['v'] % 5 else None)
    model = {}
    for step in range(80):
        txn = store.begin(write=True) if seed % 2 else None
        op = rng.random()
        if op < 0.45:
            key = rng.choice(POOL)
            value = {'v': step, 'pad': 'x' * rng.randint(0, 30)}
            coll.put(value, key=key, blind=key not in model and rng.random() < .5)
            model[key] = value
        elif op < 0.65:
            key = rng.choice(POOL)
            assert (coll.delete(key) is not None) == (key in model)
            model.pop(key, None)
        else:
            coll.batch(max_recs=rng.choice([None, 1, 2, 3, 5]),
                       max_bytes=rng.choice([None, None, 1, 40, 100]),
                       packer=rng.choice([encodings.ZLIB_PACKER, encodings.PLAIN_PACKER]),
                       **_query(rng, include=False))
        _check(rng, coll, idx, multi, (before, after), model)   # inside the txn too
        if txn is not None:
            txn.commit()
    late = coll.add_index('late', lambda r: r['v'])     # backfill sees batch members
    assert sorted(late.keys(), key=keylib.packs) == sorted(model, key=keylib.packs)
    store.close()
