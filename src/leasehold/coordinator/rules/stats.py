"""Turning a StatsSnapshot into the figures operators read (GET /stats)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from leasehold.coordinator.rules.presence import Unserved, unserved
from leasehold.coordinator.store.contract import QueuesSnapshot, StatsSnapshot, WorkerSeen
from leasehold.model import TOP_NAMES as TOP_NAMES  # also named here, where callers find it
from leasehold.model import Event, JobStatus

RATE_WINDOW_SECONDS = 60
"""'last minute' figures count events in the last 60 seconds (to the second)."""
AVERAGE_WINDOW_SECONDS = 300
"""Average wait and run times are over jobs leased / completed in the last 5 minutes."""
WINDOWS = (RATE_WINDOW_SECONDS, AVERAGE_WINDOW_SECONDS)


@dataclass(frozen=True, slots=True)
class Folded:
    """The rows ``fold`` added up past the largest ones: how many names, and their counts
    summed (by status, or by event)."""

    names: int
    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class FoldedRows:
    """What each folded table of ``Stats`` left out of its rows; None where nothing was."""

    by_kind: Folded | None = None
    by_queue: Folded | None = None
    totals_by_kind: Folded | None = None


@dataclass(frozen=True, slots=True)
class Stats:
    by_status: dict[str, int]
    by_kind: dict[str, dict[str, int]]
    by_queue: dict[str, dict[str, int]]
    totals: dict[str, int]
    totals_by_kind: dict[str, dict[str, int]]
    avg_wait_seconds: float | None
    avg_run_seconds: float | None
    average_window_seconds: int
    lease_expirations: int
    stale_token_rejections: int
    oldest_queued_age_seconds: float | None
    completed_last_minute: int
    failed_last_minute: int
    # Queued work that no live worker serves (heartbeats only; see coordinator/rules/presence.py).
    unserved: list[Unserved] = field(default_factory=list)
    # The rows by_kind, by_queue and totals_by_kind leave out, added up apart from them: no
    # row of a table is a sum, so a kind or queue of any name is counted as itself.
    folded: FoldedRows = field(default_factory=FoldedRows)


@dataclass(frozen=True, slots=True)
class Figures:
    """``Stats``, and what /metrics shows besides, from the same read: the queued jobs of
    every (queue, kind) pair, and how many workers are live."""

    stats: Stats
    queued: dict[tuple[str, str], int]
    live_workers: int


def _average(sums: dict[tuple[str, str], tuple[int, float]], event: Event) -> float | None:
    count = sum(n for (name, _), (n, _) in sums.items() if name == event)
    total = sum(t for (name, _), (_, t) in sums.items() if name == event)
    return total / count if count else None


def _window_count(sums: dict[tuple[str, str], tuple[int, float]], event: Event) -> int:
    return sum(n for (name, _), (n, _) in sums.items() if name == event)


# TOP_NAMES (how many kinds and queues /stats and /metrics name) is in the model, which
# metrics.py shares without importing the rules.


def fold(
    table: dict[str, dict[str, int]], top: int = TOP_NAMES
) -> tuple[dict[str, dict[str, int]], Folded | None]:
    """The ``top`` rows with the largest totals, by name, and the rest added up apart (None
    if there is no rest). The rest is never a row of the table: a real name, whatever it
    is (``other`` too), keeps its own counts."""
    if len(table) <= top:
        return dict(sorted(table.items())), None
    ranked = sorted(table, key=lambda name: (-sum(table[name].values()), name))
    kept = {name: table[name] for name in sorted(ranked[:top])}
    rest: dict[str, int] = {}
    for name in ranked[top:]:
        for key, n in table[name].items():
            rest[key] = rest.get(key, 0) + n
    return kept, Folded(len(table) - top, rest)


def figures(snapshot: StatsSnapshot, live: Iterable[WorkerSeen] = ()) -> Figures:
    """``summarize``, with the queued pairs and the live workers' count kept beside."""
    seen = list(live)
    return Figures(summarize(snapshot, seen), snapshot.queued_pairs, len(seen))


def queue_ages(snapshot: QueuesSnapshot) -> dict[str, float]:
    """How long each queue's longest-waiting available job has waited, in seconds (queues
    where none waits are left out)."""
    return {
        queue: max(0.0, (snapshot.now - oldest).total_seconds())
        for queue, oldest in snapshot.oldest_available.items()
    }


def summarize(snapshot: StatsSnapshot, live: Iterable[WorkerSeen] = ()) -> Stats:
    """Every status appears (zero included); averages are None when nothing happened.
    ``live``: the workers live now, to tell which queued work none of them serves."""
    by_status = dict.fromkeys((s.value for s in JobStatus), 0)
    by_kind: dict[str, dict[str, int]] = {}
    for (kind, status), n in snapshot.counts.items():
        by_status[status] += n
        by_kind.setdefault(kind, dict.fromkeys((s.value for s in JobStatus), 0))[status] += n
    by_queue: dict[str, dict[str, int]] = {}
    for (queue, status), n in snapshot.queue_counts.items():
        by_queue.setdefault(queue, dict.fromkeys((s.value for s in JobStatus), 0))[status] += n
    totals = dict.fromkeys((e.value for e in Event), 0)  # every event, zero included
    totals_by_kind: dict[str, dict[str, int]] = defaultdict(dict)
    for (event, kind), n in snapshot.totals.items():
        totals[event] = totals.get(event, 0) + n
        totals_by_kind[kind][event] = n
    recent = snapshot.windows.get(RATE_WINDOW_SECONDS, {})
    longer = snapshot.windows.get(AVERAGE_WINDOW_SECONDS, {})
    oldest = None
    if snapshot.oldest_available_at is not None:
        oldest = max(0.0, (snapshot.now - snapshot.oldest_available_at).total_seconds())
    kinds, kinds_folded = fold(by_kind)
    queues, queues_folded = fold(by_queue)
    kind_totals, kind_totals_folded = fold(totals_by_kind)
    return Stats(
        by_status=by_status,
        by_kind=kinds,
        by_queue=queues,
        totals=totals,
        totals_by_kind=kind_totals,
        avg_wait_seconds=_average(longer, Event.LEASED),
        avg_run_seconds=_average(longer, Event.COMPLETED),
        average_window_seconds=AVERAGE_WINDOW_SECONDS,
        lease_expirations=totals[Event.LEASE_EXPIRED],
        stale_token_rejections=totals[Event.STALE_TOKEN],
        oldest_queued_age_seconds=oldest,
        completed_last_minute=_window_count(recent, Event.COMPLETED),
        failed_last_minute=_window_count(recent, Event.FAILED),
        unserved=unserved(snapshot.queued_pairs, live),
        folded=FoldedRows(kinds_folded, queues_folded, kind_totals_folded),
    )
