"""The Store contract: one suite, run against every backend on a fresh database.

A backend is done when it passes this suite. Times come from the store itself
(``store.now()``), since PostgreSQL answers with the database's clock.
"""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta

import pytest

from leasehold.coordinator.rules.backoff import BackoffPolicy
from leasehold.coordinator.rules.transitions import (
    Outcome,
    decide_complete,
    decide_expire,
    decide_fail,
    decide_release,
    decide_renew,
    decide_requeue,
)
from leasehold.coordinator.store.contract import (
    AttemptPage,
    DeadFilter,
    Decide,
    Expired,
    JobFilter,
    LeaseRequest,
    NewJob,
    Store,
)
from leasehold.errors import IdempotencyConflict, StaleToken
from leasehold.model import JSON, AttemptOutcome, Job, JobStatus, Report

HOUR = timedelta(hours=1)


def new_job(
    kind: str = "k",
    payload: JSON = None,
    *,
    key: str | None = None,
    request_hash: str = "h",
    run_after: datetime | None = None,
    max_attempts: int = 3,
) -> NewJob:
    return NewJob(kind, payload, max_attempts, run_after, key, request_hash)


async def insert(store: Store, *jobs: NewJob) -> list[Job]:
    return [i.job for i in await store.job_insert_many(jobs or [new_job()])]


async def lease(
    store: Store, kinds: tuple[str, ...] | None = None, n: int = 1, seconds: float = 3600
) -> list[Job]:
    return await store.job_lease(LeaseRequest("w1", seconds, kinds, n))


async def get(store: Store, job_id: int) -> Job:
    job = await store.job_get(job_id)
    assert job is not None
    return job


async def decide_one(store: Store, job_id: int, decide: Decide) -> Outcome:
    (outcome,) = await store.jobs_decide([(job_id, decide)])
    assert outcome is not None
    return outcome


def complete(token: int, result: JSON = None) -> Decide:
    return lambda job, now: decide_complete(job, token, result, now)


def fail(token: int, error: str, *, retryable: bool = True) -> Decide:
    policy = BackoffPolicy(600.0, 600.0)  # >= 300 s: never due in a test
    return lambda job, now: decide_fail(
        job, token, error, now, retryable=retryable, policy=policy, rng=random.Random(1)
    )


def expire(token: int) -> Decide:
    return lambda job, now: decide_expire(job, token, now)


# -- inserting ---------------------------------------------------------------------------


async def test_insert_and_lease_answers_each_part_on_its_own(store: Store, t0: int) -> None:
    both = await store.job_insert_and_lease(
        [new_job("a", 1), new_job("b", 2)],
        [LeaseRequest("w1", 60, ("a",), 5), LeaseRequest("w2", 60, ("c",), 5)],
    )
    assert both.error is None
    assert [i.job.payload for i in both.inserted] == [1, 2]
    first, second = both.leased
    assert [(j.payload, j.lease_owner, j.lease_token) for j in first or []] == [(1, "w1", t0)]
    assert second == []
    # A refused insert fails no lease: they still take what is there.
    await insert(store, new_job("a", key="taken", request_hash="one"))
    refused = await store.job_insert_and_lease(
        [new_job("a", key="taken", request_hash="other")], [LeaseRequest("w3", 60, ("b",), 5)]
    )
    assert isinstance(refused.error, IdempotencyConflict)
    assert refused.inserted == []
    ((leased,),) = [r or [] for r in refused.leased]
    assert (leased.payload, leased.lease_owner) == (2, "w3")


async def test_insert_stores_every_field_and_get_reads_it_back(store: Store) -> None:
    """A new job is queued, unleased, due at its creation time, and read back unchanged."""
    before = await store.now()
    payload = {"to": "ü@example.com", "n": [1, 2.5, None, True], "nested": {"x": ""}}
    (job,) = await insert(store, new_job("email", payload, key="k1", max_attempts=7))
    after = await store.now()
    assert (job.kind, job.payload, job.status) == ("email", payload, JobStatus.QUEUED)
    assert (job.attempts, job.max_attempts, job.lease_token) == (0, 7, 0)
    assert (job.idempotency_key, job.request_hash) == ("k1", "h")
    unset = (job.lease_owner, job.lease_expires_at, job.leased_at, job.finished_at)
    assert unset == (None, None, None, None)
    assert (job.result, job.last_error, job.report) == (None, None, None)
    assert before <= job.created_at <= after
    assert job.run_after == job.created_at
    assert job.created_at.utcoffset() == timedelta(0)
    assert await store.job_get(job.id) == job
    assert await store.job_get(job.id + 1000) is None


