"""What the demo shows while it runs, and the figures at the end."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from leasehold.cli.demo.workload import Expected
from leasehold.model import Event


class ProgressView:
    """Two bars (enqueued, finished) and a line of counts by status, for ``rich.Live``."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.started = time.monotonic()
        self.progress = Progress(
            TextColumn("{task.description:<9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:>8}"),
            TimeElapsedColumn(),
        )
        self._enqueued = self.progress.add_task("enqueued", total=total, rate="")
        self._finished = self.progress.add_task("finished", total=total, rate="")
        self._status = Text("")

    def renderable(self) -> RenderableType:
        return Group(self.progress, self._status)

    def enqueued(self, count: int) -> None:
        self.progress.advance(self._enqueued, count)

    def show(self, stats: dict[str, Any]) -> int:
        """Show the coordinator's figures; how many jobs are finished (completed or dead)."""
        counts: dict[str, int] = stats["by_status"]
        done = counts.get("completed", 0) + counts.get("dead", 0)
        rate = done / max(self.elapsed(), 1e-9)
        self.progress.update(self._finished, completed=done, rate=f"{rate:.0f}/s")
        shown = " · ".join(f"{name} {n}" for name, n in counts.items())
        self._status.plain = f"{shown} · failures reported {stats['totals'].get('failed', 0)}"
        return done

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def print_summary(
    console: Console, stats: dict[str, Any], total: int, seconds: float, expected: Expected
) -> None:
    counts, totals = stats["by_status"], stats["totals"]
    # Once every job is finished, each was leased once plus once per retry (the database
    # is the demo's own, so the totals are this run's).
    retries = totals.get(Event.LEASED, 0) - total
    console.print(
        f"[bold]Done:[/bold] {total} jobs in {seconds:.1f} s,"
        f" [bold]{total / seconds:.0f} jobs/s[/bold]"
    )
    console.print(
        f"  completed {counts.get('completed', 0)} · dead {counts.get('dead', 0)}"
        f" (expected {expected.dead}) · retries {retries} (expected {expected.retries})"
    )
    console.print(
        f"  average wait {_seconds(stats['avg_wait_seconds'])}"
        f" · average run {_seconds(stats['avg_run_seconds'])}"
    )
    console.print(
        f"  lease expirations {stats['lease_expirations']}"
        f" · stale tokens refused {stats['stale_token_rejections']}"
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"
