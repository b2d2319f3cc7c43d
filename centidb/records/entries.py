"""Index entries: finding, splitting, deleting and replacing them.

An index entry is an engine key holding an index tuple and a record key
(layout in ``docs/format.rst``); its value is empty. These functions take an
engine transaction and an index's prefix; the record paths
(:class:`~centidb.records.access.Records`) and :class:`~centidb.index.Index` call
them.
"""

from __future__ import annotations

from typing import Iterator

from centidb import keylib
from centidb.records import fastpath
from centidb.engines import EngineTransaction
from centidb.errors import CorruptKeyError
from centidb.keylib import Key
from centidb.records.record import ENTRY_SEP

__all__ = ['ASIDE', 'corrupt_entry_error', 'split_entries', 'first_entry', 'delete_stale',
           'replace_entries', 'delete_prefix']

_EMPTY = b''

#: The byte after an index's prefix under which a rebuild writes its new
#: entries aside: no entry has it there (an index tuple starts with a tag
#: byte, or, when empty, with ``ENTRY_SEP``).
ASIDE = b'\x00'


def corrupt_entry_error(entry: bytes) -> CorruptKeyError:
    """The error for an index entry without an index tuple and a record key.

    :param entry: the entry's engine key.
    """
    return CorruptKeyError(f'index entry {entry!r} does not hold an '
                           f'index tuple and a record key')


def split_entries(etxn: EngineTransaction, index_prefix: bytes, lo: bytes | None,
                  hi: bytes | None, reverse: bool) -> Iterator[tuple[Key, Key]]:
    """Iterate the entries of an index in ``[lo, hi)`` as ``(index tuple, record key)``.

    :param etxn: the :class:`~centidb.engines.EngineTransaction`.
    :param index_prefix: the index's prefix.
    :param lo: the lowest entry key.
    :param hi: the entry key at which to stop.
    :param reverse: iterate from `hi` down.
    :raises ~centidb.errors.CorruptKeyError: (while iterating) for an entry
        that does not hold an index tuple and a record key.
    """
    unpacks_list = keylib.unpacks_list
    for entry in etxn.keys(lo, hi, reverse):
        parts = unpacks_list(entry, index_prefix)
        if len(parts) != 2:
            raise corrupt_entry_error(entry)
        yield parts[0], parts[1]


def first_entry(etxn: EngineTransaction, index_prefix: bytes, x: Key) -> bytes | None:
    """The first entry key of an index for the index tuple `x`, or None.

    :param etxn: the :class:`~centidb.engines.EngineTransaction`.
    :param index_prefix: the index's prefix.
    :param x: the index tuple.
    """
    # Entries for exactly x are packs(x), KEY_SEP, packed record key.
    packed = keylib.packs(x, index_prefix)
    return fastpath.first_key(etxn, packed + ENTRY_SEP, keylib.after_key(packed))


def delete_stale(etxn: EngineTransaction, old_entries: list[bytes] | None,
                 entries: list[bytes]) -> None:
    """Delete the index entries of a record's old version it no longer has.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param old_entries: the old version's entries (or None).
    :param entries: the new version's entries.
    """
    if old_entries:
        keep = set(entries)
        for entry in old_entries:
            if entry not in keep:
                etxn.delete(entry)


def replace_entries(etxn: EngineTransaction, prefix: bytes, aside: bytes) -> None:
    """Make the entries under `prefix` those under `aside`, and delete `aside`'s.

    Walks both (sorted alike) side by side: an old entry that is also new
    stays untouched, a stale one is deleted, a new one written; each entry
    under `aside` is deleted once seen.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param prefix: the index's prefix.
    :param aside: where a rebuild wrote its new entries (`prefix` +
        :data:`ASIDE`).
    """
    skip = len(aside)
    old = etxn.keys(prefix + ENTRY_SEP, keylib.next_prefix(prefix))
    new = etxn.keys(aside, keylib.next_prefix(aside))
    try:
        stale = next(old, None)
        made = next(new, None)
        while made is not None:
            entry = prefix + made[skip:]
            while stale is not None and stale < entry:
                etxn.delete(stale)
                stale = next(old, None)
            if stale == entry:
                stale = next(old, None)
            else:
                etxn.put(entry, _EMPTY)
            etxn.delete(made)
            made = next(new, None)
        while stale is not None:
            etxn.delete(stale)
            stale = next(old, None)
    finally:
        old.close()
        new.close()


def delete_prefix(etxn: EngineTransaction, prefix: bytes) -> None:
    """Delete every engine key that starts with `prefix` (an index's or a collection's).

    One :meth:`~centidb.engines.EngineTransaction.delete_range`: engines
    that delete key by key do it as they iterate, so a large range is not
    held in memory; a networked engine sends one range delete.

    :param etxn: a write :class:`~centidb.engines.EngineTransaction`.
    :param prefix: the prefix.
    """
    etxn.delete_range(prefix, keylib.next_prefix(prefix))
