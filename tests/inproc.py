"""The coordinator app served inside the test process: real HTTP, no child process.

``create_app`` with a store opened in this process, served by uvicorn as a task on the
test's own event loop (as httpx's ``serve_in_thread``, minus the thread: the reaper's and
the scheduler's hooks are asyncio objects of this loop). A request goes through the same
middleware, routes and error handlers as in ``leasehold serve``; what is left out is the
process (its start-up, signals, logging set-up), which the tests that are about the process
still start for real (tests/process.py).

On SQLite, time is a FakeClock that starts at the real "now" (so that times a test writes
itself, such as ``run_after`` an hour ahead, mean what they say) and moves only when a test
calls ``advance``. On PostgreSQL the database's clock decides expiry by design (DESIGN.md),
so ``advance`` waits the time out there.

``asgi_app`` goes one step further for tests of the HTTP layer alone: no server, no port,
no sockets; its ``AsgiApi`` calls the ASGI app directly, so a test can also patch the app's
modules.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Generator, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import orjson
import structlog
import uvicorn
from fastapi import FastAPI

from leasehold.coordinator.app import create_app
from leasehold.coordinator.clock import Clock, FakeClock
from leasehold.coordinator.maintenance.reaper import Reaper
from leasehold.coordinator.maintenance.scheduler import Scheduler
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.coordinator.store.contract import Store
from leasehold.coordinator.store.open import open_store

# Tests of the HTTP layer build their requests with it too.
from leasehold.testing._transport import LOOPBACK_CLIENT as LOOPBACK_CLIENT
from leasehold.testing._transport import http_scope as http_scope

# The same quick timings as the process fixture's `coordinator` (tests/conftest.py).
QUICK = CoordinatorSettings(
    retry_base_seconds=0.05,
    retry_max_seconds=1.0,
    reap_interval_seconds=0.1,
    min_lease_seconds=0.01,  # leases of a fraction of a second show expiry quickly
)


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the test process keeps its own."""

    def __init__(self, config: uvicorn.Config, service: JobService) -> None:
        super().__init__(config)
        self.service = service

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.service.stop_waiting()  # as `leasehold serve` does on SIGTERM
        await super().shutdown(sockets)


@dataclass
class InProcessCoordinator:
    """A served app and the handles a test needs to drive it without waiting for time."""

    url: str
    app: FastAPI
    settings: CoordinatorSettings
    clock: FakeClock | None  # None on PostgreSQL, whose own clock decides expiry

    @property
    def service(self) -> JobService:
        service: JobService = self.app.state.service
        return service

    @property
    def reaper(self) -> Reaper:
        reaper: Reaper = self.app.state.reaper
        return reaper

    @property
    def scheduler(self) -> Scheduler:
        scheduler: Scheduler = self.app.state.scheduler
        return scheduler

    def now(self) -> datetime:
        """The coordinator's "now" (the fake clock's on SQLite)."""
        return self.clock.now() if self.clock is not None else datetime.now(UTC)

    async def advance(self, seconds: float, *, sweep: bool = True) -> None:
        """Let ``seconds`` pass for the coordinator, then (unless told not to) sweep the
        leases that ran out at once instead of waiting for the reaper's next pass."""
        if self.clock is not None:
            self.clock.advance(seconds)
        else:
            await asyncio.sleep(seconds)  # the database's clock: the only way to move it
        if sweep:
            await self.sweep()

    async def sweep(self) -> int:
        """One reaper pass now (instead of waiting for the loop's next one): jobs expired."""
        total = 0
        while (n := await self.service.reap()) > 0:
            total += n
        return total

    async def fire(self) -> int:
        """One scheduler pass now: how many schedules were due."""
        return await self.scheduler.fire()


