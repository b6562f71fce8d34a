"""A job's place in a workflow, for the admin commands (DESIGN.md §22): its parents and
dependents as tables, and what a cancel or a requeue did to its dependents.

The coordinator's answer to a cancel or a requeue is the job alone; what the change carried
to the dependents is read from them, before and after (``Effect``). Only the direct
dependents are compared: theirs follow them by the same rules, and reading a whole graph
would cost a request per job in it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from rich.console import RenderableType
from rich.text import Text

from leasehold.cli.admin.render import status_text
from leasehold.cli.admin.table import Cell, Column, fitted
from leasehold.errors import LeaseholdError
from leasehold.model import Job

if TYPE_CHECKING:
    from leasehold.client import SyncClient

# What `leasehold job` shows of each side unless told otherwise: a job may have 10,000
# dependents, and a table of them all helps nobody at a terminal.
DEFAULT_EDGES: Final = 20
MAX_PAGE: Final = 1000
# Dependents compared around a cancel or a requeue: ten pages at most.
MAX_COMPARED: Final = 10_000


@dataclass(frozen=True, slots=True)
class Edges:
    """Up to the number asked for of a job's parents or dependents, as the coordinator
    sends them, and whether there are more."""

    jobs: list[dict[str, Any]]
    more: bool


def read_edges(client: SyncClient, job_id: int, *, parents: bool, at_most: int) -> Edges:
    """The first ``at_most`` parents (or dependents) of the job, by id."""
    read = client.parents if parents else client.dependents
    jobs: list[dict[str, Any]] = []
    cursor: str | None = None
    while len(jobs) < at_most:
        page = read(job_id, cursor=cursor, limit=min(MAX_PAGE, at_most - len(jobs)))
        jobs += page["jobs"]
        sent, cursor = cursor, page.get("next_cursor")
        if not cursor:
            return Edges(jobs, more=False)
        if str(cursor) == sent:  # a page that would never end
            raise LeaseholdError("the coordinator answered the same page of edges again")
    return Edges(jobs[:at_most], more=cursor is not None)


def edges_of(client: SyncClient, job: Job, at_most: int) -> tuple[Edges, Edges]:
    """The job's parents and dependents, asked for only when it has some."""
    none = Edges([], more=False)
    if at_most <= 0:
        return none, none
    parents = read_edges(client, job.id, parents=True, at_most=at_most) if job.depth else none
    dependents = (
        read_edges(client, job.id, parents=False, at_most=at_most) if job.dependents else none
    )
    return parents, dependents


EDGE_COLUMNS = (
    Column("ID", justify="right"),
    Column("KIND", shrink=8, cap=40),
    Column("STATUS"),
    Column("ON FAILURE"),
    Column("SPAWN KEY", shrink=8, cap=40),
)


def edge_table(title: str, edges: Edges, total: int | None, width: int | None) -> RenderableType:
    """One side of the job's edges; the caption says how many more there are."""
    rows: list[list[Cell]] = [
        [
            str(e["id"]),
            e["kind"] if e["kind"] is not None else "(deleted)",
            status_text(e["status"]) if e["status"] is not None else Text("deleted", "dim"),
            _on_failure(e.get("on_failure")),
            e.get("spawn_key") or "",
        ]
        for e in edges.jobs
    ]
    caption = None
    if edges.more:
        of = f" of {total:,}" if total is not None else ""
        caption = f"first {len(rows):,}{of} shown (--edges N)"
    return fitted(EDGE_COLUMNS, rows, width, title=title, caption=caption)


def _on_failure(value: Any) -> str:
    # The edge's choice, in the words of the question an operator asks of it.
    return "run" if value == "run" else "cancel"


def edges_json(edges: Edges) -> dict[str, Any]:
    return {"jobs": edges.jobs, "more": edges.more}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The statuses of a job's direct dependents at one moment (at most ``MAX_COMPARED``)."""

    statuses: Mapping[int, str | None]
    on_failure: Mapping[int, str]
    more: bool


def snapshot(client: SyncClient, job: Job) -> Snapshot | None:
    """The job's dependents as they stand, or None when it has none."""
    if not job.dependents:
        return None
    edges = read_edges(client, job.id, parents=False, at_most=MAX_COMPARED)
    return Snapshot(
        {e["id"]: e["status"] for e in edges.jobs},
        {e["id"]: e.get("on_failure") or "cancel" for e in edges.jobs},
        edges.more,
    )


@dataclass(frozen=True, slots=True)
class Effect:
    """What a change of a job did to its direct dependents: how many went to each status
    (``moved``), and, for a running job whose cancel waits for its worker, how many waiting
    dependents its end will cancel (``pending``)."""

    moved: Counter[str]
    pending: int
    partial: bool  # more dependents than were compared

    def sentence(self, verb: str) -> str:
        """What happened, for ``verb`` "cancelled" (``3 dependents cancelled``) or
        "revived" (``2 dependents revived (1 queued, 1 waiting)``); "" for nothing."""
        more = f" (among the first {MAX_COMPARED:,})" if self.partial else ""
        if self.pending:
            n = self.pending
            return f"{n:,} waiting {_noun(n)} will be cancelled when it ends{more}"
        if not self.moved:
            return ""
        if verb == "revived":
            n = sum(self.moved.values())
            parts = ", ".join(f"{k:,} {status}" for status, k in sorted(self.moved.items()))
            return f"{n:,} {_noun(n)} revived ({parts}){more}"
        told = [
            f"{k:,} {_noun(k)} {status if status == verb else 'now ' + status}"
            for status, k in sorted(self.moved.items(), key=lambda item: item[0] != verb)
        ]
        return ", ".join(told) + more


def _noun(n: int) -> str:
    return "dependent" if n == 1 else "dependents"


def effect(before: Snapshot | None, after: Snapshot | None, job: Job) -> Effect:
    """Compare the dependents before and after the change: each whose status changed
    counts under its new status. A running job marked for cancelling has changed nothing
    yet; its waiting dependents (those it would cancel) are ``pending``."""
    if before is None or after is None:
        return Effect(Counter(), 0, partial=False)
    partial = before.more or after.more
    if job.status == "running" and job.cancel_requested:
        pending = sum(
            1
            for job_id, status in before.statuses.items()
            if status == "waiting" and before.on_failure.get(job_id) != "run"
        )
        return Effect(Counter(), pending, partial)
    moved: Counter[str] = Counter(
        status
        for job_id, status in after.statuses.items()
        if status is not None and before.statuses.get(job_id, status) != status
    )
    return Effect(moved, 0, partial)


def said_with(headline: str, change: Effect, verb: str) -> str:
    """The command's headline and what it did to the dependents, in one line."""
    told = change.sentence(verb)
    return f"{headline}; {told}" if told else headline
