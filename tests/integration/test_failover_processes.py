"""Two coordinators on one PostgreSQL database, one SIGKILLed under load and restarted:
a worker and a producer given both URLs go on through the other, losing nothing.

The targets (issue: several coordinators per client): the worker leases again within
one renewal interval plus 2 s of the kill; no producer call fails while a coordinator is
up; no lease is lost (every job completes on its first lease, none expires).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from leasehold.client import SyncClient
from leasehold.model import Job, JobStatus
from tests.process import Coordinator, free_port, wait_until
from tests.workers import WorkerProcess

pytestmark = [pytest.mark.postgres, pytest.mark.slow(15)]

LEASE_SECONDS = 3.0
RENEW_INTERVAL = LEASE_SECONDS / 3  # the worker renews a third into each lease
ARGS = ("--reap-interval-seconds", "0.1", "--retry-base-seconds", "0.05")


class Producer:
    """Enqueues a job every 50 ms from a thread, through a ``SyncClient`` given both
    URLs, until stopped: every tenth job runs for 2 s (renewed across the kill), the others
    0.1 s. Every call that raised is kept."""

    def __init__(self, urls: list[str]) -> None:
        self.client = SyncClient(urls)
        self.ids: list[int] = []
        self.failures: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="producer")

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(0.05):
            sleep = 2.0 if n % 10 == 0 else 0.1
            try:
                self.ids.append(self.client.enqueue("work", {"sleep": sleep, "n": n}).id)
            except Exception as exc:
                self.failures.append(exc)
            n += 1

    def __enter__(self) -> Producer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        self.client.close()


def is_long(job: Job) -> bool:
    return isinstance(job.payload, dict) and job.payload.get("sleep") == 2.0


def jobs_of(client: SyncClient, ids: list[int]) -> dict[int, Job]:
    wanted, found = set(ids), {}
    cursor = None
    while True:
        page = client.list(kind="work", cursor=cursor, limit=1000)
        found.update({j.id: j for j in page.jobs if j.id in wanted})
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def test_a_coordinator_killed_and_restarted_costs_no_call_and_no_lease(
    postgres_url: str, tmp_path: Path
) -> None:
    ports = [free_port(), free_port()]
    a, b = (Coordinator(postgres_url, tmp_path, ARGS, port=p) for p in ports)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(Coordinator.start, (a, b)))
    urls = [a.url, b.url]
    ledger = tmp_path / "ledger"
    worker = WorkerProcess(
        ",".join(urls),
        tmp_path,
        ledger,
        ["--kinds", "work", "--lease-seconds", str(LEASE_SECONDS), "--concurrency", "8"],
    )
    try:
        worker.wait_started()
        with SyncClient(b.url) as observer, Producer(urls) as producer:

            def completed(at_least: int) -> bool:
                jobs = jobs_of(observer, list(producer.ids))
                return sum(j.status is JobStatus.COMPLETED for j in jobs.values()) >= at_least

            wait_until(lambda: completed(10), 20, 0.1, what="the first jobs to complete")

            def long_job_running() -> bool:
                jobs = jobs_of(observer, list(producer.ids)).values()
                return any(j.status is JobStatus.RUNNING and is_long(j) for j in jobs)

            wait_until(
                long_job_running, 10, 0.1, what="a long job running (renewed across the kill)"
            )
            killed_at = datetime.now(UTC)
            a.kill()
            time.sleep(RENEW_INTERVAL + 2.5)  # the window of the target, and a little
            a.start()  # the same port, the same database
            time.sleep(1.0)
        ids = producer.ids
        with SyncClient(urls) as client:
            wait_until(
                lambda: all(j.status is JobStatus.COMPLETED for j in jobs_of(client, ids).values()),
                20,
                0.1,
                what="every job to complete",
            )
            jobs = jobs_of(client, ids)
        assert worker.stop() == 0
    finally:
        worker.kill()
        a.kill()
        b.kill()

    assert producer.failures == [], producer.failures[:3]
    assert len(jobs) == len(ids) > 50
    # No lease lost: every job completed under its first lease (an expired lease would
    # have leased it again), and the worker never logged a lost lease.
    assert [j.id for j in jobs.values() if j.attempts != 1] == []
    assert worker.events("lease.lost") == []
    assert worker.events("client.failover"), "the worker never moved on"
    # The worker leased again within one renewal interval plus 2 s of the kill.
    after = sorted(j.leased_at for j in jobs.values() if j.leased_at and j.leased_at > killed_at)
    assert after, "nothing was leased after the kill"
    gap = after[0] - killed_at
    assert gap < timedelta(seconds=RENEW_INTERVAL + 2), gap
    print(f"first lease {gap.total_seconds():.3f} s after the kill; {len(jobs)} jobs")
