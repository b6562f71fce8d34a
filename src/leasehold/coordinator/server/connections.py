"""The HTTP/1.1 protocol the coordinator serves: uvicorn's httptools protocol plus the limits
it lacks.

uvicorn's httptools protocol (the fastest of uvicorn's parsers, measured in DESIGN.md §16)
buffers a request's head whole, however long, and never closes a connection that sends
nothing, or sends its request a byte at a time: its keep-alive timer starts only after a
response and any byte stops it. Anyone who reaches the port could therefore take memory
(100 MB of headers before the 401) or every file descriptor (silent sockets). This subclass
adds, per connection:

- a cap on a request head's bytes (request line and headers) and on its number of headers,
  answered 431 and closed before the request reaches the application (so before
  authentication);
- a request timeout: from the moment the connection waits for a request (accepted, or the
  previous response sent) the request must arrive whole, body included, within
  ``request_timeout`` seconds, or the connection is closed (with a 408 when the application
  has not started on it). The time the coordinator itself stops reading (flow control, a
  pipelined request waiting its turn) does not count;
- a send timeout: while part of an answer waits in the coordinator for the client to take
  it, the client must take some of it every ``send_timeout`` seconds, or the connection is
  aborted (its unsent bytes dropped: a plain close would wait for them, and keep the
  socket, for ever). Without it, a client asking for a large answer and never reading held
  its socket and the answer's memory for good (nginx's ``send_timeout`` is the same rule).
  The server looks at each connection's unsent bytes once a second (``check_sending``,
  from ``ConnectionTable.sweep``). Watching each answer as it is written (the transport
  paused at its first unsent byte) cost every request a turn of the event loop, since
  uvloop sends what is written at the end of a turn.

Across connections, the ``ConnectionTable`` (``table.py``) bounds how many are open, how
many one peer holds and the bytes of heads still arriving, closing the longest-waiting
connections to make room. Idle keep-alive connections are closed by uvicorn's own
``timeout_keep_alive``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import orjson
import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from leasehold.coordinator.api.errors import error_body
from leasehold.coordinator.server.table import ConnectionTable, peer_of
from leasehold.coordinator.settings import (
    KEEP_ALIVE_TIMEOUT_SECONDS,
    MAX_CONNECTIONS_PER_PEER,
    MAX_HEADER_BYTES,
    MAX_HEADER_BYTES_TOTAL,
    MAX_HEADERS,
    REQUEST_TIMEOUT_SECONDS,
    SEND_TIMEOUT_SECONDS,
    CoordinatorSettings,
)

log = structlog.get_logger("leasehold")


# Descriptors kept for everything but connections (the database and its readers, the logs,
# the loop's own) when the connection cap follows the open-file limit.
RESERVED_FILES: Final = 128


def connection_room(max_connections: int, open_files: int) -> int:
    """The cap on open connections: ``max_connections``, or when it is 0 the open-file
    limit less ``RESERVED_FILES`` (at least half the limit)."""
    if max_connections:
        return max_connections
    return max(open_files - RESERVED_FILES, open_files // 2, 1)


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What connections may take; DESIGN.md §16 lists each with its flag."""

    max_header_bytes: int = MAX_HEADER_BYTES
    max_headers: int = MAX_HEADERS
    request_timeout: float = REQUEST_TIMEOUT_SECONDS
    keep_alive_timeout: int = KEEP_ALIVE_TIMEOUT_SECONDS
    send_timeout: float = SEND_TIMEOUT_SECONDS
    max_connections: int = 1024 - RESERVED_FILES
    max_connections_per_peer: int = MAX_CONNECTIONS_PER_PEER
    max_header_bytes_total: int = MAX_HEADER_BYTES_TOTAL

    @classmethod
    def of(cls, settings: CoordinatorSettings, open_files: int) -> ConnectionLimits:
        """The settings' limits, under an open-file limit of ``open_files``."""
        return cls(
            settings.max_header_bytes,
            settings.max_headers,
            settings.request_timeout_seconds,
            settings.keep_alive_timeout_seconds,
            settings.send_timeout_seconds,
            connection_room(settings.max_connections, open_files),
            settings.max_connections_per_peer,
            settings.max_header_bytes_total,
        )

    def table(self) -> ConnectionTable:
        """A table for one server's connections under these limits."""
        return ConnectionTable(
            self.max_connections, self.max_connections_per_peer, self.max_header_bytes_total
        )


_OVER_BYTES = "the request's line and headers are over"


class _HeadRefused(Exception):
    """Raised inside a parser callback to stop parsing a head that breaks a limit."""


# What a request the HTTP parser refused is told (the parser's own words name its internals).
_NOT_HTTP: Final = "the request is not valid HTTP/1.1 (request line, headers or body framing)"


def _answer(status: int, reason: str, code: str, message: str, extra: str = "") -> bytes:
    body = orjson.dumps(error_body(code, message))
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n{extra}connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


