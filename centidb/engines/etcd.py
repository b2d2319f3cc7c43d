"""The etcd engine, :class:`EtcdEngine`: one store on an etcd v3 cluster.

Open it with ``centidb.open('EtcdEngine', endpoints=[...], prefix=b'app/')``;
it needs ``pip install centidb[etcd]``. This module imports no client
library itself: :mod:`centidb.engines.etcd_client` loads them when an
engine is made.

How the engine interface maps onto etcd:

* **Keys.** Every etcd key the engine touches starts with ``prefix``, so
  many stores share one cluster (give them prefixes none of which starts
  another, such as ``b'app1/'`` and ``b'app2/'``). Under it: ``d`` + key
  holds each value, ``t`` + key a *tombstone* for each deleted key (empty,
  see below), ``r`` + key a *range tombstone* where a range delete began,
  ``c/`` + a random id the commit marker of each open engine, and ``m/gc``
  the purge marker.
* **Snapshots.** A transaction pins an etcd revision with its first read
  (:attr:`~centidb.engines.Engine.snapshot_at` is ``'first read'``: no
  round trip is spent on ``begin()``) and reads everything at that
  revision. Once etcd compacts past it, reads raise
  :class:`~centidb.errors.ConflictError`.
* **Optimistic writes.** A write transaction buffers its writes (its reads
  see them) and records what it read: keys, and for each scan the range from
  its start to the last key it yielded. ``commit()`` sends one etcd ``Txn``
  whose compares check that no key in those keys and ranges, data or
  tombstone, changed after the pinned revision; if one did, nothing is
  written and :class:`~centidb.errors.ConflictError` is raised. Transactions
  that read disjoint ranges (different collections) do not conflict. A
  delete also writes the key's tombstone because etcd's range compares see
  only keys that exist: without it, a key deleted by another client would go
  unnoticed. Tombstones pile up until :meth:`EtcdEngine.purge_tombstones`.
  Within one engine, writers are serialized as on every engine.
* **Range deletes.** :meth:`~centidb.engines.EngineTransaction.delete_range`
  reads nothing: until the commit, the transaction's own reads skip the
  range (writes made after it show), and the commit sends one etcd
  ``DeleteRange`` for it (cut in pieces around the keys the transaction
  wrote inside it afterwards, since etcd refuses a put inside a range that
  the same ``Txn`` deletes). No tombstone is written per key: the commit
  writes one range tombstone, ``r`` + the lowest start of its range
  deletes, and every commit that read something compares, besides its data
  and tombstone keys, the range tombstones below the end of the last key
  range it read. So a transaction that read a key which a range delete
  committed after its snapshot removed fails with
  :class:`~centidb.errors.ConflictError`; so may, harmlessly, one that read
  keys above a deleted range (rerun it). Range tombstones are purged with
  the others.
* **Limits.** A commit is one etcd ``Txn``: at most ``--max-txn-ops``
  operations (128 by default; a delete takes two, a range delete one plus
  one per key written inside it after it, the commit marker one, and a
  commit with range deletes one more for its range tombstone) and
  ``--max-request-bytes`` (1.5 MiB). A larger commit is refused before
  anything is sent, with :class:`~centidb.errors.LimitExceededError` naming
  the limit: nothing is ever half applied. Split the work, or raise both
  limits on the servers and on the engine.
* **Failover.** Calls go to one endpoint and move to the next when it fails
  (:class:`~centidb.engines.etcd_client.EtcdClient`), for up to `timeout`
  seconds. A commit is sent again too: every commit rewrites this engine's
  commit marker and compares its revision, so a commit that was applied
  before the answer was lost fails that compare when repeated; the
  ``Txn``'s failure branch reads the marker back, and finding this commit's
  id there, the engine knows it was applied once, and reports success.
"""

from __future__ import annotations

import bisect
import os
import uuid
from typing import Any, Sequence

from sortedcontainers import SortedDict

from centidb.engines.base import Engine, EngineTransaction, Item, ItemIterator
from centidb.engines.etcd_client import EtcdClient, parse_endpoint
from centidb.engines.writelog import TOMBSTONE, _Pending, merge_overlay
from centidb.errors import ClusterUnavailableError, ConflictError, LimitExceededError