@pytest.mark.parametrize("payload", [None, 0, "", [], {}, "null", [None], {"a": None}])
async def test_json_payloads_round_trip(store: Store, payload: JSON) -> None:
    """Payloads that look empty or null are stored as given, not as SQL NULL."""
    (job,) = await insert(store, new_job(payload=payload))
    stored = await store.job_get(job.id)
    assert stored is not None
    assert stored.payload == payload
    assert type(stored.payload) is type(payload)


async def test_insert_many_keeps_request_order_and_given_run_after(store: Store) -> None:
    later = (await store.now()) + HOUR
    jobs = await insert(store, new_job("a"), new_job("b", run_after=later), new_job("c"))
    assert [j.kind for j in jobs] == ["a", "b", "c"]
    assert jobs[0].id < jobs[1].id < jobs[2].id
    assert jobs[1].run_after == later


async def test_used_idempotency_key_returns_the_existing_job(store: Store) -> None:
    (first,) = await store.job_insert_many([new_job(key="k")])
    (again,) = await store.job_insert_many([new_job(key="k")])
    assert (first.created, again.created) == (True, False)
    assert again.job == first.job
    assert len(await store.job_list(JobFilter())) == 1


async def test_idempotency_keys_are_per_kind(store: Store) -> None:
    """The same key for two kinds makes two jobs (protocol 1.2): two producers cannot
    collide by choosing the same key for different work."""
    (mail,) = await store.job_insert_many([new_job("mail", key="welcome:ada")])
    (sms,) = await store.job_insert_many([new_job("sms", key="welcome:ada", request_hash="x")])
    assert (mail.created, sms.created) == (True, True)
    assert mail.job.id != sms.job.id
    (again,) = await store.job_insert_many([new_job("sms", key="welcome:ada", request_hash="x")])
    assert (again.created, again.job.id) == (False, sms.job.id)


async def test_key_used_twice_in_one_batch_creates_one_job(store: Store) -> None:
    one, two = await store.job_insert_many([new_job(key="k"), new_job(key="k")])
    assert (one.created, two.created) == (True, False)
    assert two.job.id == one.job.id


async def test_idempotency_conflict_rolls_back_the_whole_batch(store: Store) -> None:
    """A key reused with a different request hash raises and inserts none of the batch."""
    await insert(store, new_job(key="k", request_hash="first"))
    with pytest.raises(IdempotencyConflict):
        await store.job_insert_many(
            [new_job("fresh"), new_job(key="new"), new_job(key="k", request_hash="second")]
        )
    assert [j.idempotency_key for j in await store.job_list(JobFilter())] == ["k"]
    assert await store.counter_totals() == {("enqueued", "k"): 1}


async def test_concurrent_inserts_of_one_key_create_one_job(store: Store) -> None:
    results = await asyncio.gather(*(store.job_insert_many([new_job(key="k")]) for _ in range(20)))
    assert sum(r[0].created for r in results) == 1
    assert len({r[0].job.id for r in results}) == 1


# -- leasing -----------------------------------------------------------------------------


async def test_lease_takes_oldest_run_after_first_then_lowest_id(store: Store) -> None:
    now = await store.now()
    late, tie_a, tie_b, early, future = await insert(
        store,
        new_job(run_after=now - timedelta(seconds=1)),
        new_job(run_after=now - timedelta(seconds=5)),
        new_job(run_after=now - timedelta(seconds=5)),
        new_job(run_after=now - timedelta(seconds=9)),
        new_job(run_after=now + HOUR),
    )
    assert [j.id for j in await lease(store, n=2)] == [early.id, tie_a.id]
    assert [j.id for j in await lease(store, n=10)] == [tie_b.id, late.id]
    assert await lease(store) == []
    assert (await get(store, future.id)).status is JobStatus.QUEUED


