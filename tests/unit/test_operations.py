"""The rules behind the operator features: run-now, what may be deleted, error summaries,
which queued work no live worker serves, and the pruning loop's test hook."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from leasehold.coordinator.maintenance.retention import Pruner, Retention
from leasehold.coordinator.rules.presence import unserved
from leasehold.coordinator.rules.transitions import (
    DELETABLE,
    check_delete,
    decide_complete,
    decide_run_now,
    summary_line,
)
from leasehold.coordinator.store.contract import LeaseRequest, NewJob, WorkerBeat, WorkerSeen
from leasehold.coordinator.store.sqlite.driver import SqliteStore
from leasehold.errors import InvalidTransition
from leasehold.model import Job, JobStatus

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def job(status: JobStatus = JobStatus.QUEUED, run_after: datetime = NOW) -> Job:
    return Job(1, "k", None, status, 0, 3, run_after, NOW)


def test_run_now_moves_a_waiting_job_to_now_and_leaves_a_due_one() -> None:
    outcome = decide_run_now(job(run_after=NOW + timedelta(hours=1)), NOW)
    assert outcome.changed and outcome.job.run_after == NOW and outcome.events == ()
    assert not decide_run_now(job(run_after=NOW - timedelta(seconds=1)), NOW).changed


@pytest.mark.parametrize("status", [s for s in JobStatus if s is not JobStatus.QUEUED])
def test_run_now_refuses_every_other_state(status: JobStatus) -> None:
    assert isinstance(decide_run_now(job(status), NOW).error, InvalidTransition)


def test_only_a_running_job_is_kept_from_deletion() -> None:
    assert set(DELETABLE) == set(JobStatus) - {JobStatus.RUNNING}
    refused = check_delete(job(JobStatus.RUNNING))
    assert isinstance(refused, InvalidTransition) and "cancel it first" in refused.message
    assert check_delete(job(JobStatus.DEAD)) is None


@pytest.mark.parametrize(
    ("error", "summary"),
    [
        (None, None),
        ("", ""),
        ("boom", "boom"),
        ("Traceback (most recent call last):\n  File \"x\"\nKeyError: 'a'\n\n", "KeyError: 'a'"),
    ],
)
def test_the_summary_is_the_last_line_of_the_error(error: str | None, summary: str | None) -> None:
    assert summary_line(error) == summary


def seen(kinds: tuple[str, ...] | None, queues: tuple[str, ...] | None) -> WorkerSeen:
    return WorkerSeen(WorkerBeat("w", "h", 1, "0", kinds, queues, 1, NOW), NOW)


def test_unserved_pairs_are_those_no_worker_covers() -> None:
    queued = {("default", "a"): 2, ("default", "b"): 1, ("slow", "a"): 4, ("x", "z"): 0}
    workers = [seen(("a",), ("default",)), seen(None, ("x",))]
    assert [(u.queue, u.kind, u.queued) for u in unserved(queued, workers)] == [
        ("default", "b", 1),
        ("slow", "a", 4),
    ]
    assert unserved(queued, [seen(None, None)]) == []


async def test_the_pruner_signals_each_pass(tmp_path: Path) -> None:
    """A pass prunes what is past its age and sets ``swept``: tests wait on it, not sleep."""
    store = SqliteStore(str(tmp_path / "p.db"))
    await store.open()
    try:
        await store.job_insert_many([NewJob("k", None, 1, None, None, "h")])
        (leased,) = await store.job_lease(LeaseRequest("w", 60, None))
        await store.jobs_decide(
            [(leased.id, lambda j, now: decide_complete(j, leased.lease_token, None, now))]
        )
        pruner = Pruner(store, Retention(1e-6, 0, 0), interval=3600)
        task = asyncio.create_task(pruner.run())
        await asyncio.wait_for(pruner.swept.wait(), 10)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        assert (pruner.passes, pruner.pruned) == (1, 1)
        assert await store.job_get(leased.id) is None
    finally:
        await store.close()
