"""The ``leasehold`` command. Every option has a LEASEHOLD_<NAME> environment fallback."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import typer

from leasehold import admin as _admin
from leasehold.admin.scheduling import limits, schedules
from leasehold.bearer_tokens import (
    HashedToken,
    Role,
    TokenConfigError,
    hash_token,
    load_tokens_file,
    new_token,
    parse_tokens_env,
)
from leasehold.client import DEFAULT_URL
from leasehold.conformance import commands as _conformance
from leasehold.credentials import (
    TOKEN_FILE_HELP,
    TOKEN_HELP,
    resolve_token,
    warn_if_on_command_line,
)
from leasehold.demo import demo as _demo
from leasehold.logs import LogFormat, LogLevel, configure_logging, configure_quiet_logging
from leasehold.settings import (
    MAX_SCHEDULE_GRACE_SECONDS,
    CoordinatorSettings,
    SqliteSynchronous,
)
from leasehold.startup import (
    EXIT_CODES_HELP,
    StartupError,
    check_database_url,
    exit_with,
    prepare_database,
)
from leasehold.version import __version__

app = typer.Typer(
    name="leasehold",
    help="A distributed job queue with fenced leases.",
    no_args_is_help=True,
    add_completion=False,
)


app.add_typer(schedules, name="schedules")
app.add_typer(limits, name="limits")


def _show_version(show: bool) -> None:
    if show:
        typer.echo(f"leasehold {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_show_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """A distributed job queue with fenced leases."""


_LOG_FORMAT = typer.Option(
    "auto",
    envvar="LEASEHOLD_LOG_FORMAT",
    case_sensitive=False,
    help="json off a terminal, console on one (auto), or either always.",
)
_LOG_LEVEL = typer.Option("info", envvar="LEASEHOLD_LOG_LEVEL", case_sensitive=False)


# The coordinator's defaults, whose one home is CoordinatorSettings: `serve` shows them.
_SERVE: Final = CoordinatorSettings()


@app.command(epilog=EXIT_CODES_HELP)
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
    log_format: LogFormat = _LOG_FORMAT,
    log_level: LogLevel = _LOG_LEVEL,
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
    from leasehold.api.app import create_app
    from leasehold.api.server import serve as serve_app

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


@app.command("new-token")
def new_token_command(
    role: Role = typer.Argument(..., help="producer, worker, reader, metrics or admin"),
) -> None:
    """Make a random bearer token: prints the token (give it to the client, e.g. as
    LEASEHOLD_TOKEN) and then the line for the coordinator's tokens file."""
    token = new_token()
    typer.echo(token)
    typer.echo(f"{role.value}:{hash_token(token).hex()}")


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
    queues: str | None = typer.Option(
        None,
        envvar="LEASEHOLD_QUEUES",
        help="Comma-separated queues to lease from (default: every queue).",
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
        None,
        envvar="LEASEHOLD_TOKEN",
        help=TOKEN_HELP,
        callback=warn_if_on_command_line,
        show_default=False,
    ),
    token_file: Path | None = typer.Option(
        None, envvar="LEASEHOLD_TOKEN_FILE", help=TOKEN_FILE_HELP, show_default=False
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
    log_format: LogFormat = _LOG_FORMAT,
    log_level: LogLevel = _LOG_LEVEL,
) -> None:
    """Run handlers for jobs. The first Ctrl+C or SIGTERM lets running jobs finish and exits
    0; a second one cancels them and hands their jobs back."""
    from leasehold.worker import AppLoadError, WorkerSettings, run_worker
    from leasehold.worker.loader import load_app
    from leasehold.worker.settings import default_worker_id

    try:
        registry = load_app(app_spec)
    except AppLoadError as exc:
        raise typer.BadParameter(str(exc), param_hint="APP") from exc
    settings = WorkerSettings(
        url=url,
        concurrency=concurrency,
        kinds=_names(kinds),
        queues=_names(queues),
        lease_seconds=lease_seconds,
        token=resolve_token(token, token_file),
        wait_seconds=wait_seconds,
        grace_seconds=grace_seconds,
        worker_id=worker_id or default_worker_id(),
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


def _names(listed: str | None) -> tuple[str, ...] | None:
    """A comma-separated option as names (None when not given or empty)."""
    names = tuple(n.strip() for n in (listed or "").split(",") if n.strip())
    return names or None


def _is_a(exc: BaseException, name: str) -> bool:
    # By class name: typer raises click's exceptions, or those of its own copy of click in
    # newer releases, and the two share names but not classes.
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def _usage_exit(exc: Any) -> int:
    """Say what click's exception ``exc`` says, as the command line does, and return the
    exit status: a usage error is one line (not a framed box), the commonest start-up
    error being a mistyped option."""
    if _is_a(exc, "Abort"):
        print("Aborted!", file=sys.stderr)  # as click says it
        return 1
    if _is_a(exc, "UsageError") and not _is_a(exc, "NoArgsIsHelpError"):
        ctx = getattr(exc, "ctx", None)
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        # Pydantic's "Value error, " prefix says nothing to someone who mistyped an option.
        message = str(exc.format_message()).replace("Value error, ", "")
        print(f"leasehold: error: {message}{where}", file=sys.stderr)
    else:
        exc.show()  # a bare `leasehold` shows the help, as usual
    code: int = exc.exit_code
    return code


def main() -> None:
    """The command line's entry point: usage errors are one line on stderr, exit status 2."""
    configure_quiet_logging()  # serve and worker set up their own
    try:
        code = app(standalone_mode=False)
    except Exception as exc:
        if not (_is_a(exc, "ClickException") or _is_a(exc, "Abort")):
            raise
        raise SystemExit(_usage_exit(exc)) from None
    if isinstance(code, int) and code != 0:
        raise SystemExit(code)


# Admin commands (enqueue, jobs, job, requeue, stats) and the demo live in their own modules.
_admin.register(app)
app.command()(_demo)
_conformance.register(app)