async def test_lease_with_kinds_merges_their_queues_in_order(store: Store) -> None:
    now = await store.now()
    a1, b2, c3, a4, b5, c6 = await insert(
        store,
        *(
            new_job(kind, run_after=now - timedelta(seconds=age))
            for kind, age in [("a", 1), ("b", 2), ("c", 3), ("a", 4), ("b", 5), ("c", 6)]
        ),
    )
    got = await lease(store, kinds=("a", "b", "missing"), n=3)
    assert [j.id for j in got] == [b5.id, a4.id, b2.id]
    assert [j.id for j in await lease(store, kinds=("b", "a"), n=5)] == [a1.id]
    assert await lease(store, kinds=("missing",)) == []
    assert await lease(store, kinds=()) == []
    assert [j.id for j in await lease(store, n=5)] == [c6.id, c3.id]


async def test_lease_increments_token_and_attempts_and_records_the_attempt(
    store: Store,
    t0: int,
) -> None:
    (queued,) = await insert(store)
    before = await store.now()
    (leased,) = await store.job_lease(LeaseRequest("worker-7", 2.5, None))
    assert (leased.id, leased.status, leased.lease_owner) == (queued.id, "running", "worker-7")
    assert (leased.lease_token, leased.attempts, leased.lease_seconds) == (t0, 1, 2.5)
    assert leased.leased_at is not None and before <= leased.leased_at <= await store.now()
    assert leased.lease_expires_at is not None
    granted = leased.lease_expires_at - leased.leased_at
    assert abs(granted - timedelta(seconds=2.5)) < timedelta(milliseconds=1)
    assert await store.job_get(queued.id) == leased
    (attempt,) = await store.attempts_list(queued.id)
    assert (attempt.token, attempt.worker_id, attempt.outcome) == (t0, "worker-7", "running")
    assert (attempt.leased_at, attempt.finished_at, attempt.error) == (leased.leased_at, None, None)
    assert (await store.counter_totals())[("leased", "k")] == 1


async def test_a_second_lease_after_expiry_gets_the_next_token(store: Store, t0: int) -> None:
    (job,) = await insert(store)
    (first,) = await lease(store, seconds=0)
    await decide_one(store, job.id, expire(first.lease_token))
    (second,) = await lease(store)
    assert (second.lease_token, second.attempts, second.report) == (t0 + 1, 2, None)
    assert [a.token for a in await store.attempts_list(job.id)] == [t0, t0 + 1]


async def test_lease_tokens_are_unique_across_jobs_and_increase_per_job(store: Store) -> None:
    """Tokens come from one coordinator-wide sequence: no two leases share one, so a
    token can only ever speak for the job it was issued for."""
    a, b = await insert(store, new_job(), new_job())
    (first_a,) = await lease(store, seconds=0)
    (first_b,) = await lease(store)
    await decide_one(store, a.id, expire(first_a.lease_token))
    (second_a,) = await lease(store)
    tokens = [first_a.lease_token, first_b.lease_token, second_a.lease_token]
    assert tokens == sorted(set(tokens))  # unique and increasing in lease order
    wrong = await decide_one(store, b.id, complete(first_a.lease_token))
    assert isinstance(wrong.error, StaleToken)
    assert [x.token for x in await store.attempts_list(a.id)] == tokens[::2]
    page = await store.attempts_list(a.id, AttemptPage(after_token=tokens[0], limit=1))
    assert [x.token for x in page] == [tokens[2]]


class _Unsealable(Exception):
    pass


def _refuse(jobs: object) -> None:
    raise _Unsealable


async def test_a_lease_whose_seal_fails_is_rolled_back(store: Store) -> None:
    """``LeaseRequest.seal`` runs before the commit: if it raises, nothing is leased."""
    (job,) = await insert(store)
    with pytest.raises(_Unsealable):
        await store.job_lease(LeaseRequest("w1", 60, None, 5, seal=_refuse))
    after = await get(store, job.id)
    assert (after.status, after.attempts, after.lease_owner) == (JobStatus.QUEUED, 0, None)
    assert await store.attempts_list(job.id) == []
    (leased,) = await lease(store)
    assert leased.attempts == 1


