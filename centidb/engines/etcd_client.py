"""The connection of :class:`~centidb.engines.etcd.EtcdEngine` to an etcd v3 cluster.

:class:`EtcdClient` sends the two calls the engine makes, ``Range`` and
``Txn``, to one endpoint at a time and fails over to the next when an
endpoint does not answer, retrying for a bounded time. It loads ``grpc``
and the etcd v3 protocol messages (from the ``etcd-sdk-python`` package,
module ``pyetcd``) when it is made, never at import, so ``import centidb``
works without them; :func:`load_protocol` says how to install them.

Which calls are retried: every one. A ``Range`` only reads. A ``Txn`` that
writes carries a compare on the engine's commit marker key, which the
``Txn`` itself rewrites, so a repeat of a ``Txn`` that was applied fails
its compare instead of applying twice (see :mod:`centidb.engines.etcd`).
"""

from __future__ import annotations

import importlib
import threading
import time
from types import ModuleType
from typing import Any, Sequence

from centidb.errors import (
    ClusterUnavailableError,
    ConflictError,
    EngineError,
    LimitExceededError,
    OptionalDependencyError,
)

__all__ = ['EtcdClient', 'load_protocol', 'parse_endpoint']

#: What ``pip`` installs for :class:`~centidb.engines.etcd.EtcdEngine`.
INSTALL_HINT = 'pip install centidb[etcd] (grpcio, etcd-sdk-python and protobuf)'

# gRPC channel options: no message size cap (the engine checks request
# sizes itself), and reconnect soon to a member that comes back.
_CHANNEL_OPTIONS = [
    ('grpc.max_receive_message_length', -1),
    ('grpc.max_send_message_length', -1),
    ('grpc.initial_reconnect_backoff_ms', 100),
    ('grpc.min_reconnect_backoff_ms', 100),
    ('grpc.max_reconnect_backoff_ms', 1000),
]

# Server messages that mean "try again, maybe elsewhere" whatever the code.
_TRANSIENT = ('leader changed', 'no leader', 'timed out', 'too many requests', 'deadline exceeded',
              'not capable', 'future revision', 'raft: stopped', 'server stopped')


def load_protocol() -> tuple[ModuleType, ModuleType, ModuleType]:
    """Import and return ``(grpc, rpc_pb2, rpc_pb2_grpc)``.

    :raises ~centidb.errors.OptionalDependencyError: (an ``ImportError``)
        naming the ``pip install`` command, if they are not installed.
    """
    try:
        grpc = importlib.import_module('grpc')
        rpc = importlib.import_module('pyetcd.etcdrpc.rpc_pb2')
        stubs = importlib.import_module('pyetcd.etcdrpc.rpc_pb2_grpc')
    except ImportError as exc:
        raise OptionalDependencyError(
            f'EtcdEngine needs the etcd client libraries, which are not '
            f'installed ({exc}); install them with: {INSTALL_HINT}') from exc
    return grpc, rpc, stubs


def parse_endpoint(endpoint: object) -> str:
    """Return ``'host:port'`` for an endpoint given as that or ``'http://host:port'``.

    :param endpoint: the endpoint, a ``str``.
    :raises TypeError: if `endpoint` is not a ``str``.
    :raises ValueError: for https (not supported), another scheme, or a
        missing port.
    """
    if not isinstance(endpoint, str):
        raise TypeError(f'each etcd endpoint must be a str such as '
                        f"'127.0.0.1:2379', not {type(endpoint).__name__}")
    address = endpoint.strip()
    if address.startswith('https://'):
        raise ValueError(f'etcd endpoint {endpoint!r}: TLS (https) is not '
                         f'supported yet; use http:// on a trusted network')
    if address.startswith('http://'):
        address = address[len('http://'):]
    address = address.rstrip('/')
    host, sep, port = address.rpartition(':')
    if not sep or not host or not port.isdigit() or '/' in address:
        raise ValueError(f"etcd endpoint {endpoint!r} is not 'host:port' "
                         f"(for example '127.0.0.1:2379')")
    return address


