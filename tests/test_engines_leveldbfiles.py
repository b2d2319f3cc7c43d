"""LevelDB damage that LevelDB itself passes over in silence.

A MANIFEST cut short: LevelDB reads the torn record as the log's end, opens
an older (or empty) version of the database, and deletes the table files
the rest of the log named. A table block that fails its checksum: LevelDB's
iterator skips it and keeps the error where plyvel does not look when the
skip ends the scan. Both must come to a centidb error, and nothing may be
deleted on the way.
"""

import os
import random
import shutil
import struct

import pytest

import centidb
from centidb.errors import DatabaseCorruptError

pytest.importorskip('plyvel')

from centidb.engines.leveldb import PlyvelEngine  # noqa: E402
from centidb.engines.leveldbfiles import check_manifest, crc32c, read_manifest  # noqa: E402

PER_SESSION = 300


def _key(record):
    return record['id']


def _records(n):
    return [{'id': i, 'body': 'b%05d' % i * 8} for i in range(n)]


def _build(path, sessions=3):
    """A store written in `sessions` rounds, each compacted: the MANIFEST holds one edit per round."""
    engine = PlyvelEngine(path, create_if_missing=True)
    store = centidb.Store(engine)
    coll = store.collection('docs', key_func=_key)
    records = _records(sessions * PER_SESSION)
    for part in range(sessions):
        coll.put_many(records[part * PER_SESSION:(part + 1) * PER_SESSION])
        engine.compact()
    store.close()
    return records


def _files(path):
    return {name: os.path.getsize(os.path.join(path, name)) for name in os.listdir(path)
            if name.endswith('.ldb')}


def _manifest(path):
    with open(os.path.join(path, 'CURRENT')) as f:
        return os.path.join(path, f.read().strip())


def _read(path):
    store = centidb.Store(PlyvelEngine(path))
    try:
        coll = store.collection('docs', key_func=_key)
        return list(coll.values()), store.verify()
    finally:
        store.close()


@pytest.fixture(scope='module')
def pristine(tmp_path_factory):
    path = str(tmp_path_factory.mktemp('leveldb') / 'db')
    records = _build(path)
    return path, records


@pytest.mark.parametrize('fraction', [0.2, 0.35, 0.5, 0.65, 0.8])
def test_cut_manifest_is_refused_and_repair_restores_every_record(pristine, tmp_path, fraction):
    path, records = pristine
    work = str(tmp_path / 'db')
    shutil.copytree(path, work)
    manifest = _manifest(work)
    with open(manifest, 'rb') as f:
        data = f.read()
    cut = int(len(data) * fraction)
    tables = _files(work)
    state = read_manifest(data[:cut])
    assert state is not None and state.record_count > 0, 'LevelDB would refuse this cut itself'
    assert set(state.live) < {int(name[:-4]) for name in tables}, 'the cut loses no table'
    os.truncate(manifest, cut)
    with pytest.raises(DatabaseCorruptError, match='repair') as info:
        PlyvelEngine(work)
    assert work in str(info.value) and 'MANIFEST' in str(info.value)
    assert _files(work) == tables          # nothing was deleted
    with pytest.raises(DatabaseCorruptError):
        centidb.open('leveldb', path=work)     # the store refuses as the engine does
    PlyvelEngine.repair(work)
    values, problems = _read(work)
    assert values == records
    assert problems == []


def test_manifest_torn_in_its_last_record_opens(pristine, tmp_path):
    """A crash while LevelDB appends an edit tears the last record: not damage."""
    path, records = pristine
    work = str(tmp_path / 'db')
    shutil.copytree(path, work)
    manifest = _manifest(work)
    size = os.path.getsize(manifest)
    os.truncate(manifest, size - 3)
    with open(manifest, 'rb') as f:
        state = read_manifest(f.read())
    assert state.torn
    values, problems = _read(work)
    assert values == records and problems == []


def test_unnamed_tables_with_their_log_present_are_a_crash_not_damage(pristine, tmp_path):
    """Outputs of a memtable write whose edit was not written come with the log still there."""
    path, _ = pristine
    work = str(tmp_path / 'db')
    shutil.copytree(path, work)
    manifest = _manifest(work)
    with open(manifest, 'rb') as f:
        data = f.read()
    cut = len(data) // 2
    state = read_manifest(data[:cut])
    os.truncate(manifest, cut)
    with pytest.raises(DatabaseCorruptError):
        check_manifest(work)
    with open(os.path.join(work, '%06d.log' % state.log_number), 'wb'):
        pass
    check_manifest(work)


def _log_record(kind, payload):
    crc = crc32c(payload, crc32c(bytes([kind])))
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    return struct.pack('<IHB', masked, len(payload), kind) + payload


