"""Workflows on every backend (DESIGN.md §22): jobs that wait for others, what a parent's
end does to them, graphs in one request, parents' results in a lease, fenced children, and
retention that keeps what a dependent still needs."""

from __future__ import annotations

import orjson
import pytest

from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import DeleteFilter, Store
from leasehold.errors import InvalidGraph, InvalidTransition, NotRunning, StaleToken
from leasehold.model import Dependency, Job, JobStatus, OnFailure, Parent


def after(*ids: int, run: bool = False) -> tuple[Dependency, ...]:
    mode = OnFailure.RUN if run else OnFailure.CANCEL
    return tuple(Dependency(i, mode) for i in ids)


async def enqueue(service: JobService, kind: str = "k", **options: object) -> Job:
    return (await service.enqueue(Enqueue(kind, **options))).job  # type: ignore[arg-type]


async def run(service: JobService, kind: str, result: object = None) -> Job:
    """Lease one job of ``kind`` and complete it."""
    (job,) = await service.lease("w", 60, [kind])
    return await service.complete(job.id, job.lease_token, result)


async def kill(service: JobService, kind: str) -> Job:
    """Lease one job of ``kind`` and fail it for good."""
    (job,) = await service.lease("w", 60, [kind])
    return await service.fail(job.id, job.lease_token, "boom", retryable=False)


def result(parent: Parent) -> object:
    """A parent's result as the lease answer carries it (the stored JSON, as a fragment)."""
    assert isinstance(parent.result, orjson.Fragment)
    return orjson.loads(orjson.dumps(parent.result))


async def status(service: JobService, job: Job) -> JobStatus:
    return (await service.get(job.id)).status


@pytest.fixture
def service(store: Store) -> JobService:
    return JobService(store)


async def test_a_dependent_waits_and_is_released_by_its_last_parent(service: JobService) -> None:
    a, b = await enqueue(service, "a"), await enqueue(service, "b")
    c = await enqueue(service, "c", depends_on=after(a.id, b.id))
    assert (c.status, c.waiting_for, c.depth) == (JobStatus.WAITING, 2, 1)
    assert await service.lease("w", 60, ["c"]) == []  # not leasable while it waits
    assert (await service.stats()).by_status["waiting"] == 1
    await run(service, "a", {"n": 1})
    assert (await service.get(c.id)).waiting_for == 1
    await run(service, "b", {"n": 2})
    released = await service.get(c.id)
    assert (released.status, released.waiting_for) == (JobStatus.QUEUED, 0)
    (leased,) = await service.lease("w", 60, ["c"])
    assert leased.id == c.id
    assert [(p.id, p.status, result(p)) for p in leased.parents or ()] == [
        (a.id, JobStatus.COMPLETED, {"n": 1}),
        (b.id, JobStatus.COMPLETED, {"n": 2}),
    ]


async def test_a_parent_that_dies_cancels_its_dependents_transitively(service: JobService) -> None:
    a = await enqueue(service, "a")
    b = await enqueue(service, "b", depends_on=after(a.id))
    c = await enqueue(service, "c", depends_on=after(b.id))
    cleanup = await enqueue(service, "cleanup", depends_on=after(a.id, run=True))
    await kill(service, "a")
    for job in (b, c):
        cancelled = await service.get(job.id)
        assert cancelled.status is JobStatus.CANCELLED
        assert cancelled.finished_at is not None
    assert (await service.get(b.id)).blocked_by == a.id
    assert f"parent job {a.id} is dead" in ((await service.get(b.id)).last_error or "")
    assert (await service.get(c.id)).blocked_by == b.id
    assert await status(service, cleanup) is JobStatus.QUEUED  # runs anyway (opt-out)


async def test_requeueing_a_dead_parent_revives_what_it_cancelled(service: JobService) -> None:
    a = await enqueue(service, "a")
    b = await enqueue(service, "b", depends_on=after(a.id))
    c = await enqueue(service, "c", depends_on=after(b.id))
    await kill(service, "a")
    revived = await service.requeue(a.id)
    assert revived.status is JobStatus.QUEUED
    assert await status(service, b) is JobStatus.WAITING
    assert await status(service, c) is JobStatus.WAITING
    await run(service, "a")
    await run(service, "b")
    assert await status(service, c) is JobStatus.QUEUED


async def test_a_dependent_is_not_requeued_while_its_parent_is_dead(service: JobService) -> None:
    a = await enqueue(service, "a")
    b = await enqueue(service, "b", depends_on=after(a.id))
    await kill(service, "a")
    with pytest.raises(InvalidTransition, match=f"job {a.id}"):
        await service.requeue(b.id)
    assert await status(service, b) is JobStatus.CANCELLED


async def test_a_dependent_of_a_parent_already_dead_is_cancelled_at_once(
    service: JobService,
) -> None:
    a = await enqueue(service, "a")
    await kill(service, "a")
    b = await enqueue(service, "b", depends_on=after(a.id))
    assert (b.status, b.blocked_by) == (JobStatus.CANCELLED, a.id)
    with pytest.raises(InvalidGraph, match="no job has id 987654"):
        await enqueue(service, "b", depends_on=after(987654))