class EtcdClient:
    """Sends ``Range`` and ``Txn`` to an etcd cluster, failing over between endpoints.

    It keeps using one endpoint while it answers. When a call fails because
    the endpoint is down, has no leader, or is too slow, the call is sent to
    the next endpoint, round the list, pausing briefly after each full
    round, until `timeout` seconds have passed since the call began; then
    :class:`~centidb.errors.ClusterUnavailableError` is raised.

    :param endpoints: ``'host:port'`` strings (see :func:`parse_endpoint`).
    :param timeout: seconds a call may take in all, retries included.
    :param attempt_timeout: seconds one attempt may take.
    """

    def __init__(self, endpoints: Sequence[str], *, timeout: float,
                 attempt_timeout: float = 2.0) -> None:
        grpc, rpc, stubs = load_protocol()
        self._grpc = grpc
        #: The etcd protocol messages module (``rpc_pb2``).
        self.rpc = rpc
        self._stubs = stubs
        self.endpoints = list(endpoints)
        self.timeout = timeout
        self.attempt_timeout = attempt_timeout
        self._kv: dict[int, Any] = {}       # endpoint index -> KV stub
        self._channels: dict[int, Any] = {}
        self._current = 0
        self._lock = threading.Lock()

    def _stub(self, index: int) -> Any:
        stub = self._kv.get(index)
        if stub is None:
            with self._lock:
                stub = self._kv.get(index)
                if stub is None:
                    channel = self._grpc.insecure_channel(
                        self.endpoints[index], options=_CHANNEL_OPTIONS)
                    self._channels[index] = channel
                    stub = self._kv[index] = self._stubs.KVStub(channel)
        return stub

    def range(self, request: Any) -> Any:
        """Send a ``RangeRequest``; return the ``RangeResponse``.

        :param request: the ``RangeRequest``.
        """
        return self._call('Range', request, False)

    def txn(self, request: Any, *, writes: bool = False) -> Any:
        """Send a ``TxnRequest``; return the ``TxnResponse``.

        :param request: the ``TxnRequest``.
        :param writes: True if it may write: a failure then says that the
            outcome is unknown.
        """
        return self._call('Txn', request, writes)

    def txn_many(self, requests: list[Any]) -> list[Any]:
        """Send read-only ``TxnRequest`` messages at once; their responses, in order.

        The calls run concurrently (gRPC futures); one that fails is sent
        again as :meth:`txn` would.

        :param requests: the ``TxnRequest`` messages (reads only).
        """
        if len(requests) == 1:
            return [self.txn(requests[0])]
        index = self._current
        stub = self._stub(index)
        futures = [stub.Txn.future(request, timeout=self.attempt_timeout)
                   for request in requests]
        responses = []
        for request, future in zip(requests, futures):
            try:
                responses.append(future.result())
            except self._grpc.RpcError:
                responses.append(self.txn(request))
        return responses

    def once(self, method: str, request: Any, timeout: float) -> Any:
        """Send `request` to the current endpoint once, with no retry.

        :param method: ``'Range'`` or ``'Txn'``.
        :param request: the request message.
        :param timeout: seconds to wait for the answer.
        :raises grpc.RpcError: if it fails.
        """
        return getattr(self._stub(self._current), method)(request, timeout=timeout)

    def _call(self, method: str, request: Any, writes: bool) -> Any:
        deadline = time.monotonic() + self.timeout
        pause = 0.02
        tried = 0
        while True:
            index = self._current
            remaining = deadline - time.monotonic()
            try:
                call = getattr(self._stub(index), method)
                return call(request, timeout=max(0.05, min(self.attempt_timeout, remaining)))
            except self._grpc.RpcError as exc:
                error = exc
                if not self._transient(exc):
                    raise self._translate(exc) from None
            if time.monotonic() >= deadline:
                break
            with self._lock:
                if self._current == index:
                    self._current = (index + 1) % len(self.endpoints)
            tried += 1
            if tried % len(self.endpoints) == 0:
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(pause * 2, 0.5)
        unknown = (' The commit\'s outcome is unknown: it may have been applied.'
                   if writes else '')
        raise ClusterUnavailableError(
            f'no etcd endpoint of {", ".join(self.endpoints)} answered within '
            f'{self.timeout:g} s (last error: {self._describe(error)}).{unknown}')

    def _transient(self, exc: Any) -> bool:
        code = exc.code() if hasattr(exc, 'code') else None
        codes = self._grpc.StatusCode
        if code in (codes.UNAVAILABLE, codes.DEADLINE_EXCEEDED, codes.CANCELLED):
            return True
        details = self._describe(exc)
        return any(text in details for text in _TRANSIENT)

    @staticmethod
    def _describe(exc: Any) -> str:
        details = exc.details() if hasattr(exc, 'details') else None
        return str(details or exc)

    def _translate(self, exc: Any) -> EngineError:
        """The centidb error for a gRPC error that retrying would not cure."""
        details = self._describe(exc)
        codes = self._grpc.StatusCode
        code = exc.code() if hasattr(exc, 'code') else None
        if 'compacted' in details:
            return ConflictError(
                f'etcd no longer keeps the revision this transaction reads '
                f'(it was compacted: {details}); run the transaction again')
        if 'too many operations' in details or 'request is too large' in details:
            return LimitExceededError(
                f'the etcd cluster refused the commit ({details}); the '
                f'engine\'s max_txn_ops or max_request_bytes is above the '
                f'server\'s --max-txn-ops or --max-request-bytes. Nothing was '
                f'written')
        if code == codes.RESOURCE_EXHAUSTED or 'space exceeded' in details:
            return EngineError(
                f'the etcd cluster is out of space ({details}): its backend '
                f'quota (--quota-backend-bytes, 2 GiB by default) is reached; '
                f'compact and defragment it, or raise the quota')
        return EngineError(f'etcd refused the request: {details}')

    def close(self) -> None:
        """Close every channel."""
        with self._lock:
            channels = list(self._channels.values())
            self._channels.clear()
            self._kv.clear()
        for channel in channels:
            channel.close()
