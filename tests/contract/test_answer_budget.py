"""Pages of jobs and batch leases stay within a byte budget (DESIGN.md §10)."""

from __future__ import annotations

from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.store.contract import JobFilter, NewJob, Store
from leasehold.model import JobStatus

BIG = "x" * 100_000  # each job's payload: about 100 kB as JSON


def big_job(n: int) -> NewJob:
    return NewJob("big", {"n": n, "blob": BIG}, 3, None, None, "h")


async def test_a_page_stops_at_its_byte_budget_and_says_so(store: Store) -> None:
    await store.job_insert_many([big_job(n) for n in range(5)])
    first = await store.job_list(JobFilter(limit=100, max_bytes=250_000))
    assert [j.payload["n"] for j in first] == [0, 1]
    assert first.cut
    rest = await store.job_list(JobFilter(after_id=first[-1].id, limit=100, max_bytes=250_000))
    assert [j.payload["n"] for j in rest] == [2, 3]
    last = await store.job_list(JobFilter(after_id=rest[-1].id, limit=100, max_bytes=250_000))
    assert len(last) == 1 and not last.cut
    # The first job of a page is always in it, whatever the budget.
    tiny = await store.job_list(JobFilter(limit=100, max_bytes=10))
    assert len(tiny) == 1 and tiny.cut


async def test_a_summary_page_leaves_payload_and_result_out(store: Store) -> None:
    await store.job_insert_many([big_job(n) for n in range(5)])
    page = await store.job_list(JobFilter(limit=100, max_bytes=250_000, summary=True))
    assert len(page) == 5 and not page.cut
    assert {j.payload for j in page} == {None} and {j.result for j in page} == {None}
    assert {j.kind for j in page} == {"big"}


async def test_a_batch_lease_leases_only_what_its_answer_can_carry(store: Store) -> None:
    """Five 100 kB jobs asked for with a 250 kB budget: two are leased and answered, and
    the other three stay queued with no attempt used."""
    inserted = await store.job_insert_many([big_job(n) for n in range(5)])
    service = JobService(store, max_answer_bytes=250_000)
    leased = await service.lease("w", 60, max_jobs=5)
    assert [j.payload["n"] for j in leased] == [0, 1]
    for i in inserted[2:]:
        job = await store.job_get(i.job.id)
        assert job is not None and job.status is JobStatus.QUEUED and job.attempts == 0
    again = await service.lease("w", 60, max_jobs=5)
    assert [j.payload["n"] for j in again] == [2, 3]