async def test_concurrent_leases_never_share_a_job(store: Store) -> None:
    ids = {j.id for j in await insert(store, *(new_job() for _ in range(120)))}

    async def lessee() -> list[int]:
        got: list[int] = []
        while jobs := await lease(store, n=3):
            got += [j.id for j in jobs]
        return got

    taken = [i for got in await asyncio.gather(*(lessee() for _ in range(12))) for i in got]
    assert sorted(taken) == sorted(ids)
    assert (await store.counter_totals())[("leased", "k")] == 120


# -- deciding ----------------------------------------------------------------------------


async def test_decide_gets_the_stored_job_and_the_store_clock(store: Store) -> None:
    (job,) = await insert(store)
    (leased,) = await lease(store)
    seen: list[tuple[Job, datetime]] = []

    def spy(stored: Job, now: datetime) -> Outcome:
        seen.append((stored, now))
        return Outcome(stored)

    before = await store.now()
    outcome = await decide_one(store, job.id, spy)
    after = await store.now()
    assert outcome == Outcome(leased)
    ((stored, now),) = seen
    assert stored == leased
    assert before <= now <= after


async def test_complete_writes_the_outcome_and_closes_the_attempt(store: Store, t0: int) -> None:
    (job,) = await insert(store)
    await lease(store)
    outcome = await decide_one(store, job.id, complete(t0, {"ok": [1]}))
    assert outcome.changed and outcome.error is None
    stored = await store.job_get(job.id)
    assert stored == outcome.job
    assert (stored.status, stored.result, stored.report) == ("completed", {"ok": [1]}, "completed")
    (attempt,) = await store.attempts_list(job.id)
    assert (attempt.outcome, attempt.finished_at, attempt.error) == (
        AttemptOutcome.COMPLETED,
        stored.finished_at,
        None,
    )
    assert (await store.counter_totals())[("completed", "k")] == 1


async def test_result_none_is_stored_as_none_and_a_repeat_changes_nothing(
    store: Store, t0: int
) -> None:
    (job,) = await insert(store)
    await lease(store)
    done = await decide_one(store, job.id, complete(t0, None))
    again = await decide_one(store, job.id, complete(t0, {"late": True}))
    assert (again.changed, again.error, again.job) == (False, None, done.job)
    stored = await store.job_get(job.id)
    assert stored is not None and stored.result is None
    assert (await store.counter_totals())[("completed", "k")] == 1


async def test_stale_token_is_rejected_and_counted_but_writes_nothing(
    store: Store, t0: int
) -> None:
    (job,) = await insert(store)
    (leased,) = await lease(store)
    outcome = await decide_one(store, job.id, complete(t0 + 1))
    assert isinstance(outcome.error, StaleToken) and not outcome.changed
    assert await store.job_get(job.id) == leased
    assert (await store.counter_totals())[("stale_token", "k")] == 1
    assert [a.outcome for a in await store.attempts_list(job.id)] == ["running"]


async def test_fail_with_attempts_left_queues_a_retry(store: Store, t0: int) -> None:
    (job,) = await insert(store, new_job(max_attempts=2))
    await lease(store)
    outcome = await decide_one(store, job.id, fail(t0, "boom"))
    stored = await store.job_get(job.id)
    assert stored == outcome.job
    assert (stored.status, stored.last_error, stored.report) == ("queued", "boom", "failed")
    assert stored.run_after > await store.now() + timedelta(seconds=60)
    assert await lease(store) == []  # not due yet
    (attempt,) = await store.attempts_list(job.id)
    assert (attempt.outcome, attempt.error) == ("failed", "boom")


async def test_fail_on_the_last_attempt_is_dead_and_requeue_revives(store: Store, t0: int) -> None:
    (job,) = await insert(store, new_job(max_attempts=1))
    await lease(store)
    await decide_one(store, job.id, fail(t0, "fatal"))
    assert (await get(store, job.id)).status is JobStatus.DEAD
    revived = await decide_one(store, job.id, decide_requeue)
    stored = await store.job_get(job.id)
    assert stored == revived.job
    assert (stored.status, stored.attempts, stored.report) == ("queued", 0, Report.REVOKED)
    (again,) = await lease(store)
    assert (again.lease_token, again.attempts) == (t0 + 1, 1)
    totals = await store.counter_totals()
    assert (totals[("dead", "k")], totals[("requeued", "k")]) == (1, 1)


