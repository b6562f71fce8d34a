"""``leasehold schedules ...`` and ``leasehold limits ...``: operators' commands over HTTP
with the project's client, sharing the admin commands' connection options, error lines
and exit codes (``admin/connect.py``). Answers are printed as tables, or as the
coordinator's JSON with ``--json``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from leasehold.cli.admin import parse
from leasehold.cli.admin.connect import (
    CLI_RETRY,
    CLI_TIMEOUT_SECONDS,
    EXIT_CODES_HELP,
    EXIT_USAGE,
    AsJson,
    Token,
    TokenFile,
    Url,
    connected,
    describe,
    fail,
)
from leasehold.cli.admin.table import Cell, Column, Output, fitted
from leasehold.cli.admin.wire import print_json
from leasehold.cli.credentials import resolve_token
from leasehold.cli.help import Commands
from leasehold.client import DEFAULT_URL
from leasehold.errors import LeaseholdError
from leasehold.model import (
    DEFAULT_CATCH_UP,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    DEFAULT_TIMEZONE,
    MAX_ATTEMPTS_LIMIT,
    MAX_PRIORITY,
    MIN_PRIORITY,
)

schedules = typer.Typer(
    help="Periodic jobs: list, show, create or replace, delete, sync with code.",
    no_args_is_help=True,
    cls=Commands,
)
limits = typer.Typer(
    help="Per-kind limits (running jobs, per group, rates, turns): list, set, delete.",
    no_args_is_help=True,
    cls=Commands,
)
# The coordinator's bound on a count of running jobs (api/schemas/fields.py).
MAX_RUNNING = 100_000

Name = Annotated[str, typer.Argument(help="The schedule's name.")]


def _show_schedules(found: list[dict[str, Any]], as_json: bool, one: bool = False) -> None:
    if as_json:
        print_json(found[0] if one else found)
        return
    rows: list[list[Cell]] = [
        [
            s["name"],
            s["cron"],
            s["timezone"],
            s["kind"],
            s["queue"],
            "yes" if s["enabled"] else "no",
            s["next_fire_at"],
            s["last_fire_at"] or "-",
        ]
        for s in found
    ]
    columns = [
        Column("NAME", shrink=8),
        Column("CRON"),
        Column("ZONE", shrink=5),
        Column("KIND", shrink=6),
        Column("QUEUE", shrink=6),
        Column("ENABLED"),
        Column("NEXT FIRE (UTC)"),
        Column("LAST FIRE (UTC)", shrink=6),
    ]
    out = Output()
    out.print(fitted(columns, rows, out.width, caption=None if rows else "no schedules"))


def _show_limits(found: list[dict[str, Any]], as_json: bool, one: bool = False) -> None:
    if as_json:
        print_json(found[0] if one else found)
        return
    rows: list[list[Cell]] = [
        [
            lim["kind"],
            _number(lim.get("max_running")),
            _number(lim.get("max_running_per_group")),
            _rate(lim.get("rate")),
            "yes" if lim.get("fair") else "no",
            str(lim["running"]),
        ]
        for lim in found
    ]
    columns = [
        Column("KIND", shrink=8),
        Column("MAX RUNNING", justify="right"),
        Column("PER GROUP", justify="right"),
        Column("RATE", shrink=10),
        Column("FAIR"),
        Column("RUNNING NOW", justify="right"),
    ]
    out = Output()
    out.print(fitted(columns, rows, out.width, caption=None if rows else "no limits"))


def _number(value: Any) -> str:
    return "-" if value is None else str(value)


def _rate(rate: Any) -> str:
    """``100 per 1s``, ``5 per 1m per group``; ``-`` for none."""
    if not isinstance(rate, dict):
        return "-"
    per_group = " per group" if rate.get("per_group") else ""
    return f"{rate['limit']} per {period(float(rate['period_seconds']))}{per_group}"


def period(seconds: float) -> str:
    """A window's length in the largest unit that says it exactly: 1s, 90s, 1m, 2h, 1d."""
    for unit, length in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= length and seconds % length == 0:
            return f"{seconds / length:g}{unit}"
    return f"{seconds:g}s"


