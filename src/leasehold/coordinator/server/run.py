"""Running the coordinator: who may reach it, and a clean stop on SIGTERM.

Without tokens, the coordinator serves only on a loopback address: bound anywhere else, or
told that clients come through a reverse proxy (``--public-origin``, ``--trusted-proxies``),
it refuses to start, unless ``--allow-open-access`` says the open access is meant (a
network that is itself the boundary, e.g. a private container network); it then starts
with a loud warning.

uvicorn's own reading of ``X-Forwarded-For`` and ``X-Forwarded-Proto`` (on by default, for
a peer on 127.0.0.1) is off: the connection's peer stays the peer, which the open
coordinator's guard checks, and the client behind a proxy is found by the coordinator's
own ``--trusted-proxies`` (``api/middleware/forwarded.py``).

On SIGTERM (or Ctrl-C) uvicorn stops accepting connections and waits for requests in
flight, up to ``GRACE_SECONDS``; we first make long polls answer at once, so that they do
not hold the stop until they time out; then the lifespan stops the reaper and closes the
database, and the process exits 0. When a newer release raises the schema's floor above
what this one knows (``maintenance/schema_watch.py``), it stops the same way at once and
exits 5 (``EXIT_SCHEMA``).

On SIGHUP the tokens file is read again and its tokens replace those in use (a rotation
without a restart); a file that cannot be used keeps the tokens in use, and says why.
"""

from __future__ import annotations

import asyncio
import contextlib
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

from leasehold._version import __version__, build
from leasehold.coordinator.auth_tokens import (
    Authenticator,
    TokenConfigError,
    TokenSource,
    is_loopback,
)
from leasehold.coordinator.server.connections import ConnectionLimits, guarded_protocol
from leasehold.coordinator.server.listen import bind
from leasehold.coordinator.server.resources import DescriptorWatch, raise_open_files_limit
from leasehold.coordinator.server.table import ConnectionTable
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.coordinator.startup import (
    EXIT_REFUSED,
    EXIT_SCHEMA,
    EXIT_STARTUP_FAILED,
    StartupError,
    describe_database,
    exit_with,
)

log = structlog.get_logger("leasehold")

GRACE_SECONDS: Final = 10


def open_access_problem(settings: CoordinatorSettings) -> str | None:
    """Why serving with these settings would be open to the network, or None."""
    if settings.tokens:
        return None
    if settings.public_origin.strip() or settings.trusted_proxies.strip():
        return (
            "no token is configured, and --public-origin or --trusted-proxies say that"
            " clients come through a reverse proxy: anyone who can reach the proxy could"
            " enqueue, lease, complete and requeue jobs. Configure tokens (--tokens-file or"
            " LEASEHOLD_TOKENS), or pass --allow-open-access if that network is trusted."
        )
    if is_loopback(settings.host):
        return None
    return (
        f"no token is configured and {settings.host!r} is not a loopback address: anyone who"
        " can reach it could enqueue, lease, complete and requeue jobs. Configure tokens"
        " (--tokens-file or LEASEHOLD_TOKENS), bind 127.0.0.1, or pass --allow-open-access"
        " if this network is trusted."
    )


class _Hangups:
    """SIGHUP: the tokens file read again, on the event loop once it runs (a signal handler
    interrupts whatever the loop was doing, even a log line being written)."""

    def __init__(self, app: FastAPI, tokens: TokenSource | None) -> None:
        self._app = app
        self._tokens = tokens
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending = False

    def received(self, signum: int, frame: FrameType | None) -> None:
        if self._loop is None:
            self._pending = True  # still starting: reloaded once the loop runs
            return
        with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
            self._loop.call_soon_threadsafe(self.reload)

    def serving(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        if self._pending:
            self._pending = False
            self.reload()

    def reload(self) -> None:
        authenticator: Authenticator = self._app.state.authenticator
        if self._tokens is None or self._tokens.file is None:
            log.info("auth.reload_skipped", reason="no tokens file to read again")
            return
        try:
            authenticator.replace(self._tokens.load())
        except TokenConfigError as exc:
            log.error("auth.reload_failed", error=str(exc), kept="the tokens in use")
            return
        counts = {role.value: n for role, n in authenticator.counts().items()}
        log.info("auth.reloaded", tokens_file=str(self._tokens.file), **counts)


class _Server(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        settings: CoordinatorSettings,
        on_stop: Callable[[], None],
        watch: DescriptorWatch,
        superseded: Callable[[], str | None],
        hangups: _Hangups,
        table: ConnectionTable,
    ) -> None:
        super().__init__(config)
        self._settings = settings
        self._on_stop = on_stop
        self._watch = watch
        self._superseded = superseded
        self._hangups = hangups
        self.superseded: str | None = None
        self._table = table

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._say_where()
            self._hangups.serving(asyncio.get_running_loop())
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
            version=__version__,
            build=build(),
        )

    async def on_tick(self, counter: int) -> bool:
        if counter % 10 == 0:  # uvicorn ticks every 0.1 s
            now = time.monotonic()
            self._watch.check(now)
            self._table.sweep(now)
        self.superseded = self._superseded()
        if self.superseded is not None:
            return True  # stop now: no more work under rules this release does not know
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
    app: FastAPI,
    settings: CoordinatorSettings,
    before_start: Callable[[], None] | None = None,
    tokens: TokenSource | None = None,
) -> None:
    """Serve ``app`` on the settings' address until SIGTERM or SIGINT. ``before_start``
    runs once the configuration is accepted, before the server starts (e.g. to check the
    database); ``tokens`` is read again on SIGHUP."""
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
        proxy_headers=False,  # see the module docstring
        timeout_keep_alive=limits.keep_alive_timeout,
        access_log=False,
        log_config=None,  # uvicorn's lines go through our logging (logs.py)
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    hangups = _Hangups(app, tokens)
    server = _Server(
        config,
        settings,
        on_stop=app.state.service.stop_waiting,
        watch=DescriptorWatch(open_files_limit),
        superseded=lambda: app.state.schema_watch.reason,
        hangups=hangups,
        table=protocol.table,
    )
    try:
        sockets = bind(settings.host, settings.port)  # a port in use: exit 1, as --help says
    except StartupError as exc:
        exit_with(exc)
    previous = {sig: signal.signal(sig, _exit_cleanly) for sig in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, hangups.received)
    try:
        if before_start is not None:
            before_start()  # a stop asked for while it waits for the database exits 0 too
        server.run(sockets=sockets)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sock in sockets:
            sock.close()
    if server.superseded is not None:
        print(f"leasehold: stopped: {server.superseded}", file=sys.stderr)
        raise SystemExit(EXIT_SCHEMA)
    if not server.started:
        raise SystemExit(EXIT_STARTUP_FAILED)
