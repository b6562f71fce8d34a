"""The async client's I/O: a flow's steps performed with ``await``, on aiohttp.

One shared ``ClientSession`` with a connection pool per client, chosen by measurement
(aiohttp's client did about ten times httpx's requests per second under concurrency on our
machines; DESIGN.md §14, "The clients' transports"). What comes back is read within
bounds: at most ``max_read_bytes`` of an answer (a declared Content-Length over it is
refused unread, anything else is counted as it arrives and cut off there), and an error's
body only as far as its message.
"""

from __future__ import annotations

import asyncio
import io
import os
from typing import Protocol, TypeVar

import aiohttp

from leasehold.client._exchange import (
    MAX_ERROR_BYTES,
    Flow,
    NoAnswer,
    Reply,
    Send,
    Sleep,
    over_the_bound,
)
from leasehold.errors import Unavailable
from leasehold.model import UNSERVED_HEADER

T = TypeVar("T")

_CHUNK = 256 * 1024


class AsyncTransport(Protocol):
    """What performs a flow's ``Send`` steps for ``Client``: ``AioTransport`` here, or
    ``leasehold.testing``'s hand-over to an in-process coordinator (``Client._over``)."""

    async def send(self, step: Send) -> Reply:
        """The reply as read, ``NoAnswer``, or ``Unavailable`` for an answer too long."""
        ...

    async def close(self) -> None: ...


async def drive(flow: Flow[T], transport: AsyncTransport) -> T:
    """Run a flow to its end: each step performed, its outcome sent back in."""
    try:
        step = flow.send(None)
        while True:
            if isinstance(step, Sleep):
                await asyncio.sleep(step.seconds)
                step = flow.send(None)
                continue
            try:
                reply = await transport.send(step)
            except Unavailable as exc:
                step = flow.throw(exc)
            else:
                step = flow.send(reply)
    except StopIteration as done:
        value: T = done.value
        return value
    finally:
        flow.close()


class AioTransport:
    """The session, and the headers every request carries."""

    def __init__(
        self, token: str | None, headers: dict[str, str], max_connections: int, max_read_bytes: int
    ) -> None:
        self.headers = dict(headers)
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.max_connections = max_connections
        self.max_read_bytes = max_read_bytes
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

    async def send(self, step: Send) -> Reply:
        """One HTTP exchange: the reply as read, ``NoAnswer``, or ``Unavailable`` for a
        2xx answer over the read bound."""
        request = step.request
        what = f"{request.method} {request.path}"
        try:
            async with self.session().request(
                request.method,
                step.endpoint.url + request.path,
                # A file-like body: aiohttp warns that big raw bytes may block the loop.
                data=io.BytesIO(request.body) if request.body is not None else None,
                headers=request.headers,
                timeout=aiohttp.ClientTimeout(total=request.timeout_seconds),
            ) as answer:
                status = answer.status
                limit = MAX_ERROR_BYTES if status >= 400 else self.max_read_bytes
                raw = await _read_at_most(answer, limit)
                if raw is None:
                    answer.close()  # the rest is never read: the connection cannot be reused
                    raise over_the_bound(request, self.max_read_bytes)
                unserved = answer.headers.get(UNSERVED_HEADER)
                return Reply(status, answer.content_type, raw, unserved)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            # ValueError: a Content-Length aiohttp cannot read.
            raise NoAnswer(f"{what}: {type(exc).__name__}: {exc}") from exc


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
