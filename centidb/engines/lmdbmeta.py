"""The check of an LMDB data file against its meta pages, before LMDB maps it.

LMDB maps its data file and follows page numbers into the map without
checking that the file holds those pages: reading a page past the end of a
truncated file kills the process with ``SIGBUS``. A healthy file may end
before the last page its meta page names, though: pages a commit allocated
at the end and freed again are listed as free and never written. So when
the file is short, :func:`check_data_file` reads (with plain reads, not a
map) the trees the newest meta page names and refuses the file if any page
they reach lies past its end.
"""

from __future__ import annotations

import os
import struct
import time
from typing import Callable

from centidb.errors import DatabaseCorruptError

__all__ = ['TRIES', 'check_data_file', 'check_pages']

# The data file's meta pages (two, at the start), as LMDB lays them out on a
# 64-bit little-endian machine: a page header of 16 bytes, then the meta
# fields: magic and version (uint32 each), the map address and size (8 bytes
# each; the map size is at least the pages used), two tree descriptors of 48
# bytes (the free pages' and the main tree's; the first's first uint32 holds
# the page size, each ends with its root page number), the last page number
# used and the transaction id.
_META_MAGIC = 0xBEEFC0DE
_META = struct.Struct('<16xII8xQI36xQ40xQQQ')

# Every other page starts with the same 16-byte header: its number, 2 bytes
# of padding, its flags, then either the two ends of the free space between
# the node offsets and the nodes (branch and leaf pages) or, on the first
# page of an overflow run, the run's length in pages. The node offsets
# (uint16 each) follow the header. A node holds two uint16 halves of a
# number (a leaf's data size, or a branch's child page number's low 32
# bits), its flags (on a branch node, the page number's high 16 bits) and
# its key size, then the key, then a leaf's data.
_PAGE = struct.Struct('<10xHHH')            # flags, lower, upper
_RUN = struct.Struct('<12xI')               # an overflow run's length
_NODE = struct.Struct('<HHHH')              # low, high, flags, key size
_U64 = struct.Struct('<Q')
_HEADER = 16
_BRANCH, _LEAF, _LEAF2 = 0x01, 0x02, 0x20   # page flags
_BIGDATA, _SUBDATA = 0x01, 0x02             # leaf node flags: an overflow run, a tree
_TREE_ROOT = 40   # the root's offset in a tree descriptor in a leaf (a named or duplicates tree)


def check_data_file(data_file: str, pages: bool = False) -> None:
    """Refuse an LMDB data file that lacks pages its live trees use, before LMDB maps it.

    The newer of the two meta pages (of the higher transaction id) names
    the roots of the main tree and of the free-page tree, and the last
    page used. A file that holds that page is complete. A shorter one is
    normal if every page past its end is free (LMDB lists it in the free
    tree, and writes a page before it uses it again), and damaged if a
    tree reaches past its end. The meta pages' transaction ids must be a
    pair that commits write. Another process may commit while the file is
    read: a problem counts only if the meta pages are unchanged afterwards
    (else the check starts again, at most :data:`TRIES` times in all).
    Files whose meta pages are not LMDB's on this machine are left to LMDB
    to judge.

    :param data_file: the path of the data file (``data.mdb``).
    :param pages: also run :func:`check_pages` (a read of every page in
        use) and raise what it finds.
    :raises ~centidb.errors.DatabaseCorruptError: if the file is too short
        for its meta pages or its trees, its meta pages' transaction ids are
        impossible, or a short file's meta page names a last page past its
        map size (with `pages`: or :func:`check_pages` finds damage).
    """
    try:
        with open(data_file, 'rb') as f:
            _wait_while_empty(f.fileno())
            for _ in range(TRIES):
                metas = _meta_bytes(f.fileno())
                problem = _problem(data_file, f.fileno(), *metas)
                if problem is None:
                    break
                if _meta_bytes(f.fileno()) == metas:
                    raise DatabaseCorruptError(problem)
            else:
                return
    except DatabaseCorruptError:
        raise    # (an OSError too)
    except OSError:
        return   # unreadable: lmdb.open reports why
    if pages and (problem := check_pages(data_file)) is not None:
        raise DatabaseCorruptError(problem)