# What a connection there is no room for is told, before it has asked anything.
_NO_ROOM: Final = _answer(
    503,
    "Service Unavailable",
    "too_many_connections",
    "no room for another connection now (from this address, or at all): retry shortly",
    "retry-after: 1\r\n",
)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with the limits above.

    Made per server by ``guarded_protocol(limits)``: uvicorn builds protocol instances from a
    class and its own config, so the limits and the server's table travel as class
    attributes.
    """

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()
    table: ClassVar[ConnectionTable] = ConnectionLimits().table()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._head_size = 0
        self._header_count = 0
        self._in_head = True  # parsing a request line and headers (or waiting for one)
        self._began_in_chunk = False
        self._refusal: bytes | None = None
        self._request_timer: asyncio.TimerHandle | None = None
        self._unsent = 0  # bytes of answer not taken by the client when last looked at
        self._unsent_since: float | None = None  # since when that has not changed

    # Connection events

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if not self.table.admit(self, peer_of(transport.get_extra_info("peername"))):
            transport.write(_NO_ROOM)
            transport.close()
            return
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.table.gone(self)
        super().connection_lost(exc)

    def shed(self) -> None:
        """Close at once: the connection table needs the room (``ConnectionTable``)."""
        self._disarm()
        if self.transport.get_write_buffer_size():
            self.transport.abort()  # a close would wait for a client that does not read
        else:
            self.transport.close()

    def check_sending(self, now: float) -> None:
        """The send timeout, looked at ``now`` (the table's sweep calls it about once a
        second): unsent bytes that have not changed for ``send_timeout`` abort the
        connection. A change is the client taking some, or the answer growing, which it can
        only do up to the transport's high-water mark before it waits for the client."""
        unsent = self.transport.get_write_buffer_size()
        if not unsent:
            self._unsent_since = None
        elif self._unsent_since is None or unsent != self._unsent:
            self._unsent, self._unsent_since = unsent, now
        elif now - self._unsent_since >= self.limits.send_timeout:
            log.info("http.send_timeout", seconds=self.limits.send_timeout, unsent=unsent)
            self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # refused or timed out: whatever else arrives is dropped
        self._began_in_chunk = False
        super().data_received(data)
        if not self._in_head or self.transport.is_closing():
            return
        # Bytes of a head still incomplete after this chunk. For this connection's cap, a
        # chunk in which a request began is not counted (part of it may be the previous
        # request): the cap can be passed by at most one read before it is noticed, which
        # still bounds the memory. For the total, such a chunk counts whole (a head sent
        # in one write and left unfinished is held all the same), until the head is.
        if not self._began_in_chunk:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                self._refuse_head(_OVER_BYTES, f"{self.limits.max_header_bytes} bytes")
                return
        self.table.head_grew(self, len(data))  # past the total, the oldest are shed

    def send_400_response(self, msg: str) -> None:
        # uvicorn answers every parser error here, ours (raised in a callback) included;
        # its own answer to the others is plain text, where every error of ours is JSON.
        refusal = self._refusal or _answer(400, "Bad Request", "bad_request", _NOT_HTTP)
        self.transport.write(refusal)
        self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection has its own deadline

    # Parser callbacks

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.table.head_done(self)
        self._head_bytes = 0
        self._head_size = 0
        self._header_count = 0
        self._in_head = True
        self._began_in_chunk = True
        self._arm()

    def on_url(self, url: bytes) -> None:
        self._head_size += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        # The parsed size of a head that arrived whole; data_received counts a head still
        # arriving. Either cap breaks off the request before the application sees it.
        self._header_count += 1
        self._head_size += len(name) + len(value) + 4
        limits = self.limits
        if self._header_count > limits.max_headers:
            self._refusal = self._head_answer(
                "the request has over", f"{limits.max_headers} headers"
            )
            raise _HeadRefused
        if self._head_size > limits.max_header_bytes:
            self._refusal = self._head_answer(_OVER_BYTES, f"{limits.max_header_bytes} bytes")
            raise _HeadRefused
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self.table.head_done(self)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()

    # The limits

    def _head_answer(self, what: str, limit: str) -> bytes:
        return _answer(
            431, "Request Header Fields Too Large", "headers_too_large", f"{what} {limit}"
        )

    def _refuse_head(self, what: str, limit: str) -> None:
        log.info("http.headers_too_large", limit=limit)
        self.transport.write(self._head_answer(what, limit))
        self.transport.close()

    def _arm(self) -> None:
        if self._request_timer is None:
            self._request_timer = self.loop.call_later(
                self.limits.request_timeout, self._on_request_timeout
            )
            cycle = self.cycle
            if cycle is None or cycle.response_complete:  # nothing in progress: may be shed
                self.table.waiting(self)

    def _disarm(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None
            self.table.serving(self)

    def _on_request_timeout(self) -> None:
        self._request_timer = None
        if self.transport.is_closing():
            return
        if self.flow.read_paused:
            self._arm()  # we stopped reading, not the client: its time has not run out
            return
        log.info("http.request_timeout", seconds=self.limits.request_timeout)
        cycle = self.cycle
        in_flight = cycle is not None and not cycle.response_complete
        if not (in_flight and cycle.response_started):
            message = f"the request did not arrive whole within {self.limits.request_timeout:g} s"
            self.transport.write(_answer(408, "Request Timeout", "request_timeout", message))
        self.transport.close()


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedHttpToolsProtocol]:
    """The protocol class for one server's limits, with the table its connections share."""
    return type(
        "GuardedHttpToolsProtocol",
        (GuardedHttpToolsProtocol,),
        {"limits": limits, "table": limits.table()},
    )
