"""The coordinator app called in the test process: no server, no port, no sockets.

``serve_app`` runs the app's lifespan (store, reaper, scheduler) and yields an ``AsgiApi``
whose requests go straight to the ASGI app, so a test can also patch the app's modules.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
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

    async def request(self, method: str, path: str, body: bytes | None = None) -> AsgiAnswer:
        path, _, query = path.partition("?")
        headers = [(b"host", b"127.0.0.1")]
        if body is not None:
            headers.append((b"content-type", b"application/json"))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "headers": headers,
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
            "root_path": "",
            "state": {},
        }
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body or b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        raw = b"".join(chunks)
        return AsgiAnswer(status, orjson.loads(raw) if raw else None)

    async def post(self, path: str, json: Any = None, *, raw: bytes | None = None) -> AsgiAnswer:
        return await self.request("POST", path, raw if raw is not None else orjson.dumps(json))

    async def put(self, path: str, json: Any) -> AsgiAnswer:
        return await self.request("PUT", path, orjson.dumps(json))

    async def get(self, path: str) -> AsgiAnswer:
        return await self.request("GET", path)


@contextlib.asynccontextmanager
async def serve_app(
    database_url: str, *, clock: Clock | None = None, **settings: Any
) -> AsyncIterator[AsgiApi]:
    app = create_app(CoordinatorSettings(database_url=database_url, **settings), clock=clock)
    async with app.router.lifespan_context(app):
        yield AsgiApi(app)