def test_manifest_framing_across_blocks():
    """A record in fragments over a 32 KiB block boundary, whole and cut at each fragment."""
    edit = bytes([2, 7])                            # log number 7
    name = b'c' * 40000                             # a comparator name, to span blocks
    big = edit + bytes([1, 0xC0, 0xB8, 0x02]) + name + bytes([3, 9])
    first = _log_record(1, edit)                    # a FULL record
    room = 32768 - len(first) - 7
    second = (_log_record(2, big[:room])            # FIRST, to the block's end
              + _log_record(4, big[room:]))         # LAST, in the next block
    data = first + second
    state = read_manifest(data)
    assert state.record_count == 2 and not state.torn and state.log_number == 7
    for cut in (len(first) + 3, len(first) + 20, 32768, 32768 + 5, len(data) - 1):
        state = read_manifest(data[:cut])
        assert state.record_count == 1 and state.torn, cut
    damaged = bytearray(data)
    damaged[len(first) + 30] ^= 1
    assert read_manifest(bytes(damaged)) is None    # a bad checksum: LevelDB reports it


def _footer_handles(path):
    """A table file's metaindex and index block handles, ``[(offset, size), ...]``."""
    with open(path, 'rb') as f:
        footer = f.read()[-48:]
    numbers, value, shift = [], 0, 0
    for byte in footer:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            numbers.append(value)
            value = shift = 0
            if len(numbers) == 4:
                return [tuple(numbers[:2]), tuple(numbers[2:])]
    raise AssertionError('bad footer')


def _flip(path, where):
    with open(path, 'r+b') as f:
        f.seek(where)
        byte = f.read(1)[0]
        f.seek(where)
        f.write(bytes([byte ^ 0x20]))


def _compacted_store(path, n=2000):
    """A store of `n` records compacted into one table file; returns the records and the file.

    The records' bodies are random, so LevelDB stores the blocks
    uncompressed (their bytes are the records' bytes).
    """
    store = centidb.open('leveldb', path=path, create_if_missing=True)
    coll = store.collection('docs', key_func=_key)
    rng = random.Random(4)
    records = [{'id': i, 'body': rng.randbytes(60)} for i in range(n)]
    coll.put_many(records)
    store.close()
    engine = PlyvelEngine(path)
    engine.compact()
    engine.close()
    (table,) = _files(path)
    return records, os.path.join(path, table)


@pytest.fixture
def flipped(tmp_path):
    """A compacted one-table store with a byte flipped inside a record in its last data block."""
    path = str(tmp_path / 'db')
    records, table = _compacted_store(path)
    (metaindex, _), _ = _footer_handles(table)
    _flip(table, metaindex - 5 - 200)       # a block ends with its restart array and a trailer
    return path, records


@pytest.fixture
def unreadable(tmp_path):
    """A compacted one-table store whose last data block claims 2**32 - 1 restart points."""
    path = str(tmp_path / 'db')
    records, table = _compacted_store(path)
    (metaindex, _), _ = _footer_handles(table)
    with open(table, 'r+b') as f:
        f.seek(metaindex - 5 - 4)
        f.write(b'\xff' * 4)
    return path, records


def test_flipped_byte_in_a_table_block_is_reported_by_verify(flipped):
    path, _ = flipped
    store = centidb.open('leveldb', path=path)
    try:
        problems = store.verify()
    finally:
        store.close()
    assert problems, 'verify() found nothing'
    assert problems[0].collection is None
    assert 'checksum' in problems[0].message and path in problems[0].message


@pytest.mark.parametrize('how', ['items', 'reverse', 'keys', 'count', 'last'])
def test_scan_over_an_unreadable_last_block_raises(unreadable, how):
    """LevelDB skips the block; the scan used to end before it, with no error."""
    path, records = unreadable
    store = centidb.open('leveldb', path=path)
    try:
        coll = store.collection('docs', key_func=_key)
        with pytest.raises(DatabaseCorruptError, match='damaged'):
            if how == 'items':
                list(coll.items())
            elif how == 'reverse':
                list(coll.items(reverse=True))
            elif how == 'keys':
                list(coll.keys())
            elif how == 'count':
                len(coll)
            else:
                coll.items(lo=(len(records) - 3,)).__next__()
    finally:
        store.close()


def _values_or_error(path):
    try:
        store = centidb.open('leveldb', path=path)
        try:
            return list(store.collection('docs', key_func=_key).values())
        finally:
            store.close()
    except DatabaseCorruptError:
        return None


def test_flipped_byte_in_a_table_index_block_is_reported_by_verify(tmp_path):
    """LevelDB does not check an index block's checksum (without paranoid_checks):
    some flips make the table read as empty, with no error."""
    base = str(tmp_path / 'base')
    records, table = _compacted_store(base)
    _, (index, size) = _footer_handles(table)
    work = str(tmp_path / 'db')
    for where in range(index, index + min(size, 80)):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        _flip(os.path.join(work, os.path.basename(table)), where)
        values = _values_or_error(work)
        if values is not None and values != records:
            break
    else:
        pytest.fail('no flip in the index block made reads lose records silently')
    store = centidb.open('leveldb', path=work)
    try:
        problems = store.verify()
    finally:
        store.close()
    assert problems, 'verify() found nothing'
    assert 'index block fails its checksum' in problems[0].message
    assert os.path.basename(table) in problems[0].message
