"""Workflows on the client side, without a coordinator (DESIGN.md §21, §22): the bodies a
graph enqueue and a spawn send (held to the coordinator's own request models), a lease's
parents parsed, the graphs ``then`` and ``group`` make, the keys a spawn gives, and the
parents' results typed by their task."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

from leasehold import PayloadError, task
from leasehold.client import Enqueued, NewJob, ParentRef
from leasehold.client._parse import parse_enqueued, parse_lease
from leasehold.coordinator.api.encode import enqueued_wire, lease_wire
from leasehold.coordinator.api.schemas.jobs import BatchEnqueueRequest, SpawnRequest
from leasehold.coordinator.store.contract import Inserted
from leasehold.errors import InvalidRequest, LeaseholdError
from leasehold.model import Dependency, Job, JobStatus, OnFailure, Parent
from leasehold.tasks import Group, Workflow, group
from leasehold.worker import LeasedJob

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


class Page(BaseModel):
    url: str
    size: int


@task(kind="fetch", queue="net")
def fetch(url: str) -> Page:
    return Page(url=url, size=len(url))


@task(kind="merge")
def merge(label: str) -> str:
    return label


@task(kind="notify")
def notify(to: str) -> None:
    return None


def wire(jobs: list[NewJob]) -> list[dict[str, Any]]:
    """The batch body, as the coordinator's model reads it (a field it does not know, or a
    shape it refuses, fails here)."""
    body = {"jobs": [j.body() for j in jobs]}
    BatchEnqueueRequest.model_validate(body)
    return body["jobs"]


def edges(jobs: list[NewJob]) -> list[tuple[str | None, list[Any]]]:
    return [(item.get("ref"), item.get("depends_on", [])) for item in wire(jobs)]


def test_a_plain_job_s_body_is_as_before() -> None:
    body = NewJob("resize", {"w": 1}, priority=3).body()
    assert set(body) == {"kind", "payload", "priority", "idempotency_key"}
    assert body["idempotency_key"].startswith("auto-")


def test_parents_by_id_and_by_ref_in_one_body() -> None:
    job = NewJob(
        "merge",
        depends_on=(Dependency(7), Dependency(8, OnFailure.RUN)),
        ref="m",
        after=("a", ParentRef("b", OnFailure.RUN)),
    )
    first = NewJob("fetch", ref="a")
    second = NewJob("fetch", ref="b")
    assert wire([first, second, job])[2]["depends_on"] == [
        7,
        {"id": 8, "on_failure": "run"},
        {"ref": "a"},
        {"ref": "b", "on_failure": "run"},
    ]


def test_a_child_is_keyed_by_its_ref_and_makes_up_no_idempotency_key() -> None:
    children = [NewJob("fetch", ref="c0"), NewJob("merge", ref="join", after=("c0",))]
    items = [c.child_body() for c in children]
    SpawnRequest.model_validate({"token": 5, "jobs": items})
    assert [(i["key"], "idempotency_key" in i, "ref" in i) for i in items] == [
        ("c0", False, False),
        ("join", False, False),
    ]
    with pytest.raises(InvalidRequest, match="needs a key"):
        NewJob("fetch").child_body()


def test_a_lease_s_parents_come_back_as_the_coordinator_holds_them() -> None:
    running = Job(
        id=9,
        kind="merge",
        payload=None,
        status=JobStatus.RUNNING,
        attempts=1,
        max_attempts=5,
        run_after=WHEN,
        created_at=WHEN,
        lease_token=3,
        lease_seconds=30.0,
        leased_at=WHEN,
        lease_expires_at=WHEN,
    )
    parents = (
        Parent(1, "fetch", JobStatus.COMPLETED, orjson.Fragment(b'{"size":1}'), spawn_key="k"),
        Parent(2, None, None, None, True, None, OnFailure.RUN),
    )
    answer = orjson.loads(orjson.dumps(lease_wire(running.replace(parents=parents))))
    lease = parse_lease(answer)
    assert lease.job.parents == (
        Parent(1, "fetch", JobStatus.COMPLETED, {"size": 1}, spawn_key="k"),
        parents[1],
    )
    assert parse_lease(orjson.loads(orjson.dumps(lease_wire(running)))).job.parents is None
    answer["parents"] = [{"id": 1}]
    with pytest.raises(LeaseholdError, match="not a lease"):
        parse_lease(answer)


def test_an_enqueue_answer_says_what_each_item_came_to() -> None:
    job = parse_lease(
        {
            "job": {
                "id": 1,
                "kind": "k",
                "status": "running",
                "attempts": 1,
                "max_attempts": 5,
                "run_after": WHEN.isoformat(),
                "created_at": WHEN.isoformat(),
                "lease_token": 3,
                "leased_at": WHEN.isoformat(),
                "lease_expires_at": WHEN.isoformat(),
            },
            "token": 3,
        }
    ).job
    answer = orjson.loads(
        orjson.dumps({"jobs": [enqueued_wire(Inserted(job, created=False, duplicate=True))]})
    )
    assert parse_enqueued(answer, 1) == [Enqueued(job, False, True, False)]
    with pytest.raises(LeaseholdError, match="answered 1 jobs of 2"):
        parse_enqueued(answer, 2)


def test_a_chain_names_each_step_s_parent_by_its_place() -> None:
    chain = fetch.step("https://a").then(merge.step("m")).then(notify.step("ops"))
    assert isinstance(chain, Workflow) and len(chain) == 3
    assert edges(chain.new_jobs()) == [("0", []), ("1", [{"ref": "0"}]), ("2", [{"ref": "1"}])]
    assert [(j.kind, j.queue) for j in chain.new_jobs()] == [
        ("fetch", "net"),
        ("merge", None),
        ("notify", None),
    ]


def test_a_fan_in_waits_for_every_step_of_its_group() -> None:
    fan = group(fetch.step(u) for u in ("a", "b", "c"))
    assert isinstance(fan, Group)
    fan_in = fan.then(merge.step("all"), on_failure="run")
    run = {"on_failure": "run"}
    assert edges(fan_in.new_jobs())[3] == ("3", [{"ref": r, **run} for r in ("0", "1", "2")])
    assert len(fan) == 3  # then made a new graph: the group is as it was


def test_a_step_shared_by_two_branches_is_one_job_a_diamond() -> None:
    first = fetch.step("root")
    diamond = group([first.then(merge.step("b")), first.then(merge.step("c"))])
    last = diamond.then(notify.step("d"))
    assert edges(last.new_jobs()) == [
        ("0", []),
        ("1", [{"ref": "0"}]),
        ("2", [{"ref": "0"}]),
        ("3", [{"ref": "1"}, {"ref": "2"}]),
    ]
    fanned = first.then(group([merge.step("x"), merge.step("y")]))
    assert isinstance(fanned, Group) and edges(fanned.new_jobs())[2] == ("2", [{"ref": "0"}])


def test_a_step_s_arguments_are_checked_when_it_is_made() -> None:
    with pytest.raises(PayloadError, match="url"):
        fetch.step(url=3)  # type: ignore[arg-type]


def leased(parents: tuple[Parent, ...] = ()) -> LeasedJob:
    return LeasedJob(1, "merge", None, 1, 3, 1, WHEN, "w", parents=parents)


def test_a_spawn_keys_children_by_their_place_unless_they_have_a_ref() -> None:
    job = leased()
    first = job._keyed([NewJob("fetch"), NewJob("fetch", ref="mine")], NewJob("merge"))
    assert [(c.ref, c.after) for c in first] == [
        ("0.0", None),
        ("mine", None),
        ("0.2", (ParentRef("0.0"), ParentRef("mine"))),
    ]
    assert [c.ref for c in job._keyed([NewJob("fetch")], None)] == ["1.0"]
    assert job.spawns == 2
    with pytest.raises(RuntimeError, match="not run by a worker"):
        job.spawn_sync([NewJob("fetch")])


def test_parents_results_are_read_as_their_task_returns_them() -> None:
    job = leased(
        (
            Parent(1, "fetch", JobStatus.COMPLETED, {"url": "a", "size": 1}),
            Parent(2, "fetch", JobStatus.DEAD, None, on_failure=OnFailure.RUN),
            Parent(3, "merge", JobStatus.COMPLETED, "m"),
            Parent(4, None, None),
        )
    )
    assert fetch.results(job) == [Page(url="a", size=1)]
    assert fetch.result(job) == Page(url="a", size=1)
    assert merge.result(job) == "m"
    with pytest.raises(LookupError, match="0 completed parents of kind 'notify'"):
        notify.result(job)
