"""The record paths' use of an engine's unchecked calls (:mod:`centidb.records.fastpath`).

A record path uses each call an engine transaction offers (``fast.get``,
``fast.put_many``, ``fast.put``, ``fast.replace``, ``fast.delete``,
``fast.seek_cursor``) and the checked method when it does not, and keeps the
transaction's ``writes``. Whatever an engine offers, a store on it must
behave the same: these tests run one workload on LMDB (which offers every
call), through a wrapper that offers none, and through wrappers that offer
exactly one, and compare what the store returns and what it stores. They
also check what a record path does with a ``txn=`` it is given.
"""

import pytest

import centidb
from centidb.engines import MemoryEngine, WrapperEngine, WrapperTransaction
from centidb.errors import TransactionError

CALLS = ('get', 'put_many', 'put', 'replace', 'delete',
         'seek_cursor')
# How many writes each write call makes, from its arguments.
COUNTS = {'put_many': len, 'put': lambda *pair: 1,
          'replace': lambda *pair: 1, 'delete': lambda key: 1}

lmdb = pytest.importorskip('lmdb')


class OfferingTransaction(WrapperTransaction):
    """Offers the calls of its inner LMDB transaction that its engine names, and no other."""

    def __init__(self, engine, inner):
        super().__init__(engine, inner)
        if 'seek_cursor' in engine.offer:
            inner.first()                  # LMDB makes its cursor on first use
        for name in engine.offer:
            call = getattr(inner.fast, name)
            if name in COUNTS and call is not None:
                call = self._counted(inner, call, COUNTS[name])
            setattr(self.fast, name, call)

    @staticmethod
    def _counted(inner, call, count):
        def counted(*args):
            inner.writes += count(*args)    # the inner transaction's iterators watch it
            return call(*args)
        return counted

    def _withdraw(self):
        for name in CALLS:
            setattr(self.fast, name, None)

    def _commit(self):
        self._withdraw()
        super()._commit()

    def _abort(self):
        self._withdraw()
        super()._abort()


class OfferingEngine(WrapperEngine):
    transaction_class = OfferingTransaction

    def __init__(self, inner, offer):
        super().__init__(inner)
        self.offer = offer


def by_name(person):
    return person['name']


def workload(store):
    """What a store returns for a run of reads and writes, and what it then holds."""
    people = store.collection('people', key_func=by_name)
    by_city = people.add_index('city', lambda p: p['city'])
    seen = []
    people.put({'name': 'ann', 'city': 'Leeds'})
    people.put({'name': 'bob', 'city': 'York'})
    people.put({'name': 'ann', 'city': 'Hull'})             # replaces: entries move
    people.put({'name': 'cy', 'city': 'Bath'}, blind=True)
    people.put_many([{'name': f'p{i:02}', 'city': ('Leeds', 'York')[i % 2]}
                     for i in range(40)])
    people.put_many([{'name': 'p00', 'city': 'Bath'}, {'name': 'dee', 'city': 'Ely'}])
    seen.append(people.delete('bob').data)
    seen.append(people.delete('nobody'))
    seen.append([people.get(name) for name in ('ann', 'bob', 'p00', 'zed')])
    seen.append([by_city.get(city) for city in ('Hull', 'Bath', 'York', 'Rome')])
    seen.append([city in by_city for city in ('Hull', 'Rome')])
    seen.append(['ann' in people, 'bob' in people, len(people)])
    with store.begin(write=True) as txn:                     # writes under an iterator
        for key, person in people.items(txn=txn, prefix=('p',)):
            if person['city'] == 'York':
                people.put(dict(person, city='Wells'), txn=txn)
            else:
                people.delete(key, txn=txn)
        seen.append(people.count(txn=txn))
        record = people.put({'name': 'eve', 'city': 'Ely'}, txn=txn)
        people.put(dict(record.data, city='Hull'), txn=txn)
    seen.append(list(by_city.pairs()))
    seen.append(list(people.items()))
    plain = store.collection('plain', key_func=by_name)      # no index: one pair a record
    plain.put({'name': 'a'})
    plain.put({'name': 'a', 'v': 1})
    plain.put({'name': 'b'}, blind=True)
    plain.put('c', key=('c',))
    plain.put_many([{'name': 'd'}, {'name': 'e'}])
    seen.append([plain.delete('a').data, plain.get('b'), list(plain.items())])
    return seen, list(store.engine.items())


def run_on(engine):
    store = centidb.Store(engine)
    try:
        return workload(store)
    finally:
        store.close()


@pytest.fixture
def expected():
    return run_on(MemoryEngine())


def test_lmdb_offering_every_call_behaves_as_the_memory_engine(tmp_path, expected):
    assert run_on(centidb.engines.LmdbEngine(str(tmp_path / 'db'), sync=False)) == expected


@pytest.mark.parametrize('offer', [(), *((name,) for name in CALLS), CALLS],
                         ids=['none', *CALLS, 'all'])
