"""The clients' way into the in-process coordinator: each request handed to its ASGI app.

The request goes through everything a served coordinator runs (the request pipeline, the
Host and media-type checks, authentication, the route, the service, the store) and its
answer back through the client's own parsing and error mapping. Only the socket is left
out. A client made over this transport may be used from any event loop: the request runs
on the coordinator's loop, and the caller awaits it from its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI

from leasehold.client._exchange import HEADERS, Reply, Request, Send
from leasehold.model import UNSERVED_HEADER

URL = "http://127.0.0.1"  # the coordinator of an open set-up is reached on loopback
_ENQUEUES = frozenset({"/jobs", "/jobs/batch"})


LOOPBACK_CLIENT = ("127.0.0.1", 1)


def http_scope(
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    query: bytes = b"",
    client: tuple[str, int] = LOOPBACK_CLIENT,
) -> dict[str, Any]:
    """The ASGI scope of one HTTP/1.1 request from ``client`` (a loopback one by default),
    as a server makes it."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "headers": headers,
        "client": client,
        "server": ("127.0.0.1", 80),
        "root_path": "",
        "state": {},
    }


class InProcessTransport:
    """A client's transport (``Client._over``) as a call of the app: each ``Send`` step
    handed to it (see the module docstring). The clients' flows decide the rest, as they
    do over a socket: what is tried again, what an answer means.

    ``after_enqueue``, when set, runs after every enqueue the coordinator accepted, before
    the client gets its answer: the test coordinator's inline mode runs the jobs there.
    """

    def __init__(
        self,
        app: FastAPI,
        loop: asyncio.AbstractEventLoop,
        after_enqueue: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.app = app
        self.loop = loop
        self.after_enqueue = after_enqueue

    async def close(self) -> None:
        """Nothing to close: there is no connection."""

    async def send(self, step: Send) -> Reply:
        call = self._exchange(step.request)
        if asyncio.get_running_loop() is self.loop:
            return await call
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, self.loop))

    async def _exchange(self, request: Request) -> Reply:
        sent = {"host": "127.0.0.1", **{k.lower(): v for k, v in HEADERS.items()}}
        sent |= {k.lower(): v for k, v in request.headers.items()}
        path, _, query = request.path.partition("?")
        reply = await self._call(request.method, path, request.body or b"", query, sent)
        enqueued = request.method == "POST" and path in _ENQUEUES and reply.status < 400
        if enqueued and self.after_enqueue is not None:
            await self.after_enqueue()
        return reply

    async def _call(
        self, method: str, path: str, body: bytes, query: str, headers: dict[str, str]
    ) -> Reply:
        """The answer: its status, content type, body and ``Leasehold-Unserved`` header."""
        encoded = [(k.encode(), v.encode("latin-1")) for k, v in headers.items()]
        scope = http_scope(method, path, encoded, query.encode())
        delivered = False
        status = 0
        chunks: list[bytes] = []
        found: dict[str, str] = {}

        async def receive() -> MutableMapping[str, Any]:
            nonlocal delivered
            if delivered:
                # A long poll listens for the client going away: it never does here.
                await asyncio.Event().wait()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                for name, value in message.get("headers", ()):
                    found[name.decode("latin-1").lower()] = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        content_type = found.get("content-type", "").split(";", 1)[0].strip()
        unserved = found.get(UNSERVED_HEADER.lower())
        return Reply(status, content_type, b"".join(chunks), unserved)
