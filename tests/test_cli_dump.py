"""``centidb dump`` and ``centidb load`` under damage: cut dumps, bad trailers, failed loads.

The command line runs in this process (:func:`centidb.cli.main`), so an
exception that escapes it fails the test rather than printing a traceback.
Every load that fails must exit with the documented status, name the
dump's line, and leave nothing behind: no new store, no temporary one, and
an existing store as it was.
"""

import hashlib
import io
import json
import os

import pytest

import centidb
from centidb import encodings
from centidb.cli import main
from centidb.dumpfile import DumpWriter, line_digest
from centidb.dumpformat import CollectionLine, CounterLine, IndexSpec

ENGINES = {'lmdb': ('LmdbEngine', 'path'), 'leveldb': ('PlyvelEngine', 'name')}
APP = 'test_cli_dump:setup'


def setup(store):
    """The --app of these tests: people keyed by name, unique by email."""
    people = store.collection('people', key_func=lambda rec: (rec['name'],))
    people.add_index('by_email', lambda rec: [(rec['email'],)], unique=True)
    return people


def broken(store):
    """An --app that fails after the store is open."""
    setup(store)
    raise RuntimeError('no')


def open_store(path, engine, create=False):
    name, arg = ENGINES[engine]
    options = {arg: str(path)}
    if engine == 'leveldb':
        options['create_if_missing'] = create
    return centidb.open(name, **options)


def make_store(path, engine, people=5):
    with open_store(path, engine, create=True) as store:
        setup(store).put_many({'name': f'p{i}', 'email': f'e{i}'} for i in range(people))
        store.collection('log').put_many(['one', b'two'])


def contents(path, engine):
    """Every collection's records and the counters, read through the API."""
    with open_store(path, engine) as store:
        setup(store)
        found = {name: list(store.collection(name).items()) for name in store.collections()}
        found['counters'] = {name: store.counter(name, 0) for name in ('log:key',)}
        return found


def run(capsys, *args):
    """Run the command line; return (exit status, stdout, stderr)."""
    out = io.StringIO()
    status = main([str(arg) for arg in args], out=out)
    captured = capsys.readouterr()
    return status, out.getvalue(), captured.err


def listing(directory):
    return sorted(os.listdir(directory))


@pytest.fixture(params=sorted(ENGINES))
def engine(request):
    return request.param


@pytest.fixture
def dump(tmp_path, engine, capsys):
    """The lines (bytes, with their newlines) of a small store's dump."""
    source = tmp_path / 'source'
    make_store(source, engine)
    status, _, _ = run(capsys, 'dump', source, '-o', tmp_path / 'dump.jsonl')
    assert status == 0
    return (tmp_path / 'dump.jsonl').read_bytes().splitlines(keepends=True)


def write(path, lines):
    path.write_bytes(b''.join(lines))
    return path


def rewrite(lines, records, collections=('log', 'people'), counters=()):
    """A dump with a valid trailer: `lines`' header and metadata, then `records`."""
    out = io.StringIO()
    writer = DumpWriter(out)
    writer.write_header()
    for line in lines[1:]:
        obj = json.loads(line)
        if obj['type'] == 'collection' and obj['name'] in collections:
            writer.write_collection(CollectionLine(
                obj['name'], obj['key'], obj['encoder'], obj['packer'], obj['counter'],
                obj['batched'], tuple(IndexSpec(**index) for index in obj['indexes'])))
    for name, value in counters:
        writer.write_counter(CounterLine(name, value))
    for collection, key, value in records:
        writer.write_record(collection, key, value)
    writer.write_trailer()
    return out.getvalue().encode().splitlines(keepends=True)


# --- the trailer ------------------------------------------------------------------------

def test_a_dump_ends_with_its_trailer(dump):
    trailer = json.loads(dump[-1])
    body = b''.join(dump[:-1])
    assert trailer == {'type': 'trailer', 'lines': len(dump) - 1,
                       'records': [['log', 2], ['people', 5]],
                       'sha256': hashlib.sha256(body).hexdigest()}
    assert body == b''.join(map(line_digest, dump[:-1]))


def test_a_whole_dump_loads(tmp_path, dump, engine, capsys):
    status, _, err = run(capsys, 'load', tmp_path / 'new', write(tmp_path / 'd', dump),
                         '--app', APP, '--batch', 2)
    assert (status, err) == (0, '')
    assert contents(tmp_path / 'new', 'lmdb') == contents(tmp_path / 'source', engine)
    assert listing(tmp_path) == ['d', 'dump.jsonl', 'new', 'source']


