"""Running the coordinator: who may reach it, and a clean stop on SIGTERM.

Without tokens, the coordinator serves only on a loopback address: bound anywhere else it
refuses to start, unless ``--allow-open-access`` says the open access is meant (a network
that is itself the boundary, e.g. a private container network); it then starts with a
loud warning.

On SIGTERM (or Ctrl-C) uvicorn stops accepting connections and waits for requests in
flight, up to ``GRACE_SECONDS``; we first make long polls answer at once, so that they do
not hold the stop until they time out; then the lifespan stops the reaper and closes the
database, and the process exits 0.
"""

from __future__ import annotations

import gc
import signal
import socket
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Final

import structlog
import uvicorn
from fastapi import FastAPI

from leasehold.coordinator.auth_tokens import is_loopback
from leasehold.coordinator.server.connections import ConnectionLimits, guarded_protocol
from leasehold.coordinator.server.resources import DescriptorWatch, raise_open_files_limit
from leasehold.coordinator.server.table import ConnectionTable
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.coordinator.startup import EXIT_REFUSED, EXIT_STARTUP_FAILED, describe_database

log = structlog.get_logger("leasehold")

GRACE_SECONDS: Final = 10


def open_access_problem(settings: CoordinatorSettings) -> str | None:
    """Why serving with these settings would be open to the network, or None."""
    if settings.tokens or is_loopback(settings.host):
        return None
    return (
        f"no token is configured and {settings.host!r} is not a loopback address: anyone who"
        " can reach it could enqueue, lease, complete and requeue jobs. Configure tokens"
        " (--tokens-file or LEASEHOLD_TOKENS), bind 127.0.0.1, or pass --allow-open-access"
        " if this network is trusted."
    )


class _Server(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        settings: CoordinatorSettings,
        on_stop: Callable[[], None],
        watch: DescriptorWatch,
        table: ConnectionTable,
    ) -> None:
        super().__init__(config)
        self._settings = settings
        self._on_stop = on_stop
        self._watch = watch
        self._table = table

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._say_where()
        # What exists now (modules, the app, the routes) lives as long as the process: out
        # of the collector's sight, a collection no longer walks it. A request that makes
        # many objects (a large JSON body) triggers collections; each walked the whole heap,
        # which made parsing one body of 350,000 empty lists cost twice its CPU.
        gc.freeze()

    def _say_where(self) -> None:
        """One line: where to reach the API, the dashboard and the docs, and which database
        this coordinator uses."""
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
        log.info(
            "coordinator.listening",
            url=base,
            dashboard=f"{base}/ui/",
            docs=f"{base}/docs",
            database=describe_database(self._settings.database_url),
        )

    async def on_tick(self, counter: int) -> bool:
        if counter % 10 == 0:  # uvicorn ticks every 0.1 s
            now = time.monotonic()
            self._watch.check(now)
            self._table.sweep(now)
        return await super().on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        log.info("coordinator.stopping")
        self._on_stop()
        await super().shutdown(sockets)


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    # uvicorn re-raises the signal it handled once it has shut down, so that the default
    # action (death by signal, exit status 143) follows. A stop we were asked for and
    # carried out is a success: exit 0 instead. Before uvicorn takes the signals over
    # (while starting), this also stops the process at once.
    raise SystemExit(0)


def serve(
    app: FastAPI, settings: CoordinatorSettings, before_start: Callable[[], None] | None = None
) -> None:
    """Serve ``app`` on the settings' address until SIGTERM or SIGINT. ``before_start``
    runs once the configuration is accepted, before the server starts (e.g. to check the
    database)."""
    problem = open_access_problem(settings)
    if problem is not None:
        if not settings.allow_open_access:
            print(f"leasehold: refusing to start: {problem}", file=sys.stderr)
            raise SystemExit(EXIT_REFUSED)
        banner = "!" * 78
        print(f"{banner}\n!!! leasehold: OPEN ACCESS: {problem}\n{banner}", file=sys.stderr)
        log.warning("auth.open_on_network", host=settings.host, port=settings.port)
    open_files_limit = raise_open_files_limit()
    limits = ConnectionLimits.of(settings, open_files_limit)
    protocol = guarded_protocol(limits)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        http=protocol,
        ws="none",  # no route speaks WebSocket: an upgrade is just a request
        timeout_keep_alive=limits.keep_alive_timeout,
        access_log=False,
        log_config=None,  # uvicorn's lines go through our logging (logs.py)
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    server = _Server(
        config,
        settings,
        on_stop=app.state.service.stop_waiting,
        watch=DescriptorWatch(open_files_limit),
        table=protocol.table,
    )
    previous = {sig: signal.signal(sig, _exit_cleanly) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        if before_start is not None:
            before_start()  # a stop asked for while it waits for the database exits 0 too
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not server.started:
        raise SystemExit(EXIT_STARTUP_FAILED)
