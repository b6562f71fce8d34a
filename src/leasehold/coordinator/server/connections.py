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
  pipelined request waiting its turn) does not count.

Idle keep-alive connections are closed by uvicorn's own ``timeout_keep_alive``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import orjson
import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from leasehold.coordinator.api.errors import error_body
from leasehold.coordinator.settings import (
    KEEP_ALIVE_TIMEOUT_SECONDS,
    MAX_HEADER_BYTES,
    MAX_HEADERS,
    REQUEST_TIMEOUT_SECONDS,
    CoordinatorSettings,
)

log = structlog.get_logger("leasehold")


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What one connection may take; DESIGN.md §16 lists each with its flag."""

    max_header_bytes: int = MAX_HEADER_BYTES
    max_headers: int = MAX_HEADERS
    request_timeout: float = REQUEST_TIMEOUT_SECONDS
    keep_alive_timeout: int = KEEP_ALIVE_TIMEOUT_SECONDS

    @classmethod
    def of(cls, settings: CoordinatorSettings) -> ConnectionLimits:
        return cls(
            settings.max_header_bytes,
            settings.max_headers,
            settings.request_timeout_seconds,
            settings.keep_alive_timeout_seconds,
        )


_OVER_BYTES = "the request's line and headers are over"


class _HeadRefused(Exception):
    """Raised inside a parser callback to stop parsing a head that breaks a limit."""


# What a request the HTTP parser refused is told (the parser's own words name its internals).
_NOT_HTTP: Final = "the request is not valid HTTP/1.1 (request line, headers or body framing)"


def _answer(status: int, reason: str, code: str, message: str) -> bytes:
    body = orjson.dumps(error_body(code, message))
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with the head caps and request timeout above.

    Made per server by ``guarded_protocol(limits)``: uvicorn builds protocol instances from a
    class and its own config, so the limits travel as a class attribute.
    """

    limits: ClassVar[ConnectionLimits] = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._head_size = 0
        self._header_count = 0
        self._in_head = True  # parsing a request line and headers (or waiting for one)
        self._began_in_chunk = False
        self._refusal: bytes | None = None
        self._request_timer: asyncio.TimerHandle | None = None

    # Connection events

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # refused or timed out: whatever else arrives is dropped
        self._began_in_chunk = False
        super().data_received(data)
        # Bytes of a head still incomplete after this chunk. A chunk in which a request
        # began is not counted (part of it may be the previous request): the cap can be
        # passed by at most one read before it is noticed, which still bounds the memory.
        if self._in_head and not self._began_in_chunk and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                self._refuse_head(_OVER_BYTES, f"{self.limits.max_header_bytes} bytes")

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

    def _disarm(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

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
    """The protocol class for one server's limits."""
    return type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})
