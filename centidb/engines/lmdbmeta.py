"""The check of an LMDB data file's size against its meta pages, before LMDB maps it."""

from __future__ import annotations

import os
import struct

from centidb.errors import DatabaseCorruptError

__all__ = ['UNWRITTEN_PAGES', 'check_data_file']

# The data file's meta pages (two, at the start), as LMDB lays them out on a
# 64-bit little-endian machine: a page header of 16 bytes, then the meta
# fields: magic and version (uint32 each), the map address and size (8 bytes
# each), two tree descriptors of 48 bytes (the free pages' and the main
# tree's; the first's first uint32 holds the page size, each ends with its
# root page number), the last page number used and the transaction id.
_META_MAGIC = 0xBEEFC0DE
_META = struct.Struct('<16xII16xI36xQ40xQQQ')
_NO_PAGE = 2**64 - 1   # the root of an empty tree


def check_data_file(data_file: str) -> None:
    """Refuse an LMDB data file shorter than its meta page says, before LMDB maps it.

    LMDB maps the file and reads pages without checking that the file
    holds them: a page past the end of a truncated file kills the process
    with SIGBUS. The live meta page (of the newer of the two transaction
    ids) names the last page used and the roots of the trees: the file must
    hold the roots and reach within :data:`UNWRITTEN_PAGES` of the last
    page. Files whose meta pages are not LMDB's on this machine are left to
    LMDB to judge.

    :param data_file: the path of the data file (``data.mdb``).
    :raises ~centidb.errors.DatabaseCorruptError: if the file is shorter.
    """
    try:
        with open(data_file, 'rb') as f:
            size = os.fstat(f.fileno()).st_size
            first = f.read(_META.size)
            page_size = _META.unpack(first)[2] if len(first) == _META.size else 0
            if page_size < _META.size or page_size & (page_size - 1):
                page_size = 0
            if page_size:
                f.seek(page_size)
            second = f.read(_META.size)
    except OSError:
        return   # unreadable: lmdb.open reports why
    if len(first) < _META.size:
        raise DatabaseCorruptError(
            f'LMDB data file {data_file!r} is truncated: {size} bytes, too short '
            f'to hold its meta pages (LMDB writes them when it creates the '
            f'file); restore it from a backup or a dump, or delete the file if '
            f'the database was never written')
    magic, _, _, free_root, main_root, last_page, txnid = _META.unpack(first)
    if magic != _META_MAGIC or not page_size:
        return   # not LMDB's layout here: LMDB's own checks report it
    metas = [(txnid, free_root, main_root, last_page)]
    if len(second) == _META.size:
        magic2, _, _, free2, main2, last2, txnid2 = _META.unpack(second)
        if magic2 == _META_MAGIC:
            metas.append((txnid2, free2, main2, last2))
            _check_txnids(data_file, txnid, txnid2)
    _, free_root, main_root, last_page = max(metas)
    # The last pages may never have been written (allocated, then freed in
    # the same transaction), so the file may end a little before the last
    # page; the meta pages and the roots must be in it.
    need = (last_page + 1) * page_size
    roots = [2] + [root + 1 for root in (free_root, main_root) if root != _NO_PAGE]
    pages = size // page_size
    if pages < max(roots) or last_page + 1 - pages > UNWRITTEN_PAGES:
        raise DatabaseCorruptError(
            f'LMDB data file {data_file!r} is truncated: {size} bytes, but its '
            f'meta page says it holds {last_page + 1} pages of {page_size} '
            f'bytes ({need} bytes); restore it from a backup or a dump')


def _check_txnids(data_file: str, first: int, second: int) -> None:
    """Refuse meta pages whose transaction ids LMDB cannot have written.

    Commit ``n`` writes its meta page to page ``n % 2``, so page 0 holds an
    even id and page 1 the odd id next to it (both 0 in a new file). A
    damaged id would make LMDB open an older commit, or an empty tree,
    without a word.
    """
    if (first, second) == (0, 0) or (first % 2 == 0 and abs(first - second) == 1):
        return
    raise DatabaseCorruptError(
        f'LMDB data file {data_file!r} is damaged: its meta pages hold transaction '
        f'ids {first} and {second}, which no sequence of commits writes (LMDB '
        f'would open the wrong commit); restore it from a backup or a dump')


#: How many pages past its end an LMDB data file may name in its meta page
#: (pages a commit allocated and freed without writing them).
UNWRITTEN_PAGES = 64
