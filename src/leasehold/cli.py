"""The ``leasehold`` command. Every option has a LEASEHOLD_<NAME> environment fallback."""

from __future__ import annotations

import typer

from leasehold.logs import configure_logging
from leasehold.settings import MAX_SCHEDULE_GRACE_SECONDS, CoordinatorSettings

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
    schedule_interval_seconds: float = typer.Option(
        1.0, envvar="LEASEHOLD_SCHEDULE_INTERVAL_SECONDS", min=0.001, help="Due-schedule check."
    ),
    schedule_grace_seconds: float = typer.Option(
        10.0,
        envvar="LEASEHOLD_SCHEDULE_GRACE_SECONDS",
        min=0,
        max=MAX_SCHEDULE_GRACE_SECONDS,
        help="A fire time older than this when first seen was missed (see catch_up).",
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
        schedule_interval_seconds=schedule_interval_seconds,
        schedule_grace_seconds=schedule_grace_seconds,
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


def main() -> None:
    app()
