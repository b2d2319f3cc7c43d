"""Damaged metadata, under hypothesis: only correct data or a centidb error.

The checks are those of ``stress/fault_metadata.py`` (which runs the long
seeded campaign): the store is opened, listed, read, verified, read as the
command line reads it, and a collection is created in it; any exception
that is not a ``centidb.errors`` class, a collection reading other records
while ``verify()`` finds nothing, or a new collection sharing a prefix is
a failure.
"""

import json
import os
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from centidb import keylib
from centidb.engines import MemoryEngine

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                'stress'))
import fault_metadata  # noqa: E402

ITEMS, EXPECTED = fault_metadata.base_store()
META = {key: value for key, value in ITEMS if key[:1] == keylib.packs(0)}
FIELDS = ['id', 'encoder', 'packer', 'counter', 'key', 'batched', 'unique', 'format',
          'version']

scalars = (st.none() | st.booleans() | st.integers() | st.floats()
           | st.sampled_from([0, -1, 127, 128, 2 ** 63, 2 ** 2000])
           | st.text(max_size=8) | st.sampled_from(['msgpack', 'plain', 'zlib', 'pickle',
                                                    'auto', 'key_func']))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=3),
                                             inner, max_size=4), max_leaves=8)
json_objects = st.fixed_dictionaries({}, optional={field: json_values for field in FIELDS})


def _dumps(value):
    return json.dumps(value).encode('utf-8', 'surrogatepass')


def _packed(value):
    try:
        return keylib.packs(value)
    except (TypeError, ValueError):
        return b'\xff'


values = st.one_of(
    json_objects.map(_dumps), json_values.map(_dumps), st.binary(max_size=40),
    st.integers(1, 30000).map(lambda n: b'[' * n + b']' * n),
    st.integers(1, 30000).map(lambda n: b'{"id": 1, "x": ' + b'[' * n + b']' * n + b'}'),
    (st.integers() | st.booleans() | st.text(max_size=3) | st.floats()
     | st.sampled_from([2 ** 20000, -2 ** 2000])).map(_packed),
)
elements = (st.integers() | st.text(max_size=6) | st.booleans() | st.none()
            | st.sampled_from(['collection', 'index', 'encoder', 'counter', 'sys', 'format',
                               'prefix', 'generation', 'keyed', 'tag']))
keys = st.one_of(
    st.sampled_from(sorted(META)),
    st.lists(elements, max_size=4).map(lambda parts: _packed(tuple([0] + parts))),
    st.binary(min_size=1, max_size=8).map(lambda tail: keylib.packs(0) + tail),
)
mutations = st.lists(st.tuples(keys, st.none() | values), min_size=1, max_size=3)


def _run(changes):
    meta = dict(META)
    made = []
    for key, value in changes:
        made.append(fault_metadata.given_mutation(key, value, meta))
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = value
    return fault_metadata.run_case(ITEMS, EXPECTED, made, MemoryEngine(), 'hypothesis')


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations)
def test_damaged_metadata_gives_correct_data_or_a_centidb_error(changes):
    assert _run(changes) == []


def test_the_seeded_campaign_finds_nothing():
    result = fault_metadata.campaign(50, seed=11)
    assert result['cases'] == 50 and result['lmdb_cases'] == 2
    assert result['parsed'] == 50 * fault_metadata.PARSES_PER_CASE
    assert result['errors'] == []


def test_a_campaign_is_bounded_by_a_time_and_parses_as_told():
    result = fault_metadata.campaign(5, seed=11, parses=3)
    assert result['cases'] == 5 and result['parsed'] == 15
    assert fault_metadata.campaign(5, seed=11, until=0.0)['cases'] == 0


def test_the_campaign_reports_what_escapes(monkeypatch):
    """The checks can fail: a parser that lets a bare error out is reported."""
    def broken(key, value):
        raise KeyError('packer')
    monkeypatch.setattr(fault_metadata.metarecords, 'parse_value', broken)
    errors = _run([(sorted(META)[0], b'{}')])
    assert errors and all('KeyError' in error for error in errors)
