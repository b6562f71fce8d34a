"""Operators' commands: cancel, delete, run-now, queues, pause, resume, workers. Each is
one client call and a table (or ``--json``); ``connect.py`` turns errors into exit codes."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from leasehold.cli.admin import graph, parse, render
from leasehold.cli.admin.connect import EXIT_USAGE, AsJson, Token, TokenFile, Url, connected, fail
from leasehold.cli.admin.table import Cell, Column, Output, fitted
from leasehold.cli.admin.wire import print_json
from leasehold.cli.terminal import plain
from leasehold.client import DEFAULT_URL

MAX_DELETE_LIMIT = 100_000
JobId = Annotated[int, typer.Argument(metavar="ID", help="The job's id.")]
QueueArg = Annotated[str, typer.Argument(metavar="QUEUE", help="The queue's name.")]


def cancel(
    job_id: JobId,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Cancel a job: a queued or dead one at once; a running one is told at its next
    renewal and ends cancelled when its worker reports. Its waiting dependents are
    cancelled with it (unless they run anyway), and theirs in turn; it says how many of
    its own were."""
    with connected(url, token, token_file) as client:
        if as_json:  # the job alone, as the coordinator answers it
            render.show_job(client.cancel(job_id), as_json)
            return
        before = graph.snapshot(client, client.get(job_id))
        job = client.cancel(job_id)
        change = graph.effect(before, graph.snapshot(client, job), job)
    state = "cancelled" if job.status == "cancelled" else "cancel requested (it is running)"
    render.show_job(job, as_json, graph.said_with(f"job {job_id}: {state}", change, "cancelled"))


def delete(
    job_id: Annotated[
        int | None, typer.Argument(metavar="ID", help="The job to delete.", show_default=False)
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status", help="Delete jobs in this status (not running).", show_default=False
        ),
    ] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help="Only jobs of this kind.", show_default=False)
    ] = None,
    queue: Annotated[
        str | None, typer.Option("--queue", help="Only jobs in this queue.", show_default=False)
    ] = None,
    finished_before: Annotated[
        str | None,
        typer.Option(
            "--finished-before",
            help="Only jobs that finished before this time (RFC 3339) or this long ago"
            " (90s, 15m, 2h, 7d).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_DELETE_LIMIT, help="At most this many.")
    ] = 1000,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Delete a job by ID, or every job matching the filters (at least one filter). A
    running job is never deleted: cancel it first."""
    filters = (status, kind, queue, finished_before)
    if (job_id is None) == all(f is None for f in filters):
        fail("give either a job ID or at least one of the filters", EXIT_USAGE)
    with connected(url, token, token_file) as client:
        if job_id is not None:
            client.delete(job_id)
            count = 1
        else:
            count = client.delete_where(
                status=parse.status(status),
                kind=kind,
                queue=queue,
                finished_before=parse.before(finished_before),
                limit=limit,
            )
    if as_json:
        print_json({"deleted": count})
    elif job_id is not None:
        typer.echo(f"deleted job {job_id}")
    else:
        more = " (the --limit: run again for more)" if count == limit else ""
        typer.echo(f"deleted {count} job{'' if count == 1 else 's'}{more}")


def run_now(
    job_id: JobId,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Make a queued job that waits for its run-after time (a retry's backoff, a job
    enqueued for later) due at once."""
    with connected(url, token, token_file) as client:
        job = client.run_now(job_id)
    render.show_job(job, as_json, f"job {job_id} is due now")


def queues(
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Each queue: jobs by status, the oldest waiting job, completions in the last minute,
    and whether it is paused."""
    with connected(url, token, token_file) as client:
        found = client.queues()
    if as_json:
        print_json({"queues": found})
        return
    out = Output()
    out.print(queue_table(found, out.width))


def queue_table(found: list[dict[str, Any]], width: int | None) -> Any:
    statuses = ["queued", "running", "completed", "dead", "cancelled"]
    rows: list[list[Cell]] = []
    for q in found:
        state = (
            Text("paused", style="bold yellow") if q["paused"] else Text("active", style="green")
        )
        rows.append(
            [
                q["name"],
                state,
                *(str(q["counts"].get(s, 0)) for s in statuses),
                render.seconds(q["oldest_queued_age_seconds"]),
                str(q["completed_last_minute"]),
            ]
        )
    columns = [
        Column("QUEUE", shrink=8),
        Column("STATE"),
        *(Column(s.upper(), justify="right") for s in statuses),
        Column("OLDEST WAITING", justify="right"),
        Column("DONE/MIN", justify="right"),
    ]
    return fitted(columns, rows, width, caption=None if rows else "no queues yet")


def pause(
    queue: QueueArg, url: Url = DEFAULT_URL, token: Token = None, token_file: TokenFile = None
) -> None:
    """Lease nothing more from QUEUE (running jobs finish) until it is resumed; the pause
    is stored and holds across restarts and coordinators."""
    with connected(url, token, token_file) as client:
        client.pause(queue)
    typer.echo(f"paused queue {queue}")


def resume(
    queue: QueueArg, url: Url = DEFAULT_URL, token: Token = None, token_file: TokenFile = None
) -> None:
    """Lease from QUEUE again."""
    with connected(url, token, token_file) as client:
        client.resume(queue)
    typer.echo(f"resumed queue {queue}")


def workers(
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Live workers (a heartbeat in the last 15 s) and those gone within the last hour,
    and any queued work that no live worker serves."""
    with connected(url, token, token_file) as client:
        found = client.workers()
        stats = client.stats()
    unserved = stats.get("unserved", [])
    if as_json:
        print_json({"workers": found, "unserved": unserved})
        return
    rows: list[list[Cell]] = []
    for w in found:
        state = Text("live", style="green") if w["live"] else Text("gone", style="dim red")
        rows.append(
            [
                w["worker_id"],
                state,
                w["host"],
                str(w["pid"]),
                str(w["concurrency"]),
                ",".join(w["kinds"]) if w["kinds"] is not None else "(any)",
                ",".join(w["queues"]) if w["queues"] is not None else "(any)",
                f"{render.seconds(w['seconds_since_seen'])} ago",
                w["version"],
            ]
        )
    columns = [
        Column("WORKER", shrink=10),
        Column("STATE"),
        Column("HOST", shrink=6),
        Column("PID", justify="right"),
        Column("SLOTS", justify="right"),
        Column("KINDS", shrink=6),
        Column("QUEUES", shrink=6),
        Column("LAST SEEN", justify="right"),
        Column("VERSION", shrink=5),
    ]
    out = Output()
    listed = fitted(columns, rows, out.width, caption=None if rows else "no workers seen")
    out.print(listed, *(plain(render.unserved_line(gap), "bold yellow") for gap in unserved))
