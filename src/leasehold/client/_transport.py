"""One HTTP exchange with the coordinator, on a pooled aiohttp session.

What comes back is read within bounds: at most ``max_read_bytes`` of an answer (a
declared Content-Length over it is refused unread, anything else is counted as it arrives
and cut off there), a 2xx answer must be JSON (orjson refuses nesting beyond 1024 levels),
and an error's body is read only as far as its message. An answer refused for either is
``Unavailable``: like a lost answer, the request may or may not have been applied
(PROTOCOL.md §8 says which calls are safe to repeat), and the connection is dropped.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from typing import Any, Final

import aiohttp
import orjson

from leasehold._version import __version__
from leasehold.client._parse import error_from_answer
from leasehold.client._unserved import UNSERVED_HEADER, warn_unserved
from leasehold.errors import Unavailable

MAX_READ_BYTES: Final = 64 * 1024 * 1024
"""The most of one answer a client reads, by default (``Client(max_read_bytes=...)``):
eight times the coordinator's default budget for the jobs in one answer (a page, a batch
lease), and room for a batch report's jobs or a long attempt history; far below what would
strain a client's memory."""

MAX_ERROR_BYTES: Final = 64 * 1024
"""An error answer is read this far: its code and message are at the start (a coordinator's
body is a short JSON object), and a proxy's page says no more past it."""

_CHUNK: Final = 256 * 1024


class Transport:
    """The session, base URL and headers, shared by a client and its ``with_retry`` views."""

    def __init__(
        self,
        url: str,
        token: str | None,
        timeout_seconds: float,
        max_connections: int,
        max_read_bytes: int | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        # Looked up here rather than as a default argument, so the bound is the module's.
        self.max_read_bytes = max_read_bytes or MAX_READ_BYTES
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
                status = answer.status
                limit = MAX_ERROR_BYTES if status >= 400 else self.max_read_bytes
                raw = await _read_at_most(answer, limit)
                if raw is None and status < 400:
                    answer.close()  # the rest is never read: the connection cannot be reused
                    raise Unavailable(
                        f"{method} {path}: the answer is over the {self.max_read_bytes}"
                        " bytes this client reads"
                    )
                content_type = answer.content_type
                unserved = answer.headers.get(UNSERVED_HEADER)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            # ValueError: a Content-Length aiohttp cannot read.
            raise Unavailable(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        if status >= 400:
            raise error_from_answer(status, raw or b"")
        warn_unserved(unserved)
        if not raw:
            return None
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            # A proxy's page, a truncated body, JSON nested beyond orjson's 1024 levels.
            raise Unavailable(
                f"{method} {path}: the answer ({status}, {content_type}) is not JSON: {exc}"
            ) from exc


async def _read_at_most(answer: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The body, or None if it is longer than ``limit`` bytes; no more than that is read
    (for an error, its first ``limit`` bytes are enough, and the rest is left unread)."""
    declared = answer.content_length
    if declared is not None and declared <= limit:
        return await answer.read()  # the coordinator's way: aiohttp reads no more than that
    if declared is not None and answer.status < 400:
        return None
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = await answer.content.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    if answer.status >= 400:
        answer.close()
        return b"".join(chunks)[:limit]
    return None
