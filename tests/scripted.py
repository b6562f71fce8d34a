"""A tiny HTTP server that answers each request as a test scripts it, to see what the
client and the worker do with answers a healthy coordinator never gives."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

import aiohttp.web

from tests.process import free_port

Answer = Callable[[aiohttp.web.Request], Awaitable[aiohttp.web.StreamResponse]]


class Scripted:
    """An aiohttp server on a free port that answers each request with the next answer."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[aiohttp.web.Request] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    async def handle(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        self.requests.append(request)
        await request.read()
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return await answer(request)


def status(code: int, error: str | None = None, message: str = "m") -> Answer:
    async def answer(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        if error is None:
            return aiohttp.web.Response(status=code, text="<html>proxy says no</html>")
        return aiohttp.web.json_response({"error": error, "message": message}, status=code)

    return answer


async def job_answer(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
    now = datetime.now(UTC).isoformat()
    job = {
        "id": 1,
        "kind": "k",
        "payload": None,
        "status": "queued",
        "attempts": 0,
        "max_attempts": 5,
        "run_after": now,
        "created_at": now,
        "lease_owner": None,
        "lease_expires_at": None,
        "lease_token": 0,
        "idempotency_key": request.headers.get("Authorization"),
        "result": None,
        "last_error": None,
        "leased_at": None,
        "finished_at": None,
    }
    return aiohttp.web.json_response(job, status=201)


@contextlib.asynccontextmanager
async def serving(*answers: Answer) -> AsyncIterator[Scripted]:
    """A Scripted server, listening for the duration of the block."""
    server = Scripted(*answers)
    app = aiohttp.web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    try:
        await aiohttp.web.TCPSite(runner, "127.0.0.1", server.port).start()
        yield server
    finally:
        await runner.cleanup()