__all__ = ['EtcdEngine', 'EtcdTransaction']

#: etcd's default ``--max-txn-ops`` and ``--max-request-bytes``.
DEFAULT_MAX_TXN_OPS = 128
DEFAULT_MAX_REQUEST_BYTES = 1536 * 1024
#: Longest key and prefix the engine accepts, in bytes.
MAX_KEY_SIZE = 1024
MAX_PREFIX_SIZE = 256
# Request bytes kept for a commit's compares and the per-operation framing.
_RESERVED_BYTES = 384 * 1024
# Items a scan fetches per request: the first page, the most.
_FIRST_PAGE = 64
_MAX_PAGE = 1024


def _common_prefix(a: bytes | None, b: bytes) -> int:
    """Length of the common prefix of `a` and `b` (0 if `a` is None)."""
    if a is None:
        return 0
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def coalesce(ranges: list[tuple[bytes, bytes | None]],
             limit: int) -> list[tuple[bytes, bytes | None]]:
    """Merge key ranges ``[start, end)`` (``end`` None: unbounded) into at most `limit`.

    Overlapping and touching ranges merge first; then, while there are too
    many, the neighbours whose gap lies deepest in the key space (the end of
    one and the start of the next share the longest prefix) merge. The
    result covers every input range: merging only widens.

    :param ranges: the ranges, in any order.
    :param limit: the most ranges to return (at least 1).
    :returns: sorted, disjoint ranges.
    """
    merged: list[tuple[bytes, bytes | None]] = []
    for start, end in sorted(ranges, key=lambda r: r[0]):
        if merged:
            last_start, last_end = merged[-1]
            if last_end is None or start <= last_end:
                if last_end is not None and (end is None or end > last_end):
                    merged[-1] = (last_start, end)
                continue
        merged.append((start, end))
    if len(merged) <= limit:
        return merged
    gaps = sorted(range(len(merged) - 1), reverse=True,
                  key=lambda i: _common_prefix(merged[i][1], merged[i + 1][0]))
    join = set(gaps[:len(merged) - limit])
    out: list[tuple[bytes, bytes | None]] = []
    for i, unit in enumerate(merged):
        if i and i - 1 in join:
            out[-1] = (out[-1][0], unit[1])
        else:
            out.append(unit)
    return out


def _positive(name: str, value: object, least: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f'{name} must be a number, not {type(value).__name__}')
    if not value >= least:
        raise ValueError(f'{name} must be at least {least:g}, not {value!r}')