def test_a_store_behaves_the_same_whichever_calls_its_engine_offers(tmp_path, expected, offer):
    inner = centidb.engines.LmdbEngine(str(tmp_path / 'db'), sync=False)
    engine = OfferingEngine(inner, offer)
    with engine.begin(write=True) as txn:
        assert {name for name in CALLS if getattr(txn.fast, name) is not None} == set(offer)
    assert run_on(engine) == expected


class LibraryError(Exception):
    pass


class FailingTransaction(OfferingTransaction):
    """Its offered write calls fail with the library's error, which it maps."""

    def __init__(self, engine, inner):
        super().__init__(engine, inner)
        for name in engine.offer:
            setattr(self.fast, name, self._fail)

    def _fail(self, *args):
        raise LibraryError('disk on fire')

    def _put_many_failed(self, exc, pairs):
        self.engine.failed.append(pairs)
        raise centidb.errors.EngineError(f'{len(pairs)} pairs not stored: {exc}') from exc


class FailingEngine(OfferingEngine):
    transaction_class = FailingTransaction

    def __init__(self, inner, offer):
        super().__init__(inner, offer)
        #: The pairs each failed call was made with.
        self.failed = []


@pytest.mark.parametrize('offer, write', [
    ('put_many', lambda people, plain: people.put({'name': 'bob', 'city': 'York'})),
    ('put', lambda people, plain: plain.put({'name': 'b'})),
    ('replace', lambda people, plain: people.put({'name': 'ann', 'city': 'York'})),
    ('delete', lambda people, plain: people.put({'name': 'ann', 'city': 'York'})),
])
def test_an_offered_call_that_fails_raises_what_the_engine_maps_it_to(tmp_path, offer, write):
    inner = centidb.engines.LmdbEngine(str(tmp_path / 'db'), sync=False)
    store = centidb.Store(inner)
    people = store.collection('people', key_func=by_name)
    people.add_index('city', lambda p: p['city'])
    plain = store.collection('plain', key_func=by_name)
    people.put({'name': 'ann', 'city': 'Leeds'})
    plain.put({'name': 'a'})
    before = list(inner.items())
    store.close()
    inner = centidb.engines.LmdbEngine(str(tmp_path / 'db'), sync=False)
    engine = FailingEngine(inner, (offer,))
    store = centidb.Store(engine)
    people = store.collection('people', key_func=by_name)
    people.add_index('city', lambda p: p['city'])
    with pytest.raises(centidb.errors.EngineError, match='not stored: disk on fire') as info:
        write(people, store.collection('plain', key_func=by_name))
    assert isinstance(info.value.__cause__, LibraryError)
    assert list(inner.items()) == before
    (pairs,) = engine.failed
    assert pairs and all(type(k) is bytes and type(v) is bytes for k, v in pairs)
    if offer == 'delete':         # the key it deleted, with an empty value
        assert [value for _, value in pairs] == [b''] and pairs[0][0] in dict(before)
    store.close()


@pytest.mark.parametrize('offer', [(), *((name,) for name in CALLS), CALLS],
                         ids=['none', *CALLS, 'all'])
def test_writes_counts_each_key_a_record_path_writes_or_deletes(tmp_path, offer):
    inner = centidb.engines.LmdbEngine(str(tmp_path / 'db'), sync=False)
    store = centidb.Store(OfferingEngine(inner, offer))
    people = store.collection('people', key_func=by_name)
    people.add_index('city', lambda p: p['city'])
    plain = store.collection('plain', key_func=by_name)
    steps = [
        (2, lambda txn: people.put({'name': 'ann', 'city': 'Leeds'}, txn=txn)),  # record, entry
        (3, lambda txn: people.put({'name': 'ann', 'city': 'Hull'}, txn=txn)),   # and one out
        (1, lambda txn: people.put({'name': 'ann', 'city': 'Hull', 'n': 1}, txn=txn)),
        (2, lambda txn: people.delete('ann', txn=txn)),
        (1, lambda txn: plain.put({'name': 'a'}, txn=txn)),
        (1, lambda txn: plain.put({'name': 'a', 'n': 2}, txn=txn)),
        (1, lambda txn: plain.delete('a', txn=txn)),
        (4, lambda txn: people.put_many([{'name': 'b', 'city': 'York'},
                                         {'name': 'c', 'city': 'Ely'}], txn=txn)),
    ]
    with store.begin(write=True) as txn:
        etxn = txn.engine_txn
        for expected, step in steps:
            before = etxn.writes
            step(txn)
            assert etxn.writes - before == expected
    store.close()


# --- the txn= a record path is given ----------------------------------------------------

@pytest.fixture
def people():
    store = centidb.open('ListEngine')
    coll = store.collection('people', key_func=by_name)
    coll.add_index('city', lambda p: p['city'])
    coll.put({'name': 'ann', 'city': 'Leeds'})
    yield coll
    store.close()


def test_a_record_path_refuses_a_transaction_that_ended(people):
    txn = people.store.begin(write=True)
    txn.commit()
    for call in (lambda: people.put({'name': 'bob', 'city': 'York'}, txn=txn),
                 lambda: people.get('ann', txn=txn),
                 lambda: people.delete('ann', txn=txn),
                 lambda: people.indices['city'].get('Leeds', txn=txn)):
        with pytest.raises(TransactionError, match='ended'):
            call()