@contextlib.asynccontextmanager
async def serve_app(
    store: Store, settings: CoordinatorSettings, clock: FakeClock | None, port: int = 0
) -> AsyncIterator[InProcessCoordinator]:
    """Serve ``create_app(settings, store=store, clock=clock)`` on a loopback port: ``port``,
    or a free one (a proxy or a scraper started first knows the port it was given)."""
    app = create_app(settings, store=store, clock=clock)
    logged = structlog.get_config()
    # Warnings and errors only, as `leasehold serve` would log them by default less its
    # info lines: a debug line per request costs more than the request in these tests.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        access_log=False,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=5,
        proxy_headers=False,  # as `leasehold serve`: the peer stays the peer
        # Idle connections are closed by the coordinator's own server (connection limits
        # are tested against a real process); here a test's session may sit idle past
        # uvicorn's 5 s while another part of the test works, and its next request would
        # race the close.
        timeout_keep_alive=120,
    )
    server = _Server(config, app.state.service)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="inproc-coordinator")
    while not server.started:
        if task.done():
            task.result()  # raises what stopped the start-up
            raise RuntimeError("the in-process coordinator did not start")
        await asyncio.sleep(0.005)
    try:
        yield InProcessCoordinator(f"http://127.0.0.1:{port}", app, settings, clock)
    finally:
        server.should_exit = True
        await task
        sock.close()
        structlog.configure(**logged)


def in_process_store(database_url: str, clock: FakeClock) -> tuple[Store, FakeClock | None]:
    """The store for a test database URL: SQLite with ``clock``, or PostgreSQL on its own.

    SQLite's durability is not what these tests are about: ``synchronous=OFF`` spares the
    fsyncs (tests/integration/test_durability.py runs a real process with the default).
    """
    if database_url.startswith("sqlite"):
        return open_store(database_url, clock=clock, synchronous="OFF"), clock
    return open_store(database_url), None


def quick_settings(**overrides: Any) -> CoordinatorSettings:
    """QUICK with some fields changed (``max_payload_bytes=...``, ``tokens=...``)."""
    return replace(QUICK, **overrides)


@dataclass
class AsgiAnswer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case


Headers = list[tuple[bytes, bytes]]


class AsgiApi:
    def __init__(self, app: FastAPI) -> None:
        self.app = app

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str | None] | None = None,
        client: tuple[str, int] = LOOPBACK_CLIENT,
    ) -> AsgiAnswer:
        """``headers`` are added to (or, given None, taken from) the defaults: ``Host:
        127.0.0.1``, and ``Content-Type: application/json`` on a body or a state change;
        ``client``: the connection's peer."""
        path, _, query = path.partition("?")
        sent: dict[str, str | None] = {"host": "127.0.0.1"}
        if body is not None or method != "GET":
            sent["content-type"] = "application/json"
        sent |= {k.lower(): v for k, v in (headers or {}).items()}
        encoded = [(k.encode(), v.encode()) for k, v in sent.items() if v is not None]
        scope = http_scope(method, path, encoded, query.encode(), client)
        delivered = False
        status = 0
        answered: dict[str, str] = {}
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
                for name, value in message.get("headers", ()):
                    answered[name.decode("latin-1").lower()] = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        raw = b"".join(chunks)
        try:
            parsed = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            parsed = raw  # not JSON (a dashboard file, say): as sent
        return AsgiAnswer(status, parsed, answered)

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

    async def get(
        self,
        path: str,
        headers: Mapping[str, str | None] | None = None,
        client: tuple[str, int] = LOOPBACK_CLIENT,
    ) -> AsgiAnswer:
        return await self.request("GET", path, None, headers, client)


@contextlib.asynccontextmanager
async def asgi_app(
    database_url: str, *, clock: Clock | None = None, **settings: Any
) -> AsyncIterator[AsgiApi]:
    """The app's lifespan (store, reaper, scheduler) run here, its requests called straight
    on the ASGI app (``AsgiApi``): no server, no port, no sockets."""
    # Leases of a fraction of a second show expiry quickly (the default minimum is 1 s).
    settings = {"min_lease_seconds": 0.01, **settings}
    app = create_app(CoordinatorSettings(database_url=database_url, **settings), clock=clock)
    async with app.router.lifespan_context(app):
        yield AsgiApi(app)
