"""WrapperEngine and TraceEngine: forwarding, tracing and fault injection."""

import pytest

from centidb.engines import (
    MemoryEngine,
    TraceEngine,
    WrapperEngine,
    WrapperTransaction,
)
from centidb.errors import EngineClosedError, TransactionError

from engine_helpers import engine  # noqa: F401 - a fixture


def test_trace_engine_records_calls():
    lines = []
    eng = TraceEngine(MemoryEngine(), log=lines.append)
    eng.put(b'a', b'1')
    assert eng.get(b'a') == b'1'
    with eng.begin(write=True) as txn:
        txn.put(b'b', b'2')
        txn.delete(b'a')
        assert list(txn.items(b'a')) == [(b'b', b'2')]
    assert list(eng.keys()) == [b'b']
    eng.close()
    assert eng.calls == [
        ('put', (b'a', b'1')),
        ('get', (b'a',)),
        ('begin', (True,)),
        ('txn.put', (b'b', b'2')),
        ('txn.delete', (b'a',)),
        ('txn.items', (b'a', None, False)),
        ('txn.commit', ()),
        ('keys', (None, None, False)),
        ('close', ()),
    ]
    assert eng.counts['put'] == 1 and eng.counts['txn.commit'] == 1
    assert lines[0] == "put(b'a', b'1')"
    assert lines[5] == "txn.items(b'a', None, False)"
    assert eng.inner.closed


def test_wrapper_forwards_first_and_trace_records_it():
    """first() was neither forwarded (the wrapper iterated with items(), so
    the inner engine's seek went unused) nor traced."""
    inner = TraceEngine(MemoryEngine())
    eng = TraceEngine(inner)
    eng.put(b'a', b'1')
    eng.put(b'b', b'2')
    inner.calls.clear()
    with eng.begin() as txn:
        assert txn.first(b'a\x00') == (b'b', b'2')
        assert txn.first(hi=b'b', reverse=True) == (b'a', b'1')
        with pytest.raises(TypeError):
            txn.first('a')                  # checked before forwarding
    assert eng.first(b'c') is None
    assert [call for call in eng.calls if 'first' in call[0]] == [
        ('txn.first', (b'a\x00', None, False)),
        ('txn.first', (None, b'b', True)),
        ('txn.first', ('a', None, False)),
        ('first', (b'c', None, False)),
    ]
    assert [name for name, _ in inner.calls] == [
        'begin', 'txn.first', 'txn.first', 'txn.commit', 'first']
    with pytest.raises(TransactionError):
        txn.first()
    eng.close()
    with pytest.raises(EngineClosedError):
        eng.first()


class Injected(Exception):
    """The fault a FaultyEngine raises."""


class FaultyTransaction(WrapperTransaction):
    def put(self, key, value):
        if key == b'fail':
            raise Injected(key)
        super().put(key, value)


class FaultyEngine(WrapperEngine):
    transaction_class = FaultyTransaction

    def put(self, key, value):
        if key == b'fail':
            raise Injected(key)
        super().put(key, value)


def test_fault_injection_leaves_nothing_written(engine):
    faulty = FaultyEngine(engine)
    faulty.put(b'ok', b'1')
    with pytest.raises(Injected):
        with faulty.begin(write=True) as txn:
            txn.put(b'a', b'2')
            txn.delete(b'ok')
            txn.put(b'fail', b'3')
    assert txn.state == 'aborted'
    with pytest.raises(Injected):
        faulty.put(b'fail', b'4')
    assert list(faulty.items()) == [(b'ok', b'1')]
    assert list(engine.items()) == [(b'ok', b'1')]
    faulty.close()
    assert engine.closed


def test_wrapper_requires_an_engine():
    with pytest.raises(TypeError, match='inner must be an Engine'):
        WrapperEngine({})
