"""The record layer's kernel functions in Python: their reference.

When centidb is built, the compiled record modules call the kernel's C
functions of these names instead (``centidb/_kernel.pxi``, declared in
``_speedups.pxd``), which give the same bytes without a slice object.
"""

from __future__ import annotations

__all__ = ['body_of', 'rejoined']


def rejoined(head: bytes, data: bytes, start: int) -> bytes:
    """Return `head` followed by the bytes of `data` from `start` on.

    The kernel's C function of this name makes it in one allocation.

    :param head: the bytes to start with.
    :param data: the bytes whose tail follows.
    :param start: where in `data` the tail starts.
    """
    return head + data[start:]


def body_of(stored: bytes, trailer: int) -> bytes:
    """Return a stored value's bytes between its header byte and its checksum.

    The kernel's C function of this name copies them without a slice.

    :param stored: the stored value, at least ``1 + trailer`` bytes.
    :param trailer: the length of its checksum trailer (0 or 4).
    """
    return stored[1:len(stored) - trailer]
