"""centidb.batches.BatchView on a bare in-memory engine transaction, no store.

Exact batch boundaries for ``max_bytes`` and ``max_recs``, keys too long to
batch, batch keys longer than the engine stores, which batches ``batch()``
takes in whole at the ends of its range, ``split()`` (what it returns and
writes back), scans that restart when their own transaction writes, and the
place an error names. The same behaviour through collections, on every
engine, is in ``test_batch_view.py``.
"""

import pytest

from centidb import batches, checksums, encodings, errors, keylib
from centidb.engines import MemoryEngine

PREFIX = b'\x42'
HEADER = b'\x01'            # the plain packer's id, as a plain record's first byte
PACKERS = {1: encodings.PLAIN_PACKER, 2: encodings.ZLIB_PACKER}
END = keylib.next_prefix(PREFIX)


def packer_of(packer_id):
    if packer_id not in PACKERS:
        raise batches.PackerNotAllowed(f'no packer {packer_id}')
    return PACKERS[packer_id]


def make_view(checksum=False, max_key_size=None):
    return batches.BatchView(PREFIX, 'c', HEADER, packer_of, max_key_size, checksum)


def k(*key):
    return keylib.packs(key, PREFIX)


def value(key):
    """A member value three bytes long for small ints (keys pack to two)."""
    return b'v%02d' % key if isinstance(key, int) else b'v' + bytes(key[:2])


@pytest.fixture
def etxn():
    engine = MemoryEngine()
    txn = engine.begin(write=True)
    yield txn
    txn.abort()
    engine.close()


def fill(etxn, view, keys):
    for key in keys:
        etxn.put(k(key), view.sealed(HEADER + value(key)))


def layout(etxn, view):
    """The physical records: ('batch', [member keys]) or ('plain', key)."""
    out = []
    for key_bytes, stored in etxn.items(PREFIX, END):
        if view.is_batch(key_bytes, stored):
            out.append(('batch', [keylib.unpacks(m, PREFIX)[0]
                                  for m, _ in view.members(stored, key_bytes)]))
        else:
            out.append(('plain', keylib.unpacks(key_bytes, PREFIX)[0]))
    return out


def batch(etxn, view, lo=None, hi=None, max_recs=batches.MAX_MEMBERS, max_bytes=None):
    return view.batch(etxn, lo or PREFIX, hi or END, max_recs, max_bytes, 1, PACKERS[1])


def scan(view, etxn, lo=None, hi=None, reverse=False):
    return [keylib.unpacks(kb, PREFIX)[0]
            for kb, _ in view.items(etxn, lo or PREFIX, hi or END, reverse)]


# --- checksums, packers and the place an error names -------------------------------

def test_checksums_are_off_unless_asked_for():
    view = batches.BatchView(PREFIX, 'c', HEADER, packer_of, None)
    assert view.sealed(b'\x01abc') == b'\x01abc'
    assert view.opened(b'\x01abc') == b'\x01abc'
    checked = make_view(checksum=True)
    assert checked.sealed(b'\x01abc') == checksums.seal(b'\x01abc') != b'\x01abc'
    assert checked.opened(checksums.seal(b'\x01abc')) == b'\x01abc'


def test_a_damaged_value_is_named_by_where_it_is_stored():
    view = make_view(checksum=True)
    damaged = b'\x01abc\x00\x00\x00\x00'
    where = [(None, "collection 'c': a stored value is damaged"),
             (k(7), r"collection 'c': the record under key \(7,\) is damaged"),
             (keylib.packs([(9,), (3,)], PREFIX),
              r"collection 'c': the batch of keys \(3,\) to \(9,\) is damaged"),
             (b'\x99\x00', r"collection 'c': the value under key bytes b'\\x99\\x00' is damaged")]
    for key_bytes, message in where:
        with pytest.raises(errors.ChecksumError, match='^' + message):
            view.opened(damaged, key_bytes)


def test_a_packer_the_collection_does_not_use_is_named():
    view = make_view()
    assert view.packer(2) is encodings.ZLIB_PACKER
    with pytest.raises(errors.CorruptRecordError,
                       match=r"^collection 'c': the record under key \(4,\) cannot be read: "
                             r"no packer 9$"):
        view.packer(9, k(4))
    with pytest.raises(errors.CorruptRecordError, match=r"the value stored under b'B' is empty"):
        view.is_batch(PREFIX, b'')


