"""merge_overlay: pending writes merged over a snapshot."""

from sortedcontainers import SortedDict

from centidb.engines import TOMBSTONE, merge_overlay


def test_merge_overlay_directly():
    overlay = SortedDict({b'b': b'B', b'c': TOMBSTONE, b'e': b'E'})
    base = [(b'a', b'1'), (b'c', b'3'), (b'd', b'4')]
    assert list(merge_overlay(overlay, iter(base))) == \
        [(b'a', b'1'), (b'b', b'B'), (b'd', b'4'), (b'e', b'E')]
    assert list(merge_overlay(overlay, iter(base[::-1][:2]), hi=b'e',
                              reverse=True)) == [(b'd', b'4'), (b'b', b'B')]
