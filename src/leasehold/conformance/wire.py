"""A small HTTP helper for the vectors: status, JSON body and headers, nothing hidden.

The kit speaks raw HTTP (not ``leasehold.client``): it checks what goes over the wire, so
a client's retries or parsing must not stand between it and the coordinator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp


class Mismatch(AssertionError):
    """The coordinator answered other than the protocol says."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    headers: dict[str, str]  # names in lower case

    def expect(self, status: int, code: str | None = None, what: str = "") -> Answer:
        """This answer, if it has ``status`` (and error ``code``); else a Mismatch."""
        got_code = self.body.get("error") if isinstance(self.body, dict) else None
        if self.status != status or (code is not None and got_code != code):
            want = f"{status} {code}" if code else str(status)
            got = f"{self.status} {got_code}" if got_code else str(self.status)
            raise Mismatch(f"{what}: expected {want}, got {got}")
        return self


class Wire:
    """Requests to one coordinator, with the bearer token if one was given."""

    def __init__(self, url: str, token: str | None, session: aiohttp.ClientSession) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.session = session

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        # Every state change declares JSON, with a body or without (PROTOCOL.md §2).
        declared = {"Content-Type": "application/json"} if method != "GET" else {}
        sent = {**self.headers, **declared, **(headers or {})}
        kwargs: dict[str, Any] = {"headers": sent}
        if raw is not None:
            kwargs["data"] = raw
        elif body is not None:
            kwargs["json"] = body
        async with self.session.request(method, self.url + path, **kwargs) as answer:
            data = await answer.read()
            parsed: Any = None
            if data and answer.content_type == "application/json":
                parsed = await answer.json(content_type=None)
            headers = {k.lower(): v for k, v in answer.headers.items()}
            return Answer(answer.status, parsed, headers)

    async def post(self, path: str, body: Any = None, **kwargs: Any) -> Answer:
        return await self.call("POST", path, body, **kwargs)

    async def get(self, path: str) -> Answer:
        return await self.call("GET", path)
