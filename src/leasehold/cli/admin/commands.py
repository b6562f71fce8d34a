"""The admin commands: enqueue, jobs, job, requeue, stats. Each is one or two client calls
and a table (or ``--json``); ``connect.py`` turns errors into exit codes."""

from __future__ import annotations

import warnings
from typing import Annotated

import typer
from rich.console import Console

from leasehold.cli.admin import graph, parse, render
from leasehold.cli.admin.connect import EXIT_USAGE, AsJson, Token, TokenFile, Url, connected, fail
from leasehold.cli.admin.table import Output
from leasehold.cli.admin.watch import show_stats
from leasehold.cli.admin.wire import attempt_json, job_json, print_json
from leasehold.cli.credentials import resolve_token
from leasehold.client import DEFAULT_URL, UnservedWarning
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    MAX_ATTEMPTS_LIMIT,
    MAX_PAGE_LIMIT,
    MAX_PRIORITY,
    MAX_REQUEUE_LIMIT,
    MIN_PRIORITY,
)

# The options check the coordinator's own bounds (the model's) too, so that a mistake costs
# no round trip.


def enqueue(
    kind: Annotated[str, typer.Argument(help="The job's kind: which handler runs it.")],
    payload: Annotated[
        str | None,
        typer.Option(
            "--payload",
            help="The payload: JSON text, @FILE, or - to read stdin. Default: null.",
            show_default=False,
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="Idempotency key: enqueueing the same job with the same key again returns"
            " the stored job instead of adding another.",
            show_default=False,
        ),
    ] = None,
    run_after: Annotated[
        str | None,
        typer.Option(
            "--run-after",
            help="Not before this time (RFC 3339 with an offset, e.g."
            " 2030-01-01T09:00:00+00:00) or this delay from now (90s, 15m, 2h, 1d).",
            show_default=False,
        ),
    ] = None,
    max_attempts: Annotated[
        int | None,
        typer.Option(
            "--max-attempts",
            min=1,
            max=MAX_ATTEMPTS_LIMIT,
            help="Leases allowed before the job is dead (default: the coordinator's,"
            f" {DEFAULT_MAX_ATTEMPTS}).",
            show_default=False,
        ),
    ] = None,
    priority: Annotated[
        int | None,
        typer.Option(
            "--priority",
            min=MIN_PRIORITY,
            max=MAX_PRIORITY,
            help=f"Higher is leased first (default {DEFAULT_PRIORITY}).",
            show_default=False,
        ),
    ] = None,
    queue: Annotated[
        str | None,
        typer.Option(
            "--queue",
            help=f"The queue it waits in (default: {DEFAULT_QUEUE}).",
            show_default=False,
        ),
    ] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Add a job to the queue."""
    body = parse.payload(payload)
    not_before = parse.run_after(run_after)
    with connected(url, token, token_file) as client, warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", UnservedWarning)
        job = client.enqueue(
            kind,
            body,
            max_attempts=max_attempts,
            run_after=not_before,
            idempotency_key=key,
            priority=priority,
            queue=queue,
        )
    render.show_job(job, as_json)
    for warning in said:  # on stderr: --json keeps stdout to the job alone
        if issubclass(warning.category, UnservedWarning):
            typer.secho(f"leasehold: warning: {warning.message}", err=True, fg="yellow")


def jobs(
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="Only jobs in this status: waiting, queued, running, completed, dead, cancelled.",
            show_default=False,
        ),
    ] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", help="Only jobs of this kind.", show_default=False)
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_PAGE_LIMIT, help="Jobs per page.")
    ] = 50,
    queue: Annotated[
        str | None, typer.Option("--queue", help="Only jobs in this queue.", show_default=False)
    ] = None,
    error_contains: Annotated[
        str | None,
        typer.Option(
            "--error-contains",
            help="Only jobs whose last error contains this text.",
            show_default=False,
        ),
    ] = None,
    oldest_first: Annotated[
        bool, typer.Option("--oldest-first", help="List the oldest jobs first.")
    ] = False,
    cursor: Annotated[
        str | None,
        typer.Option(
            "--cursor", help="Where the previous page ended (it prints it).", show_default=False
        ),
    ] = None,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """List jobs, newest first, one page at a time."""
    wanted = parse.status(status)
    with connected(url, token, token_file) as client:
        page = client.list(
            status=wanted,
            kind=kind,
            queue=queue,
            error_contains=error_contains,
            newest_first=not oldest_first,
            cursor=cursor,
            limit=limit,
        )
    if as_json:
        print_json({"jobs": [job_json(j) for j in page.jobs], "next_cursor": page.next_cursor})
    else:
        out = Output()
        out.print(render.job_list(page.jobs, page.next_cursor, out.width))


def job(
    job_id: Annotated[int, typer.Argument(metavar="ID", help="The job's id.")],
    edges: Annotated[
        int,
        typer.Option(
            "--edges",
            min=0,
            max=graph.MAX_COMPARED,
            metavar="N",
            help="Show at most N of its parents and N of its dependents (0: none).",
        ),
    ] = graph.DEFAULT_EDGES,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Show one job, its parents and dependents, and its attempt history. Parents and
    dependents are listed with their status; the history has one attempt per lease."""
    with connected(url, token, token_file) as client:
        found = client.get(job_id)
        parents, dependents = graph.edges_of(client, found, edges)
        attempts = client.attempts(job_id)
    if as_json:
        print_json(
            {
                "job": job_json(found),
                "parents": graph.edges_json(parents),
                "dependents": graph.edges_json(dependents),
                "attempts": [attempt_json(a) for a in attempts],
            }
        )
        return
    out = Output()
    around = []
    if parents.jobs:
        around.append(graph.edge_table("parents", parents, None, out.width))
    if dependents.jobs:
        total = found.dependents
        around.append(graph.edge_table("dependents", dependents, total, out.width))
    out.print(render.job_detail(found, attempts, out.width, around))


def requeue(
    job_id: Annotated[
        int | None,
        typer.Argument(
            metavar="ID", help="The dead or cancelled job to requeue.", show_default=False
        ),
    ] = None,
    all_dead: Annotated[
        bool, typer.Option("--all-dead", help="Requeue every dead job (matching the filters).")
    ] = False,
    kind: Annotated[
        str | None,
        typer.Option("--kind", help="With --all-dead: only this kind.", show_default=False),
    ] = None,
    error_contains: Annotated[
        str | None,
        typer.Option(
            "--error-contains",
            help="With --all-dead: only jobs whose last error contains this text.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            min=1,
            max=MAX_REQUEUE_LIMIT,
            help="With --all-dead: at most this many (the coordinator's maximum per request).",
        ),
    ] = MAX_REQUEUE_LIMIT,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Bring jobs back: queued at once (or waiting for their parents), attempts reset. Only
    dead (or cancelled) jobs can be; --all-dead takes the dead ones. Dependents that the
    job's end cancelled come back with it, and theirs in turn; it says how many of its own
    did."""
    if (job_id is None) == (not all_dead):
        fail("give either a job ID or --all-dead", EXIT_USAGE)
    if job_id is not None and (kind is not None or error_contains is not None):
        fail("--kind and --error-contains go with --all-dead, not with an ID", EXIT_USAGE)
    token = resolve_token(token, token_file)
    if job_id is not None:
        _requeue_one(job_id, url, token, as_json)
    else:
        _requeue_dead(kind, error_contains, limit, url, token, as_json)


def _requeue_one(job_id: int, url: str, token: str | None, as_json: bool) -> None:
    with connected(url, token) as client:
        if as_json:  # the job alone, as the coordinator answers it
            render.show_job(client.requeue(job_id), as_json)
            return
        before = graph.snapshot(client, client.get(job_id))
        revived = client.requeue(job_id)
        change = graph.effect(before, graph.snapshot(client, revived), revived)
    now = "waits for its parents again" if revived.status == "waiting" else "queued again"
    headline = f"requeued job {job_id}: {now}, attempts reset"
    render.show_job(revived, as_json, graph.said_with(headline, change, "revived"))


def _requeue_dead(
    kind: str | None,
    error_contains: str | None,
    limit: int,
    url: str,
    token: str | None,
    as_json: bool,
) -> None:
    with connected(url, token) as client:
        count = client.requeue_dead(kind=kind, error_contains=error_contains, limit=limit)
    if as_json:
        print_json({"requeued": count})
        return
    more = " (the --limit: run again for more)" if count == limit else ""
    Console().print(f"requeued {count} dead job{'' if count == 1 else 's'}{more}")


def stats(
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Refresh until Ctrl+C (with --json: one JSON line each time).",
        ),
    ] = False,
    every: Annotated[
        float,
        typer.Option("--every", min=0.2, metavar="SECONDS", help="With --watch: how often."),
    ] = 2.0,
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Jobs by status and kind, throughput, latency and lease trouble (GET /stats)."""
    with connected(url, token, token_file) as client:
        show_stats(client, url, every if watch else None, as_json)