class EtcdEngine(Engine):
    """A store kept under one key prefix of an etcd v3 cluster; see :mod:`centidb.engines.etcd`.

    :param endpoints: the cluster's client addresses, ``'host:port'`` or
        ``'http://host:port'``: a list, or one ``str``. Calls fail over
        between them.
    :param prefix: the ``bytes`` every etcd key of this store starts with
        (non-empty, at most 256 bytes).
    :param timeout: seconds a call may take, failovers included, before
        :class:`~centidb.errors.ClusterUnavailableError`.
    :param max_txn_ops: the cluster's ``--max-txn-ops`` (etcd's default
        128); :attr:`max_txn_ops` is one less (the commit marker).
    :param max_request_bytes: the cluster's ``--max-request-bytes`` (etcd's
        default 1.5 MiB).
    :raises TypeError: for arguments of the wrong type.
    :raises ValueError: for an empty list of endpoints, a malformed one, or
        a bad prefix or limit.
    :raises ~centidb.errors.OptionalDependencyError: if the etcd client
        libraries are not installed (``pip install centidb[etcd]``).
    """

    snapshot_at = 'first read'
    max_key_size = MAX_KEY_SIZE

    def __init__(self, endpoints: Sequence[str] | str = ('127.0.0.1:2379',), *,
                 prefix: bytes = b'centidb/', timeout: float = 10.0,
                 max_txn_ops: int = DEFAULT_MAX_TXN_OPS,
                 max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        if isinstance(endpoints, str):
            endpoints = [endpoints]
        addresses = [parse_endpoint(endpoint) for endpoint in endpoints]
        if not addresses:
            raise ValueError('endpoints must name at least one etcd endpoint')
        if type(prefix) is not bytes:
            raise TypeError(f'prefix must be bytes, not {type(prefix).__name__}')
        if not 0 < len(prefix) <= MAX_PREFIX_SIZE:
            raise ValueError(f'prefix must be 1 to {MAX_PREFIX_SIZE} bytes, '
                             f'not {len(prefix)}')
        _positive('timeout', timeout, 0.1)
        for name, value, least in (('max_txn_ops', max_txn_ops, 4),
                                   ('max_request_bytes', max_request_bytes,
                                    2 * _RESERVED_BYTES)):
            if type(value) is not int:
                raise TypeError(f'{name} must be an int, not {type(value).__name__}')
            _positive(name, value, least)
        self._client = EtcdClient(addresses, timeout=timeout)
        super().__init__()
        self.endpoints = addresses
        self.prefix = prefix
        self.timeout = timeout
        self.rpc = self._client.rpc
        self.server_max_txn_ops = max_txn_ops
        self.max_request_bytes = max_request_bytes
        self.max_txn_ops = max_txn_ops - 1
        self.max_txn_bytes = max_request_bytes - _RESERVED_BYTES
        self.max_value_size = self.max_txn_bytes
        self._data, self._data_end = prefix + b'd', prefix + b'e'
        self._tomb, self._tomb_end = prefix + b't', prefix + b'u'
        self._rtomb, self._rtomb_end = prefix + b'r', prefix + b's'
        self._purge_key = prefix + b'm/gc'
        self._marker_key = prefix + b'c/' + uuid.uuid4().hex.encode()
        #: The commit marker's mod revision: 0 while absent, None if unknown.
        self._marker_rev: int | None = 0
        # Compare pairs (data, tombstone) a commit may use for what it read,
        # besides the purge marker, range tombstone and commit marker compares.
        self._compare_units = max(1, (max_txn_ops - 3) // 2)

    def _describe(self) -> str:
        return f'EtcdEngine({", ".join(self.endpoints)}, prefix={self.prefix!r})'

    def _begin(self, write: bool) -> EngineTransaction:
        return EtcdTransaction(self, write)

    def _close(self) -> None:
        if self._marker_rev != 0:   # best effort: one try, short
            rpc = self.rpc
            try:
                self._client.once('Txn', rpc.TxnRequest(success=[rpc.RequestOp(
                    request_delete_range=rpc.DeleteRangeRequest(key=self._marker_key))]), 1.0)
            except Exception:
                pass
        self._client.close()

    def purge_tombstones(self) -> int:
        """Delete the tombstones that deletes and range deletes leave behind; return how many.

        Write transactions that pinned their snapshot before the purge fail
        to commit with :class:`~centidb.errors.ConflictError` (run them
        again), because their compares can no longer see those deletes.

        :returns: the number of tombstones deleted.
        :raises ~centidb.errors.EngineClosedError: if the engine is closed.
        """
        if self._closed:
            raise self._closed_error()
        rpc = self.rpc
        response = self._client.txn(rpc.TxnRequest(success=[
            rpc.RequestOp(request_put=rpc.PutRequest(key=self._purge_key, value=b'')),
            rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(
                key=self._tomb, range_end=self._tomb_end)),
            rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(
                key=self._rtomb, range_end=self._rtomb_end))]), writes=True)
        return sum(int(op.response_delete_range.deleted) for op in response.responses[1:])

    def _range_request(self, lo: bytes | None, hi: bytes | None, revision: int, *,
                       limit: int = 0, reverse: bool = False, count_only: bool = False) -> Any:
        rpc = self.rpc
        return rpc.RangeRequest(
            key=self._data + (lo or b''),
            range_end=self._data_end if hi is None else self._data + hi,
            revision=revision, limit=limit, count_only=count_only,
            sort_order=rpc.RangeRequest.DESCEND if reverse else rpc.RangeRequest.NONE,
            sort_target=rpc.RangeRequest.KEY)

    def _compares(self, units: list[tuple[bytes, bytes | None]], revision: int) -> list[Any]:
        """Compares that hold while no key read at `revision` has changed since."""
        rpc = self.rpc
        compares = [rpc.Compare(result=rpc.Compare.LESS, target=rpc.Compare.MOD,
                                key=self._purge_key, mod_revision=revision + 1)]
        # A range delete that removed a key read started below the read's end.
        top: bytes | None = max((end for _, end in units if end is not None), default=b'')
        if any(end is None for _, end in units):
            top = None
        compares.append(rpc.Compare(
            result=rpc.Compare.LESS, target=rpc.Compare.MOD, key=self._rtomb,
            range_end=self._rtomb_end if top is None else self._rtomb + top,
            mod_revision=revision + 1))
        for start, end in units:
            for space, space_end in ((self._data, self._data_end), (self._tomb, self._tomb_end)):
                compare = rpc.Compare(result=rpc.Compare.LESS, target=rpc.Compare.MOD,
                                      key=space + start, mod_revision=revision + 1)
                if end is None:
                    compare.range_end = space_end
                elif end != start + b'\x00':
                    compare.range_end = space + end
                compares.append(compare)
        return compares

    def _marker_revision(self) -> int:
        """The commit marker's mod revision (read from etcd if unknown)."""
        if self._marker_rev is None:
            kvs = self._client.range(self.rpc.RangeRequest(key=self._marker_key)).kvs
            self._marker_rev = int(kvs[0].mod_revision) if kvs else 0
        return self._marker_rev

    def _send_commit(self, ops: list[Any], compares: list[Any], deletes: int,
                     ranges: int = 0) -> None:
        """Check `ops` against the limits, send them in one Txn, settle the outcome.

        `ops` holds `ranges` operations for range deletes and their tombstone,
        `deletes` deletes of two operations each, and puts.
        """
        rpc = self.rpc
        if len(ops) + 1 > self.server_max_txn_ops:
            ranged = f'{ranges} for range deletes and their tombstone, ' if ranges else ''
            raise LimitExceededError(
                f'this commit needs {len(ops) + 1} etcd operations '
                f'({len(ops) - 2 * deletes - ranges} puts, {deletes} deletes counted '
                f'twice as each also writes a tombstone, {ranged}and the commit '
                f'marker), more than the '
                f'{self.server_max_txn_ops} etcd allows in one transaction '
                f"(--max-txn-ops; the engine's max_txn_ops is {self.max_txn_ops}). "
                f'Nothing was written: split the work into smaller transactions')
        commit_id = os.urandom(12)
        compares.append(rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.MOD,
                                    key=self._marker_key,
                                    mod_revision=self._marker_revision()))
        ops.append(rpc.RequestOp(request_put=rpc.PutRequest(key=self._marker_key,
                                                            value=commit_id)))
        request = rpc.TxnRequest(compare=compares, success=ops, failure=[rpc.RequestOp(
            request_range=rpc.RangeRequest(key=self._marker_key))])
        size = request.ByteSize()
        if size > self.max_request_bytes - 1024:
            raise LimitExceededError(
                f'this commit is a request of {size} bytes, more than the '
                f'{self.max_request_bytes} etcd accepts (--max-request-bytes; the '
                f"engine's max_txn_bytes, for keys and values, is {self.max_txn_bytes}). "
                f'Nothing was written: split the work into smaller transactions')
        try:
            response = self._client.txn(request, writes=True)
        except ClusterUnavailableError:
            self._marker_rev = None
            raise
        if response.succeeded:
            self._marker_rev = int(response.header.revision)
            return
        kvs = response.responses[0].response_range.kvs
        self._marker_rev = int(kvs[0].mod_revision) if kvs else 0
        if kvs and kvs[0].value == commit_id:
            return      # an attempt whose answer was lost had applied it
        raise ConflictError(
            'another client changed keys this transaction read, after its '
            'snapshot; nothing was written: run the transaction again '
            '(Store.transact() does)')


