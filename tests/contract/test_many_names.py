"""Thousands of distinct kinds: capped, folded in the figures, cheap for leases (§10)."""

from __future__ import annotations

import time

import pytest

from leasehold.coordinator.rules.stats import TOP_NAMES
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.names import RELOAD_SECONDS, NameCaps
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import DeleteFilter, Flow, Store
from leasehold.coordinator.store.open import open_store
from leasehold.errors import TooManyNames
from leasehold.model import JobStatus

KINDS = 3000
PG_KINDS = 800  # PostgreSQL's store inserts row by row: fewer, for the suite's time


def kinds_for(database_url: str) -> int:
    return KINDS if database_url.startswith("sqlite") else PG_KINDS


async def enqueue_kinds(service: JobService, n: int, prefix: str = "tenant") -> None:
    for start in range(0, n, 1000):
        batch = [Enqueue(f"{prefix}-{k}") for k in range(start, min(n, start + 1000))]
        await service.enqueue_many(batch)


async def test_new_kinds_and_queues_past_the_cap_are_refused(store: Store) -> None:
    service = JobService(store, max_kinds=50, max_queues=3)
    await enqueue_kinds(service, 50)
    with pytest.raises(TooManyNames, match="50 distinct kinds"):
        await service.enqueue(Enqueue("one-too-many"))
    # A batch that would pass the cap inserts none of its jobs.
    with pytest.raises(TooManyNames):
        await service.enqueue_many([Enqueue("tenant-1"), Enqueue("new-a")])
    assert (await service.enqueue(Enqueue("tenant-7"))).created  # known kinds still pass
    await service.enqueue_many([Enqueue("tenant-1", queue=q) for q in ("a", "b")])
    with pytest.raises(TooManyNames, match="queues"):
        await service.enqueue(Enqueue("tenant-1", queue="c"))
    # Another coordinator (or a restart) knows them from the database.
    fresh = JobService(store, max_kinds=50)
    with pytest.raises(TooManyNames):
        await fresh.enqueue(Enqueue("one-too-many"))


async def test_the_figures_fold_thousands_of_kinds(store: Store, database_url: str) -> None:
    """3,000 kinds: /stats and /metrics name the top ones and add the rest up as other."""
    kinds = kinds_for(database_url)
    service = JobService(store, max_kinds=10_000)
    await enqueue_kinds(service, kinds)
    await service.enqueue_many([Enqueue("tenant-1")] * 5)  # the largest kind
    started = time.perf_counter()
    stats = await service.stats()
    body = service.metrics.render(await service.readings())
    assert time.perf_counter() - started < 5
    assert len(stats.by_kind) == TOP_NAMES
    assert stats.by_kind["tenant-1"]["queued"] == 6
    folded = stats.folded.by_kind
    assert folded is not None and folded.names == kinds - TOP_NAMES
    assert sum(c["queued"] for c in stats.by_kind.values()) + folded.counts["queued"] == kinds + 5
    assert len(stats.totals_by_kind) == TOP_NAMES
    assert len(body) < 200_000, len(body)
    assert body.count(b"leasehold_jobs_enqueued_total{") <= TOP_NAMES + 1
    # The gauges by queue and kind keep to the same names: one queue, 50 kinds and the rest.
    assert body.count(b"leasehold_jobs_queued{") == TOP_NAMES + 1
    assert body.count(b"leasehold_unserved_jobs{") <= TOP_NAMES + 1
    assert b'leasehold_jobs_queued{kind="",queue="default"} %d' % (kinds - TOP_NAMES) in body
    assert b'leasehold_jobs_by_kind{kind="",status="queued"} %d' % (kinds - TOP_NAMES) in body


async def test_a_kind_named_other_keeps_its_own_counts(store: Store) -> None:
    """The long tail was added up under a row named ``other``: a real kind of that name
    merged with it, and its completions vanished from ``totals_by_kind`` (the merge kept
    only the events the tail had). The tail is apart now; ``other`` is a kind like any."""
    service = JobService(store)
    await enqueue_kinds(service, TOP_NAMES + 10, prefix="tail")  # one job each
    await service.enqueue_many([Enqueue("other")] * 5)  # the largest kind
    (leased,) = await service.lease("w", 60, ["other"])
    await service.complete(leased.id, leased.lease_token)
    stats = await service.stats()
    assert stats.by_kind["other"] == {
        "waiting": 0,
        "queued": 4,
        "running": 0,
        "completed": 1,
        "dead": 0,
        "cancelled": 0,
    }
    assert stats.totals_by_kind["other"] == {"enqueued": 5, "leased": 1, "completed": 1}
    folded = stats.folded.by_kind
    assert folded is not None and (folded.names, folded.counts["queued"]) == (11, 11)
    assert sum(c["queued"] for c in stats.by_kind.values()) + 11 == stats.by_status["queued"]
    tail = stats.folded.totals_by_kind
    assert tail is not None and tail.counts == {"enqueued": 11}
    assert stats.folded.by_queue is None  # one queue: nothing left out


