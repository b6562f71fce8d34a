"""A coordinator app called in the test process: its lifespan run, requests as ASGI calls.

For tests of the HTTP layer that need no socket (headers, refusals, answer sizes): no
process to start, and the test controls every header, ``Host`` included.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlencode

import orjson
from fastapi import FastAPI

from tests.http import Answer

LOOPBACK = "127.0.0.1:8080"


class InProcess:
    """Requests to ``app`` as an HTTP server would pass them on."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Answer:
        """``json`` is sent with ``Content-Type: application/json``; ``data`` as given.
        ``headers`` may override ``Host`` (default ``127.0.0.1:8080``)."""
        sent = {"host": LOOPBACK}
        body = data or b""
        if json is not None:
            body = orjson.dumps(json)
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
            "root_path": "",
            "query_string": urlencode(params or {}).encode(),
            "headers": [(k.encode(), v.encode()) for k, v in sent.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8080),
        }
        done = asyncio.Event()
        delivered = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await done.wait()  # the client stays connected until the answer is complete
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            await self.app(scope, receive, send)
        finally:
            done.set()
        raw = b"".join(chunks)
        try:
            parsed: Any = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            parsed = raw
        return Answer(status, parsed)

    async def get(self, path: str, **kwargs: Any) -> Answer:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, json: Any = None, **kwargs: Any) -> Answer:
        return await self.request("POST", path, json=json, **kwargs)


@contextlib.asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[InProcess]:
    """The app with its lifespan (store opened, reaper started) for the block's duration."""
    async with app.router.lifespan_context(app):
        yield InProcess(app)
