"""The Store contract for operator features: deleting and pruning jobs, paused queues,
worker heartbeats, list filters and time limits; run against every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from leasehold.coordinator.maintenance.retention import Retention, prune_finished
from leasehold.coordinator.rules.stats import WINDOWS, summarize
from leasehold.coordinator.rules.transitions import DELETABLE, decide_complete, decide_run_now
from leasehold.coordinator.store.contract import (
    DeleteFilter,
    JobFilter,
    LeaseRequest,
    NewJob,
    Store,
    WorkerBeat,
)
from leasehold.coordinator.store.open import open_store
from leasehold.model import JobStatus

from .test_store import complete, decide_one, fail, get, insert, lease, new_job


async def finish(store: Store, n: int, kind: str = "k") -> list[int]:
    """n jobs leased and completed; their ids."""
    jobs = await insert(store, *[new_job(kind) for _ in range(n)])
    leased = await store.job_lease(LeaseRequest("w1", 3600, (kind,), n))
    for job in leased:
        await decide_one(store, job.id, complete(job.lease_token))
    return [j.id for j in jobs]


async def test_pruning_takes_old_finished_jobs_with_their_history_and_keeps_totals(
    store: Store,
) -> None:
    """Finished jobs past their age go with their attempts, in batches; queued and young
    jobs stay, the kept counts follow, and the event totals do not move."""
    done = await finish(store, 5)
    (queued,) = await insert(store, new_job("other"))
    totals_before = await store.counter_totals()
    assert await prune_finished(store, Retention(3600, 3600, 3600)) == 0  # all too young
    assert await prune_finished(store, Retention(1e-9, 0, 0), batch=2) == 5
    for job_id in done:
        assert await store.job_get(job_id) is None
        assert await store.attempts_list(job_id) == []
    assert (await get(store, queued.id)).status is JobStatus.QUEUED
    assert await store.counter_totals() == totals_before
    stats = summarize(await store.stats(WINDOWS))
    assert stats.by_status == {s.value: n for s, n in (await store.counts_by_status()).items()}
    assert stats.totals["completed"] == 5


async def test_a_pruned_idempotency_key_can_be_used_again(store: Store) -> None:
    """Once its job is gone, a key makes a new job: the key's window is the retention."""
    (job,) = await insert(store, new_job(key="once"))
    (leased,) = await lease(store)
    await decide_one(store, job.id, complete(leased.lease_token))
    await prune_finished(store, Retention(1e-9, 0, 0))
    (again,) = await store.job_insert_many([new_job(key="once")])
    assert again.created and again.job.id != job.id


async def test_delete_by_filter_never_takes_running_jobs(store: Store) -> None:
    """Running jobs are not deletable; a filter by kind and queue takes only its own."""
    a, b, c = await insert(
        store,
        NewJob("a", None, 3, None, None, "h", queue="q1"),
        NewJob("a", None, 3, None, None, "h", queue="q2"),
        NewJob("b", None, 3, None, None, "h", queue="q1"),
    )
    await store.job_lease(LeaseRequest("w", 60, ("b",), 1))
    assert await store.jobs_delete(DeleteFilter(DELETABLE, ids=(c.id,))) == 0
    assert await store.jobs_delete(DeleteFilter(DELETABLE, kind="a", queue="q2")) == 1
    assert await store.job_get(b.id) is None
    assert await store.job_get(a.id) is not None
    assert (await store.counts_by_status())[JobStatus.QUEUED] == 1
    stats = summarize(await store.stats(WINDOWS))
    assert stats.by_status["queued"] == 1 and stats.by_status["running"] == 1


async def test_finished_before_matches_only_finished_jobs(store: Store) -> None:
    (queued,) = await insert(store, new_job("q"))
    await finish(store, 2)
    later = await store.now() + timedelta(seconds=1)
    deleted = await store.jobs_delete(DeleteFilter(DELETABLE, finished_before=later))
    assert deleted == 2
    assert await store.job_get(queued.id) is not None