async def test_metrics_label_the_largest_kinds_not_the_first_seen(store: Store) -> None:
    """After a restart, 50 new kinds with a job each took every labelled series, and the
    kind with the work counted under the rest for as long as the process ran. The labels
    are chosen again from the figures at each scrape: the largest kinds by job count."""
    await JobService(store).enqueue_many([Enqueue("real")] * 100)
    restarted = JobService(store)  # a new process: its counters start empty
    await enqueue_kinds(restarted, TOP_NAMES, prefix="junk")
    await restarted.enqueue(Enqueue("real"))  # no scrape yet: every place is taken

    async def scrape() -> bytes:
        return restarted.metrics.render(await restarted.readings())

    first = await scrape()
    assert b'leasehold_jobs_enqueued_total{kind=""} 1.0' in first
    await restarted.enqueue_many([Enqueue("real")] * 2)
    body = await scrape()
    assert b'leasehold_jobs_enqueued_total{kind="real"} 2.0' in body
    assert b'leasehold_jobs_by_kind{kind="real",status="queued"} 103.0' in body
    # The one junk kind that left the top lost its series; one series per kind chosen, and
    # the rest under the label no kind can take.
    assert body.count(b"leasehold_jobs_enqueued_total{") == TOP_NAMES + 1
    assert b'leasehold_jobs_enqueued_total{kind="junk-9"}' not in body  # last by name
    assert b'leasehold_jobs_by_kind{kind="",status="queued"} 1.0' in body


async def test_a_limit_on_one_kind_does_not_make_leases_probe_every_kind(
    database_url: str,
) -> None:
    """With 3,000 queued kinds and a limit on one of them, a lease of jobs the limit does
    not stop costs about what it does without the limit (probing every kind cost 30 ms+;
    on PostgreSQL, 3,000 probes cost far more than the few extra round trips allowed).
    The quickest of 10 leases, without synchronous commits: the lease's own cost."""
    store = open_store(database_url, synchronous="OFF")
    await store.open()
    service = JobService(store, max_kinds=10_000)
    await enqueue_kinds(service, KINDS)

    async def quickest() -> float:
        times = []
        for _ in range(10):
            started = time.perf_counter()
            assert await service.lease("w", 60)
            times.append(time.perf_counter() - started)
        return min(times)

    try:
        plain = await quickest()
        await service.limit_put("tenant-2999", Flow(1))
        limited = await quickest()
    finally:
        await store.close()
    if database_url.startswith("sqlite"):
        assert limited < 2 * plain + 0.002, (plain, limited)
    else:  # a few more round trips (the heads' kinds, their limits and counts), not 3,000 probes
        assert limited < 3 * plain + 0.010, (plain, limited)


async def test_a_name_whose_jobs_are_gone_frees_its_place(store: Store) -> None:
    """Kinds and queues count while a job has them: once a burst's jobs are deleted, new
    names pass the cap again, on this coordinator (which reads the names again when a cap
    would be passed) and after a restart."""
    now = [0.0]
    caps = NameCaps(store.names_known, max_kinds=3, max_queues=2, clock=lambda: now[0])
    service = JobService(store, max_kinds=3, max_queues=2)
    service.names = caps
    await service.enqueue_many([Enqueue(f"burst-{k}", queue="q1") for k in range(3)])
    with pytest.raises(TooManyNames, match="3 distinct kinds"):
        await service.enqueue(Enqueue("real"))
    deleted = await store.jobs_delete(DeleteFilter((JobStatus.QUEUED,), kind="burst-0", limit=10))
    assert deleted == 1
    now[0] += RELOAD_SECONDS  # the names were read a moment ago: the next refusal reads them
    assert (await service.enqueue(Enqueue("real"))).created
    assert (await store.names_known())[0] == {"burst-1", "burst-2", "real"}
    restarted = JobService(store, max_kinds=3)
    with pytest.raises(TooManyNames):
        await restarted.enqueue(Enqueue("another"))
