"""The check of a LevelDB directory's MANIFEST against its table files, before LevelDB opens it.

LevelDB keeps the list of its table files in the MANIFEST, a log of
version edits (each adds and removes table files). When it opens a
database it replays that log, and then deletes every table file the
result does not name: those are taken to be leftovers of an interrupted
compaction. A record torn at the end of the log is read as its end, since
a crash while appending leaves one. So a MANIFEST cut short (damage, a
bad copy) makes LevelDB open an older version of the database, or an
empty one, and delete the table files that hold the rest: the data is
destroyed by the open. :func:`check_manifest` replays the log as LevelDB
would and refuses the directory first when opening it would lose data.

The log's format is LevelDB's ``doc/log_format.md``: 32 KiB blocks of
records, each with a 7-byte header (masked CRC-32C of the type and the
payload, payload length, type: full, first, middle or last fragment of a
logical record); fewer than 7 bytes left in a block are zero padding.
"""

from __future__ import annotations

import os
import re
import struct
from centidb.errors import DatabaseCorruptError

__all__ = ['check_manifest', 'ManifestState', 'read_manifest', 'check_table', 'crc32c']

_BLOCK = 32768
_HEADER = struct.Struct('<IHB')
_ZERO, _FULL, _FIRST, _MIDDLE, _LAST = range(5)
_MASK_DELTA = 0xA282EAD8
_TABLE_FILE = re.compile(r'(\d+)\.(ldb|sst)\Z')
_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER = 48
_TRAILER = 5


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """The CRC-32C (Castagnoli) of `data`, continuing from `crc`.

    :param data: the bytes.
    :param crc: the CRC-32C of the bytes before `data` (0 at the start).
    :returns: the CRC as an unsigned 32-bit ``int``.
    """
    table = _CRC_TABLE
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


class ManifestState:
    """What replaying a MANIFEST up to its last whole record gives.

    :param torn: the file ends inside a record (after `records` whole ones).
    """

    def __init__(self, torn: bool) -> None:
        #: The file ends inside a record.
        self.torn = torn
        #: Whole logical records read.
        self.record_count = 0
        #: The table files of the version the log ends at: number -> level.
        self.live: dict[int, int] = {}
        #: Table files an edit removed from the version (obsolete, if still on disk).
        self.removed: set[int] = set()
        #: The number of the write-ahead log the version's data continues in (0: none).
        self.log_number = 0
        #: The previous log's number (kept by older LevelDB versions; 0: none).
        self.prev_log_number = 0


def _records(data: bytes) -> tuple[list[bytes], bool] | None:
    """The logical records of log `data`, and whether it ends inside one.

    ``None`` when a whole record is bad (a wrong checksum, a length past its
    block, fragments out of order): LevelDB reports that itself.
    """
    records: list[bytes] = []
    pending: list[bytes] | None = None
    pos = 0
    end = len(data)
    while pos < end:
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER.size:
            if pos + left > end:
                return records, True      # the file ends in a block's padding
            pos += left
            continue
        if pos + _HEADER.size > end:
            return records, True
        masked, length, kind = _HEADER.unpack_from(data, pos)
        if kind == _ZERO and length == 0:
            pos += _HEADER.size             # preallocated space
            continue
        body = pos + _HEADER.size
        if _HEADER.size + length > left:
            return None
        if body + length > end:
            return records, True
        payload = data[body:body + length]
        if _unmask(masked) != crc32c(payload, crc32c(bytes([kind]))):
            return None
        pos = body + length
        if kind == _FULL and pending is None:
            records.append(payload)
        elif kind == _FIRST and pending is None:
            pending = [payload]
        elif kind == _MIDDLE and pending is not None:
            pending.append(payload)
        elif kind == _LAST and pending is not None:
            records.append(b''.join(pending + [payload]))
            pending = None
        else:
            return None
    return records, pending is not None


class _Reader:
    """A cursor over one version edit's bytes."""

    __slots__ = ('data', 'pos')

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def varint(self) -> int:
        result = shift = 0
        data = self.data
        while True:
            if self.pos >= len(data) or shift > 63:
                raise ValueError('truncated varint')
            byte = data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7

    def skip_slice(self) -> None:
        length = self.varint()
        if self.pos + length > len(self.data):
            raise ValueError('truncated slice')
        self.pos += length


def _apply(state: ManifestState, edit: bytes) -> None:
    """Replay one version edit onto `state` (deletions first, as LevelDB's builder does)."""
    reader = _Reader(edit)
    added: list[tuple[int, int]] = []
    deleted: list[tuple[int, int]] = []
    while reader.pos < len(edit):
        tag = reader.varint()
        if tag == 1:                      # comparator name
            reader.skip_slice()
        elif tag == 2:
            state.log_number = reader.varint()
        elif tag in (3, 4):               # next file number, last sequence
            reader.varint()
        elif tag == 5:                    # compaction pointer: level, key
            reader.varint()
            reader.skip_slice()
        elif tag == 6:                    # deleted file: level, number
            deleted.append((reader.varint(), reader.varint()))
        elif tag == 7:                    # new file: level, number, size, two keys
            level, number = reader.varint(), reader.varint()
            reader.varint()
            reader.skip_slice()
            reader.skip_slice()
            added.append((level, number))
        elif tag == 9:
            state.prev_log_number = reader.varint()
        else:
            raise ValueError(f'unknown tag {tag}')
    for level, number in deleted:
        if state.live.get(number) == level:
            del state.live[number]
            state.removed.add(number)
    for level, number in added:
        state.live[number] = level


