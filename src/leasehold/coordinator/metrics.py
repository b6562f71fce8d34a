"""Prometheus metrics of one coordinator process (DESIGN.md §13).

Event counters, the wait/run histograms and the HTTP requests count what this process did
since it started (Prometheus' usual semantics: sum them over instances, and rate() copes
with restarts). The gauges (``Readings``: jobs by status, kind and queue, queued jobs by
queue and kind, each queue's oldest waiting job and pause, live workers, unserved work)
are read from the database at each scrape, so every coordinator of a database reports the
same, database-wide, figures: take their max over instances, not their sum.

Labels: at most ``TOP_NAMES`` kinds (and queues) have series of their own, the rest count
under ``OTHER`` (an empty label, which no kind or queue can take). Which ones is chosen again
at each scrape from the figures (``render``): the largest by job count in the database, so a
restart, or a burst of new names, does not take the series from the kinds that carry the
work. Until the first scrape, and while fewer are chosen, a new name takes a free place. A
name that leaves the top loses its series (its counter starts again from 0 if it returns,
which rate() reads as a reset): every family keeps at most ``TOP_NAMES`` + 1 series per label.
A kind given series gets every event counter at 0 at once, so that its first death (say)
is an increase that ``increase()`` sees, not the birth of a series at 1.

HTTP requests are labelled by method (the standard ones; any other is ``OTHER``), route
template (never the path) and status: bounded by the routes there are.
"""

from __future__ import annotations

import platform
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from leasehold._version import __version__
from leasehold.model import OTHER, TOP_NAMES, Event, Job, JobStatus, Outcome

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
# An HTTP request's time, long polls included (they wait up to their wait_seconds).
_HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# The route label of a request no route matched (an unknown path): no template starts so.
UNMATCHED: Final = "unmatched"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# The process and Python figures of prometheus_client's default registry (process_*: CPU,
# memory, open files, start time; python_info; python_gc_*), in each coordinator's.
_RUNTIME_COLLECTORS: Final = (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR)