def test_a_write_refuses_a_read_only_transaction_that_reads_serve(people):
    with people.store.begin() as txn:
        assert people.get('ann', txn=txn) == {'name': 'ann', 'city': 'Leeds'}
        for write in (lambda: people.put({'name': 'bob', 'city': 'York'}, txn=txn),
                      lambda: people.delete('ann', txn=txn),
                      lambda: people.put_many([{'name': 'cy', 'city': 'Ely'}], txn=txn)):
            with pytest.raises(TransactionError, match='cannot write in a read-only transaction'):
                write()
    assert people.get('bob') is None and people.get('ann') is not None


def test_a_record_path_refuses_what_is_not_a_transaction_of_its_store(people):
    other = centidb.open('ListEngine')
    foreign = other.begin(write=True)
    for txn in (foreign, foreign.engine_txn, 'txn'):
        with pytest.raises(TypeError, match="transaction from this store's begin"):
            people.put({'name': 'bob', 'city': 'York'}, txn=txn)
        with pytest.raises(TypeError, match="transaction from this store's begin"):
            people.get('ann', txn=txn)
    foreign.abort()
    other.close()
    assert people.get('bob') is None


# --- the functions themselves -----------------------------------------------------------

@pytest.mark.parametrize('offer', [(), *((name,) for name in CALLS), CALLS],
                         ids=['none', *CALLS, 'all'])
def test_each_function_writes_what_the_checked_methods_would(tmp_path, offer):
    """put_many, put_one, replace_one, delete_one and first_key take the
    engine transaction and its ``fast``: whichever calls it offers, the
    engine ends with the same pairs as a dict given the same writes, and
    ``writes`` grows by one per pair written or key deleted."""
    from centidb.records import fastpath
    engine = OfferingEngine(centidb.engines.LmdbEngine(str(tmp_path / 'db'), sync=False), offer)
    model = {}
    with engine.begin(write=True) as etxn:
        fast = etxn.fast

        def step(count, call, *args):
            before = etxn.writes
            result = call(etxn, fast, *args)
            assert etxn.writes - before == count, (call.__name__, args)
            return result

        assert step(3, fastpath.put_many, [(b'b', b'1'), (b'd', b'2'), (b'f', b'3')]) is None
        model.update({b'b': b'1', b'd': b'2', b'f': b'3'})
        assert step(1, fastpath.put_one, b'c', b'4') is None
        model[b'c'] = b'4'
        assert step(1, fastpath.put_one, b'b', b'5') is None           # over a stored key
        model[b'b'] = b'5'
        if fast.replace is not None:
            assert step(1, fastpath.replace_one, b'd', b'6') == b'2'
            assert step(1, fastpath.replace_one, b'e', b'7') is None
            model.update({b'd': b'6', b'e': b'7'})
        assert step(1, fastpath.delete_one, b'f') is None
        del model[b'f']
        assert dict(etxn.items()) == model
        keys = sorted(model)
        for lo, hi in ((b'', b'\xff'), (b'b\x00', b'z'), (b'c', b'c\x00'), (b'g', b'z'),
                       (b'c', b'c'), (b'a', b'b')):
            expected = next((key for key in keys if lo <= key < hi), None)
            assert fastpath.first_key(etxn, lo, hi) == expected, (lo, hi)
    assert dict(engine.items()) == model
    engine.close()


def test_checked_engine_txn_hands_back_an_open_transactions_engine_txn_at_once():
    """The check is made inline: the store's TxnManager is asked (to raise
    the right error) only for what is not an open transaction that fits."""
    from unittest import mock

    from centidb.records import fastpath
    from centidb.txn import Transaction
    store = centidb.open('ListEngine')
    writer, reader = store.begin(write=True), None
    try:
        txns = writer.manager
        with mock.patch.object(type(txns), 'engine_txn', side_effect=AssertionError('asked')):
            for write in (True, False):
                assert fastpath.checked_engine_txn(txns, Transaction, writer, write) \
                    is writer.engine_txn
        writer.abort()
        reader = store.begin()
        with mock.patch.object(type(txns), 'engine_txn', side_effect=AssertionError('asked')):
            assert fastpath.checked_engine_txn(txns, Transaction, reader, False) \
                is reader.engine_txn
            for write, txn in ((True, reader), (False, writer), (False, 'txn')):
                with pytest.raises(AssertionError, match='asked'):
                    fastpath.checked_engine_txn(txns, Transaction, txn, write)
    finally:
        for txn in (writer, reader):
            if txn is not None and txn.engine_txn is not None:
                txn.abort()
        store.close()


def test_the_functions_annotations_resolve():
    """typing.get_type_hints (autodoc's type hints) finds every name they use."""
    import typing

    from centidb import impl
    source = impl.source_version('centidb.records.fastpath')
    for name in source.__all__:
        hints = typing.get_type_hints(getattr(source, name))
        assert 'return' in hints, name