class _Scan:
    """What one iterator of a write transaction has read so far."""

    __slots__ = ('lo', 'hi', 'reverse', 'last', 'done')

    def __init__(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> None:
        self.lo, self.hi, self.reverse = lo or b'', hi, reverse
        self.last: bytes | None = None
        self.done = False

    def covered(self) -> tuple[bytes, bytes | None] | None:
        """The key range the yielded items depend on, or None."""
        if self.done:
            return self.lo, self.hi
        if self.last is None:
            return None
        if self.reverse:
            return self.last, self.hi
        return self.lo, self.last + b'\x00'


class EtcdTransaction(EngineTransaction):
    """A transaction of an :class:`EtcdEngine`; see :mod:`centidb.engines.etcd`.

    :param engine: the :class:`EtcdEngine`.
    :param write: True for a write transaction.
    """

    engine: EtcdEngine

    def __init__(self, engine: EtcdEngine, write: bool) -> None:
        super().__init__(engine, write)
        #: The pinned revision; 0 until the first read.
        self.revision = 0
        self._cache: dict[bytes, bytes | None] = {}     # values read, at the revision
        self._pending: dict[bytes, _Pending] = {}
        self._sorted: SortedDict[bytes, _Pending] | None = None
        self._points: set[bytes] = set()                # keys a write transaction read
        self._ranges: list[tuple[bytes, bytes | None]] = []
        self._scans: list[_Scan] = []
        # Ranges delete_range() removed, sorted and disjoint; their starts.
        self._dropped: list[tuple[bytes, bytes | None]] = []
        self._dropped_starts: list[bytes] = []
        self._first_page = _FIRST_PAGE

    def _pin(self, response: Any) -> None:
        if not self.revision:
            self.revision = int(response.header.revision)

    # --- reads -------------------------------------------------------------------

    def _get(self, key: bytes) -> bytes | None:
        if key in self._pending:
            value = self._pending[key]
            return None if value is TOMBSTONE else value
        if self._dropped and self._dropped_at(key) is not None:
            return None
        cache = self._cache
        if key in cache:
            return cache[key]
        self._fetch([key])
        return cache[key]

    def _get_many(self, keys: list[bytes]) -> list[bytes | None]:
        pending, cache = self._pending, self._cache
        dropped = self._dropped_at if self._dropped else None
        missing = list(dict.fromkeys(k for k in keys if k not in pending and k not in cache
                                     and (dropped is None or dropped(k) is None)))
        if missing:
            self._fetch(missing)
        out: list[bytes | None] = []
        for key in keys:
            if key in pending:
                value = pending[key]
                out.append(None if value is TOMBSTONE else value)
            elif dropped is not None and dropped(key) is not None:
                out.append(None)
            else:
                out.append(cache[key])
        return out

    def _dropped_at(self, key: bytes) -> tuple[bytes, bytes | None] | None:
        """The range removed by :meth:`delete_range` that holds `key`, or None."""
        i = bisect.bisect_right(self._dropped_starts, key) - 1
        if i < 0:
            return None
        found = self._dropped[i]
        return found if found[1] is None or key < found[1] else None

    def _fetch(self, keys: list[bytes]) -> None:
        """Read `keys` at the pinned revision into the cache (one Txn per chunk)."""
        engine, rpc = self.engine, self.engine.rpc
        client, data = engine._client, engine._data
        if self.write:
            self._points.update(keys)
        if len(keys) == 1:
            response = client.range(rpc.RangeRequest(key=data + keys[0], revision=self.revision))
            self._pin(response)
            self._cache[keys[0]] = response.kvs[0].value if response.kvs else None
            return
        size = engine.server_max_txn_ops
        chunks = [keys[i:i + size] for i in range(0, len(keys), size)]
        requests = [rpc.TxnRequest(success=[rpc.RequestOp(request_range=rpc.RangeRequest(
            key=data + key, revision=self.revision)) for key in chunk]) for chunk in chunks]
        if not self.revision:
            first = client.txn(requests.pop(0))
            self._pin(first)
            for request in requests:
                for op in request.success:
                    op.request_range.revision = self.revision
            responses = [first] + client.txn_many(requests)
        else:
            responses = client.txn_many(requests)
        for chunk, response in zip(chunks, responses):
            for key, op in zip(chunk, response.responses):
                kvs = op.response_range.kvs
                self._cache[key] = kvs[0].value if kvs else None

    def first(self, lo: bytes | None = None, hi: bytes | None = None,
              reverse: bool = False) -> Item | None:
        """As :meth:`EngineTransaction.first`, fetching one item at a time.

        :param lo: the lowest key included (``bytes``), or ``None``.
        :param hi: the key at which to stop (excluded), or ``None``.
        :param reverse: descend, from the largest key below `hi`.
        """
        self._first_page = 1
        try:
            return super().first(lo, hi, reverse)
        finally:
            self._first_page = _FIRST_PAGE

    def _scan_pages(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                    page: int) -> ItemIterator:
        """Iterate the committed items in ``[lo, hi)`` at the pinned revision."""
        engine = self.engine
        request = engine._range_request(lo, hi, self.revision, limit=page, reverse=reverse)
        cut = len(engine._data)
        while True:
            response = engine._client.range(request)
            self._pin(response)
            kvs = response.kvs
            for kv in kvs:
                yield kv.key[cut:], kv.value
            if not response.more or not kvs:
                return
            request.revision = self.revision
            if reverse:
                request.range_end = kvs[-1].key
            else:
                request.key = kvs[-1].key + b'\x00'
            request.limit = min(request.limit * 4, _MAX_PAGE)

    def _live_pages(self, lo: bytes | None, hi: bytes | None, reverse: bool,
                    page: int) -> ItemIterator:
        """As ``_scan_pages``, skipping the ranges this transaction deleted.

        Checked item by item, as a range may be deleted between steps; on
        meeting one, the scan starts again past it.
        """
        while True:
            pages = self._scan_pages(lo, hi, reverse, page)
            try:
                for item in pages:
                    found = self._dropped_at(item[0]) if self._dropped else None
                    if found is None:
                        yield item
                        continue
                    if reverse:
                        hi = found[0]
                    elif found[1] is None:
                        return
                    else:
                        lo = found[1]
                    break
                else:
                    return
            finally:
                pages.close()
            if hi is not None and (hi == b'' or (lo is not None and lo >= hi)):
                return

    def _items(self, lo: bytes | None, hi: bytes | None, reverse: bool) -> ItemIterator:
        if not self.write:
            return self._scan_pages(lo, hi, reverse, self._first_page)
        base = self._live_pages(lo, hi, reverse, self._first_page)
        scan = _Scan(lo, hi, reverse)
        self._scans.append(scan)
        return _recorded(merge_overlay(self._sorted_writes(), base, lo, hi, reverse), scan, self)

    def _count(self, lo: bytes | None, hi: bytes | None) -> int:
        if self.write:
            if (self._pending and next(self._sorted_writes().irange(
                    lo, hi, (True, False)), None) is not None) or any(
                        (hi is None or start < hi) and (end is None or lo is None or end > lo)
                        for start, end in self._dropped):
                return sum(1 for _ in self._items(lo, hi, False))
            self._ranges.append((lo or b'', hi))
        engine = self.engine
        response = engine._client.range(engine._range_request(lo, hi, self.revision,
                                                              count_only=True))
        self._pin(response)
        return int(response.count)

    # --- writes ------------------------------------------------------------------

    def _check_sizes(self, key: bytes, value: bytes) -> None:
        engine = self.engine
        if len(key) > MAX_KEY_SIZE:
            raise LimitExceededError(f'key of {len(key)} bytes is longer than '
                                     f'EtcdEngine.max_key_size ({MAX_KEY_SIZE} bytes)')
        limit = engine.max_value_size
        if limit is not None and len(value) > limit:
            raise LimitExceededError(
                f'value of {len(value)} bytes is longer than the engine\'s '
                f'max_value_size ({limit} bytes; etcd takes at most '
                f'{engine.max_request_bytes} bytes per request)')

    def _remember(self, key: bytes, value: _Pending) -> None:
        self._pending[key] = value
        if self._sorted is not None:
            self._sorted[key] = value

    def _put(self, key: bytes, value: bytes) -> None:
        self._check_sizes(key, value)
        self._remember(key, value)

    def _delete(self, key: bytes) -> None:
        if len(key) <= MAX_KEY_SIZE:    # a longer key cannot be stored
            self._remember(key, TOMBSTONE)

    def _delete_range(self, lo: bytes | None, hi: bytes | None) -> None:
        start = lo or b''
        writes = self._sorted_writes()
        for key in list(writes.irange(start, hi, (True, False))):
            del writes[key]
            del self._pending[key]
        self._dropped = coalesce([*self._dropped, (start, hi)], len(self._dropped) + 1)
        self._dropped_starts = [begin for begin, _ in self._dropped]

    def _put_many(self, pairs: list[Item]) -> None:
        if not self.write or self._state != 'open' or self.engine._closed:
            self._refuse_write()
        self.fast.writes += len(pairs)   # first: a failure may have written some
        for key, value in pairs:
            self._check_sizes(key, value)
            self._remember(key, value)

    def _sorted_writes(self) -> SortedDict[bytes, _Pending]:
        if self._sorted is None:
            self._sorted = SortedDict(self._pending)
        return self._sorted

    # --- ending ------------------------------------------------------------------

    def _read_units(self) -> list[tuple[bytes, bytes | None]]:
        """What this transaction read, as at most ``_compare_units`` key ranges."""
        units: list[tuple[bytes, bytes | None]] = [(key, key + b'\x00') for key in self._points]
        units += self._ranges
        for scan in self._scans:
            covered = scan.covered()
            if covered is not None:
                units.append(covered)
        return coalesce(units, self.engine._compare_units)

    def _commit(self) -> None:
        try:
            if self.write and (self._pending or self._dropped):
                self._send()
        finally:
            self._release()

    def _range_deletes(self) -> list[Any]:
        """The etcd operations of the range deletes: DeleteRange pieces, the range tombstone."""
        engine, rpc = self.engine, self.engine.rpc
        data = engine._data
        writes = self._sorted_writes()
        ops: list[Any] = []
        for start, end in self._dropped:
            # etcd refuses a put inside a range the same Txn deletes: cut it.
            cut = start
            for key in writes.irange(start, end, (True, False)):
                if writes[key] is TOMBSTONE:
                    continue    # deleted by the range delete anyway
                if cut < key:
                    ops.append(rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(
                        key=data + cut, range_end=data + key)))
                cut = key + b'\x00'
            if end is None or cut < end:
                ops.append(rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(
                    key=data + cut, range_end=engine._data_end if end is None else data + end)))
        ops.append(rpc.RequestOp(request_put=rpc.PutRequest(
            key=engine._rtomb + self._dropped[0][0], value=b'')))
        return ops

    def _send(self) -> None:
        engine, rpc = self.engine, self.engine.rpc
        ops: list[Any] = self._range_deletes() if self._dropped else []
        ranges = len(ops)
        deletes = 0
        cache = self._cache
        dropped = self._dropped_at if self._dropped else None
        for key, value in self._pending.items():
            if value is TOMBSTONE:
                if key in cache and cache[key] is None:
                    continue    # read as missing: the compares keep it so
                if dropped is not None and dropped(key) is not None:
                    continue    # a range delete removes it
                deletes += 1
                ops.append(rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(
                    key=engine._data + key)))
                ops.append(rpc.RequestOp(request_put=rpc.PutRequest(
                    key=engine._tomb + key, value=b'')))
            else:
                ops.append(rpc.RequestOp(request_put=rpc.PutRequest(
                    key=engine._data + key, value=value)))
        if not ops:
            return
        units = self._read_units() if self.revision else []
        compares = engine._compares(units, self.revision) if units else []
        engine._send_commit(ops, compares, deletes, ranges)

    def _release(self) -> None:
        self._cache, self._pending, self._sorted = {}, {}, None
        self._points, self._ranges, self._scans = set(), [], []
        self._dropped, self._dropped_starts = [], []

    _abort = _release


def _recorded(items: ItemIterator, scan: _Scan, txn: EtcdTransaction) -> ItemIterator:
    """Yield from `items`, noting in `scan` the last key yielded and the end.

    Also drops the committed items of ranges that `txn` deleted after
    ``merge_overlay`` read them ahead.
    """
    try:
        for item in items:
            if txn._dropped and item[0] not in txn._pending and \
                    txn._dropped_at(item[0]) is not None:
                continue
            scan.last = item[0]
            yield item
        scan.done = True
    finally:
        items.close()
