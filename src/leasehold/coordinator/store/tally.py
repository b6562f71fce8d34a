"""What a transaction counts: events (with the value their rollups sum) and job counts.

Every backend keeps the same figures the same way: the transaction that changes jobs adds
to its ``Tally`` what it did (a job made, a lease granted, a decision written, a job
deleted), and the driver writes the whole tally once, before the commit, into its counter
tables (SQLite: ``counters``, ``rollups``, ``job_counts``; PostgreSQL: ``counters`` and
``rollups``, sharded). So /stats never counts a million rows, and the counts commit with
the changes they count or not at all. The one count kept in SQL is PostgreSQL's lease
grant, a single statement that counts the rows it updates (DESIGN.md, "Storage").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from leasehold.model import Event, Job, JobStatus, Outcome


@dataclass(slots=True)
class Tally:
    """Events by (name, kind), with the sum of their values, and job-count deltas by
    (queue, kind, status)."""

    events: Counter[tuple[Event, str]] = field(default_factory=Counter)
    sums: dict[tuple[Event, str], float] = field(default_factory=dict)
    counts: Counter[tuple[str, str, JobStatus]] = field(default_factory=Counter)
    # Running jobs by (kind, group key), and the groups a job was queued in (they may have
    # work again: store/flow.py looks at them again), for jobs with a group key.
    running: Counter[tuple[str, str]] = field(default_factory=Counter)
    woken: set[tuple[str, str]] = field(default_factory=set)

    def event(self, name: Event, kind: str, value: float = 0.0, n: int = 1) -> None:
        self.events[name, kind] += n
        self.sums[name, kind] = self.sums.get((name, kind), 0.0) + value

    def made(
        self,
        queue: str,
        kind: str,
        status: JobStatus = JobStatus.QUEUED,
        group_key: str | None = None,
    ) -> None:
        """A job enqueued: its event, and one more job of its queue, kind and status
        (queued, or waiting for its parents, or cancelled at once by one)."""
        self.event(Event.ENQUEUED, kind)
        self.counts[queue, kind, status] += 1
        if group_key is not None and status is JobStatus.QUEUED:
            self.woken.add((kind, group_key))

    def leased(self, job: Job, waited: float) -> None:
        """A lease granted; ``waited``: seconds from the job's run_after to its lease."""
        self.event(Event.LEASED, job.kind, max(0.0, waited))
        self.moved(job, JobStatus.QUEUED, JobStatus.RUNNING)

    def decided(self, before: Job, outcome: Outcome) -> None:
        """A rule's outcome written: the events it counts, and its change of status."""
        for name, value in outcome.counted():
            self.event(name, before.kind, value)
        if outcome.changed:
            self.moved(before, before.status, outcome.job.status)

    def removed(self, queue: str, kind: str, status: JobStatus) -> None:
        """A job deleted."""
        self.counts[queue, kind, status] -= 1

    def moved(self, job: Job, before: JobStatus, after: JobStatus) -> None:
        if before is not after:
            self.counts[job.queue, job.kind, before] -= 1
            self.counts[job.queue, job.kind, after] += 1
            if job.group_key is not None:
                group = (job.kind, job.group_key)
                self.running[group] += (after is JobStatus.RUNNING) - (before is JobStatus.RUNNING)
                if after is JobStatus.QUEUED:
                    self.woken.add(group)

    def rows(self) -> list[tuple[str, str, str, int, float]]:
        """Every change to write, as (name, kind, queue, n, value sum) rows of the counters
        table, sorted (so that two transactions lock counter rows in one order): events
        with the queue '', job counts under 'jobs:<status>'."""
        events = [
            (str(name), kind, "", n, self.sums[name, kind])
            for (name, kind), n in self.events.items()
            if n
        ]
        counts = [
            (f"jobs:{status}", kind, queue, n, 0.0)
            for (queue, kind, status), n in self.counts.items()
            if n
        ]
        return sorted(events + counts)

    def group_rows(self) -> list[tuple[str, str, int]]:
        """Running jobs' changes by group, as (kind, group key, n) rows, sorted."""
        return sorted((kind, group, n) for (kind, group), n in self.running.items() if n)

    def take(self) -> Tally:
        """What was counted so far, leaving this tally empty (a driver folds it into the
        statement it is about to send)."""
        taken = Tally(self.events, self.sums, self.counts, self.running, self.woken)
        self.events, self.sums, self.counts = Counter(), {}, Counter()
        self.running, self.woken = Counter(), set()
        return taken

    def __bool__(self) -> bool:
        return (
            any(self.events.values())
            or any(self.counts.values())
            or any(self.running.values())
            or bool(self.woken)
        )
