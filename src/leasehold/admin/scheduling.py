"""``leasehold schedules ...`` and ``leasehold limits ...``: operators' commands over HTTP
with the project's client, sharing the admin commands' connection options, error lines
and exit codes (``admin/connect.py``). Answers are printed as JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from leasehold.admin import parse
from leasehold.admin.connect import EXIT_CODES_HELP, Token, TokenFile, Url, connected
from leasehold.admin.wire import print_json
from leasehold.client import DEFAULT_URL

schedules = typer.Typer(
    help="Periodic jobs: list, show, create or replace, delete.", no_args_is_help=True
)
limits = typer.Typer(help="Per-kind concurrency limits: list, set, delete.", no_args_is_help=True)

Name = Annotated[str, typer.Argument(help="The schedule's name.")]


@schedules.command("list", epilog=EXIT_CODES_HELP)
def schedules_list(
    url: Url = DEFAULT_URL, token: Token = None, token_file: TokenFile = None
) -> None:
    """Every schedule, by name, with its next fire time."""
    with connected(url, token, token_file) as client:
        print_json(client.schedules())


@schedules.command("get", epilog=EXIT_CODES_HELP)
def schedules_get(
    name: Name, url: Url = DEFAULT_URL, token: Token = None, token_file: TokenFile = None
) -> None:
    """One schedule, with its next and last fire times."""
    with connected(url, token, token_file) as client:
        print_json(client.get_schedule(name))


@schedules.command("put", epilog=EXIT_CODES_HELP)
def schedules_put(
    name: Name,
    cron: Annotated[str, typer.Option(help="5 fields, or 6 with seconds first.")],
    kind: Annotated[str, typer.Option(help="The kind of job each run enqueues.")],
    timezone: Annotated[str, typer.Option(help="IANA time zone the cron is read in.")] = "UTC",
    payload: Annotated[
        str | None,
        typer.Option(help="The jobs' payload: JSON text, @FILE, or - for stdin. Default: null."),
    ] = None,
    queue: Annotated[str, typer.Option(help="The queue its jobs go to.")] = "default",
    priority: Annotated[int, typer.Option(min=-1000, max=1000)] = 0,
    max_attempts: Annotated[int, typer.Option(min=1, max=1000)] = 5,
    catch_up: Annotated[
        str, typer.Option(help="skip | once: runs missed while no coordinator ran.")
    ] = "skip",
    enabled: Annotated[bool, typer.Option("--enabled/--disabled")] = True,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
) -> None:
    """Create or replace a schedule; it starts at its first fire time from now."""
    body = parse.payload(payload)
    with connected(url, token, token_file) as client:
        print_json(
            client.put_schedule(
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
        )


@schedules.command("delete", epilog=EXIT_CODES_HELP)
def schedules_delete(
    name: Name, url: Url = DEFAULT_URL, token: Token = None, token_file: TokenFile = None
) -> None:
    """Delete a schedule (the jobs it already enqueued stay)."""
    with connected(url, token, token_file) as client:
        client.delete_schedule(name)
    typer.echo(f"deleted schedule {name}")


@limits.command("list", epilog=EXIT_CODES_HELP)
def limits_list(url: Url = DEFAULT_URL, token: Token = None, token_file: TokenFile = None) -> None:
    """Every limit, with the kind's running jobs now."""
    with connected(url, token, token_file) as client:
        print_json(client.limits())


@limits.command("set", epilog=EXIT_CODES_HELP)
def limits_set(
    kind: Annotated[str, typer.Argument(help="The kind to limit.")],
    max_running: Annotated[int, typer.Argument(min=1, max=100_000)],
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
) -> None:
    """At most MAX_RUNNING jobs of KIND running at once, across all workers."""
    with connected(url, token, token_file) as client:
        print_json(client.put_limit(kind, max_running))


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
