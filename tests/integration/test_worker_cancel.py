"""Cancelling a running job end to end: a real worker process runs a long handler, an
operator cancels the job over the API, the worker cancels the handler and reports with a
release, and the job ends cancelled with no result, on each backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from leasehold.client import SyncClient
from leasehold.model import AttemptOutcome, JobStatus
from tests.process import Coordinator
from tests.workers import COORDINATOR_ARGS, Ledger, WorkerProcess, poll


@pytest.fixture
def coordinator(database_url: str, tmp_path: Path) -> Iterator[Coordinator]:
    c = Coordinator(database_url, tmp_path, COORDINATOR_ARGS).start()
    yield c
    c.kill()


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger")


@pytest.fixture
def worker(coordinator: Coordinator, ledger: Ledger, tmp_path: Path) -> Iterator[WorkerProcess]:
    # A 3-second lease is renewed every second: the cancel reaches the worker within one.
    args = ("--lease-seconds", "3", "--wait-seconds", "1", "--concurrency", "2")
    w = WorkerProcess(coordinator.url, tmp_path, ledger.path, args).wait_started()
    yield w
    w.kill()


def test_cancel_stops_a_running_handler_and_no_result_is_recorded(
    coordinator: Coordinator, worker: WorkerProcess, ledger: Ledger
) -> None:
    with SyncClient(coordinator.url) as client:
        job = client.enqueue("hang")
        poll(lambda: ledger.has("start", job.id), what="the handler started")
        marked = client.cancel(job.id)
        assert (marked.status, marked.cancel_requested) == (JobStatus.RUNNING, True)
        poll(lambda: client.get(job.id).status is JobStatus.CANCELLED, what="job cancelled")
        poll(lambda: ledger.has("cancelled", job.id), what="the handler was cancelled")
        done = client.get(job.id)
        assert (done.result, done.cancel_requested) == (None, True)
        (attempt,) = client.attempts(job.id)
        assert (attempt.outcome, attempt.worker_id) == (AttemptOutcome.CANCELLED, "w")
        worker.wait_for("job.cancelled", job_id=job.id)
        assert not worker.events("job.result_dropped")
        # The worker goes on serving.
        after = client.enqueue("work")
        poll(lambda: client.get(after.id).status is JobStatus.COMPLETED, what="next job done")
    assert not ledger.has("ok", job.id)


def test_a_worker_serves_only_its_queues(
    coordinator: Coordinator, ledger: Ledger, tmp_path: Path
) -> None:
    args = ("--queues", "mail,alerts", "--wait-seconds", "1")
    w = WorkerProcess(coordinator.url, tmp_path, ledger.path, args, name="q").wait_started()
    try:
        with SyncClient(coordinator.url) as client:
            elsewhere = client.enqueue("work", queue="reports", priority=1000)
            mine = client.enqueue("work", queue="alerts")
            poll(lambda: client.get(mine.id).status is JobStatus.COMPLETED, what="alerts job")
            assert client.get(elsewhere.id).status is JobStatus.QUEUED
    finally:
        w.kill()