def test_every_line_cut_is_refused_and_loads_with_partial(tmp_path, dump, capsys):
    for end in range(len(dump)):
        cut = write(tmp_path / 'cut', dump[:end])
        before = listing(tmp_path)
        status, _, err = run(capsys, 'load', tmp_path / 'new', cut, '--app', APP, '--batch', 2)
        assert status == 3, err
        assert err.count('\n') == 1 and '--partial' in err
        assert ('is empty' in err) if end == 0 else (f'ends at line {end} without its trailer'
                                                     in err)
        assert listing(tmp_path) == before
        status, _, err = run(capsys, 'load', tmp_path / 'new', cut, '--app', APP, '--partial')
        assert status == 0 and err.startswith('centidb load: warning: --partial: ')
        assert 'without its trailer' in err or end == 0
        with open_store(tmp_path / 'new', 'lmdb') as store:
            setup(store)
            held = sum(len(store.collection(name)) for name in store.collections())
        assert held == sum(json.loads(line)['type'] == 'record' for line in dump[:end])
        os.rename(tmp_path / 'new', tmp_path / f'partial-{end}')     # LMDB: a fresh path


def test_every_byte_cut_is_refused_cleanly(tmp_path, capsys):
    # Every byte prefix of a dump is read in test_dumpformat; the command
    # runs here on every fifth cut of a small one and on each side of every
    # line break (the engine is not at stake: LMDB, without fsync).
    source = tmp_path / 'source'
    with open_store(source, 'lmdb', create=True) as store:
        store.collection('c').put({'é': b'\x00'})
    run(capsys, 'dump', source, '-o', tmp_path / 'dump.jsonl')
    data = (tmp_path / 'dump.jsonl').read_bytes()
    assert len(data) < 500
    cut = tmp_path / 'cut'
    before = sorted(listing(tmp_path) + ['cut'])
    breaks = [at for at, byte in enumerate(data) if byte == ord('\n')]
    ends = sorted(set(range(0, len(data), 5)) | {at + step for at in breaks for step in (0, 1, 2)})
    for end in [end for end in ends if end < len(data)]:
        cut.write_bytes(data[:end])
        status, _, err = run(capsys, 'load', tmp_path / 'new', cut, '--option', 'sync=false')
        assert status == 3 and err.startswith('centidb load: error: ') and err.count('\n') == 1
        assert listing(tmp_path) == before
    cut.write_bytes(data)
    assert run(capsys, 'load', tmp_path / 'new', cut)[:2] == (0, '')


@pytest.mark.parametrize('change, message', [
    (lambda lines: lines[:-1] + [lines[-1].replace(b'["people",5]', b'["people",6]')],
     "line 12: the trailer counts 6 records of collection 'people', but the dump holds 5"),
    (lambda lines: lines[:-1] + [lines[-1].replace(b'"lines":11', b'"lines":10')],
     'line 12: the trailer says 10 lines come before it, but 11 do'),
    (lambda lines: lines[:-1] + [lines[-1].replace(b'["log",', b'["logs",')],
     'line 12: the trailer counts the records of the collections'),
    (lambda lines: lines[:6] + [lines[6].replace(b'"e0"', b'"e9"')] + lines[7:],
     "line 12: the SHA-256 of the lines before the trailer"),
    (lambda lines: lines[:6] + lines[7:], 'line 11: the trailer says 11 lines'),
    (lambda lines: lines + [b'\n'], 'line 13: a line after the trailer'),
    (lambda lines: lines + lines, 'line 13: a line after the trailer'),
    (lambda lines: lines[:-1] + [lines[-1].rstrip(b'\n')], 'line 12: the trailer has no line '
                                                           'break after it'),
    (lambda lines: lines[:-1] + [b'{"type":"trailer"}\n'], 'line 12: a trailer line has'),
    (lambda lines: lines[:5] + [b'{"type":"record"}\n'] + lines[6:], 'line 6: a record line'),
    (lambda lines: lines[:5] + [lines[5][:-9] + b'\xff' + lines[5][-8:]] + lines[6:],
     'line 6: not UTF-8'),
])
def test_a_bad_trailer_is_refused(tmp_path, dump, capsys, change, message):
    path = write(tmp_path / 'bad', change(dump))
    before = listing(tmp_path)
    status, _, err = run(capsys, 'load', tmp_path / 'new', path, '--app', APP)
    assert status == 3 and err.startswith('centidb load: error: ' + message), err
    assert listing(tmp_path) == before
    status, _, err = run(capsys, 'load', tmp_path / 'new', path, '--app', APP, '--partial')
    assert status == 0 and err.startswith('centidb load: warning: --partial: ' + message), err


