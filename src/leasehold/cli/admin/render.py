"""Tables for a person at a terminal (rich). Times are shown in UTC, as stored. Every
string from the coordinator is shown through ``terminal.plain`` (see there)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from leasehold.cli.admin.table import Cell, Column, Output, fitted
from leasehold.cli.admin.wire import job_json, print_json
from leasehold.cli.terminal import plain
from leasehold.model import DEFAULT_QUEUE, JSON, Attempt, Event, Job

STATUS_STYLES = {
    "waiting": "blue",
    "queued": "cyan",
    "running": "yellow",
    "completed": "green",
    "dead": "bold red",
    "failed": "red",
    "expired": "magenta",
    "released": "blue",
    "cancelled": "dim red",
}
# In lists, a traceback's last line (the exception) says what went wrong.
ERROR_CAP = 80


def status_text(status: str) -> Text:
    return plain(status, STATUS_STYLES.get(status, ""))


def when(moment: datetime | None) -> str:
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def utc_when(moment: datetime | None) -> str:
    """``when`` marked as UTC; empty for no time."""
    return "" if moment is None else when(moment) + " UTC"


def short_when(moment: datetime | None, today: date) -> str:
    """The time of day for today (UTC); the date and minute for any other day."""
    if moment is None:
        return ""
    return moment.strftime("%H:%M:%S" if moment.date() == today else "%Y-%m-%d %H:%M")


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.2f}s" if value < 10 else f"{value:.1f}s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes}m {rest:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"


def error_summary(error: str | None) -> str:
    """The last line of an error: for a traceback, the exception and its message."""
    lines = [line.strip() for line in (error or "").strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def compact_json(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


JOB_COLUMNS = (
    Column("ID", justify="right"),
    Column("KIND", shrink=8, cap=40),
    Column("STATUS"),
    Column("TRIES", justify="right"),
    Column("CREATED"),
    Column("RUN AFTER"),
    Column("WORKER", shrink=6, cap=30),
    Column("LAST ERROR", shrink=10, cap=ERROR_CAP),
)


def job_list(jobs: Sequence[Job], next_cursor: str | None, width: int | None) -> RenderableType:
    """One line per job; the kind, worker and error are cut short (…) to fit ``width``."""
    today = datetime.now(UTC).date()
    rows: list[list[Cell]] = [
        [
            str(job.id),
            job.kind,
            status_text(job.status),
            f"{job.attempts}/{job.max_attempts}",
            short_when(job.created_at, today),
            short_when(job.run_after, today),
            job.lease_owner or "",
            error_summary(job.last_error),
        ]
        for job in jobs
    ]
    count = f"{len(jobs)} job{'' if len(jobs) == 1 else 's'}, times in UTC"
    caption = f"{count}; next page: --cursor {next_cursor}" if next_cursor else count
    return fitted(JOB_COLUMNS, rows, width, caption=caption)


def job_detail(
    job: Job,
    attempts: Sequence[Attempt] | None,
    width: int | None,
    around: Sequence[RenderableType] = (),
) -> RenderableType:
    """The job's fields; with ``attempts`` (``leasehold job``), ``around`` (its parents
    and dependents), its history and its last error in full too."""
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold", no_wrap=True)
    fields.add_column(overflow="fold")
    for name, value in _job_fields(job):
        if value:  # an empty field (no result yet, never leased) is only noise
            fields.add_row(name, value if isinstance(value, Text) else plain(value))
    if attempts is None:
        return fields
    parts: list[RenderableType] = [fields]
    for part in around:
        parts += [Text(""), part]
    parts += [Text(""), attempt_table(attempts, width)]
    if job.last_error and "\n" in job.last_error.strip():
        in_full = plain(job.last_error, lines=True)
        parts += [Text(""), Text("last error, in full:", style="bold"), in_full]
    return Group(*parts)


def _job_fields(job: Job) -> list[tuple[str, str | Text]]:
    return [
        ("id", str(job.id)),
        ("kind", job.kind),
        ("status", status_text(job.status)),
        ("attempts", f"{job.attempts} of {job.max_attempts}"),
        ("queue", job.queue),
        ("priority", str(job.priority)),
        ("cancel", "requested" if job.cancel_requested else ""),
        *_workflow_fields(job),
        ("group key", job.group_key or ""),
        ("weight", str(job.weight) if job.weight != 1 else ""),
        ("start by", utc_when(job.start_by)),
        ("unique key", job.unique_key or ""),
        ("payload", compact_json(job.payload)),
        ("result", compact_json(job.result) if job.result is not None else ""),
        ("last error", error_summary(job.last_error)),
        ("created", utc_when(job.created_at)),
        ("run after", utc_when(job.run_after)),
        ("lease token", str(job.lease_token)),
        ("lease owner", job.lease_owner or ""),
        ("leased at", utc_when(job.leased_at)),
        ("lease expires", utc_when(job.lease_expires_at)),
        ("finished", utc_when(job.finished_at)),
        ("idempotency key", job.idempotency_key or ""),
    ]


def _workflow_fields(job: Job) -> list[tuple[str, str | Text]]:
    """What places the job in a workflow (DESIGN.md §22); empty lines for a plain job."""
    left = job.waiting_for
    return [
        ("waiting for", f"{left} parent{'' if left == 1 else 's'} to complete" if left else ""),
        ("blocked by", f"job {job.blocked_by}: it could not complete" if job.blocked_by else ""),
        ("spawned by", _spawned(job)),
        ("dependents", f"{job.dependents:,}" if job.dependents else ""),
    ]


def _spawned(job: Job) -> str:
    if job.spawned_by is None:
        return ""
    return f"job {job.spawned_by}" + (f", key {job.spawn_key}" if job.spawn_key else "")


ATTEMPT_COLUMNS = (
    Column("TOKEN", justify="right"),
    Column("WORKER", shrink=6, cap=30),
    Column("LEASED AT (UTC)"),
    Column("TOOK", justify="right"),
    Column("OUTCOME"),
    Column("ERROR", shrink=10, cap=ERROR_CAP),
)


def attempt_table(attempts: Sequence[Attempt], width: int | None) -> RenderableType:
    if not attempts:
        return Text("no attempts yet", style="dim")
    rows: list[list[Cell]] = [
        [
            str(a.token),
            a.worker_id,
            when(a.leased_at),
            seconds((a.finished_at - a.leased_at).total_seconds() if a.finished_at else None),
            status_text(a.outcome),
            error_summary(a.error),
        ]
        for a in attempts
    ]
    return fitted(ATTEMPT_COLUMNS, rows, width, title="attempts")


def stats_view(stats: dict[str, Any], width: int | None) -> RenderableType:
    by_status: dict[str, int] = stats["by_status"]
    statuses = list(by_status)
    counts = fitted(
        [Column(s.upper(), justify="right") for s in [*statuses, "total"]],
        [[*(_count(s, n) for s, n in by_status.items()), str(sum(by_status.values()))]],
        width,
        title="jobs",
    )
    parts: list[RenderableType] = [counts, Text(""), _figures(stats, width)]
    # What the rows leave out (a coordinator with many names), absent before protocol 1.1.
    folded: dict[str, Any] = stats.get("folded") or {}
    by_kind = stats["by_kind"]
    parts += _breakdown("by kind", "KIND", by_kind, statuses, width, folded.get("by_kind"))
    # Queues only when some job is in a queue of its own: most set-ups use one.
    by_queue: dict[str, dict[str, int]] = stats.get("by_queue") or {}
    rest_queues = folded.get("by_queue")
    if set(by_queue) - {DEFAULT_QUEUE} or rest_queues:
        parts += _breakdown("by queue", "QUEUE", by_queue, statuses, width, rest_queues)
    for gap in stats.get("unserved") or []:
        parts.append(plain(unserved_line(gap), "bold yellow"))
    return Group(*parts)


def unserved_line(gap: dict[str, Any]) -> str:
    """The warning for queued work that no live worker serves."""
    n = gap["queued"]
    return (
        f"no live worker serves kind {gap['kind']!r} in queue {gap['queue']!r}:"
        f" {n} job{'' if n == 1 else 's'} waiting"
    )


def _breakdown(
    title: str,
    header: str,
    counts: dict[str, dict[str, int]],
    statuses: list[str],
    width: int | None,
    rest: dict[str, Any] | None = None,
) -> list[RenderableType]:
    """One row per name; then, styled apart from any name, the rows the coordinator added
    up (``rest``: ``{names, counts}``)."""
    if not counts and not rest:
        return []
    rows: list[list[Cell]] = [
        [name, *(_count(s, counts[name].get(s, 0)) for s in statuses)] for name in sorted(counts)
    ]
    if rest:
        more = f"({rest['names']} more, added up)"
        rows.append(
            [plain(more, "italic"), *(_count(s, rest["counts"].get(s, 0)) for s in statuses)]
        )
    columns = [Column(header, shrink=8), *(Column(s.upper(), justify="right") for s in statuses)]
    return [Text(""), fitted(columns, rows, width, title=title)]


def _count(status: str, n: int) -> Text:
    return Text(str(n), style=STATUS_STYLES.get(status, "") if n else "dim")


def _figures(stats: dict[str, Any], width: int | None) -> RenderableType:
    totals: dict[str, int] = stats["totals"]
    window = f"last {stats['average_window_seconds'] // 60} min"
    recent = [
        ("completed last minute", stats["completed_last_minute"], Event.ENQUEUED),
        ("failed last minute", stats["failed_last_minute"], Event.LEASED),
        (f"avg wait ({window})", seconds(stats["avg_wait_seconds"]), Event.COMPLETED),
        (f"avg run ({window})", seconds(stats["avg_run_seconds"]), Event.FAILED),
        ("oldest queued", seconds(stats["oldest_queued_age_seconds"]), Event.DEAD),
        ("lease expirations", stats["lease_expirations"], Event.REQUEUED),
        ("stale tokens refused", stats["stale_token_rejections"], Event.RELEASED),
    ]
    # Beside each recent figure, the total of an event since the start, named by its value.
    rows = [(label, figure, event.value, totals.get(event)) for label, figure, event in recent]
    columns = [
        Column("RECENTLY"),
        Column("", justify="right"),
        Column("SINCE THE START"),
        Column("", justify="right"),
    ]
    cells = [["" if cell is None else str(cell) for cell in row] for row in rows]
    return fitted(columns, cells, width)


def show_job(job: Job, as_json: bool, headline: str | None = None) -> None:
    """A command's answer that is one job: its JSON with ``--json``; else ``headline``, if
    any, over the job's detail view."""
    if as_json:
        print_json(job_json(job))
        return
    out = Output()
    above = [] if headline is None else [plain(headline)]
    out.print(*above, job_detail(job, None, out.width))