async def test_release_gives_the_attempt_back(store: Store, t0: int) -> None:
    (job,) = await insert(store)
    await lease(store)
    outcome = await decide_one(store, job.id, lambda j, now: decide_release(j, t0, now))
    stored = await store.job_get(job.id)
    assert stored == outcome.job
    assert (stored.status, stored.attempts, stored.lease_token) == ("queued", 0, t0)
    assert [a.outcome for a in await store.attempts_list(job.id)] == ["released"]


async def test_renew_moves_the_expiry(store: Store, t0: int) -> None:
    (job,) = await insert(store)
    (leased,) = await lease(store, seconds=5)
    outcome = await decide_one(store, job.id, lambda j, now: decide_renew(j, t0, 100.0, now))
    stored = await store.job_get(job.id)
    assert stored == outcome.job
    assert stored.lease_expires_at is not None and leased.lease_expires_at is not None
    assert stored.lease_expires_at - leased.lease_expires_at > timedelta(seconds=90)
    assert stored.lease_seconds == 100.0


async def test_decide_batch_answers_none_for_unknown_ids_in_place(store: Store) -> None:
    a, b = await insert(store, new_job(), new_job())
    outcomes = await store.jobs_decide(
        [(b.id, decide_requeue), (b.id + 100, decide_requeue), (a.id, decide_requeue)]
    )
    assert outcomes[1] is None
    assert [o.job.id for o in outcomes if o is not None] == [b.id, a.id]


async def test_decide_batch_is_one_transaction(store: Store, t0: int) -> None:
    """A rule raising midway undoes the batch's earlier writes."""
    a, b = await insert(store, new_job(), new_job())
    await lease(store, n=2)

    def boom(job: Job, now: datetime) -> Outcome:
        raise RuntimeError("a bug in a rule")

    with pytest.raises(RuntimeError):
        await store.jobs_decide([(a.id, complete(t0)), (b.id, boom)])
    assert (await get(store, a.id)).status is JobStatus.RUNNING
    assert [x.outcome for x in await store.attempts_list(a.id)] == ["running"]
    assert ("completed", "k") not in await store.counter_totals()


async def test_a_batch_on_distinct_jobs_writes_each_as_decided(store: Store) -> None:
    """Completions, failures (retried and final), a stale report and an unchanged renewal
    decided together: each job, its attempt and the counts as if decided one by one."""
    jobs = await insert(store, *(new_job(max_attempts=1 if n == 3 else 3) for n in range(5)))
    leased = {j.id: j for j in await lease(store, n=5)}
    a, b, c, d, e = (leased[j.id] for j in jobs)
    outcomes = await store.jobs_decide(
        [
            (a.id, complete(a.lease_token, {"n": 1})),
            (b.id, complete(b.lease_token)),
            (c.id, fail(c.lease_token, "boom")),
            (d.id, fail(d.lease_token, "fatal")),
            (e.id, complete(e.lease_token + 1000)),  # not its token: refused, nothing written
        ]
    )
    assert [o.changed if o is not None else None for o in outcomes] == [
        True,
        True,
        True,
        True,
        False,
    ]
    stored = [await get(store, j.id) for j in jobs]
    assert [s.status for s in stored] == ["completed", "completed", "queued", "dead", "running"]
    assert stored[0].result == {"n": 1} and stored[2].last_error == "boom"
    assert stored[2].run_after > c.run_after and stored[3].finished_at is not None
    attempts = [[x.outcome for x in await store.attempts_list(j.id)] for j in jobs]
    assert attempts == [["completed"], ["completed"], ["failed"], ["failed"], ["running"]]
    totals = await store.counter_totals()
    assert (totals[("completed", "k")], totals[("failed", "k")]) == (2, 2)


async def test_repeated_id_in_one_batch_sees_the_earlier_write(store: Store, t0: int) -> None:
    (job,) = await insert(store)
    await lease(store)
    first, second = await store.jobs_decide([(job.id, complete(t0, 1)), (job.id, complete(t0, 2))])
    assert first is not None and second is not None
    assert (first.changed, second.changed, second.job.result) == (True, False, 1)


