"""``leasehold worker APP``: run the handlers APP registers, against a coordinator."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

import typer

from leasehold.cli.credentials import (
    TOKEN_FILE_HELP,
    TOKEN_HELP,
    resolve_token,
    warn_if_on_command_line,
)
from leasehold.cli.logs import (
    LOG_FORMAT_OPTION,
    LOG_LEVEL_OPTION,
    LogFormat,
    LogLevel,
    configure_logging,
)
from leasehold.cli.urls import URL_HELP, check_urls
from leasehold.client import DEFAULT_URL
from leasehold.model import MAX_LEASE_SECONDS, MAX_WAIT_SECONDS
from leasehold.worker.settings import WorkerSettings

# The worker's defaults, whose one home is WorkerSettings: `worker` shows them.
_WORKER = WorkerSettings(worker_id="")
MAX_PROCESSES = 256
# Set by the supervisor (--processes, --reload) in its children's environment.
SUPERVISOR_PID = "LEASEHOLD_SUPERVISOR_PID"


def worker(
    app_spec: str = typer.Argument(
        ...,
        metavar="APP",
        envvar="LEASEHOLD_APP",
        help="The handlers, as module:attribute (a leasehold Registry or a dict {kind: handler}).",
    ),
    url: str = typer.Option(
        DEFAULT_URL, envvar="LEASEHOLD_URL", help=URL_HELP, callback=check_urls
    ),
    concurrency: int = typer.Option(
        _WORKER.concurrency,
        envvar="LEASEHOLD_CONCURRENCY",
        min=1,
        max=1000,
        help="Jobs run at once.",
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
        max=int(MAX_LEASE_SECONDS),  # a float, shown as 86400 as it always was
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
        _WORKER.wait_seconds,
        envvar="LEASEHOLD_WAIT_SECONDS",
        min=1,
        max=int(MAX_WAIT_SECONDS),  # shown as 30
        help="Long poll: how long one lease request waits for a job.",
    ),
    grace_seconds: float = typer.Option(
        _WORKER.grace_seconds,
        envvar="LEASEHOLD_GRACE_SECONDS",
        min=0,
        help="After the first SIGINT/SIGTERM/SIGHUP, how long running jobs get to finish.",
    ),
    processes: int = typer.Option(
        1,
        envvar="LEASEHOLD_PROCESSES",
        min=1,
        max=MAX_PROCESSES,
        help="Worker processes, each with --concurrency slots (for CPU-bound handlers).",
    ),
    reload: bool = typer.Option(
        False,
        "--reload",
        envvar="LEASEHOLD_RELOAD",
        help="Development: restart the worker when a .py file under the current directory changes.",
    ),
    log_format: LogFormat = LOG_FORMAT_OPTION,
    log_level: LogLevel = LOG_LEVEL_OPTION,
) -> None:
    """Run handlers for jobs. The first Ctrl+C, SIGTERM or SIGHUP lets running jobs finish
    and exits 0; a second one cancels them and hands their jobs back."""
    resolved = resolve_token(token, token_file)
    if processes > 1 or reload:
        configure_logging(log_format, log_level)
        given = {
            "LEASEHOLD_URL": url,
            "LEASEHOLD_CONCURRENCY": str(concurrency),
            "LEASEHOLD_KINDS": kinds,
            "LEASEHOLD_QUEUES": queues,
            "LEASEHOLD_LEASE_SECONDS": None if lease_seconds is None else repr(lease_seconds),
            "LEASEHOLD_TOKEN": resolved,
            "LEASEHOLD_WAIT_SECONDS": repr(wait_seconds),
            "LEASEHOLD_GRACE_SECONDS": repr(grace_seconds),
            "LEASEHOLD_LOG_FORMAT": str(log_format),
            "LEASEHOLD_LOG_LEVEL": str(log_level),
        }
        raise typer.Exit(_supervise(app_spec, processes, reload, worker_id, given))
    from leasehold.worker import AppLoadError, run_worker
    from leasehold.worker.loader import load_app
    from leasehold.worker.settings import default_worker_id

    try:
        registry = load_app(app_spec)
    except AppLoadError as exc:
        if exc.traceback is not None:  # a bug in APP's module: where it is, as Python says
            sys.stderr.write(exc.traceback)
        raise typer.BadParameter(str(exc), param_hint="APP") from exc
    supervisor_pid = os.environ.get(SUPERVISOR_PID)
    settings = WorkerSettings(
        url=url,
        concurrency=concurrency,
        kinds=_names(kinds),
        queues=_names(queues),
        lease_seconds=lease_seconds,
        token=resolved,
        wait_seconds=wait_seconds,
        grace_seconds=grace_seconds,
        worker_id=worker_id or default_worker_id(),
        parent_pid=int(supervisor_pid) if supervisor_pid else None,
    )
    configure_logging(log_format, log_level)
    with asyncio.Runner(loop_factory=_fast_loop()) as runner:
        code = runner.run(run_worker(registry, settings))
    raise typer.Exit(code)


def _supervise(
    app_spec: str,
    processes: int,
    reload: bool,
    worker_id: str | None,
    given: dict[str, str | None],
) -> int:
    """Run the workers as children (``cli/supervise.py``); the exit status. Child ``n`` of
    several is ``ID-n`` when an id was given, HOST-PID (its own) otherwise."""
    from leasehold.cli.supervise import Supervisor, child_command

    def environment(n: int) -> dict[str, str]:
        named = worker_id and (f"{worker_id}-{n}" if processes > 1 else worker_id)
        return child_environment({**given, "LEASEHOLD_WORKER_ID": named or None})

    watch = Path.cwd() if reload else None
    return Supervisor(child_command(app_spec), environment, processes, watch).run()


def child_environment(given: dict[str, str | None]) -> dict[str, str]:
    """A supervised child's environment: this one, with the options as this command
    resolved them (None: unset, the default) and the supervisor's process id."""
    env = {k: v for k, v in os.environ.items() if k not in given and k != "LEASEHOLD_TOKEN_FILE"}
    env |= {k: v for k, v in given.items() if v is not None}
    env |= {"LEASEHOLD_PROCESSES": "1", "LEASEHOLD_RELOAD": "false"}
    env[SUPERVISOR_PID] = str(os.getpid())
    return env


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
