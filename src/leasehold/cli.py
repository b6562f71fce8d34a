"""The ``leasehold`` command. Every option has a LEASEHOLD_<NAME> environment fallback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import typer

from leasehold.client import DEFAULT_URL
from leasehold.logs import configure_logging
from leasehold.settings import CoordinatorSettings

app = typer.Typer(
    name="leasehold",
    help="A distributed job queue with fenced leases.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """A distributed job queue with fenced leases."""


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", envvar="LEASEHOLD_HOST", help="Address to bind."),
    port: int = typer.Option(8080, envvar="LEASEHOLD_PORT", min=0, max=65535),
    database_url: str = typer.Option(
        "sqlite:///leasehold.db",
        envvar="LEASEHOLD_DATABASE_URL",
        help="sqlite:///PATH (embedded, the default) or postgresql://USER:PASS@HOST:PORT/DB.",
    ),
    default_lease_seconds: float = typer.Option(
        30.0, envvar="LEASEHOLD_DEFAULT_LEASE_SECONDS", min=0.001, max=86_400
    ),
    retry_base_seconds: float = typer.Option(
        1.0, envvar="LEASEHOLD_RETRY_BASE_SECONDS", min=0, help="First retry delay."
    ),
    retry_max_seconds: float = typer.Option(
        3600.0, envvar="LEASEHOLD_RETRY_MAX_SECONDS", min=0, help="Cap on any retry delay."
    ),
    reap_interval_seconds: float = typer.Option(
        1.0, envvar="LEASEHOLD_REAP_INTERVAL_SECONDS", min=0.001, help="Expired-lease sweep."
    ),
    sqlite_synchronous: str = typer.Option(
        "FULL",
        envvar="LEASEHOLD_SQLITE_SYNCHRONOUS",
        help="FULL (no acknowledged write lost on power loss) or NORMAL (faster; may lose"
        " the last commits on power loss, never on a process crash).",
    ),
    log_format: str = typer.Option("auto", envvar="LEASEHOLD_LOG_FORMAT", help="auto|json|console"),
    log_level: str = typer.Option("info", envvar="LEASEHOLD_LOG_LEVEL"),
) -> None:
    """Run the coordinator."""
    import uvicorn

    from leasehold.api.app import create_app

    settings = CoordinatorSettings(
        host=host,
        port=port,
        database_url=database_url,
        default_lease_seconds=default_lease_seconds,
        retry_base_seconds=retry_base_seconds,
        retry_max_seconds=retry_max_seconds,
        reap_interval_seconds=reap_interval_seconds,
        sqlite_synchronous=sqlite_synchronous,
        log_format=log_format,
        log_level=log_level,
    )
    configure_logging(log_format, log_level)
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=10,
    )


@app.command()
def worker(
    app_spec: str = typer.Argument(
        ...,
        metavar="APP",
        envvar="LEASEHOLD_APP",
        help="The handlers, as module:attribute (a leasehold Registry or a dict {kind: handler}).",
    ),
    url: str = typer.Option(DEFAULT_URL, envvar="LEASEHOLD_URL", help="The coordinator."),
    concurrency: int = typer.Option(
        4, envvar="LEASEHOLD_CONCURRENCY", min=1, max=1000, help="Jobs run at once."
    ),
    kinds: str | None = typer.Option(
        None,
        envvar="LEASEHOLD_KINDS",
        help="Comma-separated kinds to lease (default: every kind APP has a handler for).",
    ),
    lease_seconds: float | None = typer.Option(
        None,
        envvar="LEASEHOLD_LEASE_SECONDS",
        min=0.001,
        max=86_400,
        help="Lease length, renewed every third of it (default: the coordinator's).",
    ),
    worker_id: str | None = typer.Option(
        None, envvar="LEASEHOLD_WORKER_ID", help="Names this worker (default: HOST-PID)."
    ),
    token: str | None = typer.Option(
        None, envvar="LEASEHOLD_TOKEN", help="Bearer token for the coordinator.", show_default=False
    ),
    wait_seconds: float = typer.Option(
        5.0,
        envvar="LEASEHOLD_WAIT_SECONDS",
        min=1,
        max=30,
        help="Long poll: how long one lease request waits for a job.",
    ),
    grace_seconds: float = typer.Option(
        30.0,
        envvar="LEASEHOLD_GRACE_SECONDS",
        min=0,
        help="After the first SIGINT/SIGTERM, how long running jobs get to finish.",
    ),
    log_format: str = typer.Option("auto", envvar="LEASEHOLD_LOG_FORMAT", help="auto|json|console"),
    log_level: str = typer.Option("info", envvar="LEASEHOLD_LOG_LEVEL"),
) -> None:
    """Run handlers for jobs. The first Ctrl+C or SIGTERM lets running jobs finish and exits
    0; a second one cancels them and hands their jobs back."""
    from leasehold.worker import AppLoadError, WorkerSettings, run_worker
    from leasehold.worker.loader import load_app

    try:
        registry = load_app(app_spec)
    except AppLoadError as exc:
        raise typer.BadParameter(str(exc), param_hint="APP") from exc
    settings = WorkerSettings(
        url=url,
        concurrency=concurrency,
        kinds=tuple(k.strip() for k in kinds.split(",") if k.strip()) if kinds else None,
        lease_seconds=lease_seconds,
        token=token,
        wait_seconds=wait_seconds,
        grace_seconds=grace_seconds,
        **({"worker_id": worker_id} if worker_id else {}),
    )
    configure_logging(log_format, log_level)
    with asyncio.Runner(loop_factory=_fast_loop()) as runner:
        code = runner.run(run_worker(registry, settings))
    raise typer.Exit(code)


def _fast_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (uvicorn's "standard" extra brings it, as it
    does for the coordinator): about twice as fast for a worker's many small requests."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def main() -> None:
    app()