# -- expiry ------------------------------------------------------------------------------


async def test_expired_scan_lists_run_out_leases_oldest_first(store: Store) -> None:
    now = await store.now()
    a, _, c = await insert(
        store, *(new_job(run_after=now - timedelta(seconds=s)) for s in (3, 2, 1))
    )
    (first,) = await lease(store, seconds=0)
    await lease(store, seconds=3600)
    (third,) = await lease(store, seconds=0)
    assert (first.id, third.id) == (a.id, c.id)
    expected = [Expired(a.id, first.lease_token), Expired(c.id, third.lease_token)]
    assert await store.jobs_expired(10) == expected
    assert await store.jobs_expired(1) == expected[:1]


async def test_expire_requeues_once_even_when_two_reapers_race(store: Store) -> None:
    jobs = await insert(store, *(new_job() for _ in range(30)))
    tokens = {j.id: j.lease_token for j in await lease(store, n=30, seconds=0)}
    expired = await store.jobs_expired(100)
    assert len(expired) == 30
    batch: list[tuple[int, Decide]] = [(e.job_id, expire(e.token)) for e in expired]
    first, second = await asyncio.gather(
        store.jobs_decide(batch), store.jobs_decide(list(reversed(batch)))
    )
    changed = [o for o in [*first, *second] if o is not None and o.changed]
    assert len(changed) == 30
    for job in jobs:
        stored = await store.job_get(job.id)
        assert stored is not None
        assert (stored.status, stored.lease_token, stored.attempts) == ("queued", tokens[job.id], 1)
        assert stored.last_error is not None and "lease expired" in stored.last_error
        (attempt,) = await store.attempts_list(job.id)
        assert (attempt.outcome, attempt.error) == ("expired", stored.last_error)
    assert (await store.counter_totals())[("lease_expired", "k")] == 30
    assert await store.jobs_expired(100) == []


async def test_expire_on_the_last_attempt_is_dead(store: Store, t0: int) -> None:
    (job,) = await insert(store, new_job(max_attempts=1))
    await lease(store, seconds=0)
    outcome = await decide_one(store, job.id, expire(t0))
    assert outcome.job.status is JobStatus.DEAD
    assert await store.job_get(job.id) == outcome.job


# -- reading -----------------------------------------------------------------------------


async def test_list_filters_and_pages_by_cursor(store: Store) -> None:
    jobs = await insert(store, *(new_job("ab"[i % 2]) for i in range(7)))
    await lease(store, kinds=("a",), n=2)
    page = await store.job_list(JobFilter(limit=3))
    assert [j.id for j in page] == [j.id for j in jobs[:3]]
    rest = await store.job_list(JobFilter(after_id=page[-1].id, limit=100))
    assert [j.id for j in rest] == [j.id for j in jobs[3:]]
    running = await store.job_list(JobFilter(status=JobStatus.RUNNING))
    assert [j.id for j in running] == [jobs[0].id, jobs[2].id]
    queued_a = await store.job_list(JobFilter(status=JobStatus.QUEUED, kind="a"))
    assert [j.id for j in queued_a] == [jobs[4].id, jobs[6].id]
    assert await store.job_list(JobFilter(kind="zzz")) == []


async def test_dead_filter_by_kind_and_error_substring(store: Store) -> None:
    errors = ["disk 100% full", "timeout_a", "Disk 100% full", "x"]
    jobs = await insert(store, *(new_job("ab"[i % 2], max_attempts=1) for i in range(4)))
    for job, error in zip(jobs, errors, strict=True):
        (leased,) = await lease(store)
        await decide_one(store, leased.id, fail(leased.lease_token, error))
        assert leased.id == job.id
    ids = [j.id for j in jobs]
    assert await store.jobs_dead(DeadFilter()) == ids
    assert await store.jobs_dead(DeadFilter(kind="b")) == [ids[1], ids[3]]
    assert await store.jobs_dead(DeadFilter(error_contains="100% f")) == [ids[0], ids[2]]
    assert await store.jobs_dead(DeadFilter(error_contains="disk")) == [ids[0]]  # case matters
    assert await store.jobs_dead(DeadFilter(error_contains="t_a", kind="b")) == [ids[1]]
    assert await store.jobs_dead(DeadFilter(error_contains="%")) == [ids[0], ids[2]]
    assert await store.jobs_dead(DeadFilter(limit=1)) == [ids[0]]


