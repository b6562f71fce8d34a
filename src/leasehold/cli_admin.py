"""``leasehold schedules ...`` and ``leasehold limits ...``: operators' commands, over HTTP
with the project's client. Answers are printed as JSON; errors as one line on stderr with
exit status 1."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from leasehold.client import DEFAULT_URL, SyncClient
from leasehold.errors import LeaseholdError

T = TypeVar("T")

schedules = typer.Typer(help="Periodic jobs: list, show, create or replace, delete.")
limits = typer.Typer(help="Per-kind concurrency limits: list, set, delete.")

_URL = typer.Option(DEFAULT_URL, "--url", envvar="LEASEHOLD_URL", help="The coordinator.")
_TOKEN = typer.Option(
    None, "--token", envvar="LEASEHOLD_TOKEN", help="Bearer token.", show_default=False
)


def _call(url: str, token: str | None, action: Callable[[SyncClient], T]) -> T:
    try:
        with SyncClient(url, token=token) as client:
            return action(client)
    except LeaseholdError as exc:
        typer.echo(f"error: {exc.code}: {exc.message}", err=True)
        raise typer.Exit(1) from exc


def _print(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


@schedules.command("list")
def schedules_list(url: str = _URL, token: str | None = _TOKEN) -> None:
    """Every schedule, by name."""
    _print(_call(url, token, lambda c: c.schedules()))


@schedules.command("get")
def schedules_get(name: str, url: str = _URL, token: str | None = _TOKEN) -> None:
    """One schedule, with its next fire time."""
    _print(_call(url, token, lambda c: c.get_schedule(name)))


@schedules.command("put")
def schedules_put(
    name: str,
    cron: str = typer.Option(..., help="5 fields, or 6 with seconds first."),
    kind: str = typer.Option(..., help="The kind of job each run enqueues."),
    timezone: str = typer.Option("UTC", help="IANA time zone the expression is read in."),
    payload: str = typer.Option("null", help="The jobs' payload, as JSON."),
    queue: str = typer.Option("default"),
    priority: int = typer.Option(0, min=-1000, max=1000),
    max_attempts: int = typer.Option(5, min=1, max=1000),
    catch_up: str = typer.Option("skip", help="skip | once: what to do about missed runs."),
    enabled: bool = typer.Option(True, "--enabled/--disabled"),
    url: str = _URL,
    token: str | None = _TOKEN,
) -> None:
    """Create or replace a schedule; it starts at its first fire time from now."""
    try:
        body = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--payload") from exc
    _print(
        _call(
            url,
            token,
            lambda c: c.put_schedule(
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
            ),
        )
    )


@schedules.command("delete")
def schedules_delete(name: str, url: str = _URL, token: str | None = _TOKEN) -> None:
    """Delete a schedule (jobs it already enqueued stay)."""
    _call(url, token, lambda c: c.delete_schedule(name))
    typer.echo(f"deleted schedule {name}")


@limits.command("list")
def limits_list(url: str = _URL, token: str | None = _TOKEN) -> None:
    """Every limit, with the kind's running jobs now."""
    _print(_call(url, token, lambda c: c.limits()))


@limits.command("set")
def limits_set(
    kind: str,
    max_running: int = typer.Argument(..., min=1, max=100_000),
    url: str = _URL,
    token: str | None = _TOKEN,
) -> None:
    """At most MAX_RUNNING jobs of KIND running at once, across all workers."""
    _print(_call(url, token, lambda c: c.put_limit(kind, max_running)))


@limits.command("delete")
def limits_delete(kind: str, url: str = _URL, token: str | None = _TOKEN) -> None:
    """Remove the limit on KIND."""
    _call(url, token, lambda c: c.delete_limit(kind))
    typer.echo(f"deleted limit on {kind}")
