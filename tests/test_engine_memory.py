"""MemoryEngine internals: its replaced-values history and its readers."""

from centidb.engines import MemoryEngine

from engine_helpers import fill


def test_memory_engine_history_is_versioned_and_dropped():
    eng = MemoryEngine()
    eng.put(b'k', b'v0')
    r0 = eng.begin()
    eng.put(b'k', b'v1')
    r1 = eng.begin()
    eng.delete(b'k')
    r2 = eng.begin()
    eng.put(b'k', b'v3')
    assert [r.get(b'k') for r in (r0, r1, r2)] == [b'v0', b'v1', None]
    assert [list(r.keys()) for r in (r0, r1, r2)] == [[b'k'], [b'k'], []]
    assert eng.get(b'k') == b'v3'
    assert len(eng._history[b'k']) == 3
    for reader in (r0, r1):
        reader.abort()
    assert eng._history  # r2 still needs it
    r2.commit()
    assert not eng._history and not eng._readers
    eng.put(b'k', b'v4')  # with no reader open nothing is recorded
    assert not eng._history


def test_memory_engine_iterator_releases_its_reader():
    eng = MemoryEngine()
    fill(eng, [(b'a', b'1'), (b'b', b'2')])
    it = eng.items()
    assert next(it) == (b'a', b'1')
    assert sum(eng._readers.values()) == 1
    it.close()
    assert not eng._readers
    list(eng.keys())
    assert not eng._readers


def test_memory_engine_forgotten_transaction_is_released():
    eng = MemoryEngine()
    eng.begin(write=True).put(b'k', b'v')  # never committed, then collected
    eng.begin()
    assert not eng._readers
    eng.put(b'k', b'w')  # the writer lock was released
    assert eng.get(b'k') == b'w'