async def test_cancelling_or_deleting_a_waiting_parent_ends_its_dependents(
    service: JobService, store: Store
) -> None:
    a = await enqueue(service, "a", depends_on=after((await enqueue(service, "root")).id))
    b = await enqueue(service, "b", depends_on=after(a.id))
    await service.cancel(a.id)
    assert (await service.get(b.id)).blocked_by == a.id
    x = await enqueue(service, "x")
    y = await enqueue(service, "y", depends_on=after(x.id))
    z = await enqueue(service, "z", depends_on=after(x.id, run=True))
    deleted = await store.jobs_delete(DeleteFilter((JobStatus.QUEUED,), ids=(x.id,)))
    service.carried(deleted.carried)
    assert (await service.get(y.id)).status is JobStatus.CANCELLED
    assert "was deleted" in ((await service.get(y.id)).last_error or "")
    assert await status(service, z) is JobStatus.QUEUED


async def test_a_graph_in_one_batch_is_inserted_parents_first(service: JobService) -> None:
    inserted = await service.enqueue_many(
        [
            Enqueue(
                "join", ref="join", after=(("left", OnFailure.CANCEL), ("right", OnFailure.CANCEL))
            ),
            Enqueue("left", ref="left", after=(("root", OnFailure.CANCEL),)),
            Enqueue("right", ref="right", after=(("root", OnFailure.CANCEL),)),
            Enqueue("root", ref="root"),
        ]
    )
    join, left, right, root = (i.job for i in inserted)  # answered in the request's order
    assert root.id < left.id < join.id and root.id < right.id < join.id
    assert (join.status, join.waiting_for, join.depth) == (JobStatus.WAITING, 2, 2)
    assert root.status is JobStatus.QUEUED
    for kind in ("root", "left", "right"):
        await run(service, kind)
    assert await status(service, join) is JobStatus.QUEUED


async def test_a_bad_graph_inserts_nothing(service: JobService) -> None:
    cycle = [
        Enqueue("a", ref="a", after=(("b", OnFailure.CANCEL),)),
        Enqueue("b", ref="b", after=(("a", OnFailure.CANCEL),)),
    ]
    with pytest.raises(InvalidGraph, match="cycle") as caught:
        await service.enqueue_many(cycle)
    assert caught.value.detail is not None
    with pytest.raises(InvalidGraph, match=r"jobs\[1\] depends on a ref"):
        await service.enqueue_many(
            [Enqueue("a", ref="a"), Enqueue("b", after=(("c", OnFailure.CANCEL),))]
        )
    with pytest.raises(InvalidGraph, match="no job has id"):
        await service.enqueue_many([Enqueue("a", ref="a"), Enqueue("b", depends_on=after(99999))])
    assert (await service.stats()).by_status == dict.fromkeys(
        ["waiting", "queued", "running", "completed", "dead", "cancelled"], 0
    )


async def test_parents_results_past_the_budget_are_left_out(service: JobService) -> None:
    parents = [await enqueue(service, "p", payload=n) for n in range(3)]
    child = await enqueue(service, "c", depends_on=after(*(p.id for p in parents)))
    for _ in parents:
        await run(service, "p", "x" * 100)
    service.max_answer_bytes = 500  # 250 bytes for parents' results: two of three fit
    (leased,) = await service.lease("w", 60, ["c"])
    assert leased.id == child.id
    assert [p.result_omitted for p in leased.parents or ()] == [False, False, True]
    assert leased.parents is not None and leased.parents[2].result is None


async def test_children_are_fenced_and_keyed_by_their_parent(service: JobService) -> None:
    await enqueue(service, "parent")
    (parent,) = await service.lease("w", 60, ["parent"])
    children = [Enqueue("child", payload=n, spawn_key=f"c{n}") for n in range(3)]
    then = Enqueue(
        "sum", spawn_key="sum", after=tuple((f"c{n}", OnFailure.CANCEL) for n in range(3))
    )
    first = await service.spawn(parent.id, parent.lease_token, [*children, then])
    assert all(i.created for i in first)
    assert first[3].job.status is JobStatus.WAITING
    assert {i.job.spawned_by for i in first} == {parent.id}
    # The same spawn again (a retry, or the parent leased again) gives the same children.
    again = await service.spawn(parent.id, parent.lease_token, [*children, then])
    assert [i.job.id for i in again] == [i.job.id for i in first]
    assert not any(i.created for i in again)
    # The parent ends while its children run; their continuation runs when they finish.
    await service.complete(parent.id, parent.lease_token)
    with pytest.raises(NotRunning):
        await service.spawn(parent.id, parent.lease_token, children)
    for n in range(3):
        await run(service, "child", n)
    (total,) = await service.lease("w", 60, ["sum"])
    assert sorted(result(p) for p in total.parents or ()) == [0, 1, 2]  # type: ignore[type-var]


async def test_a_stale_token_spawns_nothing(service: JobService) -> None:
    await enqueue(service, "parent")
    (first,) = await service.lease("w", 1, ["parent"])
    await service.release(first.id, first.lease_token)
    (second,) = await service.lease("w", 60, ["parent"])
    with pytest.raises(StaleToken):
        await service.spawn(first.id, first.lease_token, [Enqueue("child", spawn_key="x")])
    assert (await service.stats()).by_kind.get("child") is None
    assert second.lease_token > first.lease_token


async def test_retention_keeps_a_parent_an_unfinished_dependent_needs(
    service: JobService, store: Store
) -> None:
    a = await enqueue(service, "a")
    other = await enqueue(service, "other")
    b = await enqueue(service, "b", depends_on=after(a.id, other.id))
    await run(service, "a", "kept")
    prune = DeleteFilter((JobStatus.COMPLETED,), finished_age_seconds=-1, keep_needed=True)
    assert await store.jobs_delete(prune) == 0
    await run(service, "other")
    await run(service, "b")
    assert await store.jobs_delete(prune) == 3
    assert b.id > a.id
