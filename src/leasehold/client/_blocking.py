"""The blocking client's I/O: a flow's steps performed on plain keep-alive sockets.

HTTP/1.1 written by hand (a request is one ``sendall``) and answers parsed by httptools,
the C parser uvicorn serves the coordinator with: measured against ``http.client``,
urllib3 and the async client on a loop thread, it costs a web process the least CPU per
call by far (DESIGN.md §14, "The clients' transports"). No event loop, no thread.

Each coordinator gets a pool of idle connections, shared by the threads of a process: a
call takes one (or opens one), and gives it back when its answer was read whole and the
coordinator keeps it open. A connection idle in the pool may have been closed by the
coordinator meanwhile (its keep-alive timeout); one that shows that before use is
dropped, and a request that met the close on a reused connection, before any byte of an
answer, is sent once more on a new one. Every call of the client is safe to send again
(PROTOCOL.md §8). What comes back is read within the same bounds as the async client's.
"""

from __future__ import annotations

import os
import select
import socket
import ssl
import threading
import time
from typing import Final, Protocol, TypeVar

import httptools

from leasehold.client._endpoints import Endpoint
from leasehold.client._exchange import (
    MAX_ERROR_BYTES,
    Flow,
    NoAnswer,
    Reply,
    Request,
    Send,
    Sleep,
    over_the_bound,
)
from leasehold.errors import Unavailable
from leasehold.model import UNSERVED_HEADER

T = TypeVar("T")

_RECV: Final = 256 * 1024
# Idle connections kept per coordinator; more threads than this open and close their own.
_IDLE_PER_ENDPOINT: Final = 16
_UNSERVED: Final = UNSERVED_HEADER.lower().encode()


class BlockingTransport(Protocol):
    """What performs a flow's ``Send`` steps for ``SyncClient``: ``SocketTransport``
    here, or a hand-over to another's event loop (``SyncClient._on_loop``)."""

    def send(self, step: Send) -> Reply:
        """The reply as read, ``NoAnswer``, or ``Unavailable`` for an answer too long."""
        ...

    def close(self) -> None: ...


def drive(flow: Flow[T], transport: BlockingTransport) -> T:
    """Run a flow to its end: each step performed, its outcome sent back in."""
    try:
        step = flow.send(None)
        while True:
            if isinstance(step, Sleep):
                time.sleep(step.seconds)
                step = flow.send(None)
                continue
            try:
                reply = transport.send(step)
            except Unavailable as exc:
                step = flow.throw(exc)
            else:
                step = flow.send(reply)
    except StopIteration as done:
        value: T = done.value
        return value
    finally:
        flow.close()


class _Closed(Exception):
    """A reused connection was closed before any byte of the answer came."""


class _Answer:
    """httptools' callbacks: the status, content type and body of one answer, as read."""

    __slots__ = (
        "chunks",
        "complete",
        "content_type",
        "declared",
        "framed",
        "keep_alive",
        "parser",
        "size",
        "unserved",
    )

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.keep_alive = False
        self.chunks: list[bytes] = []
        self.size = 0
        self.declared = 0  # the Content-Length, if any
        self.complete = False
        self.framed = False  # a Content-Length or chunks: its end is not the connection's
        self.content_type = ""
        self.unserved: str | None = None

    def on_header(self, name: bytes, value: bytes) -> None:
        lowered = name.lower()
        if lowered == b"content-type":
            self.content_type = value.decode("latin-1").split(";", 1)[0].strip()
        elif lowered == b"content-length":
            self.framed = True
            self.declared = int(value) if value.strip().isdigit() else 0
        elif lowered == b"transfer-encoding":
            self.framed = True
        elif lowered == _UNSERVED:
            self.unserved = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)
        self.size += len(body)

    def on_message_complete(self) -> None:
        # Asked now: the parser forgets it once the message is behind it.
        self.keep_alive = self.parser.should_keep_alive()
        self.complete = True


