"""The figures every backend assembles the same way, from the counts it keeps: /stats'
snapshot, the queues' snapshot and the limits with their running jobs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from leasehold.coordinator.store.contract import KindLimit, QueuesSnapshot, StatsSnapshot
from leasehold.coordinator.store.driver import Tx
from leasehold.model import JobStatus


async def stats(tx: Tx, windows: Sequence[int]) -> StatsSnapshot:
    """Counts by kind, queue and status, event totals and per-window sums, in one read."""
    now = await tx.now()
    counts: Counter[tuple[str, JobStatus]] = Counter()
    queue_counts: Counter[tuple[str, JobStatus]] = Counter()
    queued_pairs: Counter[tuple[str, str]] = Counter()
    for queue, kind, status, n in await tx.job_counts():
        counts[kind, status] += n
        queue_counts[queue, status] += n
        if status is JobStatus.QUEUED:
            queued_pairs[queue, kind] += n
    totals = await tx.counter_totals()
    sums = {window: await tx.window_sums(window) for window in windows}
    available = await _oldest_leasable(tx, now)
    return StatsSnapshot(
        now, dict(counts), totals, sums, available, dict(queue_counts), dict(queued_pairs)
    )


async def _oldest_leasable(tx: Tx, now: datetime) -> datetime | None:
    """run_after of the longest-waiting job a worker could lease now: due, and not in a
    paused queue. A paused queue's jobs wait for an operator, not for workers; counting
    them would make "oldest waits" grow for as long as the pause lasts (GET /queues gives
    each queue's own figure)."""
    paused = await tx.queue_pauses()
    if not paused:
        oldest = await tx.oldest_queued(None)  # one read over the queued index
    else:
        heads = [await tx.oldest_queued(q) for q in await tx.queued_queues() if q not in paused]
        oldest = min((head for head in heads if head is not None), default=None)
    return oldest if oldest is not None and oldest <= now else None


async def queues(tx: Tx, window_seconds: int) -> QueuesSnapshot:
    """Paused queues, each queue's longest-waiting available job, and its completions in
    the last ``window_seconds``, in one read."""
    now = await tx.now()
    paused = await tx.queue_pauses()
    oldest = {}
    for queue in await tx.queued_queues():
        head = await tx.oldest_queued(queue)
        if head is not None and head <= now:
            oldest[queue] = head
    return QueuesSnapshot(now, paused, oldest, await tx.completed_by_queue(window_seconds))


async def limits(tx: Tx, kinds: Sequence[str] | None = None) -> list[KindLimit]:
    """The limits (those of ``kinds``, or all), by kind, each with its running jobs now."""
    every = await tx.limits_all()
    chosen = [(k, flow) for k, flow in every if kinds is None or k in kinds]
    running = await tx.running([k for k, _ in chosen])
    return [KindLimit(kind, f.max_running, running.get(kind, 0), f) for kind, f in chosen]