def test_members_come_out_as_plain_records_sealed_when_checksummed():
    members = [(keylib.packs(1), b'one'), (keylib.packs(2), b'two')]
    for checksum in (False, True):
        view = make_view(checksum=checksum)
        stored = view.sealed(batches.encode_batch(1, PACKERS[1], members))
        assert view.encoded_members(stored) == members
        assert view.members(stored) == [(k(1), view.sealed(b'\x01one')),
                                        (k(2), view.sealed(b'\x01two'))]
        assert view.encoded(view.sealed(b'\x01one')) == b'one'


# --- batch(): boundaries ---------------------------------------------------------

def test_max_bytes_counts_keys_and_values_and_admits_an_exact_fit(etxn):
    # Each record is a 2-byte key and a 3-byte value: 5 bytes.
    view = make_view()
    fill(etxn, view, range(1, 7))
    assert batch(etxn, view, max_bytes=10) == (6, 3, keylib.packs(6))
    assert layout(etxn, view) == [('batch', [1, 2]), ('batch', [3, 4]), ('batch', [5, 6])]
    assert batch(etxn, view, max_bytes=9) == (6, 6, keylib.packs(6))
    assert layout(etxn, view) == [('batch', [n]) for n in range(1, 7)]
    assert batch(etxn, view, max_bytes=15, max_recs=2) == (6, 3, keylib.packs(6))
    assert layout(etxn, view) == [('batch', [1, 2]), ('batch', [3, 4]), ('batch', [5, 6])]


@pytest.mark.parametrize('max_bytes', [9, 10])
def test_a_key_too_long_to_batch_stays_plain_between_batches(etxn, max_bytes):
    # 1 and b'a' (with their values) are 5 bytes each, so are b'x' and b'y'.
    view = make_view()
    longest = b'b' * 57342           # packs to exactly MAX_KEY_BYTES bytes
    too_long = b'm' * 57400
    assert len(keylib.packs(longest)) == batches.MAX_KEY_BYTES
    keys = [1, b'a', longest, too_long, b'x', b'y']
    fill(etxn, view, keys)
    if max_bytes == 10:
        runs = [[1, b'a'], [longest], 'plain', [b'x', b'y']]
    else:
        runs = [[1], [b'a'], [longest], 'plain', [b'x'], [b'y']]
    assert batch(etxn, view, max_bytes=max_bytes) == (6, len(runs) - 1, keylib.packs(b'y'))
    assert layout(etxn, view) == [('plain', too_long) if run == 'plain' else ('batch', run)
                                  for run in runs]
    assert etxn.get(k(too_long)) == HEADER + value(too_long)
    assert [key for key, _ in view.items(etxn, PREFIX, END, False)] == [k(n) for n in keys]


def test_a_long_value_is_batched(etxn):
    view = make_view()
    fill(etxn, view, [1, 2])
    etxn.put(k(3), HEADER + b'w' * 70000)
    assert batch(etxn, view) == (3, 1, keylib.packs(3))
    assert layout(etxn, view) == [('batch', [1, 2, 3])]
    assert view.get(etxn, k(3)) == HEADER + b'w' * 70000


def test_a_batch_key_the_engine_cannot_store_leaves_the_records_plain(etxn):
    key_size = len(batches.batch_key(PREFIX, [(keylib.packs(1), b''), (keylib.packs(3), b'')]))
    view = make_view(checksum=True, max_key_size=key_size)
    fill(etxn, view, [1, 2, 3])
    assert batch(etxn, view) == (3, 1, keylib.packs(3))    # exactly the longest key
    assert layout(etxn, view) == [('batch', [1, 2, 3])]

    view = make_view(checksum=True, max_key_size=key_size - 1)
    before = list(etxn.items(PREFIX, END))
    assert batch(etxn, view, max_recs=2) == (3, 0, keylib.packs(3))
    assert list(etxn.items(PREFIX, END)) == [(k(n), checksums.seal(HEADER + value(n)))
                                             for n in (1, 2, 3)]
    assert before != list(etxn.items(PREFIX, END))


def test_batch_takes_whole_batches_that_start_below_hi(etxn):
    view = make_view()
    fill(etxn, view, range(1, 9))
    assert batch(etxn, view, lo=k(5), hi=k(8)) == (3, 1, keylib.packs(7))
    # hi at a batch's first member: that batch is not part of the range.
    assert batch(etxn, view, hi=k(5)) == (4, 1, keylib.packs(4))
    assert layout(etxn, view) == [('batch', [1, 2, 3, 4]), ('batch', [5, 6, 7]), ('plain', 8)]
    # hi past a batch's first member: the whole batch is taken in, beyond hi.
    assert batch(etxn, view, lo=k(2), hi=k(6), max_recs=3) == (7, 3, keylib.packs(7))
    assert layout(etxn, view) == [('batch', [1, 2, 3]), ('batch', [4, 5, 6]), ('batch', [7]),
                                  ('plain', 8)]


