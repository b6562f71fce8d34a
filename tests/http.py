"""Raw HTTP for contract tests: status codes and bodies exactly as the coordinator sends."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp


@dataclass
class Answer:
    status: int
    body: Any

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body!r})"


class Api:
    def __init__(self, base_url: str, session: aiohttp.ClientSession) -> None:
        self.base_url = base_url
        self.session = session

    async def request(self, method: str, path: str, **kwargs: Any) -> Answer:
        if method != "GET" and "data" not in kwargs:
            # As every client of the coordinator must: state changes declare JSON.
            headers = {"Content-Type": "application/json", **kwargs.get("headers", {})}
            kwargs["headers"] = headers
        try:
            return await self._send(method, path, **kwargs)
        except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError):
            if method != "GET":
                raise
            # A kept-alive connection the server closed for idleness just as this request
            # went out on it: HTTP's own race, which clients answer by asking again on a
            # new connection. Only a read is asked again: a change might have been made.
            return await self._send(method, path, **kwargs)

    async def _send(self, method: str, path: str, **kwargs: Any) -> Answer:
        async with self.session.request(method, self.base_url + path, **kwargs) as r:
            raw = await r.read()
            body: Any = None
            if raw:
                body = (
                    await r.json(content_type=None) if r.content_type == "application/json" else raw
                )
            return Answer(r.status, body)

    async def post(self, path: str, json: Any = None, **kwargs: Any) -> Answer:
        return await self.request("POST", path, json=json, **kwargs)

    async def get(self, path: str, **kwargs: Any) -> Answer:
        return await self.request("GET", path, **kwargs)

    # Shorthands for the protocol's steps.
    async def enqueue(self, kind: str = "test", **fields: Any) -> dict[str, Any]:
        a = await self.post("/jobs", {"kind": kind, **fields})
        assert a.status in (200, 201), a
        job: dict[str, Any] = a.body
        return job

    async def lease(self, worker_id: str = "w", **fields: Any) -> dict[str, Any] | None:
        a = await self.post("/lease", {"worker_id": worker_id, **fields})
        assert a.status in (200, 204), a
        lease: dict[str, Any] | None = a.body if a.status == 200 else None
        return lease

    async def job(self, job_id: int) -> dict[str, Any]:
        a = await self.get(f"/jobs/{job_id}")
        assert a.status == 200, a
        job: dict[str, Any] = a.body
        return job


async def eventually(check: Any, within: float = 30.0, interval: float = 0.02) -> Any:
    """Await ``check()`` until it returns something truthy; fail after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = await check()
        if value:
            return value
        if loop.time() > deadline:
            raise TimeoutError(f"condition not met within {within}s (last value: {value!r})")
        await asyncio.sleep(interval)
