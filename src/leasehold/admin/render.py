"""Tables for a person at a terminal (rich). Times are shown in UTC, as stored."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from leasehold.model import JSON, Attempt, Job

STATUS_STYLES = {
    "queued": "cyan",
    "running": "yellow",
    "completed": "green",
    "dead": "bold red",
    "failed": "red",
    "expired": "magenta",
    "released": "blue",
}
# A traceback's last line (the exception) says what went wrong; cut there in lists.
ERROR_CHARS_IN_LISTS = 60


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLES.get(status, ""))


def when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.2f}s" if value < 10 else f"{value:.1f}s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes}m {rest:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"


def error_summary(error: str | None, limit: int = ERROR_CHARS_IN_LISTS) -> str:
    if not error:
        return ""
    lines = [line for line in error.strip().splitlines() if line.strip()]
    last = lines[-1].strip() if lines else ""
    return last if len(last) <= limit else last[: limit - 1] + "…"


def compact_json(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def job_list(jobs: Sequence[Job], next_cursor: str | None) -> RenderableType:
    table = Table(caption=_page_caption(len(jobs), next_cursor), caption_justify="left")
    table.add_column("ID", justify="right")
    table.add_column("KIND")
    table.add_column("STATUS")
    table.add_column("ATTEMPTS", justify="right")
    table.add_column("CREATED (UTC)")
    table.add_column("RUN AFTER (UTC)")
    table.add_column("WORKER")
    table.add_column("LAST ERROR", overflow="fold")
    for job in jobs:
        table.add_row(
            str(job.id),
            job.kind,
            status_text(job.status),
            f"{job.attempts}/{job.max_attempts}",
            when(job.created_at),
            when(job.run_after),
            job.lease_owner or "",
            error_summary(job.last_error),
        )
    return table


def _page_caption(count: int, next_cursor: str | None) -> str:
    shown = f"{count} job{'s' if count != 1 else ''}"
    return f"{shown}; more with --cursor {next_cursor}" if next_cursor else shown


def job_detail(job: Job, attempts: Sequence[Attempt] | None) -> RenderableType:
    """The job's fields; then its attempts, unless None (a job just enqueued has none)."""
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold")
    fields.add_column(overflow="fold")
    for name, value in _job_fields(job):
        if value:  # an empty field (no result yet, never leased) is only noise
            fields.add_row(name, value)
    parts: list[RenderableType] = [fields]
    if attempts is not None:
        parts += [Text(""), attempt_table(attempts)]
    if job.last_error and "\n" in job.last_error.strip():
        parts += [Text(""), Text("last error, in full:", style="bold"), Text(job.last_error)]
    return Group(*parts)


def _job_fields(job: Job) -> list[tuple[str, str | Text]]:
    return [
        ("id", str(job.id)),
        ("kind", job.kind),
        ("status", status_text(job.status)),
        ("attempts", f"{job.attempts} of {job.max_attempts}"),
        ("payload", compact_json(job.payload)),
        ("result", compact_json(job.result) if job.result is not None else ""),
        ("last error", error_summary(job.last_error, limit=500)),
        ("created", when(job.created_at)),
        ("run after", when(job.run_after)),
        ("lease token", str(job.lease_token)),
        ("lease owner", job.lease_owner or ""),
        ("leased at", when(job.leased_at)),
        ("lease expires", when(job.lease_expires_at)),
        ("finished", when(job.finished_at)),
        ("idempotency key", job.idempotency_key or ""),
    ]


def attempt_table(attempts: Sequence[Attempt]) -> RenderableType:
    if not attempts:
        return Text("no attempts yet", style="dim")
    table = Table(title="attempts", title_justify="left")
    table.add_column("TOKEN", justify="right")
    table.add_column("WORKER")
    table.add_column("LEASED AT (UTC)")
    table.add_column("TOOK", justify="right")
    table.add_column("OUTCOME")
    table.add_column("ERROR", overflow="fold")
    for a in attempts:
        took = (a.finished_at - a.leased_at).total_seconds() if a.finished_at else None
        table.add_row(
            str(a.token),
            a.worker_id,
            when(a.leased_at),
            seconds(took),
            status_text(a.outcome),
            error_summary(a.error),
        )
    return table


def stats_view(stats: dict[str, Any]) -> RenderableType:
    by_status: dict[str, int] = stats["by_status"]
    counts = Table(title="jobs", title_justify="left")
    for name in by_status:
        counts.add_column(name.upper(), justify="right", style=STATUS_STYLES.get(name))
    counts.add_column("TOTAL", justify="right", style="bold")
    counts.add_row(*(str(n) for n in by_status.values()), str(sum(by_status.values())))
    return Group(counts, _figures(stats), _by_kind(stats["by_kind"], list(by_status)))


def _figures(stats: dict[str, Any]) -> RenderableType:
    totals: dict[str, int] = stats["totals"]
    grid = Table(box=box.SIMPLE_HEAD, padding=(0, 1))
    grid.add_column("RECENTLY")
    grid.add_column("", justify="right")
    grid.add_column("SINCE THE START")
    grid.add_column("", justify="right")
    window = f"last {stats['average_window_seconds'] // 60} min"
    rows = [
        ("completed last minute", stats["completed_last_minute"], "enqueued", totals.get("enqueued")),
        ("failed last minute", stats["failed_last_minute"], "leased", totals.get("leased")),
        (f"avg wait ({window})", seconds(stats["avg_wait_seconds"]), "completed", totals.get("completed")),
        (f"avg run ({window})", seconds(stats["avg_run_seconds"]), "failed", totals.get("failed")),
        ("oldest queued", seconds(stats["oldest_queued_age_seconds"]), "dead", totals.get("dead")),
        ("lease expirations", stats["lease_expirations"], "requeued", totals.get("requeued")),
        ("stale tokens refused", stats["stale_token_rejections"], "released", totals.get("released")),
    ]  # fmt: skip
    for row in rows:
        grid.add_row(*("" if cell is None else str(cell) for cell in row))
    return grid


def _by_kind(by_kind: dict[str, dict[str, int]], statuses: list[str]) -> RenderableType:
    if not by_kind:
        return Text("")
    table = Table(title="by kind", title_justify="left")
    table.add_column("KIND")
    for name in statuses:
        table.add_column(name.upper(), justify="right", style=STATUS_STYLES.get(name))
    for kind in sorted(by_kind):
        table.add_row(kind, *(str(by_kind[kind].get(name, 0)) for name in statuses))
    return Group(Text(""), table)