async def test_a_paused_queue_is_not_leased_from_and_the_pause_is_stored(
    store: Store, database_url: str
) -> None:
    """Pausing holds back every shape of lease from that queue, for every store on the
    database, until it is resumed; other queues go on."""
    jobs = await insert(
        store,
        NewJob("k", None, 3, None, None, "h", queue="slow"),
        NewJob("k", None, 3, None, None, "h", queue="fast"),
    )
    assert await store.queue_pause("slow")
    assert not await store.queue_pause("slow")
    other = open_store(database_url) if not database_url.startswith("sqlite") else store
    if other is not store:
        await other.open()
    try:
        for kinds, queues in [(None, None), (("k",), None), (None, ("slow", "fast"))]:
            got = await other.job_lease(LeaseRequest("w", 60, kinds, 5, queues))
            assert [j.queue for j in got] in ([], ["fast"])
        assert (await get(store, jobs[0].id)).status is JobStatus.QUEUED
        assert await other.job_lease(LeaseRequest("w", 60, None, 5, ("slow",))) == []
        snapshot = await store.queues_snapshot(60)
        assert set(snapshot.paused) == {"slow"}
        assert await store.queue_resume("slow")
        assert not await store.queue_resume("slow")
        (leased,) = await other.job_lease(LeaseRequest("w", 60, None, 5, None))
        assert leased.queue == "slow"
    finally:
        if other is not store:
            await other.close()


async def test_queue_snapshot_tells_oldest_waiting_and_recent_completions(store: Store) -> None:
    await insert(store, NewJob("waits", None, 3, None, None, "h", queue="q1"))
    await finish(store, 2)
    snapshot = await store.queues_snapshot(60)
    assert set(snapshot.oldest_available) == {"q1"}
    assert snapshot.completed_recent == {"default": 2}


async def test_heartbeats_are_stored_listed_and_forgotten(store: Store) -> None:
    started = datetime(2026, 1, 1, tzinfo=UTC)
    beat = WorkerBeat("w-1", "host", 42, "0.1.0", ("a", "b"), None, 8, started)
    seen = await store.worker_beat(beat)
    assert seen.beat == beat
    again = await store.worker_beat(beat)
    assert again.last_seen >= seen.last_seen
    (listed,) = await store.workers_list(60)
    assert listed.beat == beat
    assert await store.workers_forget(3600) == 0
    assert await store.workers_forget(0) == 1
    assert await store.workers_list(3600) == []


async def test_job_lists_filter_by_queue_error_and_key_either_way(store: Store) -> None:
    first, second, third = await insert(
        store,
        NewJob("k", None, 1, None, "key-1", "h", queue="q1"),
        NewJob("k", None, 1, None, None, "h", queue="q2"),
        NewJob("k", None, 1, None, None, "h", queue="q1"),
    )
    newest = await store.job_list(JobFilter(descending=True, limit=2))
    assert [j.id for j in newest] == [third.id, second.id]
    after = await store.job_list(JobFilter(descending=True, after_id=second.id))
    assert [j.id for j in after] == [first.id]
    in_q1 = await store.job_list(JobFilter(queue="q1"))
    assert [j.id for j in in_q1] == [first.id, third.id]
    by_key = await store.job_list(JobFilter(idempotency_key="key-1"))
    assert [j.id for j in by_key] == [first.id]
    (leased,) = await store.job_lease(LeaseRequest("w", 60, None, 1, ("q2",)))
    await decide_one(store, leased.id, fail(leased.lease_token, "Traceback\nValueError: bad x"))
    found = await store.job_list(JobFilter(error_contains="bad x"))
    assert [j.id for j in found] == [second.id]


async def test_time_limits_are_stored_and_leased_with_the_job(store: Store) -> None:
    (job,) = await insert(store, NewJob("k", None, 3, None, None, "h", timeout_seconds=2.5))
    assert job.timeout_seconds == 2.5
    (leased,) = await lease(store)
    assert leased.timeout_seconds == 2.5
    assert (await get(store, job.id)).timeout_seconds == 2.5


async def test_run_now_makes_a_waiting_job_due(store: Store) -> None:
    later = await store.now() + timedelta(hours=1)
    (job,) = await insert(store, new_job(run_after=later))
    assert await lease(store) == []
    outcome = await decide_one(store, job.id, decide_run_now)
    assert outcome.changed
    (leased,) = await lease(store)
    assert leased.id == job.id
    assert decide_complete(leased, leased.lease_token, None, later).changed
