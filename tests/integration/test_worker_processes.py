"""Real worker processes against a real coordinator: crashes, lost leases, restarts, stops.

Every wait is a poll with a deadline on something observable (the coordinator's answer,
the handlers' ledger, a worker's log); the only sleep is the length of an outage.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from leasehold import cli
from leasehold.client import Client, SyncClient
from leasehold.model import AttemptOutcome, Job, JobStatus
from tests.process import Coordinator
from tests.workers import COORDINATOR_ARGS, Ledger, WorkerProcess, poll

pytestmark = pytest.mark.slow(4)  # 13 tests, about 45 s in all: started early

StartWorker = Callable[..., WorkerProcess]


@pytest.fixture
def coordinator(sqlite_url: str, tmp_path: Path) -> Iterator[Coordinator]:
    c = Coordinator(sqlite_url, tmp_path, COORDINATOR_ARGS).start()
    yield c
    c.kill()


@pytest.fixture
def client(coordinator: Coordinator) -> Iterator[SyncClient]:
    with SyncClient(coordinator.url) as c:
        yield c


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger")


@pytest.fixture
def start_worker(coordinator: Coordinator, ledger: Ledger, tmp_path: Path) -> Iterator[StartWorker]:
    started: list[WorkerProcess] = []

    def start(*args: str, name: str = "w") -> WorkerProcess:
        if "--wait-seconds" not in args:  # short polls: a stop waits for those in flight
            args = ("--wait-seconds", "1", *args)
        worker = WorkerProcess(coordinator.url, tmp_path, ledger.path, args, name=name)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


def enqueue_many(url: str, count: int, kind: str, payload: object) -> list[int]:
    """Enqueue ``count`` jobs quickly, 100 requests at a time."""

    async def go() -> list[int]:
        ids: list[int] = []
        async with Client(url) as client:
            for start in range(0, count, 100):
                batch = range(start, min(start + 100, count))
                jobs = await asyncio.gather(*(client.enqueue(kind, payload) for _ in batch))
                ids += [j.id for j in jobs]
        return ids

    return asyncio.run(go())


def all_jobs(client: SyncClient) -> list[Job]:
    jobs: list[Job] = []
    cursor = None
    while True:
        page = client.list(cursor=cursor, limit=1000)
        jobs += page.jobs
        if page.next_cursor is None:
            return jobs
        cursor = page.next_cursor


def assert_each_completed_once(jobs: list[Job], ledger: Ledger) -> None:
    """Completed in the coordinator, with the result of exactly one run under the final
    token; runs under earlier tokens (leases lost) are allowed, their results never kept."""
    successes = ledger.successes()
    for job in jobs:
        assert job.status == JobStatus.COMPLETED, job
        assert job.result == {"job": job.id, "token": job.lease_token}, job
        assert successes[(job.id, job.lease_token)] == 1, job


def test_three_workers_run_a_thousand_jobs_each_once(
    coordinator: Coordinator, client: SyncClient, ledger: Ledger, start_worker: StartWorker
) -> None:
    workers = [start_worker("--concurrency", "8", name=f"w{n}") for n in range(3)]
    for worker in workers:
        worker.wait_started()
    started = time.monotonic()
    ids = enqueue_many(coordinator.url, 1000, "work", None)
    poll(lambda: len(ledger.entries("ok")) >= 1000, timeout=90, what="1,000 runs")
    poll(
        lambda: all(j.status == JobStatus.COMPLETED for j in all_jobs(client)),
        timeout=30,
        what="1,000 completed",
    )
    elapsed = time.monotonic() - started
    jobs = all_jobs(client)
    assert sorted(j.id for j in jobs) == sorted(ids)
    assert_each_completed_once(jobs, ledger)
    assert len(ledger.entries("ok")) == 1000  # nothing ran twice: no lease was lost
    assert {j.lease_owner for j in jobs} == {"w0", "w1", "w2"}
    assert len({j.lease_token for j in jobs}) == len(jobs)  # one lease each, tokens unique
    for worker in workers:
        worker.signal(signal.SIGTERM)
    assert [w.wait(30) for w in workers] == [0, 0, 0]
    print(f"1,000 jobs by 3 workers x 8: {elapsed:.1f}s from first enqueue to last report")


def test_a_killed_workers_job_is_taken_over_after_its_lease_expires(
    client: SyncClient, ledger: Ledger, start_worker: StartWorker
) -> None:
    doomed = start_worker("--lease-seconds", "1", "--concurrency", "1", name="doomed")
    job = client.enqueue("hang-first")
    poll(lambda: ledger.has("start", job.id), what="the first run to start")
    t1 = client.get(job.id).lease_token
    doomed.kill()
    survivor = start_worker("--lease-seconds", "1", name="survivor")
    poll(lambda: client.get(job.id).status == JobStatus.COMPLETED, what="the job to finish")
    done = client.get(job.id)
    assert (done.lease_token, done.lease_owner, done.result) == (
        t1 + 1,
        "survivor",
        "finished by survivor",
    )
    first, second = client.attempts(job.id)
    assert (first.token, first.worker_id, first.outcome) == (t1, "doomed", AttemptOutcome.EXPIRED)
    assert (second.token, second.worker_id, second.outcome) == (
        t1 + 1,
        "survivor",
        AttemptOutcome.COMPLETED,
    )
    assert first.finished_at is not None
    assert first.finished_at <= second.leased_at  # taken over only after the expiry
    assert survivor.stop() == 0


@pytest.mark.parametrize("kind", ["hang", "hang-sync"])
def test_a_refused_renewal_cancels_the_handler_and_drops_its_result(
    client: SyncClient, ledger: Ledger, start_worker: StartWorker, tmp_path: Path, kind: str
) -> None:
    worker = start_worker("--lease-seconds", "1.5", "--concurrency", "1")
    flag = tmp_path / "let-the-thread-finish"
    job = client.enqueue(kind, {"until": str(flag)})
    poll(lambda: ledger.has("start", job.id), what="the handler to start")
    t1 = client.get(job.id).lease_token
    # The lease is taken away as an operator would: released under its token, and leased
    # to someone else. The worker's only loop is busy, so it cannot take the job back.
    client.release(job.id, t1)
    other = client.lease("operator", lease_seconds=60, kinds=[kind])
    assert other is not None
    assert other.token == t1 + 1
    lost = worker.wait_for("lease.lost", job_id=job.id)
    assert lost["reason"] in ("stale_token", "lease_expired")
    worker.wait_for("job.result_dropped", job_id=job.id)
    if kind == "hang":
        poll(lambda: ledger.has("cancelled", job.id, token=t1), what="the handler's cancellation")
    else:  # a thread cannot be cancelled: it finishes, and its result is dropped
        flag.touch()
        poll(lambda: ledger.has("done", job.id, token=t1), what="the thread to finish")
        worker.wait_for("job.late_result_dropped", job_id=job.id)
    assert not worker.events("job.succeeded") and not worker.events("job.failed")
    held = client.get(job.id)
    assert (held.status, held.lease_token, held.lease_owner) == (
        JobStatus.RUNNING,
        t1 + 1,
        "operator",
    )
    assert client.complete(job.id, t1 + 1, "the operator's").result == "the operator's"
    assert worker.stop() == 0


def test_a_lease_that_runs_out_while_the_worker_is_frozen_is_given_up(
    client: SyncClient, ledger: Ledger, start_worker: StartWorker
) -> None:
    worker = start_worker("--lease-seconds", "1", "--concurrency", "1")
    job = client.enqueue("hang")
    poll(lambda: ledger.has("start", job.id), what="the handler to start")
    t1 = client.get(job.id).lease_token
    worker.signal(signal.SIGSTOP)  # a pause longer than the lease: GC, swap, a stopped VM
    try:
        poll(lambda: client.get(job.id).status == JobStatus.QUEUED, what="the reaper")
        other = client.lease("other", lease_seconds=60, kinds=["hang"])
        assert other is not None
        assert other.token == t1 + 1
    finally:
        worker.signal(signal.SIGCONT)
    worker.wait_for("job.result_dropped", job_id=job.id)
    poll(lambda: ledger.has("cancelled", job.id, token=t1), what="the handler's cancellation")
    assert worker.events("lease.lost", job_id=job.id)[0]["reason"] in ("expired", "stale_token")
    held = client.get(job.id)
    assert (held.status, held.lease_token, held.lease_owner) == (
        JobStatus.RUNNING,
        t1 + 1,
        "other",
    )
    (first, _) = client.attempts(job.id)
    assert first.outcome == AttemptOutcome.EXPIRED
    assert worker.stop() == 0


def test_workers_ride_out_a_coordinator_restart(
    coordinator: Coordinator, client: SyncClient, ledger: Ledger, start_worker: StartWorker
) -> None:
    args = ("--concurrency", "4", "--lease-seconds", "2", "--wait-seconds", "1")
    workers = [start_worker(*args, name=f"w{n}") for n in range(2)]
    for worker in workers:
        worker.wait_started()
    ids = enqueue_many(coordinator.url, 300, "work", {"sleep": 0.02})
    poll(lambda: len(ledger.entries("ok")) >= 60, what="a fifth of the jobs to run")
    coordinator.kill()
    down = time.monotonic()
    for worker in workers:
        worker.wait_for("coordinator.unreachable", timeout=15)
    time.sleep(max(0.0, 2.0 - (time.monotonic() - down)))  # the outage: at least 2 s
    coordinator.start()  # same port, same database
    poll(
        lambda: all(j.status == JobStatus.COMPLETED for j in all_jobs(client)),
        timeout=60,
        what="every job to complete",
    )
    jobs = all_jobs(client)
    assert sorted(j.id for j in jobs) == sorted(ids)
    assert_each_completed_once(jobs, ledger)
    for worker in workers:
        worker.signal(signal.SIGTERM)
    assert [w.wait(30) for w in workers] == [0, 0]


# SIGHUP too: a worker has nothing to reload, and the hangup of the terminal it was started
# from must not kill its handlers mid-job (DESIGN.md §14).
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_lets_running_jobs_finish_then_exits_0(
    client: SyncClient, start_worker: StartWorker, sig: signal.Signals
) -> None:
    worker = start_worker("--concurrency", "3", "--wait-seconds", "1", "--grace-seconds", "20")
    running = [client.enqueue("work", {"sleep": 1.0}) for _ in range(3)]
    poll(lambda: len(worker.events("job.started")) == 3, what="three jobs to start")
    waiting = [client.enqueue("work", {"sleep": 0}) for _ in range(2)]
    stopped_at = time.monotonic()
    worker.signal(sig)
    assert worker.wait(20) == 0
    assert worker.events("worker.stopping")[0]["signal"] == sig.name
    print(f"stopped {time.monotonic() - stopped_at:.2f}s after {sig.name}")
    for job in running:
        assert client.get(job.id).status == JobStatus.COMPLETED
    for job in waiting:  # never leased once the stop began
        assert (client.get(job.id).status, client.get(job.id).attempts) == (JobStatus.QUEUED, 0)
    assert not client.list(status="running").jobs


def test_a_second_signal_cancels_handlers_and_releases_their_jobs(
    client: SyncClient, ledger: Ledger, start_worker: StartWorker, tmp_path: Path
) -> None:
    worker = start_worker("--concurrency", "2", "--wait-seconds", "1", "--lease-seconds", "60")
    stuck = client.enqueue("hang")
    thread = client.enqueue("hang-sync", {"until": str(tmp_path / "never")})
    poll(lambda: len(worker.events("job.started")) == 2, what="both jobs to start")
    worker.signal(signal.SIGINT)
    worker.wait_for("worker.stopping")
    forced_at = time.monotonic()
    worker.signal(signal.SIGINT)
    assert worker.wait(10) == 128 + signal.SIGINT
    elapsed = time.monotonic() - forced_at
    assert elapsed < 5, elapsed  # prompt: not the 60 s lease, nor the sync handler's thread
    for job in (stuck, thread):
        back = client.get(job.id)
        assert (back.status, back.attempts) == (JobStatus.QUEUED, 0)
        assert client.attempts(job.id)[-1].outcome == AttemptOutcome.RELEASED
    (attempt, *_) = client.attempts(stuck.id)
    assert ledger.has("cancelled", stuck.id, token=attempt.token)
    assert not client.list(status="running").jobs


def test_running_jobs_are_released_when_the_grace_period_ends(
    client: SyncClient, start_worker: StartWorker
) -> None:
    worker = start_worker("--wait-seconds", "1", "--grace-seconds", "0.5", "--lease-seconds", "60")
    job = client.enqueue("hang")
    poll(lambda: worker.events("job.started"), what="the job to start")
    worker.signal(signal.SIGTERM)
    assert worker.wait(10) == 128 + signal.SIGTERM
    assert worker.events("worker.grace_expired")
    assert client.get(job.id).status == JobStatus.QUEUED


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.fixtures.handlers", "module:attribute"),
        ("tests.fixtures.nowhere:registry", "could not import"),
        ("tests.fixtures.handlers:not_handlers", "must be a leasehold Registry"),
    ],
)
def test_a_bad_app_is_refused_with_a_clear_message(spec: str, message: str) -> None:
    result = CliRunner().invoke(cli.app, ["worker", spec, "--url", "http://127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())  # rich wraps long lines


def test_processes_share_the_work_and_stop_when_their_supervisor_is_killed(
    coordinator: Coordinator, client: SyncClient, ledger: Ledger, start_worker: StartWorker
) -> None:
    """``--processes 2``: two workers (ids w-1, w-2), each its own process, run the jobs;
    killed outright, the supervisor cannot pass a signal on, and its children stop by
    themselves rather than run on unseen."""
    supervisor = start_worker("--processes", "2", name="w")
    poll(lambda: len(client.workers()) == 2, what="two worker processes")
    workers = {w["worker_id"]: w["pid"] for w in client.workers()}
    assert sorted(workers) == ["w-1", "w-2"] and len(set(workers.values())) == 2
    assert supervisor.proc.pid not in workers.values()
    ids = enqueue_many(coordinator.url, 40, "work", {"sleep": 0.05})
    poll(lambda: len(ledger.entries("ok")) >= 40, what="40 runs")
    assert {e.pid for e in ledger.entries("ok")} <= set(workers.values())
    assert len(ids) == 40
    supervisor.proc.kill()
    poll(lambda: len(supervisor.events("worker.stopped")) == 2, what="both children to stop")
    assert {e["worker_id"] for e in supervisor.events("worker.supervisor_gone")} == {"w-1", "w-2"}