class _Connection:
    """One socket to one coordinator."""

    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        sock = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if endpoint.tls:
            context = ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=endpoint.host)
        self.sock = sock
        self.endpoint = endpoint

    def close(self) -> None:
        self.sock.close()

    def dropped(self) -> bool:
        """Whether the coordinator closed it while it was idle (readable with nothing
        asked: the end of the stream, or bytes no request asked for)."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def exchange(
        self, data: bytes, deadline: float, limit: int, reused: bool
    ) -> tuple[int, _Answer, bool]:
        """Send a request and read its answer: the status, the answer, and whether the
        connection may be used again. ``limit``: the most of a 2xx body to read."""
        sock = self.sock
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as exc:
            if reused:
                raise _Closed from exc
            raise
        answer = _Answer()
        parser = answer.parser
        started = False
        while not answer.complete:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                chunk = sock.recv(_RECV)
            except ConnectionResetError as exc:
                if reused and not started:
                    raise _Closed from exc
                raise
            if not chunk:
                if reused and not started:
                    raise _Closed
                if started and parser.get_status_code() and not answer.framed:
                    return parser.get_status_code(), answer, False  # its end is the close
                raise ConnectionError("the connection closed before the answer's end")
            started = True
            parser.feed_data(chunk)
            status = parser.get_status_code()
            bound = MAX_ERROR_BYTES if status >= 400 else limit
            if answer.size > bound or (status < 400 and answer.declared > bound):
                answer.size = max(answer.size, answer.declared)
                return status, answer, False  # the rest is never read
        return parser.get_status_code(), answer, answer.keep_alive


class SocketTransport:
    """Pools of keep-alive connections, one per coordinator, and the headers every request
    carries; safe to share between threads, and across ``fork`` (a child opens its own)."""

    def __init__(self, token: str | None, headers: dict[str, str], max_read_bytes: int) -> None:
        lines = [f"{name}: {value}\r\n" for name, value in headers.items()]
        if token:
            lines.append(f"Authorization: Bearer {token}\r\n")
        self._common = "".join(lines)
        self.max_read_bytes = max_read_bytes
        self._idle: dict[Endpoint, list[_Connection]] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        if self._pid == os.getpid():  # a forked child leaves the parent's sockets alone
            for connections in idle.values():
                for connection in connections:
                    connection.close()

    def send(self, step: Send) -> Reply:
        """One HTTP exchange: the reply as read, ``NoAnswer``, or ``Unavailable`` for a
        2xx answer over the read bound."""
        request, endpoint = step.request, step.endpoint
        data = self._encode(endpoint, request)
        deadline = time.monotonic() + request.timeout_seconds
        try:
            connection, reused = self._take(endpoint, request.timeout_seconds)
            try:
                return self._exchange(connection, reused, request, data, deadline)
            except _Closed:
                # Closed by the coordinator while idle, before it read the request: once more.
                connection = _Connection(endpoint, request.timeout_seconds)
                return self._exchange(connection, False, request, data, deadline)
        except (OSError, httptools.HttpParserError) as exc:  # socket.timeout is an OSError
            what = f"{request.method} {request.path}"
            raise NoAnswer(f"{what}: {type(exc).__name__}: {exc}") from exc

    def _exchange(
        self, connection: _Connection, reused: bool, request: Request, data: bytes, deadline: float
    ) -> Reply:
        try:
            status, answer, keep = connection.exchange(data, deadline, self.max_read_bytes, reused)
        except BaseException:
            connection.close()
            raise
        if keep:
            self._give(connection)
        else:
            connection.close()
        if status < 400 and answer.size > self.max_read_bytes:
            raise over_the_bound(request, self.max_read_bytes)
        body = b"".join(answer.chunks)
        if status >= 400:
            return Reply(status, answer.content_type, body[:MAX_ERROR_BYTES])
        return Reply(status, answer.content_type, body, answer.unserved)

    def _encode(self, endpoint: Endpoint, request: Request) -> bytes:
        lines = [
            f"{request.method} {endpoint.base_path}{request.path} HTTP/1.1\r\n"
            f"Host: {endpoint.host_header}\r\n{self._common}"
        ]
        for name, value in request.headers.items():
            if "\r" in value or "\n" in value:
                raise ValueError(f"the header {name} holds a line break")
            lines.append(f"{name}: {value}\r\n")
        body = request.body
        if body is not None or request.method != "GET":
            lines.append(f"Content-Length: {len(body or b'')}\r\n")
        lines.append("\r\n")
        head = "".join(lines).encode("latin-1")
        return head + body if body else head

    def _take(self, endpoint: Endpoint, timeout: float) -> tuple[_Connection, bool]:
        """An idle connection to ``endpoint`` that is still open, or a new one."""
        if self._pid != os.getpid():
            # A forked child: the idle sockets are the parent's (left alone, not closed).
            with self._lock:
                self._idle, self._pid = {}, os.getpid()
        while True:
            with self._lock:
                idle = self._idle.get(endpoint)
                connection = idle.pop() if idle else None
            if connection is None:
                return _Connection(endpoint, timeout), False
            if not connection.dropped():
                return connection, True
            connection.close()

    def _give(self, connection: _Connection) -> None:
        with self._lock:
            idle = self._idle.setdefault(connection.endpoint, [])
            if len(idle) < _IDLE_PER_ENDPOINT:
                idle.append(connection)
                return
        connection.close()
