"""``leasehold serve``: the coordinator, with every setting as an option and its
LEASEHOLD_<NAME> environment fallback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import typer

from leasehold.cli.logs import (
    LOG_FORMAT_OPTION,
    LOG_LEVEL_OPTION,
    LogFormat,
    LogLevel,
    configure_logging,
)
from leasehold.coordinator.auth_tokens import (
    HashedToken,
    TokenConfigError,
    load_tokens_file,
    parse_tokens_env,
)
from leasehold.coordinator.settings import (
    MAX_SCHEDULE_GRACE_SECONDS,
    CoordinatorSettings,
    SqliteSynchronous,
)
from leasehold.coordinator.startup import (
    StartupError,
    check_database_url,
    exit_with,
    prepare_database,
)

# The coordinator's defaults, whose one home is CoordinatorSettings: `serve` shows them.
_SERVE: Final = CoordinatorSettings()


def serve(
    host: str = typer.Option(_SERVE.host, envvar="LEASEHOLD_HOST", help="Address to bind."),
    port: int = typer.Option(_SERVE.port, envvar="LEASEHOLD_PORT", min=0, max=65535),
    database_url: str = typer.Option(
        _SERVE.database_url,
        envvar="LEASEHOLD_DATABASE_URL",
        help="sqlite:///PATH (embedded, the default) or postgresql://USER:PASS@HOST:PORT/DB.",
    ),
    default_lease_seconds: float = typer.Option(
        _SERVE.default_lease_seconds,
        envvar="LEASEHOLD_DEFAULT_LEASE_SECONDS",
        min=0.001,
        max=86_400,
    ),
    min_lease_seconds: float = typer.Option(
        _SERVE.min_lease_seconds,
        envvar="LEASEHOLD_MIN_LEASE_SECONDS",
        min=0.001,
        max=86_400,
        help="Shortest lease a worker may ask for (shorter: 422).",
    ),
    retry_base_seconds: float = typer.Option(
        _SERVE.retry_base_seconds,
        envvar="LEASEHOLD_RETRY_BASE_SECONDS",
        min=0,
        help="First retry delay.",
    ),
    retry_max_seconds: float = typer.Option(
        _SERVE.retry_max_seconds,
        envvar="LEASEHOLD_RETRY_MAX_SECONDS",
        min=0,
        help="Cap on any retry delay.",
    ),
    reap_interval_seconds: float = typer.Option(
        _SERVE.reap_interval_seconds,
        envvar="LEASEHOLD_REAP_INTERVAL_SECONDS",
        min=0.001,
        help="Expired-lease sweep.",
    ),
    schedule_interval_seconds: float = typer.Option(
        _SERVE.schedule_interval_seconds,
        envvar="LEASEHOLD_SCHEDULE_INTERVAL_SECONDS",
        min=0.001,
        help="Due-schedule check.",
    ),
    schedule_grace_seconds: float = typer.Option(
        _SERVE.schedule_grace_seconds,
        envvar="LEASEHOLD_SCHEDULE_GRACE_SECONDS",
        min=0,
        max=MAX_SCHEDULE_GRACE_SECONDS,
        help="A fire time older than this when first seen was missed (see catch_up).",
    ),
    sqlite_synchronous: SqliteSynchronous = typer.Option(
        _SERVE.sqlite_synchronous,
        envvar="LEASEHOLD_SQLITE_SYNCHRONOUS",
        case_sensitive=False,
        help="FULL (no acknowledged write lost on power loss) or NORMAL (faster; may lose"
        " the last commits on power loss, never on a process crash).",
    ),
    log_format: LogFormat = LOG_FORMAT_OPTION,
    log_level: LogLevel = LOG_LEVEL_OPTION,
    allow_ephemeral_database: bool = typer.Option(
        False,
        "--allow-ephemeral-database",
        envvar="LEASEHOLD_ALLOW_EPHEMERAL_DATABASE",
        help="Serve on a database in memory (sqlite:///:memory: or sqlite:///), which loses"
        " every job when the coordinator stops; refused otherwise.",
    ),
    database_wait_seconds: float = typer.Option(
        30.0,
        envvar="LEASEHOLD_DATABASE_WAIT_SECONDS",
        min=0,
        max=3600,
        help="At start, how long to keep trying (with backoff) while PostgreSQL cannot be reached.",
    ),
    tokens_file: Path | None = typer.Option(
        None,
        envvar="LEASEHOLD_TOKENS_FILE",
        help="Bearer tokens: one `role:sha256hex` per line (roles: producer, worker, reader,"
        " metrics, admin; `leasehold new-token ROLE` makes one). Tokens can also be given in clear in the"
        " environment as LEASEHOLD_TOKENS=role=token,role=token (never as a flag: command"
        " lines are visible to every user). With neither, access is open and the"
        " coordinator only binds loopback.",
    ),
    allow_open_access: bool = typer.Option(
        _SERVE.allow_open_access,
        "--allow-open-access",
        envvar="LEASEHOLD_ALLOW_OPEN_ACCESS",
        help="Serve without tokens on a non-loopback address (with a loud warning).",
    ),
    max_payload_bytes: int = typer.Option(
        _SERVE.max_payload_bytes,
        envvar="LEASEHOLD_MAX_PAYLOAD_BYTES",
        min=1,
        help="Cap on a job's payload and a completion's result, as compact JSON (413).",
    ),
    max_header_bytes: int = typer.Option(
        _SERVE.max_header_bytes,
        envvar="LEASEHOLD_MAX_HEADER_BYTES",
        min=1024,
        help="Cap on a request's line and headers, in bytes (431, before authentication).",
    ),
    max_headers: int = typer.Option(
        _SERVE.max_headers,
        envvar="LEASEHOLD_MAX_HEADERS",
        min=8,
        help="Cap on a request's headers (431).",
    ),
    request_timeout_seconds: float = typer.Option(
        _SERVE.request_timeout_seconds,
        envvar="LEASEHOLD_REQUEST_TIMEOUT_SECONDS",
        min=0.1,
        max=600,
        help="A request must arrive whole (headers and body) within this time of the"
        " connection waiting for it, or the connection is closed (408).",
    ),
    keep_alive_timeout_seconds: int = typer.Option(
        _SERVE.keep_alive_timeout_seconds,
        envvar="LEASEHOLD_KEEP_ALIVE_TIMEOUT_SECONDS",
        min=1,
        max=600,
        help="An idle connection is closed after this long without a request.",
    ),
    max_waiting_polls: int = typer.Option(
        _SERVE.max_waiting_polls,
        envvar="LEASEHOLD_MAX_WAITING_POLLS",
        min=0,
        help="Long polls waiting at once, at most; past it a poll answers after one look.",
    ),
    max_answer_bytes: int = typer.Option(
        _SERVE.max_answer_bytes,
        envvar="LEASEHOLD_MAX_ANSWER_BYTES",
        min=1,
        help="Jobs' JSON in one answer: a GET /jobs page or a batch lease stops before it.",
    ),
    max_kinds: int = typer.Option(
        _SERVE.max_kinds,
        envvar="LEASEHOLD_MAX_KINDS",
        min=1,
        help="Distinct job kinds accepted; a job of one more kind is refused (422).",
    ),
    max_queues: int = typer.Option(
        _SERVE.max_queues,
        envvar="LEASEHOLD_MAX_QUEUES",
        min=1,
        help="Distinct queues accepted; a job in one more queue is refused (422).",
    ),
    retain_completed_seconds: float = typer.Option(
        _SERVE.retain_completed_seconds,
        envvar="LEASEHOLD_RETAIN_COMPLETED_SECONDS",
        min=0,
        help="Delete completed jobs this long after they finished (0: keep forever).",
    ),
    retain_cancelled_seconds: float = typer.Option(
        _SERVE.retain_cancelled_seconds,
        envvar="LEASEHOLD_RETAIN_CANCELLED_SECONDS",
        min=0,
        help="Delete cancelled jobs this long after they finished (0: keep forever).",
    ),
    retain_dead_seconds: float = typer.Option(
        _SERVE.retain_dead_seconds,
        envvar="LEASEHOLD_RETAIN_DEAD_SECONDS",
        min=0,
        help="Delete dead jobs this long after they died (0: keep forever).",
    ),
    prune_interval_seconds: float = typer.Option(
        _SERVE.prune_interval_seconds,
        envvar="LEASEHOLD_PRUNE_INTERVAL_SECONDS",
        min=0.001,
        help="How often finished jobs past their retention are deleted.",
    ),
) -> None:
    """Run the coordinator."""
    from leasehold.coordinator.app import create_app
    from leasehold.coordinator.server.run import serve as serve_app

    tokens = _configured_tokens(tokens_file, os.environ.get("LEASEHOLD_TOKENS"))

    settings = CoordinatorSettings(
        host=host,
        port=port,
        database_url=database_url,
        default_lease_seconds=default_lease_seconds,
        min_lease_seconds=min_lease_seconds,
        retry_base_seconds=retry_base_seconds,
        retry_max_seconds=retry_max_seconds,
        reap_interval_seconds=reap_interval_seconds,
        schedule_interval_seconds=schedule_interval_seconds,
        schedule_grace_seconds=schedule_grace_seconds,
        sqlite_synchronous=sqlite_synchronous,
        log_format=log_format,
        log_level=log_level,
        tokens=tokens,
        allow_open_access=allow_open_access,
        max_payload_bytes=max_payload_bytes,
        max_header_bytes=max_header_bytes,
        max_headers=max_headers,
        request_timeout_seconds=request_timeout_seconds,
        keep_alive_timeout_seconds=keep_alive_timeout_seconds,
        max_waiting_polls=max_waiting_polls,
        max_answer_bytes=max_answer_bytes,
        max_kinds=max_kinds,
        max_queues=max_queues,
        retain_completed_seconds=retain_completed_seconds,
        retain_cancelled_seconds=retain_cancelled_seconds,
        retain_dead_seconds=retain_dead_seconds,
        prune_interval_seconds=prune_interval_seconds,
    )
    configure_logging(log_format, log_level)
    try:
        check_database_url(database_url, allow_ephemeral=allow_ephemeral_database)
    except StartupError as exc:
        exit_with(exc)

    def open_database() -> None:
        try:
            prepare_database(
                database_url, synchronous=sqlite_synchronous, wait_seconds=database_wait_seconds
            )
        except StartupError as exc:
            exit_with(exc)

    serve_app(create_app(settings), settings, before_start=open_database)


def _configured_tokens(path: Path | None, env: str | None) -> tuple[HashedToken, ...]:
    try:
        from_file = load_tokens_file(path) if path is not None else []
        from_env = parse_tokens_env(env) if env is not None else []
    except TokenConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tokens-file / LEASEHOLD_TOKENS") from None
    return (*from_file, *from_env)