def _wait_while_empty(fd: int) -> None:
    """Return once the file has bytes, or after :data:`CREATING_WAIT` seconds.

    A process creating the store makes the file empty, then writes its
    meta pages: another process opening it meanwhile sees it empty.
    """
    deadline = time.monotonic() + CREATING_WAIT
    while os.fstat(fd).st_size == 0 and time.monotonic() < deadline:
        time.sleep(0.005)


def check_pages(data_file: str) -> str | None:
    """Read every page the live trees of an LMDB data file use; what is damaged, or None.

    With plain reads, not a map: each branch and leaf page of the main
    and free-page trees (and the trees their leaves name), and the first
    page of each overflow run. Damage that LMDB does not check when it
    reads is reported: a node that does not fit in its page, a page in use
    past the end of the file, and an overflow value whose size (in its
    leaf node) is larger than its run of pages. LMDB hands out the size as
    it is, so reading such a value runs past the run, into other pages
    or, past the end of the file, into a ``SIGBUS``. The cost is a read of
    every page in use. Another process may commit meanwhile: a problem
    counts only if the meta pages are unchanged afterwards (as for
    :func:`check_data_file`).

    :param data_file: the path of the data file (``data.mdb``).
    :returns: a message naming the file, the page and what to do, or None
        if nothing was found (or the file is not LMDB's layout on this
        machine, or cannot be read).
    """
    try:
        with open(data_file, 'rb') as f:
            for _ in range(TRIES):
                metas = _meta_bytes(f.fileno())
                problem = _page_problem(data_file, f.fileno(), *metas)
                if problem is None or _meta_bytes(f.fileno()) == metas:
                    return problem
    except OSError:
        pass
    return None


def _page_problem(data_file: str, fd: int, first: bytes, second: bytes,
                  page_size: int) -> str | None:
    """:func:`check_pages` for one reading of the meta pages."""
    newest = [_META.unpack(meta) for meta in (first, second) if len(meta) == _META.size]
    newest = [meta for meta in newest if meta[0] == _META_MAGIC]
    if not page_size or not newest:
        return None
    _, _, _, _, free_root, main_root, last_page, _ = max(newest, key=lambda meta: meta[7])
    pages = os.fstat(fd).st_size // page_size
    trees = _Trees(data_file, fd, page_size, pages, last_page, strict=True)
    try:
        missing = trees.walk(free_root, None)
        if missing is None:
            missing = trees.walk(main_root, None)
    except _Misshapen as exc:
        return str(exc)
    if missing is None:
        return None
    return (f'LMDB data file {data_file!r} is damaged: page {missing} is in use, past '
            f'the end of the file ({pages} pages); restore it from a backup or a dump')


def _meta_bytes(fd: int) -> tuple[bytes, bytes, int]:
    """The two meta pages' fields (bytes, as read) and the page size (0 if not LMDB's)."""
    first = os.pread(fd, _META.size, 0)
    page_size = _META.unpack(first)[3] if len(first) == _META.size else 0
    if page_size < _META.size or page_size & (page_size - 1):
        return first, b'', 0
    return first, os.pread(fd, _META.size, page_size), page_size


