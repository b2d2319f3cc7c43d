"""centidb.metarecords: the one checking parser of metadata records.

Every malformed metadata record (a key of an unknown shape, a value that is
not JSON, too deep or too big, a field missing or of the wrong type, an id
or counter out of range) raises :class:`~centidb.errors.StoreFormatError`
naming the record, whoever reads it: opening the store, listing and opening
collections, writing, registering an encoder, the command line's
``read_metadata``; and ``verify()`` reports it. The catalog's own behaviour
is tested in ``test_catalog.py``.
"""

import re

import pytest

import centidb
from centidb import keylib, metarecords
from centidb.catalog import read_metadata
from centidb.encodings import Encoder
from centidb.errors import StoreFormatError
from stores import by_id
from test_catalog import docs_store


def _json(text):
    return text.encode()


_COLL = ('{"counter": "docs:key", "encoder": "msgpack", "key": "key_func", "packer": "plain", '
         '"id": %s}')
_DEEP = b'{"id": 1, "x": ' + b'[' * 20000 + b']' * 20000 + b'}'   # under the size limit

#: (metadata key, stored bytes, words the error must hold)
MALFORMED = [
    ((0, 'collection', 'docs'), _DEEP, "collection 'docs'.*RecursionError"),
    ((0, 'collection', 'docs'), b'{"id": 1, "pad": "' + b'x' * 70000 + b'"}',
     "collection 'docs'.*bytes"),
    ((0, 'collection', 'docs'), b'\xff\xfe', "collection 'docs'.*unreadable"),
    ((0, 'collection', 'docs'), b'[1, 2]', "collection 'docs'.*not a JSON object"),
    ((0, 'collection', 'docs'), _json(_COLL % '0'), "collection 'docs'.*'id' is 0"),
    ((0, 'collection', 'docs'), _json(_COLL % '-3'), "collection 'docs'.*'id' is -3"),
    ((0, 'collection', 'docs'), _json(_COLL % 'true'), "collection 'docs'.*not an int"),
    ((0, 'collection', 'docs'), _json(_COLL % '1.0'), "collection 'docs'.*not an int"),
    ((0, 'collection', 'docs'), _json(_COLL % str(2 ** 70)), "collection 'docs'.*outside"),
    ((0, 'collection', 'docs'), _json(_COLL % ('1' * 5000)), "collection 'docs'.*unreadable"),
    ((0, 'collection', 'docs'), _json(_COLL.replace('"packer": "plain", ', '') % '1'),
     "collection 'docs'.*no 'packer'"),
    ((0, 'collection', 'docs'), _json(_COLL.replace('}', ', "batched": "yes"}') % '1'),
     "collection 'docs'.*'batched'"),
    ((0, 'collection', 5), _json(_COLL % '9'), r"\(0, 'collection', 5\)"),
    ((0, 'collection', ''), _json(_COLL % '9'), r"\(0, 'collection', ''\)"),
    ((0, 'collection', 'docs', 'x'), _json(_COLL % '9'), r"\(0, 'collection', 'docs', 'x'\)"),
    ((0, 'index', 1), b'{"id": 9}', r"\(0, 'index', 1\)"),
    ((0, 'index', 1, 'tag'), b'{"id": 2, "unique": 1}', "index 'tag'.*'unique'"),
    ((0, 'index', 1, 'tag'), b'{"id": 0}', "index 'tag'.*'id' is 0"),
    ((0, 'index', 1, 'tag'), b'{"id": 2, "fields": "tag"}', "index 'tag'.*'fields'.*not a list"),
    ((0, 'index', 1, 'tag'), b'{"id": 2, "fields": []}', "index 'tag'.*'fields'.*at least one"),
    ((0, 'index', 1, 'tag'), b'{"id": 2, "fields": ["a..b"]}', "index 'tag'.*'fields'.*empty part"),
    ((0, 'index', 1, 'tag'), b'{"id": 2, "fields": [1]}', "index 'tag'.*'fields'.*not 'int'"),
    ((0, 'index', 1, 'tag'), b'{"id": 2, "fields": ["a", "a"]}', "index 'tag'.*'fields'.*twice"),
    ((0, 'encoder', 'plain'), b'{"id": 300}', "encoder 'plain'.*300"),
    ((0, 'encoder', 'plain'), b'{"id": 128}', "encoder 'plain'.*128"),
    ((0, 'encoder', 'plain'), b'{"id": 0}', "encoder 'plain'.*'id' is 0"),
    ((0, 'encoder', 'plain'), b'{"id": true}', "encoder 'plain'.*not an int"),
    ((0, 'format',), b'{"format": "centidb", "version": true}', "format record.*not an int"),
    ((0, 'sys', 'generation'), keylib.packs(2 ** 2000), 'metadata generation.*outside'),
    ((0, 'sys', 'generation'), keylib.packs(-1), 'metadata generation.*outside'),
    ((0, 'sys', 'generation'), keylib.packs(2 ** 20000), 'metadata generation.*20001 bits'),
    ((0, 'sys', 'prefix'), keylib.packs(0), 'prefix counter.*outside'),
    ((0, 'sys', 'prefix'), keylib.packs(True), 'prefix counter.*not an int'),
    ((0, 'sys', 'encoder'), keylib.packs(500), 'encoder id counter.*outside'),
    ((0, 'counter', 'docs:key'), keylib.packs('ten'), "counter 'docs:key'.*not an int"),
]


def _actions(engine):
    """Open the store, list, open and write its collections, read its catalog as the CLI does."""
    store = centidb.Store(engine)
    store.collections()
    docs = store.collection('docs', key_func=by_id)
    docs.add_index('tag', lambda rec: rec['tag'])
    list(docs.items())
    docs.put({'id': 2, 'tag': 'b'})
    store.collection('new').put('x')
    store.add_encoder(Encoder('extra', lambda b: b, lambda b: b))
    with engine.begin() as etxn:
        read_metadata(etxn)


@pytest.mark.parametrize('key, value, match', MALFORMED)
def test_malformed_metadata_raises_store_format_error_naming_the_record(key, value, match):
    """Regression: these raised RecursionError, IndexError, TypeError, ValueError
    ('bytes must be in range(0, 256)'), UnicodeDecodeError and KeyError from the
    library and the command line's metadata reader, or were accepted (ids 0 and below, a
    format version of true, a generation of 2**2000)."""
    store, engine = docs_store()
    engine.put(keylib.packs(key), value)
    with pytest.raises(StoreFormatError, match=match):
        _actions(engine)
    found = [str(problem) for problem in store.verify()]
    assert any(re.search(match, problem) for problem in found), found


def test_metadata_parser_names_undecodable_keys():
    store, engine = docs_store()
    engine.put(keylib.packs((0, 'collection')) + b'\x00\xfe', b'{}')
    with pytest.raises(StoreFormatError, match='cannot be decoded'):
        store.collections()
    assert any('cannot be decoded' in str(problem) for problem in store.verify())
    with pytest.raises(StoreFormatError, match='cannot be decoded'):
        metarecords.parse_key(b'\x00\xff')
