"""Prometheus metrics of one coordinator process.

Event counters and the wait/run histograms count what this process did since it started
(Prometheus' usual semantics: sum them over instances, and rate() copes with restarts).
The gauges of jobs by status are read from the database at each scrape, so every
coordinator reports the same, database-wide, figures.

Labels: at most ``TOP_NAMES`` kinds (and queues) have series of their own, the rest count
under ``OTHER`` (an empty label, which no kind or queue can take). Which ones is chosen again
at each scrape from the figures (``render``): the largest by job count in the database, so a
restart, or a burst of new names, does not take the series from the kinds that carry the
work. Until the first scrape, and while fewer are chosen, a new name takes a free place. A
name that leaves the top loses its series (its counter starts again from 0 if it returns,
which rate() reads as a reset): every family keeps at most ``TOP_NAMES`` + 1 series per label.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from leasehold.model import OTHER, TOP_NAMES, Event, Job, Outcome

_TIME_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
    900,
    3600,
)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._children: dict[tuple[int | str, ...], Any] = {}
        # The kinds and queues that have series of their own (see the module docstring).
        self._named: dict[str, set[str]] = {"kind": set(), "queue": set()}

        def counter(name: str, doc: str) -> Counter:
            return Counter(f"leasehold_{name}", doc, ["kind"], registry=self.registry)

        # A counter per event, but renewals and cancel requests (which /stats counts).
        self.events = {
            Event.ENQUEUED: counter("jobs_enqueued", "Jobs enqueued."),
            Event.LEASED: counter("jobs_leased", "Leases granted."),
            Event.COMPLETED: counter("jobs_completed", "Jobs completed."),
            Event.FAILED: counter("jobs_failed", "Failure reports accepted."),
            Event.DEAD: counter("jobs_dead", "Jobs that went dead."),
            Event.LEASE_EXPIRED: counter(
                "lease_expirations", "Leases that ran out and were reaped."
            ),
            Event.STALE_TOKEN: counter(
                "stale_token_rejections", "Reports refused for a stale token."
            ),
            Event.RELEASED: counter("jobs_released", "Leases handed back unfinished."),
            Event.REQUEUED: counter("jobs_requeued", "Dead or cancelled jobs requeued."),
            Event.CANCELLED: counter("jobs_cancelled", "Jobs that ended cancelled."),
        }
        self.wait = Histogram(
            "leasehold_job_wait_seconds",
            "From when a job became available to when it was leased.",
            ["kind", "queue"],
            buckets=_TIME_BUCKETS,
            registry=self.registry,
        )
        self.run = Histogram(
            "leasehold_job_run_seconds",
            "From lease to completion.",
            ["kind"],
            buckets=_TIME_BUCKETS,
            registry=self.registry,
        )
        self.jobs = Gauge(
            "leasehold_jobs", "Jobs in the database by status.", ["status"], registry=self.registry
        )
        self.jobs_by_kind = Gauge(
            "leasehold_jobs_by_kind",
            "Jobs in the database by kind and status.",
            ["kind", "status"],
            registry=self.registry,
        )
        self.jobs_by_queue = Gauge(
            "leasehold_jobs_by_queue",
            "Jobs in the database by queue and status.",
            ["queue", "status"],
            registry=self.registry,
        )

        # Each labelled family, by id (the children's key), with its label names.
        families: list[tuple[Counter | Histogram, tuple[str, ...]]] = [
            *((counter, ("kind",)) for counter in self.events.values()),
            (self.wait, ("kind", "queue")),
            (self.run, ("kind",)),
        ]
        self._families = {id(family): (family, names) for family, names in families}

    def _label(self, what: str, name: str) -> str:
        named = self._named[what]
        if name in named:
            return name
        if len(named) < TOP_NAMES:
            named.add(name)
            return name
        return OTHER

    def _child(self, metric: Counter | Histogram, *labels: str) -> Any:
        # labels() checks and locks on every call; a few calls per job add up under load.
        key: tuple[int | str, ...] = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def enqueued(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            self._child(self.events[Event.ENQUEUED], self._label("kind", job.kind)).inc()

    def leased(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            kind = self._label("kind", job.kind)
            self._child(self.events[Event.LEASED], kind).inc()
            if job.leased_at is not None:
                waited = (job.leased_at - job.run_after).total_seconds()
                queue = self._label("queue", job.queue)
                self._child(self.wait, kind, queue).observe(max(0.0, waited))

    def decided(self, outcome: Outcome) -> None:
        job = outcome.job
        kind = self._label("kind", job.kind)
        for event in outcome.events:
            counter = self.events.get(event)
            if counter is not None:
                self._child(counter, kind).inc()
            if event == Event.COMPLETED and job.leased_at and job.finished_at:
                ran = (job.finished_at - job.leased_at).total_seconds()
                self._child(self.run, kind).observe(max(0.0, ran))

    def choose(self, kinds: Iterable[str], queues: Iterable[str]) -> None:
        """Give series of their own to these kinds and queues (the largest, from the
        figures) and to no others: the series of names no longer chosen are removed."""
        dropped = {"kind": set[str](), "queue": set[str]()}
        for what, names in (("kind", kinds), ("queue", queues)):
            chosen = set(names)  # the figures' names: TOP_NAMES at most, as they are folded
            dropped[what] = self._named[what] - chosen
            self._named[what] = chosen
        if not (dropped["kind"] or dropped["queue"]):
            return
        for key in list(self._children):
            family, labelnames = self._families[int(key[0])]
            labels = dict(zip(labelnames, key[1:], strict=True))
            if labels.get("kind") in dropped["kind"] or labels.get("queue") in dropped["queue"]:
                family.remove(*key[1:])
                del self._children[key]

    def render(
        self,
        by_status: dict[str, int],
        by_kind: dict[str, dict[str, int]],
        by_queue: dict[str, dict[str, int]],
    ) -> bytes:
        """The metrics in Prometheus' text format, from the figures (``rules/stats.py``:
        the largest kinds and queues by name, the rest left out), which also choose the
        names the counters and histograms label from now on."""
        self.choose(by_kind, by_queue)
        for status, n in by_status.items():
            self.jobs.labels(status).set(n)
        # Names that left the top go away here; the rest is what the named rows leave out.
        self.jobs_by_kind.clear()
        self.jobs_by_queue.clear()
        for gauge, table in ((self.jobs_by_kind, by_kind), (self.jobs_by_queue, by_queue)):
            for name, counts in table.items():
                for status, n in counts.items():
                    gauge.labels(name, status).set(n)
            rest = {s: n - sum(c.get(s, 0) for c in table.values()) for s, n in by_status.items()}
            if any(rest.values()):
                for status, n in rest.items():
                    gauge.labels(OTHER, status).set(n)
        return generate_latest(self.registry)
