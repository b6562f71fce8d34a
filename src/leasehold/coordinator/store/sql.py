"""The WHERE clauses of the filtered reads and deletes, built once for every dialect.

A ``Dialect`` says how its engine writes a substring test, membership in a list and an age;
``Where`` collects clauses and their parameters in order, each a ``?`` (PostgreSQL's
driver numbers them). The filters themselves (which fields, which comparison, which order)
are written once below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from leasehold.coordinator.store.contract import DeadFilter, DeleteFilter, JobFilter


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one engine spells what the filters need. Templates take ``{col}`` and ``{p}``
    (the placeholder of the value)."""

    contains: str  # {col} contains the text {p}
    any_of: str  # {col} is one of the list {p}
    as_list: Callable[[Sequence[Any]], Any]  # a list as that placeholder takes it
    # {col} is more than {p} seconds before the database's now; None where the database
    # keeps no clock of ours (SQLite: the driver gives the age as a time instead).
    older_than: str | None
    as_time: Callable[[Any], Any] = lambda value: value  # a datetime as the engine keeps it
    indexed_by: str = ""  # {index} named for the planner (SQLite plans without statistics)


@dataclass(slots=True)
class Where:
    """Clauses joined by AND, and their parameters in placeholder order."""

    dialect: Dialect
    clauses: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def add(self, template: str, value: Any, column: str = "") -> None:
        self.params.append(value)
        self.clauses.append(template.format(col=column, p="?"))

    def equal(self, column: str, value: Any) -> None:
        if value is not None:
            self.add("{col} = {p}", value, column)

    def sql(self) -> str:
        return " AND ".join(self.clauses) or "1 = 1"


def job_list(query: JobFilter, dialect: Dialect) -> Where:
    """A job list's filter: after the cursor in id order (either way), each given field."""
    where = Where(dialect)
    if query.after_id is not None or not query.descending:
        where.add("id < {p}" if query.descending else "id > {p}", query.after_id or 0)
    for column in ("status", "kind", "queue", "idempotency_key"):
        where.equal(column, getattr(query, column))
    if query.error_contains is not None:
        where.add(dialect.contains, query.error_contains, "last_error")
    return where


def dead(query: DeadFilter, dialect: Dialect) -> Where:
    """The dead jobs a bulk requeue takes."""
    where = Where(dialect)
    where.equal("status", "dead")
    where.equal("kind", query.kind)
    if query.error_contains is not None:
        where.add(dialect.contains, query.error_contains, "last_error")
    return where


NOT_NEEDED = (
    # From the parent's edges to its dependents (CROSS JOIN: SQLite keeps this order).
    "NOT EXISTS (SELECT 1 FROM job_deps CROSS JOIN jobs AS dependent"
    " WHERE job_deps.parent_id = jobs.id AND dependent.id = job_deps.job_id"
    " AND dependent.status IN ('waiting', 'queued', 'running'))"
)
"""A job no unfinished dependent needs (DESIGN.md §22)."""


def deletable(query: DeleteFilter, dialect: Dialect) -> tuple[Where, str]:
    """The jobs a delete takes, and the order it takes them in: the oldest finished first
    when it goes by age (retention), else by id."""
    where = Where(dialect)
    where.add(dialect.any_of, dialect.as_list([str(s) for s in query.statuses]), "status")
    if query.ids is not None:
        where.add(dialect.any_of, dialect.as_list(list(query.ids)), "id")
    where.equal("kind", query.kind)
    where.equal("queue", query.queue)
    if query.keep_needed:
        where.clauses.append(NOT_NEEDED)
    if query.finished_before is None and query.finished_age_seconds is None:
        return where, "id"
    where.clauses.append("finished_at IS NOT NULL")
    if query.finished_before is not None:
        where.add("{col} < {p}", dialect.as_time(query.finished_before), "finished_at")
    if query.finished_age_seconds is not None:
        if dialect.older_than is None:
            raise ValueError("this dialect takes an age as finished_before")
        where.add(dialect.older_than, query.finished_age_seconds, "finished_at")
    return where, "finished_at"
