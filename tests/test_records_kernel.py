"""centidb.records.kernel: the record layer's kernel functions in Python.

The compiled record modules call the C functions of the same names; what
they give is checked through the records read and written in both passes
(test_records_record.py, test_records_reader.py), here the reference.
"""

from hypothesis import given
from hypothesis import strategies as st

import centidb
from centidb.records.kernel import body_of, rejoined


@given(st.binary(max_size=20), st.binary(max_size=20), st.data())
def test_rejoined_is_the_head_and_the_tail_from_start(head, data, draw):
    start = draw.draw(st.integers(0, len(data)))
    assert rejoined(head, data, start) == head + data[start:]


@given(st.binary(min_size=1, max_size=30), st.sampled_from([0, 4]))
def test_body_of_drops_the_header_byte_and_the_trailer(stored, trailer):
    if len(stored) < 1 + trailer:
        stored += bytes(1 + trailer - len(stored))
    body = body_of(stored, trailer)
    assert stored == stored[:1] + body + stored[len(stored) - trailer:]
    assert len(body) == len(stored) - 1 - trailer


def test_a_record_read_back_with_and_without_checksums_is_the_value_written():
    """Through the compiled functions in the compiled pass, the reference here."""
    store = centidb.open('ListEngine')
    for checksum in (False, True):
        coll = store.collection(f'c{checksum}', key_func=lambda rec: rec['k'],
                                checksum=checksum)
        coll.add_index('tag', lambda rec: rec['tag'])
        coll.put({'k': 1, 'tag': 'a', 'v': 'x' * 40})
        with store.begin() as txn:
            assert coll.get(1, txn=txn) == {'k': 1, 'tag': 'a', 'v': 'x' * 40}
            assert coll.indices['tag'].get('a', txn=txn)['k'] == 1
    store.close()