def test_the_small_dump_is_laid_out_as_the_trailer_tests_assume(dump):
    assert [json.loads(line)['type'] for line in dump] == (
        ['header', 'collection', 'collection', 'counter'] + ['record'] * 7 + ['trailer'])
    assert b'"e0"' in dump[6]


def test_a_dump_without_a_trailer_needs_partial(tmp_path, dump, capsys):
    old = write(tmp_path / 'old', dump[:-1])
    status, _, err = run(capsys, 'load', tmp_path / 'new', old, '--app', APP)
    assert status == 3
    assert err == ('centidb load: error: the dump ends at line 11 without its trailer line, '
                   'so it may be cut short (a dump from a centidb that wrote no trailer has '
                   'none either); --partial reads the lines it has\n')
    status, _, err = run(capsys, 'load', tmp_path / 'new', old, '--app', APP, '--partial')
    assert status == 0
    assert err == ("centidb load: warning: --partial: the dump ends at line 11 without its "
                   "trailer line, so it may be cut short (a dump from a centidb that wrote no "
                   "trailer has none either); read 2 records of 'log', 5 records of 'people' "
                   "from its 11 lines\n")


# --- failed loads -----------------------------------------------------------------------

def duplicate_email(dump):
    """The dump with a sixth person whose email the first has, on line 12."""
    records = [('log', (1,), 'one'), ('log', (2,), b'two')]
    records += [('people', (f'p{i}',), {'name': f'p{i}', 'email': f'e{i}'}) for i in range(5)]
    records.append(('people', ('q',), {'name': 'q', 'email': 'e0'}))
    return rewrite(dump, records, counters=[('log:key', 3)])


def test_a_unique_error_names_the_line_and_leaves_no_store(tmp_path, dump, capsys):
    path = write(tmp_path / 'dup', duplicate_email(dump))
    before = listing(tmp_path)
    status, _, err = run(capsys, 'load', tmp_path / 'new', path, '--app', APP, '--batch', 2)
    assert status == 3
    assert err.startswith("centidb load: error: line 12: UniqueError: unique index 'by_email' "
                          "of collection 'people' already has ('e0',)")
    assert err.count('\n') == 1
    assert listing(tmp_path) == before
    # Missing parent directories are created for the load, and removed with it.
    status, _, err = run(capsys, 'load', tmp_path / 'a' / 'b' / 'new', path, '--app', APP)
    assert status == 3 and 'line 12: UniqueError' in err
    assert listing(tmp_path) == before


def test_a_key_too_long_names_the_line_and_leaves_no_store(tmp_path, dump, capsys):
    long_key = ('x' * 600,)
    lines = rewrite(dump, [('log', (1,), 'one'), ('log', long_key, 'two')],
                    collections=('log',), counters=[('log:key', 3)])
    path = write(tmp_path / 'long', lines)
    before = listing(tmp_path)
    status, _, err = run(capsys, 'load', tmp_path / 'new', path, '--engine', 'lmdb')
    assert status == 3 and err.count('\n') == 1
    assert err.startswith("centidb load: error: line 5: ValueError: key ('xxx")
    assert 'the engine stores at most 511' in err
    assert listing(tmp_path) == before


def test_an_empty_directory_is_a_new_store(tmp_path, dump, capsys):
    (tmp_path / 'new').mkdir()
    status, _, err = run(capsys, 'load', tmp_path / 'new', write(tmp_path / 'd', dump),
                         '--app', APP)
    assert (status, err) == (0, '')
    assert len(contents(tmp_path / 'new', 'lmdb')['people']) == 5
    bad = write(tmp_path / 'bad', duplicate_email(dump))
    (tmp_path / 'other').mkdir()
    status, _, err = run(capsys, 'load', tmp_path / 'other', bad, '--app', APP)
    assert status == 3 and listing(tmp_path / 'other') == []


