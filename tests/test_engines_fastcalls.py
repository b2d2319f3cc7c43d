"""The unchecked calls an engine transaction may offer (:mod:`centidb.engines.fastcalls`).

Each of ``fast.get``, ``fast.put_many``, ``fast.put``, ``fast.replace``,
``fast.delete`` and ``fast.seek_cursor`` is ``None`` unless the engine offers
it; an offered call does what the checked method would, sees the
transaction's own writes, and is withdrawn (``None`` again) when the
transaction ends ("Write your own engine" in ``docs/engines.rst``). These
tests hold every engine to that, and check :func:`guarded`, which maps a
library's errors for an engine's getter, in the active form of the module
(compiled from its source, or the source itself).
"""

import pytest

from centidb import impl
from centidb.engines import EngineTransaction, MemoryEngine
from centidb.engines.fastcalls import FastCalls, guarded
from centidb.errors import EngineError

from engine_helpers import engine  # noqa: F401 - a fixture

CALLS = ('get', 'put_many', 'put', 'replace', 'delete',
         'seek_cursor')
WRITE_CALLS = ('put_many', 'put', 'replace', 'delete')


def offered(txn):
    return {name for name in CALLS if getattr(txn.fast, name) is not None}


def test_an_engine_transaction_offers_none_unless_its_engine_sets_them():
    class Bare(EngineTransaction):
        pass

    txn = Bare(MemoryEngine(), True)
    assert isinstance(txn.fast, FastCalls)
    assert offered(txn) == set() and txn.writes == 0
    txn._state = 'aborted'          # never began: nothing to release


def fill(txn):
    for i in range(1, 6):
        txn.put(bytes([i]), b'v%d' % i)


def test_offered_calls_do_what_the_checked_methods_do(engine):
    with engine.begin(write=True) as txn:
        fill(txn)
    txn = engine.begin(write=True)
    model = {bytes([i]): b'v%d' % i for i in range(1, 6)}
    calls = offered(txn)
    writes = txn.writes
    if txn.fast.put_many is not None:
        txn.writes += 2
        txn.fast.put_many([(b'\x06', b'a'), (b'\x01', b'b')])
        model.update({b'\x06': b'a', b'\x01': b'b'})
    if txn.fast.put is not None:
        txn.writes += 1
        txn.fast.put(b'\x07', b'c')
        model[b'\x07'] = b'c'
    if txn.fast.replace is not None:
        txn.writes += 2
        assert txn.fast.replace(b'\x02', b'd') == b'v2'
        assert txn.fast.replace(b'\x08', b'e') is None
        model.update({b'\x02': b'd', b'\x08': b'e'})
    if txn.fast.delete is not None:
        txn.writes += 2
        txn.fast.delete(b'\x03')
        txn.fast.delete(b'\x09')       # missing: nothing
        del model[b'\x03']
    if txn.fast.get is not None:       # sees the writes above, made either way
        for i in range(1, 11):
            assert txn.fast.get(bytes([i])) == model.get(bytes([i])) == txn.get(bytes([i]))
    cursor = txn.fast.seek_cursor
    if cursor is not None:
        for lo in (b'\x00', b'\x02\x00', b'\x05'):
            assert cursor.set_range(lo)
            assert cursor.key() == txn.first(lo)[0]
        assert not cursor.set_range(b'\xff')
    assert dict(txn.items()) == model and txn.count() == len(model)
    assert txn.writes >= writes
    txn.commit()
    assert dict(engine.items()) == model
    assert calls <= set(CALLS)


@pytest.mark.parametrize('end', ['commit', 'abort', 'close'])
def test_the_calls_are_withdrawn_when_the_transaction_ends(engine, end):
    readers = [engine.begin(), engine.begin(write=True)]
    for txn in readers:
        txn.first()                     # an engine may offer its cursor once it has one
    if end == 'close':
        engine.close()
    else:
        for txn in readers:
            getattr(txn, end)()
    assert [offered(txn) for txn in readers] == [set(), set()]


def test_a_read_transaction_offers_no_write_call(engine):
    with engine.begin() as txn:
        txn.first()
        assert not offered(txn) & set(WRITE_CALLS)


def test_lmdb_offers_every_call_and_memory_its_reads():
    pytest.importorskip('lmdb')
    import tempfile

    from centidb.engines import LmdbEngine
    with tempfile.TemporaryDirectory() as directory:
        lmdb_engine = LmdbEngine(directory, sync=False)
        with lmdb_engine.begin(write=True) as txn:
            txn.first()
            assert offered(txn) == set(CALLS)
        lmdb_engine.close()
    memory = MemoryEngine()
    with memory.begin() as txn:
        assert offered(txn) == {'get', 'seek_cursor'}


# --- guarded -----------------------------------------------------------------------------

class LibraryError(Exception):
    pass


def mapped(exc):
    return EngineError(f'mapped: {exc}')


def test_guarded_passes_values_through():
    store = {b'a': b'1'}
    get = guarded(store.get, LibraryError, mapped)
    assert get(b'a') == b'1' and get(b'b') is None


def test_guarded_maps_the_librarys_errors_and_keeps_the_cause():
    def failing(key):
        raise LibraryError(f'no {key!r}')

    get = guarded(failing, (KeyError, LibraryError), mapped)
    with pytest.raises(EngineError, match=r"mapped: no b'x'") as info:
        get(b'x')
    assert isinstance(info.value.__cause__, LibraryError)


def test_guarded_lets_other_errors_through_unchanged():
    def failing(key):
        raise ValueError(key)

    with pytest.raises(ValueError):
        guarded(failing, LibraryError, mapped)(b'x')


def test_the_module_is_compiled_exactly_when_the_codec_is():
    """One source: the compiled module (its FastCalls a C class the record
    layer reads directly) when the codec is compiled, else fastcalls.py;
    either way engine transactions hold the active class."""
    from centidb.engines import fastcalls
    assert fastcalls.__file__.endswith('.py') == (impl.COMPILED is None)
    assert FastCalls is fastcalls.FastCalls and guarded.__module__ == fastcalls.__name__
    txn = MemoryEngine().begin()
    assert type(txn.fast) is FastCalls
    txn.abort()
