"""The one ASGI layer of ours that every HTTP request crosses, outside FastAPI's routing.

It does, once each and in this order:

1. note when the request arrived (for the log line's duration), take or make its request
   id, find its client (the peer, or whom a trusted proxy forwarded it for: ``forwarded``),
   and bind both to the logging context of the request (``requestlog``);
2. choose the answer's extra headers (``protocol_header``: the protocol version, and the
   warning of an open coordinator given a token it did not check; and ``X-Request-ID``);
3. find the route's body cap (``bodysize``) and refuse a declared Content-Length over it
   with a 413 before anything is read; a body streamed without one is counted as it
   arrives, and refused (413) once it passes the cap;
4. answer it, with one ``send`` wrapper, which adds the extra headers to the answer,
   records its status, and drops whatever is answered after a 413: a protocol route's
   request by that route's handler (``api.handler``), found and called here
   (``api.dispatch``); any other request by the app (FastAPI's exception layer and
   routing);
5. log the request's line (``requestlog``) and count it in the metrics (by route template
   and status, with its duration), whatever happened: the status sent, 499 when the client
   left before its body arrived (``errors.CLIENT_GONE``), 500 when an exception nothing
   handled passed through (FastAPI's outermost layer, outside this one, then answers it
   with ``errors.unexpected_response``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leasehold.coordinator.api.dispatch import ProtocolRoutes
from leasehold.coordinator.api.middleware.bodysize import (
    RouteCap,
    cap_for,
    declared_length,
    drain,
    too_large,
)
from leasehold.coordinator.api.middleware.forwarded import ProxySettings
from leasehold.coordinator.api.middleware.protocol_header import answer_headers
from leasehold.coordinator.api.middleware.requestlog import (
    REQUEST_ID_HEADER,
    bind,
    log_request,
    request_id_of,
    route_of,
    unbind,
)
from leasehold.coordinator.metrics import Metrics


class RequestPipeline:
    """ASGI middleware: the body caps, the answer's headers, the log line and the metrics of
    every HTTP request, and the protocol routes' answers (see the module docstring);
    ``max_bytes``: the cap of a route not in ``routes``; ``protocol``: the routes answered
    here (none: FastAPI's routing answers every request); ``proxy``: the trusted proxies;
    ``metrics``: where requests are counted (none: nowhere)."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        routes: Sequence[RouteCap] = (),
        protocol: ProtocolRoutes | None = None,
        proxy: ProxySettings | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.routes = tuple(routes)
        self.protocol = protocol
        self.proxy = proxy or ProxySettings()
        self.metrics = metrics

    def cap_for(self, method: str, path: str) -> int:
        """The cap on a body sent with ``method`` to ``path``."""
        return cap_for(self.routes, self.max_bytes, method, path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = request_id_of(scope)
        bound = bind(request_id, self.proxy.client_of(scope))
        extra = (*answer_headers(scope), (REQUEST_ID_HEADER, request_id.encode()))
        max_bytes = self.cap_for(scope["method"], scope["path"])
        status = 500  # what the line says when an exception leaves the app unanswered
        refused = False  # the 413 is out: the app's own answer is dropped
        received = 0

        async def answer(message: Message) -> None:
            nonlocal status
            if refused:
                return
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        async def refuse() -> None:
            nonlocal refused
            await too_large(max_bytes)(scope, receive, answer)
            refused = True

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request" and not refused:
                received += len(message.get("body", b""))
                if received > max_bytes:
                    if message.get("more_body", False):
                        await drain(receive, received, max_bytes)
                    await refuse()
                    return {"type": "http.disconnect"}  # the app stops reading
            return message

        try:
            declared = declared_length(scope)
            if declared is not None and declared > max_bytes:
                await drain(receive, 0, max_bytes)
                await refuse()
                return
            protocol = self.protocol
            handler = protocol.find(scope) if protocol is not None else None
            if protocol is None or handler is None:
                await self.app(scope, counted, answer)
            else:
                await protocol.serve(handler, scope, counted, answer)
        finally:
            seconds = time.perf_counter() - started
            route = route_of(scope)
            log_request(scope, route, status, seconds)
            if self.metrics is not None:
                self.metrics.request(scope["method"], route, status, seconds)
            unbind(bound)