@dataclass(frozen=True, slots=True)
class Readings:
    """What the gauges show, read from the database at a scrape. ``by_kind`` and
    ``by_queue``: the largest names only (as the figures fold them), which are also the
    names that get series of their own; the other tables may name any, and what they name
    outside those counts under ``OTHER``."""

    by_status: Mapping[str, int]
    by_kind: Mapping[str, Mapping[str, int]]
    by_queue: Mapping[str, Mapping[str, int]]
    queued: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (queue, kind)
    oldest_seconds: Mapping[str, float] = field(default_factory=dict)  # queue -> its wait
    paused: Collection[str] = ()
    live_workers: int = 0
    unserved: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (queue, kind)


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

        def gauge(name: str, doc: str, *labels: str) -> Gauge:
            return Gauge(f"leasehold_{name}", doc, labels, registry=self.registry)

        self.queued = gauge("jobs_queued", "Queued jobs by queue and kind.", "queue", "kind")
        self.oldest = gauge(
            "oldest_queued_age_seconds",
            "How long each queue's longest-waiting available job has waited (0: none waits).",
            "queue",
        )
        self.paused = gauge(
            "queue_paused", "1 for a paused queue, 0 otherwise (the rest: how many).", "queue"
        )
        self.live_workers = gauge("workers_live", "Workers that sent a heartbeat lately.")
        self.unserved = gauge(
            "unserved_jobs",
            "Queued jobs of a kind in a queue that no live worker serves.",
            "queue",
            "kind",
        )
        self.named_gauges = (self.queued, self.oldest, self.paused, self.unserved)
        gauge("build_info", "1, labelled with the running release.", "version", "python").labels(
            __version__, platform.python_version()
        ).set(1)
        self.http_requests = Counter(
            "leasehold_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.http_seconds = Histogram(
            "leasehold_http_request_duration_seconds",
            "From a request's arrival to its answer, by method and route template.",
            ["method", "route"],
            buckets=_HTTP_BUCKETS,
            registry=self.registry,
        )
        self._http: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        for collector in _RUNTIME_COLLECTORS:
            self.registry.register(collector)

        # Each labelled family, by id (the children's key), with its label names.
        families: list[tuple[Counter | Histogram, tuple[str, ...]]] = [
            *((counter, ("kind",)) for counter in self.events.values()),
            (self.wait, ("kind", "queue")),
            (self.run, ("kind",)),
        ]
        self._families = {id(family): (family, names) for family, names in families}
        self._start_counters(OTHER)

    def _start_counters(self, kind: str) -> None:
        """Every event counter of ``kind`` at 0 (those it has keep their count)."""
        for counter in self.events.values():
            self._child(counter, kind)

    def _label(self, what: str, name: str) -> str:
        named = self._named[what]
        if name in named:
            return name
        if len(named) < TOP_NAMES:
            named.add(name)
            if what == "kind":
                self._start_counters(name)
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
            for kind in chosen - self._named[what] if what == "kind" else ():
                self._start_counters(kind)
            self._named[what] = chosen
        if not (dropped["kind"] or dropped["queue"]):
            return
        for key in list(self._children):
            family, labelnames = self._families[int(key[0])]
            labels = dict(zip(labelnames, key[1:], strict=True))
            if labels.get("kind") in dropped["kind"] or labels.get("queue") in dropped["queue"]:
                family.remove(*key[1:])
                del self._children[key]

    def request(self, method: str, route: str | None, status: int, seconds: float) -> None:
        """Count one HTTP request (``route``: its template; None: no route matched)."""
        key = (method if method in _METHODS else OTHER, route or UNMATCHED, status)
        children = self._http.get(key)
        if children is None:
            children = (
                self.http_requests.labels(key[0], key[1], str(status)),
                self.http_seconds.labels(key[0], key[1]),
            )
            self._http[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def render(self, readings: Readings) -> bytes:
        """The metrics in Prometheus' text format, from the readings of the database,
        which also choose the names the counters and histograms label from now on."""
        by_status, by_kind, by_queue = readings.by_status, readings.by_kind, readings.by_queue
        self.choose(by_kind, by_queue)
        for known in JobStatus:  # every status the model has, zero included
            self.jobs.labels(known.value).set(by_status.get(known.value, 0))
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
        self._set_backlog(readings)
        return generate_latest(self.registry)

    def _set_backlog(self, readings: Readings) -> None:
        """The gauges alerts are written on: queued and unserved jobs by queue and kind,
        each queue's oldest waiting job and pause, live workers; names outside the chosen
        ones under ``OTHER`` (summed; the oldest job's age: the largest)."""
        for gauge in self.named_gauges:
            gauge.clear()
        queues = self._named["queue"]
        for gauge, table in ((self.queued, readings.queued), (self.unserved, readings.unserved)):
            folded: dict[tuple[str, str], int] = {}
            for (queue, kind), n in table.items():
                key = (self._named_or_other("queue", queue), self._named_or_other("kind", kind))
                folded[key] = folded.get(key, 0) + n
            for (queue, kind), n in folded.items():
                gauge.labels(queue, kind).set(n)
        rest_age = max(
            (a for q, a in readings.oldest_seconds.items() if q not in queues), default=0
        )
        rest_paused = sum(1 for q in readings.paused if q not in queues)
        for queue in queues:
            self.oldest.labels(queue).set(readings.oldest_seconds.get(queue, 0.0))
            self.paused.labels(queue).set(1 if queue in readings.paused else 0)
        if rest_age or rest_paused:
            self.oldest.labels(OTHER).set(rest_age)
            self.paused.labels(OTHER).set(rest_paused)
        self.live_workers.set(readings.live_workers)

    def _named_or_other(self, what: str, name: str) -> str:
        return name if name in self._named[what] else OTHER
