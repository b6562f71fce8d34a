"""One HTTP exchange with the coordinator, on a pooled aiohttp session."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson

from leasehold._version import __version__
from leasehold.client._parse import error_from_answer
from leasehold.errors import Unavailable


class Transport:
    """The session, base URL and headers, shared by a client and its ``with_retry`` views."""

    def __init__(
        self, url: str, token: str | None, timeout_seconds: float, max_connections: int
    ) -> None:
        self.url = url.rstrip("/")
        self.headers = {"Accept": "application/json", "User-Agent": f"leasehold/{__version__}"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeout_seconds = timeout_seconds
        self.max_connections = max_connections
        # Whether leases carry a request id: False once a coordinator older than protocol
        # 1.1 refused the field (shared by a client and its views: one coordinator).
        self.lease_ids = True
        self._session: aiohttp.ClientSession | None = None
        self._pid = os.getpid()

    def session(self) -> aiohttp.ClientSession:
        # Made on first use, because a session belongs to the event loop it was made on.
        if self._pid != os.getpid():
            # A forked child (gunicorn --preload, prefork workers): the session, its sockets
            # and its loop are the parent's. Left alone, not closed: closing would run on a
            # loop that does not run here. The child opens connections of its own.
            self._session, self._pid = None, os.getpid()
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections)
            self._session = aiohttp.ClientSession(connector=connector, headers=self.headers)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(
        self,
        method: str,
        path: str,
        body: bytes | None,
        params: Mapping[str, str],
        headers: Mapping[str, str],
        timeout_seconds: float,
    ) -> Any:
        """One HTTP exchange: the parsed JSON answer (None for an empty one), or an error."""
        if body is not None or method != "GET":
            # Also without a body: the coordinator refuses a state-changing request that
            # does not declare JSON (what a cross-site HTML form cannot do).
            headers = {**headers, "Content-Type": "application/json"}
        try:
            async with self.session().request(
                method,
                self.url + path,
                # A file-like body: aiohttp warns that big raw bytes may block the loop.
                data=io.BytesIO(body) if body is not None else None,
                params=params,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout_seconds),
            ) as answer:
                raw = await answer.read()
                status = answer.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise Unavailable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        if status >= 400:
            raise error_from_answer(status, raw)
        return orjson.loads(raw) if raw else None