def test_a_failed_load_into_an_existing_store_changes_nothing(tmp_path, dump, engine, capsys):
    target = tmp_path / 'target'
    with open_store(target, engine, create=True) as store:
        setup(store).put({'name': 'zed', 'email': 'z'})
    before = contents(target, engine)
    files = sorted(listing(tmp_path) + ['dup'])
    records = [('log', (1,), 'one')] + [
        ('people', (f'p{i}',), {'name': f'p{i}', 'email': f'e{i}'}) for i in range(5)]
    records.append(('people', ('q',), {'name': 'q', 'email': 'z'}))
    path = write(tmp_path / 'dup', rewrite(dump, records, counters=[('log:key', 9)]))
    status, _, err = run(capsys, 'load', target, path, '--app', APP, '--batch', 2)
    assert status == 3 and err.startswith("centidb load: error: line 11: UniqueError: ")
    assert contents(target, engine) == before       # no 'log' collection, no counter, no people
    assert listing(tmp_path) == files
    # The same dump without the bad line goes in whole: collection, records and counter.
    path = write(tmp_path / 'good', rewrite(dump, records[:-1], counters=[('log:key', 9)]))
    assert run(capsys, 'load', target, path, '--app', APP, '--batch', 2)[0] == 0
    after = contents(target, engine)
    assert len(after['people']) == 6 and after['log'] == [((1,), 'one')]
    assert after['counters'] == {'log:key': 9}


def test_a_collection_error_names_its_line(tmp_path, dump, capsys):
    path = write(tmp_path / 'd', dump)
    status, _, err = run(capsys, 'load', tmp_path / 'new', path)
    assert status == 2
    assert err == ("centidb load: error: line 3: collection 'people' has the index "
                   "'by_email': give --app MODULE:FUNCTION that adds it\n")
    assert not (tmp_path / 'new').exists()


def test_a_failing_app_leaves_no_store(tmp_path, dump, capsys):
    path = write(tmp_path / 'd', dump)
    before = listing(tmp_path)
    status, _, err = run(capsys, 'load', tmp_path / 'new', path, '--app', 'test_cli_dump:broken')
    assert status == 4 and 'RuntimeError: no' in err
    assert listing(tmp_path) == before


def test_a_failed_dump_leaves_its_output_as_it_was(tmp_path, engine, capsys):
    source = tmp_path / 'source'
    with open_store(source, engine, create=True) as store:
        store.add_encoder(encodings.PICKLE_ENCODER)
        store.collection('p', encoder=encodings.PICKLE_ENCODER).put_many([1, {2, 3}])
    status, _, err = run(capsys, 'dump', source, '--allow-pickle', '-o', tmp_path / 'd')
    assert status == 3 and "collection 'p', key (2,)" in err
    assert listing(tmp_path) == ['source']
    (tmp_path / 'd').write_text('old')
    assert run(capsys, 'dump', source, '--allow-pickle', '-o', tmp_path / 'd')[0] == 3
    assert listing(tmp_path) == ['d', 'source'] and (tmp_path / 'd').read_text() == 'old'
    with open_store(source, engine) as store:
        store.add_encoder(encodings.PICKLE_ENCODER)
        store.collection('p', encoder=encodings.PICKLE_ENCODER).delete((2,))
    assert run(capsys, 'dump', source, '--allow-pickle', '-o', tmp_path / 'd')[0] == 0
    assert json.loads((tmp_path / 'd').read_text().splitlines()[-1])['records'] == [['p', 1]]
    assert oct((tmp_path / 'd').stat().st_mode & 0o777) == oct(0o666 & ~current_umask())


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_record_not_under_its_key_func_names_the_line(tmp_path, dump, capsys):
    # A hand-edited key: with --app's key function the record could be neither
    # found by its key nor saved again, so load refuses it.
    records = [('log', (1,), 'one')]
    records += [('people', (f'p{i}',), {'name': f'p{i}', 'email': f'e{i}'}) for i in range(4)]
    records.append(('people', ('edited',), {'name': 'p4', 'email': 'e4'}))
    path = write(tmp_path / 'edited', rewrite(dump, records, counters=[('log:key', 1)]))
    before = listing(tmp_path)
    status, _, err = run(capsys, 'load', tmp_path / 'new', path, '--app', APP)
    assert status == 3 and err.count('\n') == 1
    assert err.startswith("centidb load: error: line 10: collection 'people': the record "
                          "is stored under ('edited',), but its key function gives ('p4',)")
    assert listing(tmp_path) == before


def test_a_load_keeps_each_collections_checksum_setting(tmp_path, capsys):
    source = tmp_path / 'source'
    with open_store(source, 'lmdb', create=True) as store:
        store.collection('sums', checksum=True).put('kept')
        store.collection('plain', checksum=False).put('bare')
    assert run(capsys, 'dump', source, '-o', tmp_path / 'd')[0] == 0
    assert run(capsys, 'load', tmp_path / 'new', tmp_path / 'd')[:1] == (0,)
    with open_store(tmp_path / 'new', 'lmdb') as store:
        loaded = {name: store.collection(name).checksum for name in store.collections()}
        assert loaded == {'plain': False, 'sums': True}
        assert store.verify() == []
        assert list(store.collection('sums').values()) == ['kept']
