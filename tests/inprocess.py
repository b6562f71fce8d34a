"""The coordinator app called in the test process: no server, no port, no sockets.

``serve_app`` runs the app's lifespan (store, reaper, scheduler) and yields an ``AsgiApi``
whose requests go straight to the ASGI app, so a test can also patch the app's modules.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import FastAPI

from leasehold.api.app import create_app
from leasehold.core.clock import Clock
from leasehold.settings import CoordinatorSettings


@dataclass
class AsgiAnswer:
    status: int
    body: Any


class AsgiApi:
    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str | None] | None = None,
    ) -> AsgiAnswer:
        """``headers`` are added to (or, given None, taken from) the defaults: ``Host:
        127.0.0.1``, and ``Content-Type: application/json`` on a body or a state change."""
        path, _, query = path.partition("?")
        sent: dict[str, str | None] = {"host": "127.0.0.1"}
        if body is not None or method != "GET":
            sent["content-type"] = "application/json"
        sent |= {k.lower(): v for k, v in (headers or {}).items()}
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "headers": [(k.encode(), v.encode()) for k, v in sent.items() if v is not None],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
            "root_path": "",
            "state": {},
        }
        delivered = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> MutableMapping[str, Any]:
            nonlocal delivered
            if delivered:
                return {"type": "http.disconnect"}
            delivered = True
            return {"type": "http.request", "body": body or b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        raw = b"".join(chunks)
        try:
            parsed = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            parsed = raw  # not JSON (a dashboard file, say): as sent
        return AsgiAnswer(status, parsed)

    async def post(
        self,
        path: str,
        json: Any = None,
        *,
        raw: bytes | None = None,
        headers: Mapping[str, str | None] | None = None,
    ) -> AsgiAnswer:
        body = raw if raw is not None else orjson.dumps(json)
        return await self.request("POST", path, body, headers)

    async def put(self, path: str, json: Any) -> AsgiAnswer:
        return await self.request("PUT", path, orjson.dumps(json))

    async def get(self, path: str, headers: Mapping[str, str | None] | None = None) -> AsgiAnswer:
        return await self.request("GET", path, None, headers)


@contextlib.asynccontextmanager
async def serve_app(
    database_url: str, *, clock: Clock | None = None, **settings: Any
) -> AsyncIterator[AsgiApi]:
    # Leases of a fraction of a second show expiry quickly (the default minimum is 1 s).
    settings = {"min_lease_seconds": 0.01, **settings}
    app = create_app(CoordinatorSettings(database_url=database_url, **settings), clock=clock)
    async with app.router.lifespan_context(app):
        yield AsgiApi(app)
