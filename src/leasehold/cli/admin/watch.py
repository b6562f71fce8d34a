"""``leasehold stats``, once or ``--watch``ed."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, Group, RenderableType
from rich.live import Live

from leasehold.cli.admin import render
from leasehold.cli.admin.table import Output
from leasehold.cli.admin.wire import print_json
from leasehold.cli.terminal import plain, safe
from leasehold.errors import Unavailable

if TYPE_CHECKING:
    from leasehold.client import SyncClient


def show_stats(client: SyncClient, url: str, watch: float | None, as_json: bool) -> None:
    """Print the figures once, or every ``watch`` seconds until Ctrl+C.

    The first read's errors end the command like any other's. While watching, a coordinator
    that cannot be reached (say, it is restarting) is shown and read again next time:
    watching is what a person does through a restart. Other errors still end it.
    """
    first = client.stats()
    if watch is None:
        if as_json:
            print_json(first)
        else:
            out = Output()
            out.print(render.stats_view(first, out.width))
        return
    try:
        if as_json:
            _watch_lines(client, first, watch)
        else:
            _watch_live(client, first, watch, url)
    except KeyboardInterrupt:
        return  # Ctrl+C is how a watch ends: not an error


def _watch_lines(client: SyncClient, first: dict[str, Any], every: float) -> None:
    print_json(first, lines=True)
    while True:
        time.sleep(every)
        try:
            print_json(client.stats(), lines=True)
        except Unavailable as exc:
            typer.echo(f"leasehold: coordinator unavailable: {safe(exc.message)}", err=True)


def _watch_live(client: SyncClient, first: dict[str, Any], every: float, url: str) -> None:
    last = first
    console = Console()
    with Live(
        _frame(last, url, every, None, console.width), console=console, auto_refresh=False
    ) as live:
        while True:
            time.sleep(every)
            problem = None
            try:
                last = client.stats()
            except Unavailable as exc:
                problem = exc.message
            live.update(_frame(last, url, every, problem, console.width), refresh=True)


def _frame(
    stats: dict[str, Any], url: str, every: float, problem: str | None, width: int
) -> RenderableType:
    now = datetime.now(UTC).strftime("%H:%M:%S")
    header = plain(f"{url} at {now} UTC, every {every:g}s (Ctrl+C to stop)", "dim")
    parts: list[RenderableType] = [header]
    if problem is not None:
        parts.append(plain(f"unavailable, showing the last figures: {problem}", "bold red"))
    return Group(*parts, render.stats_view(stats, width))