def _problem(data_file: str, fd: int, first: bytes, second: bytes, page_size: int) -> str | None:
    """What is wrong with the file, whose meta pages were read as `first` and `second`, or None.

    The file is measured after its meta pages were read: LMDB writes a
    commit's pages before its meta page, and does not shrink the file.
    """
    size = os.fstat(fd).st_size
    if len(first) < _META.size:
        return (f'LMDB data file {data_file!r} is truncated: {size} bytes, too '
                f'short to hold its meta pages (LMDB writes them when it creates '
                f'the file); restore it from a backup or a dump, or delete the '
                f'file if the database was never written')
    magic, _, map_size, _, free_root, main_root, last_page, txnid = _META.unpack(first)
    if magic != _META_MAGIC or not page_size:
        return None   # not LMDB's layout here: LMDB's own checks report it
    metas = [(txnid, free_root, main_root, last_page, map_size)]
    if len(second) == _META.size:
        magic2, _, map2, _, free2, main2, last2, txnid2 = _META.unpack(second)
        if magic2 == _META_MAGIC:
            metas.append((txnid2, free2, main2, last2, map2))
            if not _possible_txnids(txnid, txnid2):
                return (f'LMDB data file {data_file!r} is damaged: its meta pages hold '
                        f'transaction ids {txnid} and {txnid2}, which no sequence of '
                        f'commits writes (LMDB would open the wrong commit); restore '
                        f'it from a backup or a dump')
    _, free_root, main_root, last_page, map_size = max(metas)
    pages = size // page_size
    if pages > last_page:
        return None
    if (last_page + 1) * page_size > map_size:     # (a complete file may say so: ITS#7789)
        return (f'LMDB data file {data_file!r} is damaged: {size} bytes, and its meta '
                f'page names page {last_page} as the last one used, past the end of '
                f'its map of {map_size} bytes; restore it from a backup or a dump')
    trees = _Trees(data_file, fd, page_size, pages, last_page)
    try:
        missing = pages if pages < 2 else trees.missing(free_root, main_root)
    except _Misshapen as exc:
        return str(exc)
    if missing is None:
        return None
    return (f'LMDB data file {data_file!r} is truncated: {size} bytes ({pages} '
            f'pages of {page_size} bytes), but its meta page says it uses '
            f'{last_page + 1} pages, and page {missing} is in use; restore it '
            f'from a backup or a dump')


