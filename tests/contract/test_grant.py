"""The lease grant's own rules, which each driver keeps in its statement (DESIGN.md §11):
a new token above every token issued before, one more attempt, an attempt record, and the
grant counted (one queued job less, one running more, a 'leased' event) as the tally
counts every other change, whichever form of the grant ran."""

from __future__ import annotations

from collections import Counter

from leasehold.coordinator.store.contract import Flow, LeaseRequest, NewJob, QueuesSnapshot, Store
from leasehold.model import AttemptOutcome, Job, JobStatus


def job(kind: str, queue: str = "default") -> NewJob:
    return NewJob(kind, None, 3, None, None, "h", queue=queue)


async def kept_counts(store: Store) -> dict[JobStatus, int]:
    counts = dict.fromkeys(JobStatus, 0)
    for (_, status), n in (await store.stats([60])).counts.items():
        counts[status] += n
    return counts


async def test_every_form_of_the_grant_keeps_its_rules_and_counts(store: Store) -> None:
    """Plain, narrowed by kind and queue, capped by a limit, around a paused queue: each
    grant's jobs carry fresh tokens and attempts, and the kept counts match the jobs."""
    await store.job_insert_many(
        [job("a"), job("a"), job("b", "q2"), job("b", "q2"), job("c", "q3"), job("c", "q3")]
    )
    granted: list[Job] = []
    granted += await store.job_lease(LeaseRequest("w", 60.0, None, 1))  # plain
    granted += await store.job_lease(LeaseRequest("w", 60.0, ("b",), 1, ("q2",)))  # narrowed
    await store.limit_put("a", Flow(1))  # "a" has one running: capped at its room, nothing
    assert await store.job_lease(LeaseRequest("w", 60.0, ("a",), 5)) == []
    await store.queue_pause("q3")
    granted += await store.job_lease(LeaseRequest("w", 60.0, None, 5))  # capped, q3 paused
    assert sorted(j.kind for j in granted) == ["a", "b", "b"]
    tokens = [j.lease_token for j in granted]
    assert tokens == sorted(tokens) and len(set(tokens)) == 3
    for leased in granted:
        assert leased.status is JobStatus.RUNNING and leased.attempts == 1
        (attempt,) = await store.attempts_list(leased.id)
        assert (attempt.token, attempt.outcome) == (leased.lease_token, AttemptOutcome.RUNNING)
    assert await kept_counts(store) == await store.counts_by_status()
    totals = await store.counter_totals()
    assert Counter({k: n for (e, k), n in totals.items() if e == "leased"}) == Counter(
        j.kind for j in granted
    )
    snapshot: QueuesSnapshot = await store.queues_snapshot(60)
    assert set(snapshot.paused) == {"q3"} and "q3" in snapshot.oldest_available
