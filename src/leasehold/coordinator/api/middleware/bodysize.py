"""Caps on request bodies, per route, answered with the same JSON error body as every other
error (the request pipeline, ``pipeline.py``, applies them).

Parsing is the expensive part of a request that will be refused: a 1 MiB body of ``[[],[],...]``
is 350,000 values to parse and validate. So each route's cap is close to the largest body it
can need, and is applied before anything is read: a route that carries one payload or result
takes twice the payload cap (room for indented JSON) plus an envelope, a route that carries
none takes ``SMALL_BODY_BYTES``, and the batch routes take the whole body cap.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.responses import Response
from starlette.types import Receive, Scope

from leasehold.coordinator.api.errors import error_response
from leasehold.errors import PayloadTooLarge

# Past this multiple of the cap we stop reading and let the connection drop.
_DRAIN_FACTOR = 8


# The fields around a payload: kind, queue, keys, times, ids (all bounded far below this).
ENVELOPE_BYTES = 64 * 1024
# Routes without a payload: their largest body is a lease naming 100 kinds and 100 queues,
# with room for every character escaped as \uXXXX.
SMALL_BODY_BYTES = 256 * 1024
_ID = "[^/]+"


@dataclass(frozen=True, slots=True)
class RouteCap:
    """Bodies sent with ``method`` to a path matching ``pattern`` may have ``max_bytes``."""

    method: str
    pattern: re.Pattern[str]
    max_bytes: int


def route_caps(max_body_bytes: int, max_payload_bytes: int) -> tuple[RouteCap, ...]:
    """The per-route caps (DESIGN.md §16); a route not listed has ``max_body_bytes``."""
    payload = min(max_body_bytes, 2 * max_payload_bytes + ENVELOPE_BYTES)
    small = min(max_body_bytes, SMALL_BODY_BYTES)
    listed = [
        ("POST", "/jobs", payload),
        ("POST", f"/jobs/{_ID}/complete", payload),
        ("PUT", f"/schedules/{_ID}", payload),
        ("POST", "/lease", small),
        ("POST", f"/jobs/{_ID}/(?:renew|release|cancel|requeue)", small),
        ("PUT", "/limits/.+", small),
    ]
    return tuple(RouteCap(m, re.compile(p), n) for m, p, n in listed)


# A declared length of more digits is over any cap (and int() refuses thousands of digits).
_MAX_DIGITS = 18


def declared_length(scope: Scope) -> int | None:
    """The body length the request declares (Content-Length), or None: absent, not a
    number, or declared twice. A length of more than 18 digits reads as 10**18."""
    length = None
    for name, value in scope["headers"]:
        if name == b"content-length":
            if not value.isdigit() or length is not None:
                return None
            length = int(value) if len(value) <= _MAX_DIGITS else 10**_MAX_DIGITS
    return length


def cap_for(routes: Sequence[RouteCap], max_bytes: int, method: str, path: str) -> int:
    """The cap on a body sent with ``method`` to ``path``: its route's, else ``max_bytes``."""
    for route in routes:
        if route.method == method and route.pattern.fullmatch(path):
            return route.max_bytes
    return max_bytes


async def drain(receive: Receive, received: int, max_bytes: int) -> None:
    """Read and drop the rest of an oversize body (up to a bound: ``_DRAIN_FACTOR`` times
    the cap), so that a client still sending it reads our 413 instead of a reset
    connection; ``received``: the bytes already read."""
    limit = max_bytes * _DRAIN_FACTOR
    while received <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        received += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def too_large(max_bytes: int) -> Response:
    """The 413 for a body over its cap, closing the connection: the client may still be
    sending what ``drain`` did not read."""
    response = error_response(PayloadTooLarge(f"the request body is over {max_bytes} bytes"))
    response.headers["connection"] = "close"
    return response