class _Trees:
    """The trees of one meta page, read from a data file of `pages` whole pages."""

    def __init__(self, data_file: str, fd: int, page_size: int, pages: int,
                 last_page: int, strict: bool = False) -> None:
        self.data_file = data_file
        #: Check every node: that its data fits in its page or its run.
        self.strict = strict
        self.fd = fd
        self.page_size = page_size
        self.pages = pages
        self.last_page = last_page
        self.free: set[int] = set()

    def missing(self, free_root: int, main_root: int) -> int | None:
        """The first page in use that the file lacks, or None.

        The free tree is walked first: if the pages it lists as free cover
        every page past the end, the main tree cannot reach one, and is not
        read. (LMDB reads the free tree when it next writes.)
        """
        missing = self.walk(free_root, self.add_free)
        if missing is not None:
            return missing
        if all(page in self.free for page in range(self.pages, self.last_page + 1)):
            return None
        return self.walk(main_root, None)

    def add_free(self, data: bytes) -> None:
        """Add the page numbers of one free-tree record (a count, then the numbers)."""
        count = len(data) // 8 - 1
        if count > 0:
            self.free.update(struct.unpack_from(f'<{count}Q', data, 8))

    def read(self, page: int, count: int = 1) -> bytes:
        """`count` pages from `page` on (all in the file)."""
        return os.pread(self.fd, count * self.page_size, page * self.page_size)

    def walk(self, root: int, on_data: Callable[[bytes], None] | None) -> int | None:
        """Visit the tree at `root`: the first page it reaches past the file's end, or None.

        Also visits the trees its leaves name (named and duplicates
        trees), and hands each leaf's data to `on_data` if given. Page
        numbers past the last page (such as an empty tree's root, all
        ones) are left alone: LMDB reports them as not found. Each page is
        read once.
        """
        todo = [root]
        seen: set[int] = set()
        while todo:
            number = todo.pop()
            if number > self.last_page or number in seen:
                continue
            if number >= self.pages:
                return number
            seen.add(number)
            page = self.read(number)
            if len(page) < self.page_size:
                return number   # the file shrank while it was read
            flags, lower, upper = _PAGE.unpack_from(page)
            if not flags & (_BRANCH | _LEAF) or flags & _LEAF2:
                continue   # no page numbers in it (or not a tree page: LMDB says so)
            count = (min(lower, self.page_size) - _HEADER) // 2
            offsets = struct.unpack_from(f'<{max(count, 0)}H', page, _HEADER)
            if offsets and max(offsets) > self.page_size - _NODE.size:
                raise self.misshapen(number)
            if flags & _BRANCH:
                for offset in offsets:
                    low, high, top, _ = _NODE.unpack_from(page, offset)
                    todo.append(low | high << 16 | top << 32)
                continue
            if on_data is None and not self.strict:     # only the nodes that name pages
                offsets = tuple(at for at in offsets if page[at + 4] & (_BIGDATA | _SUBDATA))
            for offset in offsets:
                low, high, node_flags, key_size = _NODE.unpack_from(page, offset)
                at = offset + _NODE.size + key_size
                data_size = low | high << 16
                if node_flags & (_BIGDATA | _SUBDATA):
                    end = at + (_U64.size if node_flags & _BIGDATA else _TREE_ROOT + 8)
                else:
                    end = at + data_size if self.strict else 0
                if end > self.page_size:
                    raise self.misshapen(number)
                if node_flags & _BIGDATA:
                    missing = self.overflow(_U64.unpack_from(page, at)[0], data_size, on_data)
                    if missing is not None:
                        return missing
                elif node_flags & _SUBDATA:
                    todo.append(_U64.unpack_from(page, at + _TREE_ROOT)[0])
                elif on_data is not None:
                    on_data(page[at:at + data_size])
        return None

    def overflow(self, first: int, data_size: int,
                 on_data: Callable[[bytes], None] | None) -> int | None:
        """Check the overflow run at `first` holding `data_size` bytes (and hand them on)."""
        if first > self.last_page:
            return None
        if first >= self.pages:
            return first
        header = self.read(first)
        if len(header) < _RUN.size:
            return first    # the file shrank while it was read
        run = _RUN.unpack_from(header)[0]
        needed = max(run, (_HEADER + data_size + self.page_size - 1) // self.page_size)
        if self.strict and needed > run:
            raise _Misshapen(
                f'LMDB data file {self.data_file!r} is damaged: the value in the '
                f'overflow run at page {first} claims {data_size} bytes, more than its '
                f'{run} pages hold; restore it from a backup or a dump')
        if first + needed > self.pages:
            return self.pages
        if on_data is not None:
            on_data(self.read(first, needed)[_HEADER:_HEADER + data_size])
        return None

    def misshapen(self, number: int) -> _Misshapen:
        """The error for page `number`, whose nodes do not fit in it."""
        return _Misshapen(
            f'LMDB data file {self.data_file!r} is damaged: page {number} holds a '
            f'node that does not fit in the page; restore it from a backup or a dump')


class _Misshapen(Exception):
    """A tree page that LMDB cannot have written (its message says which)."""


def _possible_txnids(first: int, second: int) -> bool:
    """Whether LMDB can have written transaction ids `first` (page 0) and `second` (page 1).

    Commit ``n`` writes its meta page to page ``n % 2``, so page 0 holds an
    even id and page 1 the odd id next to it (both 0 in a new file). A
    damaged id would make LMDB open an older commit, or an empty tree,
    without a word.
    """
    return (first, second) == (0, 0) or (first % 2 == 0 and abs(first - second) == 1)


#: How many times :func:`check_data_file` reads a data file whose newer meta
#: page changes while it is read (another process is committing) before it
#: leaves the file to LMDB.
TRIES = 3
#: How long an empty data file is given to receive the meta pages of the
#: process creating it before it counts as truncated, in seconds.
CREATING_WAIT = 2.0
