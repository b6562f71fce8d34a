"""Several coordinator processes on one PostgreSQL database, as behind a load balancer."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from leasehold.coordinator.store.postgres.driver import PostgresStore
from leasehold.model import AttemptOutcome, JobStatus
from tests.http import Answer, Api
from tests.process import Coordinator, free_port

pytestmark = [pytest.mark.postgres, pytest.mark.slow(15)]

N_JOBS = 600
N_CLIENTS = 64
DEADLINE = 150.0  # seconds for a whole run; generous, the machine's two cores are shared

Start = Callable[..., Awaitable[list[Coordinator]]]


@pytest.fixture
def start(postgres_url: str, tmp_path: Path) -> Iterator[Start]:
    """Start coordinators on one fresh database, all at once; all are killed afterwards."""
    started: list[Coordinator] = []

    def start_all(n: int, *args: str) -> list[Coordinator]:
        ports: set[int] = set()
        while len(ports) < n:
            ports.add(free_port())
        coordinators = [Coordinator(postgres_url, tmp_path, args, port=p) for p in ports]
        started.extend(coordinators)
        with ThreadPoolExecutor(n) as pool:
            list(pool.map(Coordinator.start, coordinators))
        return coordinators

    async def start_in_thread(n: int, *args: str) -> list[Coordinator]:
        return await asyncio.to_thread(start_all, n, *args)

    yield start_in_thread
    for c in started:
        c.kill()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as s:
        yield s


@pytest.fixture
async def store(postgres_url: str) -> AsyncIterator[PostgresStore]:
    """The database itself, to check what the coordinators left in it."""
    opened = PostgresStore(postgres_url, min_connections=1, max_connections=4)
    await opened.open()
    yield opened
    await opened.close()


class FailoverClient:
    """A worker's way to several coordinators: when the one it uses stops answering, it
    moves on to the next, as a load balancer would send it elsewhere."""

    def __init__(self, session: aiohttp.ClientSession, urls: list[str], first: int) -> None:
        self.apis = [Api(url, session) for url in urls]
        self.current = first % len(urls)

    async def post(self, path: str, body: dict[str, Any]) -> tuple[Answer, int]:
        """The answer and the index of the coordinator that gave it."""
        for _ in range(10 * len(self.apis)):
            used = self.current
            try:
                return await self.apis[used].post(path, body), used
            except aiohttp.ClientError:
                self.current = (used + 1) % len(self.apis)
        raise AssertionError(f"no coordinator answers {path}")


async def enqueue(session: aiohttp.ClientSession, coordinators: list[Coordinator]) -> list[int]:
    """N_JOBS jobs, sent round-robin to every coordinator."""
    apis = [Api(c.url, session) for c in coordinators]
    ids: list[int] = []
    for start in range(0, N_JOBS, 100):
        created = await asyncio.gather(
            *(apis[i % len(apis)].enqueue("c", payload=i) for i in range(start, start + 100))
        )
        ids += [job["id"] for job in created]
    return ids


def logged_events(coordinator: Coordinator, event: str) -> int:
    return sum(
        1
        for line in coordinator.logs().splitlines()
        if line.startswith("{") and json.loads(line).get("event") == event
    )


async def test_every_job_is_leased_exactly_once_across_coordinators(
    start: Start, session: aiohttp.ClientSession, store: PostgresStore
) -> None:
    coordinators = await start(3)
    ids = await enqueue(session, coordinators)
    leased: list[tuple[int, int, int]] = []  # job id, token, coordinator

    async def client(n: int) -> None:
        api = Api(coordinators[n % 3].url, session)
        while (lease := await api.lease(f"w{n}", lease_seconds=60)) is not None:
            assert lease["job"]["lease_owner"] == f"w{n}"
            leased.append((lease["job"]["id"], lease["token"], n % 3))

    await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(N_CLIENTS))), DEADLINE)
    assert sorted(job_id for job_id, _, _ in leased) == sorted(ids)
    # One lease each, tokens from the one sequence all coordinators share: none twice.
    assert len({token for _, token, _ in leased}) == N_JOBS
    assert {coordinator for _, _, coordinator in leased} == {0, 1, 2}
    assert (await store.counts_by_status())[JobStatus.RUNNING] == N_JOBS
    assert (await store.counter_totals())[("leased", "c")] == N_JOBS
    tokens = {job_id: token for job_id, token, _ in leased}
    for job_id in ids:
        assert [a.token for a in await store.attempts_list(job_id)] == [tokens[job_id]]


async def test_a_coordinator_killed_mid_run_loses_nothing(
    start: Start, session: aiohttp.ClientSession, store: PostgresStore
) -> None:
    """Leases and reports that died with a coordinator are recovered by the others: every
    job is completed exactly once."""
    coordinators = await start(3, "--reap-interval-seconds", "0.2")
    urls = [c.url for c in coordinators]
    ids = await enqueue(session, coordinators)
    acknowledged: dict[int, tuple[int, str]] = {}  # job id -> token and worker, answered 200
    after_kill: Counter[int] = Counter()  # completions acknowledged per coordinator
    a_third_done = asyncio.Event()
    killed = asyncio.Event()
    lost: list[int] = []

    async def worker(n: int) -> None:
        client, me = FailoverClient(session, urls, first=n), f"w{n}"
        while len(acknowledged) < N_JOBS:
            body = {"worker_id": me, "lease_seconds": 3, "wait_seconds": 1}
            lease, _ = await client.post("/lease", body)
            assert lease.status in (200, 204), lease
            if lease.status == 204:
                continue
            job_id, token = lease.body["job"]["id"], lease.body["token"]
            result = {"by": me, "token": token}
            done, by = await client.post(
                f"/jobs/{job_id}/complete", {"token": token, "result": result}
            )
            assert done.status in (200, 409), done  # 409: it expired and was leased again
            if done.status == 200:
                assert acknowledged.setdefault(job_id, (token, me)) == (token, me)
                after_kill[by] += killed.is_set()
            if len(acknowledged) >= N_JOBS // 3:
                a_third_done.set()

    async def killer() -> None:
        await a_third_done.wait()
        # Leases whose answers the crash swallows: only their expiry can bring them back.
        doomed = Api(urls[0], session)
        for _ in range(5):
            lease = await doomed.lease("lost-in-crash", lease_seconds=3)
            assert lease is not None
            lost.append(lease["job"]["id"])
        coordinators[0].kill()
        killed.set()

    await asyncio.wait_for(
        asyncio.gather(killer(), *(worker(n) for n in range(N_CLIENTS))), DEADLINE
    )
    assert sorted(acknowledged) == sorted(ids)
    assert after_kill[1] + after_kill[2] > 0  # the survivors carried on
    assert (await store.counts_by_status())[JobStatus.COMPLETED] == N_JOBS
    assert (await store.counter_totals())[("completed", "c")] == N_JOBS
    for job_id in ids:
        job = await store.job_get(job_id)
        assert job is not None
        token, by = acknowledged[job_id]
        assert job.result == {"by": by, "token": token}
        history = await store.attempts_list(job_id)
        assert [a.token for a in history if a.outcome == "completed"] == [token]
        assert all(a.outcome == AttemptOutcome.EXPIRED for a in history if a.token != token)
    for job_id in lost:
        history = await store.attempts_list(job_id)
        assert [a.outcome for a in history if a.worker_id == "lost-in-crash"] == ["expired"]


async def test_two_reapers_never_corrupt_a_job(
    start: Start, session: aiohttp.ClientSession, store: PostgresStore
) -> None:
    """Short leases run out while both coordinators reap every 20 ms; each expiry is
    applied once, and every job's history, tokens, attempts and status agree."""
    coordinators = await start(2, "--reap-interval-seconds", "0.02")
    urls = [c.url for c in coordinators]
    apis = [Api(url, session) for url in urls]
    n_jobs, rounds = 200, 4
    jobs = await asyncio.gather(
        *(apis[i % 2].enqueue("r", max_attempts=3 if i % 2 else 50) for i in range(n_jobs))
    )
    leases = 0

    async def flaky(n: int) -> None:
        """Leases and never reports; tries a superseded token now and then."""
        nonlocal leases
        client = FailoverClient(session, urls, first=n)
        while leases < rounds * n_jobs:
            body = {"worker_id": f"flaky{n}", "lease_seconds": 0.05, "wait_seconds": 0.5}
            lease, _ = await client.post("/lease", body)
            if lease.status == 204:
                continue
            leases += 1
            job_id, token = lease.body["job"]["id"], lease.body["token"]
            if token > 1 and token % 3 == 0:
                late, _ = await client.post(f"/jobs/{job_id}/complete", {"token": token - 1})
                assert (late.status, late.body["error"]) == (409, "stale_token")

    async def steady(n: int) -> None:
        """Finishes whatever is left."""
        client = FailoverClient(session, urls, first=n)
        while True:
            body = {"worker_id": f"steady{n}", "lease_seconds": 60, "wait_seconds": 0.5}
            lease, _ = await client.post("/lease", body)
            if lease.status == 204:
                counts = await store.counts_by_status()
                if counts[JobStatus.QUEUED] + counts[JobStatus.RUNNING] == 0:
                    return
                continue
            job_id, token = lease.body["job"]["id"], lease.body["token"]
            done, _ = await client.post(f"/jobs/{job_id}/complete", {"token": token})
            assert done.status == 200, done

    await asyncio.wait_for(asyncio.gather(*(flaky(n) for n in range(32))), DEADLINE)
    await asyncio.wait_for(asyncio.gather(*(steady(n) for n in range(32))), DEADLINE)

    expired_records = leased_records = 0
    statuses: Counter[str] = Counter()
    for created in jobs:
        job = await store.job_get(created["id"])
        assert job is not None
        history = await store.attempts_list(job.id)
        tokens = [a.token for a in history]
        assert tokens == sorted(set(tokens)) and tokens[-1] == job.lease_token
        assert job.attempts == len(history)  # no releases or requeues in this test
        *earlier, last = history
        assert {a.outcome for a in earlier} <= {AttemptOutcome.EXPIRED}
        if job.status is JobStatus.COMPLETED:
            assert last.outcome == AttemptOutcome.COMPLETED
        else:
            assert (job.status, last.outcome) == (JobStatus.DEAD, AttemptOutcome.EXPIRED)
            assert job.attempts == job.max_attempts == 3
        statuses[job.status] += 1
        expired_records += sum(a.outcome == AttemptOutcome.EXPIRED for a in history)
        leased_records += len(history)
    totals = await store.counter_totals()
    assert totals[("lease_expired", "r")] == expired_records >= rounds * n_jobs
    assert totals[("leased", "r")] == leased_records
    assert totals[("completed", "r")] == statuses[JobStatus.COMPLETED]
    assert totals.get(("dead", "r"), 0) == statuses[JobStatus.DEAD]
    reaped = [logged_events(c, "lease.expired") for c in coordinators]
    assert sum(reaped) == expired_records
    assert min(reaped) > 0  # both reapers did their share