async def test_attempt_history_is_oldest_first(store: Store, t0: int) -> None:
    (job,) = await insert(store, new_job(max_attempts=5))
    for _ in range(3):
        (leased,) = await lease(store, seconds=0)
        await decide_one(store, job.id, expire(leased.lease_token))
    (leased,) = await lease(store)
    await decide_one(store, job.id, complete(leased.lease_token))
    history = await store.attempts_list(job.id)
    assert [(a.token, a.outcome) for a in history] == [
        (t0, "expired"),
        (t0 + 1, "expired"),
        (t0 + 2, "expired"),
        (t0 + 3, "completed"),
    ]
    assert all(a.finished_at is not None and a.finished_at >= a.leased_at for a in history)
    assert await store.attempts_list(job.id + 1) == []


async def test_counts_by_status_include_every_status(store: Store, t0: int) -> None:
    assert await store.counts_by_status() == dict.fromkeys(JobStatus, 0)
    a, _, _ = await insert(store, new_job(), new_job(), new_job())
    await lease(store)
    await decide_one(store, a.id, complete(t0))
    await lease(store)
    assert await store.counts_by_status() == {
        JobStatus.WAITING: 0,
        JobStatus.QUEUED: 1,
        JobStatus.RUNNING: 1,
        JobStatus.COMPLETED: 1,
        JobStatus.DEAD: 0,
        JobStatus.CANCELLED: 0,
    }


async def test_counter_totals_are_by_event_and_kind(store: Store) -> None:
    await insert(store, new_job("a"), new_job("a"), new_job("b"), new_job("a", key="k"))
    await insert(store, new_job("a", key="k"))  # a repeat is not counted again
    await lease(store, kinds=("b",))
    assert await store.counter_totals() == {
        ("enqueued", "a"): 3,
        ("enqueued", "b"): 1,
        ("leased", "b"): 1,
    }


async def test_kept_counts_and_windows_agree_with_the_jobs(store: Store) -> None:
    """The counts /stats reads are kept as jobs change; they must equal a fresh count."""
    jobs = await insert(store, *(new_job("a") for _ in range(6)), *(new_job("b") for _ in range(3)))
    leased = await lease(store, n=5)
    rng, policy = random.Random(3), BackoffPolicy(0.0, 0.0)
    await store.jobs_decide(
        [
            (leased[0].id, lambda j, now: decide_complete(j, j.lease_token, 1, now)),
            (leased[1].id, lambda j, now: decide_complete(j, j.lease_token, 2, now)),
            (
                leased[2].id,
                lambda j, now: decide_fail(
                    j, j.lease_token, "x", now, retryable=False, policy=policy, rng=rng
                ),
            ),
            (leased[3].id, lambda j, now: decide_release(j, j.lease_token, now)),
            (leased[4].id, lambda j, now: decide_complete(j, 99, None, now)),  # stale
        ]
    )
    await store.jobs_decide([(leased[2].id, decide_requeue)])
    snapshot = await store.stats([60, 300])
    kept = dict.fromkeys(JobStatus, 0)
    for (_, status), n in snapshot.counts.items():
        kept[status] += n
    assert kept == await store.counts_by_status()
    assert sum(n for (kind, _), n in snapshot.counts.items() if kind == "b") == 3
    recent = snapshot.windows[60]
    assert recent[("leased", leased[0].kind)][0] + recent.get(("leased", "b"), (0, 0.0))[0] == 5
    assert sum(n for (name, _), (n, _) in recent.items() if name == "completed") == 2
    assert sum(n for (name, _), (n, _) in recent.items() if name == "stale_token") == 1
    assert snapshot.totals[("enqueued", "a")] == 6
    assert snapshot.oldest_available_at is not None
    assert snapshot.oldest_available_at <= snapshot.now
    assert len(jobs) == 9
    await store.prune(3600)  # recent figures are kept
    assert (await store.stats([60])).windows[60] == recent