def read_manifest(data: bytes) -> ManifestState | None:
    """Replay the MANIFEST bytes `data` as LevelDB would on open.

    :param data: the MANIFEST file's bytes.
    :returns: the state at its last whole record, or ``None`` when a whole
        record is bad (LevelDB refuses such a file itself).
    """
    found = _records(data)
    if found is None:
        return None
    records, torn = found
    state = ManifestState(torn)
    try:
        for record in records:
            _apply(state, record)
            state.record_count += 1
    except ValueError:
        return None
    return state


def check_manifest(path: str) -> None:
    """Refuse the LevelDB database at `path` if opening it would delete data.

    Reads ``CURRENT`` and the MANIFEST it names, replays the MANIFEST (see
    :func:`read_manifest`) and compares the version it ends at with the
    table files in the directory. Refused: a table file the version names
    is missing; or a table file the version neither names nor removed is
    present while the write-ahead log the version continues in is gone.
    LevelDB deletes a log only after a MANIFEST record that moved past it is
    on disk, so that log is missing only when records were lost; the table
    files a crash leaves (outputs of a compaction or of a memtable write
    whose record was not written) come with that log still present, and
    are not refused. Anything this check cannot read (no ``CURRENT``, a bad
    record) is left to LevelDB, which reports it.

    :param path: the database directory.
    :raises ~centidb.errors.DatabaseCorruptError: if the MANIFEST does not
        account for the table files, naming the files; the message says to
        run :meth:`~centidb.engines.PlyvelEngine.repair`.
    """
    problem = _problem(path)
    # Another process may have the database open and be between writing a
    # MANIFEST record and deleting the log it moved past: read again.
    if problem is not None and _problem(path) is not None:
        raise DatabaseCorruptError(problem)


def _problem(path: str) -> str | None:
    """What :func:`check_manifest` would refuse the directory for, or ``None``."""
    try:
        with open(os.path.join(path, 'CURRENT'), 'rb') as f:
            current = f.read(4096)
        name = current.decode('ascii')
        if not name.endswith('\n') or not re.fullmatch(r'MANIFEST-\d+', name[:-1]):
            return None
        manifest = os.path.join(path, name[:-1])
        with open(manifest, 'rb') as f:
            data = f.read()
        names = os.listdir(path)
    except (OSError, UnicodeDecodeError):
        return None
    state = read_manifest(data)
    if state is None or not state.record_count:
        return None
    tables = {int(m.group(1)): n for n in names if (m := _TABLE_FILE.match(n))}
    logs = {int(n[:-4]) for n in names if n.endswith('.log') and n[:-4].isdigit()}
    manifest_is = (f'its MANIFEST ({manifest!r}, {len(data)} bytes'
                   f'{", which ends inside a record" if state.torn else ""})')
    repair = (f'make a copy of the directory, then run '
              f'centidb.engines.PlyvelEngine.repair({path!r}), which rebuilds the '
              f'MANIFEST from the files present, and check the store with verify()')
    missing = sorted(set(state.live) - set(tables))
    if missing:
        return (
            f'LevelDB database {path!r} is damaged: {manifest_is} names table '
            f'files that are missing ({_names(missing)}); restore the store from '
            f'a backup or a dump, or, to keep what the other files hold, {repair}')
    unnamed = sorted(set(tables) - set(state.live) - state.removed)
    if unnamed and state.log_number not in logs and state.prev_log_number not in logs:
        return (
            f'LevelDB database {path!r} is damaged: opening it would delete '
            f'table files its MANIFEST does not name ({_names(unnamed)}) and '
            f'the data in them, and the log the MANIFEST names '
            f'({state.log_number:06d}.log) is missing: {manifest_is} is damaged '
            f'or cut short. Nothing was changed; {repair}')
    return None


def check_table(path: str) -> str | None:
    """Check a table file's footer and the checksums of its index and metaindex blocks.

    LevelDB checks these blocks only when the database is opened with
    ``paranoid_checks``; otherwise a damaged index block can read as an
    empty one, and the table's records are silently missing from every
    read. (Its data blocks are checked by reads with ``verify_checksums``.)

    :param path: the table file (``NNNNNN.ldb``).
    :returns: what is wrong, or ``None`` if the blocks are intact (or the
        file is gone: LevelDB deletes tables a compaction replaced).
    """
    try:
        with open(path, 'rb') as f:
            size = os.fstat(f.fileno()).st_size
            if size < _FOOTER:
                return f'table file {path!r} is too short ({size} bytes) to hold its footer'
            f.seek(size - _FOOTER)
            footer = f.read(_FOOTER)
            if struct.unpack_from('<Q', footer, _FOOTER - 8)[0] != _TABLE_MAGIC:
                return f'table file {path!r} does not end with a table footer'
            reader = _Reader(footer[:_FOOTER - 8])
            try:
                handles = [(reader.varint(), reader.varint()) for _ in range(2)]
            except ValueError:
                return f'table file {path!r} has a damaged footer'
            for name, (offset, length) in zip(('metaindex', 'index'), handles):
                if offset + length + _TRAILER > size - _FOOTER:
                    return (f'table file {path!r}: its footer places the {name} block '
                            f'past the end of the file')
                f.seek(offset)
                block = f.read(length + _TRAILER)
                stored = struct.unpack_from('<I', block, length + 1)[0]
                if _unmask(stored) != crc32c(block[:length + 1]):
                    return f'table file {path!r}: the {name} block fails its checksum'
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f'table file {path!r} cannot be read: {exc}'
    return None


def _names(numbers: list[int]) -> str:
    shown = ', '.join(f'{number:06d}' for number in numbers[:5])
    return shown + (f' and {len(numbers) - 5} more' if len(numbers) > 5 else '')