# --- split() ------------------------------------------------------------------------

def test_split_returns_the_member_and_writes_back_the_rest(etxn):
    view = make_view(checksum=True)
    fill(etxn, view, range(1, 6))
    batch(etxn, view)
    assert view.split(etxn, k(3)) == checksums.seal(HEADER + value(3))
    assert layout(etxn, view) == [('batch', [1, 2]), ('batch', [4, 5])]
    # A lone member on either side becomes a plain record.
    assert view.split(etxn, k(5)) == checksums.seal(HEADER + value(5))
    assert layout(etxn, view) == [('batch', [1, 2]), ('plain', 4)]
    assert view.split(etxn, k(1)) == checksums.seal(HEADER + value(1))
    assert layout(etxn, view) == [('plain', 2), ('plain', 4)]
    assert view.get(etxn, k(2)) == checksums.seal(HEADER + value(2))


def test_split_with_rejoin_and_keys_that_are_not_members(etxn):
    view = make_view()
    fill(etxn, view, [1, 3, 5, 7])
    batch(etxn, view)
    assert view.split(etxn, k(0)) is None                    # below the batch
    assert view.split(etxn, k(9)) is None                    # above it
    assert layout(etxn, view) == [('batch', [1, 3, 5, 7])]
    assert view.split(etxn, k(4), rejoin=True) is None       # inside, not a member
    assert layout(etxn, view) == [('batch', [1, 3, 5, 7])]
    assert view.split(etxn, k(5), rejoin=True) == HEADER + value(5)
    assert layout(etxn, view) == [('batch', [1, 3, 7])]
    assert view.split(etxn, k(2)) is None
    assert layout(etxn, view) == [('plain', 1), ('batch', [3, 7])]
    assert view.split(etxn, k(3), rejoin=True) == HEADER + value(3)
    assert layout(etxn, view) == [('plain', 1), ('plain', 7)]


# --- scans that restart when their transaction writes ---------------------------------

def test_forward_scan_restarts_after_its_transaction_splits_the_batch(etxn):
    view = make_view()
    fill(etxn, view, range(1, 7))
    batch(etxn, view)
    it = view.items(etxn, PREFIX, END, False)
    assert [next(it)[0], next(it)[0]] == [k(1), k(2)]
    view.split(etxn, k(4))                                  # 4 leaves: [1, 2, 3] [5, 6]
    assert [kb for kb, _ in it] == [k(3), k(5), k(6)]
    assert scan(view, etxn, lo=k(2), hi=k(6)) == [2, 3, 5]


@pytest.mark.parametrize('taken,split,rest', [(1, 4, [5, 3, 2, 1]), (2, 3, [4, 2, 1])])
def test_reverse_scan_restarts_after_its_transaction_splits_the_batch(etxn, taken, split, rest):
    view = make_view()
    fill(etxn, view, range(1, 7))
    batch(etxn, view)
    it = view.items(etxn, PREFIX, END, True)
    assert [next(it)[0] for _ in range(taken)] == [k(6), k(5)][:taken]
    view.split(etxn, k(split))                              # the others stay, in two batches
    assert [kb for kb, _ in it] == [k(n) for n in rest]


@pytest.mark.parametrize('taken,expected', [(2, [4, 3, 1]), (6, [4, 3, 2, 1])])
def test_reverse_scan_restarts_inside_a_batch_straddling_hi(etxn, taken, expected):
    view = make_view()
    fill(etxn, view, range(1, 7))
    batch(etxn, view)
    it = view.items(etxn, PREFIX, k(5), True)
    assert next(it)[0] == k(4)
    # Taking 2 out leaves [1] [3..6]; taking 6 out leaves [1..5], a batch that
    # still straddles the scan's new upper bound.
    view.split(etxn, k(taken))
    assert [keylib.unpacks(kb, PREFIX)[0] for kb, _ in it] == expected[1:]
    assert scan(view, etxn, hi=k(5), reverse=True) == expected


def test_reverse_scan_straddling_a_damaged_batch_names_it(etxn):
    view = make_view(checksum=True)
    fill(etxn, view, range(1, 4))
    batch(etxn, view)
    (key_bytes, stored), = etxn.items(PREFIX, END)
    etxn.put(key_bytes, stored[:-1] + bytes([stored[-1] ^ 1]))
    with pytest.raises(errors.ChecksumError, match=r'the batch of keys \(1,\) to \(3,\)'):
        scan(view, etxn, hi=k(2), reverse=True)
