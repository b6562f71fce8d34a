"""Job headers (trace context) are stored with the job and handed to every lessee."""

from __future__ import annotations

from leasehold.coordinator.store.contract import LeaseRequest, NewJob, Store

TRACE = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}


async def test_headers_come_back_on_every_read_and_lease(store: Store) -> None:
    with_headers = NewJob("k", {"a": 1}, 3, None, "with", "h1", headers=TRACE)
    without = NewJob("k", None, 3, None, "without", "h2")
    inserted = await store.job_insert_many([with_headers, without])
    assert [i.job.headers for i in inserted] == [TRACE, None]
    first = await store.job_get(inserted[0].job.id)
    assert first is not None and first.headers == TRACE
    leased = await store.job_lease(LeaseRequest("w", 60, ("k",), 2))
    assert [j.headers for j in leased] == [TRACE, None]


async def test_headers_are_not_part_of_the_idempotent_request(store: Store) -> None:
    """A retried enqueue from another trace is the same request."""
    (first,) = await store.job_insert_many([NewJob("k", 1, 3, None, "key", "h", headers=TRACE)])
    other = {"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}
    (again,) = await store.job_insert_many([NewJob("k", 1, 3, None, "key", "h", headers=other)])
    assert not again.created and again.job.id == first.job.id and again.job.headers == TRACE