@schedules.command("list", epilog=EXIT_CODES_HELP)
def schedules_list(
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Every schedule, by name, with its next fire time."""
    with connected(url, token, token_file) as client:
        _show_schedules(client.schedules(), as_json)


@schedules.command("get", epilog=EXIT_CODES_HELP)
def schedules_get(
    name: Name,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """One schedule, with its next and last fire times."""
    with connected(url, token, token_file) as client:
        _show_schedules([client.get_schedule(name)], as_json, one=True)


@schedules.command("put", epilog=EXIT_CODES_HELP)
def schedules_put(
    name: Name,
    cron: Annotated[str, typer.Option(help="5 fields, or 6 with seconds first.")],
    kind: Annotated[str, typer.Option(help="The kind of job each run enqueues.")],
    timezone: Annotated[
        str, typer.Option(help="IANA time zone the cron is read in.")
    ] = DEFAULT_TIMEZONE,
    payload: Annotated[
        str | None,
        typer.Option(help="The jobs' payload: JSON text, @FILE, or - for stdin. Default: null."),
    ] = None,
    queue: Annotated[str, typer.Option(help="The queue its jobs go to.")] = DEFAULT_QUEUE,
    priority: Annotated[int, typer.Option(min=MIN_PRIORITY, max=MAX_PRIORITY)] = DEFAULT_PRIORITY,
    max_attempts: Annotated[
        int, typer.Option(min=1, max=MAX_ATTEMPTS_LIMIT)
    ] = DEFAULT_MAX_ATTEMPTS,
    catch_up: Annotated[
        str, typer.Option(help="skip | once: runs missed while no coordinator ran.")
    ] = DEFAULT_CATCH_UP.value,
    enabled: Annotated[bool, typer.Option("--enabled/--disabled")] = True,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Create or replace a schedule; it starts at its first fire time from now."""
    body = parse.payload(payload)
    with connected(url, token, token_file) as client:
        stored = client.put_schedule(
            name,
            cron=cron,
            kind=kind,
            timezone=timezone,
            payload=body,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            catch_up=catch_up,
            enabled=enabled,
        )
    _show_schedules([stored], as_json, one=True)


@schedules.command("delete", epilog=EXIT_CODES_HELP)
def schedules_delete(
    name: Name, url: Url = DEFAULT_URL, token: Token = None, token_file: TokenFile = None
) -> None:
    """Delete a schedule (the jobs it already enqueued stay)."""
    with connected(url, token, token_file) as client:
        client.delete_schedule(name)
    typer.echo(f"deleted schedule {name}")


@schedules.command("sync", epilog=EXIT_CODES_HELP)
def schedules_sync(
    app_spec: Annotated[
        str,
        typer.Argument(
            metavar="APP",
            envvar="LEASEHOLD_APP",
            help="The registry declaring them, as module:attribute (as for `leasehold worker`).",
        ),
    ],
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Bring the coordinator's schedules in line with those APP declares, as a worker does
    when it starts: for a deploy step with an admin token, when workers have none."""
    import asyncio

    from leasehold.client import Client
    from leasehold.worker import AppLoadError
    from leasehold.worker.loader import load_app
    from leasehold.worker.schedules import sync_schedules

    try:
        registry = load_app(app_spec)
    except AppLoadError as exc:
        raise typer.BadParameter(str(exc), param_hint="APP") from exc

    async def sync() -> dict[str, list[str]]:
        retry, timeout = CLI_RETRY, CLI_TIMEOUT_SECONDS
        key = resolve_token(token, token_file)
        async with Client(url, token=key, retry=retry, timeout_seconds=timeout) as client:
            report = await sync_schedules(
                client,
                registry.schedules.values(),
                registry.kinds,
                prune=registry.prune_schedules,
            )
        return report.fields()

    try:
        done = asyncio.run(sync())
    except LeaseholdError as exc:
        fail(*describe(exc, url))
    if as_json:
        print_json(done)
        return
    for what, names in done.items():
        typer.echo(f"{what}: {', '.join(names)}")
    if not done:
        typer.echo("no schedules declared, none of its kinds stored")
    if done.get("undeclared"):
        typer.echo(
            "(undeclared schedules are kept: delete one with `leasehold schedules delete NAME`,"
            " or make the registry with Registry(prune_schedules=True))"
        )


@limits.command("list", epilog=EXIT_CODES_HELP)
def limits_list(
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Every kind's limits, with its running jobs now."""
    with connected(url, token, token_file) as client:
        _show_limits(client.limits(), as_json)


@limits.command("set", epilog=EXIT_CODES_HELP)
def limits_set(
    kind: Annotated[str, typer.Argument(help="The kind to limit.")],
    max_running_arg: Annotated[
        int | None,
        typer.Argument(
            metavar="[MAX_RUNNING]",
            min=1,
            max=MAX_RUNNING,
            help="The same as --max-running.",
            show_default=False,
        ),
    ] = None,
    max_running: Annotated[
        int | None,
        typer.Option(
            "--max-running",
            min=1,
            max=MAX_RUNNING,
            metavar="N",
            help="At most N jobs of KIND running at once, across all workers.",
            show_default=False,
        ),
    ] = None,
    per_group: Annotated[
        int | None,
        typer.Option(
            "--per-group",
            min=1,
            max=MAX_RUNNING,
            metavar="N",
            help="At most N running at once per group key (the jobs' group_key).",
            show_default=False,
        ),
    ] = None,
    rate: Annotated[
        str | None,
        typer.Option(
            "--rate",
            metavar="LIMIT/PERIOD",
            help="At most LIMIT units started in any window of PERIOD (100/1s, 600/1m,"
            " 5/s); a job takes its weight in units, 1 by default.",
            show_default=False,
        ),
    ] = None,
    rate_per_group: Annotated[
        bool, typer.Option("--rate-per-group", help="Each group key has the --rate of its own.")
    ] = False,
    fair: Annotated[
        bool,
        typer.Option(
            "--fair",
            help="Groups take turns at KIND's leases (as they do with --per-group or"
            " --rate-per-group).",
        ),
    ] = False,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Set KIND's limits, all at once: those not given are lifted. They hold across every
    worker and coordinator, from the next lease on."""
    if max_running_arg is not None and max_running not in (None, max_running_arg):
        fail("MAX_RUNNING and --max-running say different things: give one", EXIT_USAGE)
    max_running = max_running if max_running is not None else max_running_arg
    starts = parse.rate(rate)
    if rate_per_group and starts is None:
        fail("--rate-per-group goes with --rate", EXIT_USAGE)
    if max_running is None and per_group is None and starts is None and not fair:
        fail("give at least one of --max-running, --per-group, --rate, --fair", EXIT_USAGE)
    with connected(url, token, token_file) as client:
        stored = client.put_limit(
            kind,
            max_running,
            max_running_per_group=per_group,
            rate=starts[0] if starts else None,
            rate_period_seconds=starts[1] if starts else None,
            rate_per_group=rate_per_group,
            fair=fair,
        )
    _show_limits([stored], as_json, one=True)


@limits.command("delete", epilog=EXIT_CODES_HELP)
def limits_delete(
    kind: Annotated[str, typer.Argument(help="The kind whose limit goes.")],
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
) -> None:
    """Remove every limit on KIND."""
    with connected(url, token, token_file) as client:
        client.delete_limit(kind)
    typer.echo(f"deleted the limit on {kind}")
