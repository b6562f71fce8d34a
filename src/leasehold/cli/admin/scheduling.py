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
limits = typer.Typer(help="Per-kind limits: list, set, delete.", no_args_is_help=True, cls=Commands)

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
        [lim["kind"], str(lim["max_running"]), str(lim["running"])] for lim in found
    ]
    columns = [
        Column("KIND", shrink=8),
        Column("MAX RUNNING", justify="right"),
        Column("RUNNING NOW", justify="right"),
    ]
    out = Output()
    out.print(fitted(columns, rows, out.width, caption=None if rows else "no limits"))


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
    """Every limit, with the kind's running jobs now."""
    with connected(url, token, token_file) as client:
        _show_limits(client.limits(), as_json)


@limits.command("set", epilog=EXIT_CODES_HELP)
def limits_set(
    kind: Annotated[str, typer.Argument(help="The kind to limit.")],
    max_running: Annotated[int, typer.Argument(min=1, max=100_000)],
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """At most MAX_RUNNING jobs of KIND running at once, across all workers."""
    with connected(url, token, token_file) as client:
        _show_limits([client.put_limit(kind, max_running)], as_json, one=True)


@limits.command("delete", epilog=EXIT_CODES_HELP)
def limits_delete(
    kind: Annotated[str, typer.Argument(help="The kind whose limit goes.")],
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
) -> None:
    """Remove the limit on KIND."""
    with connected(url, token, token_file) as client:
        client.delete_limit(kind)
    typer.echo(f"deleted the limit on {kind}")
