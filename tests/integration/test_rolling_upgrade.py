"""A rolling upgrade on one PostgreSQL database, with real coordinator processes: an older
and a newer release serve together across a migration that declares itself compatible,
and across one that does not, the older ones stop (exit 5) before the newer one serves.
Through it all no rule of either breaks: no lease from a paused queue, no token handed out
twice, every job completed once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from leasehold.coordinator.store.migrations import COMPATIBLE_MARK, migrations
from leasehold.coordinator.store.schema import SETTLE_SECONDS
from tests.http import Api
from tests.process import Coordinator

pytestmark = [pytest.mark.postgres, pytest.mark.slow(20)]

REPO = Path(__file__).resolve().parents[2]
KNOWN = migrations("postgres")[-1].version
# A migration the older release may live with (an index its statements never name), and
# one it may not (a stand-in for a table the newer rules would read).
COMPATIBLE = (
    KNOWN + 1,
    "probe_index",
    f"{COMPATIBLE_MARK} an index\nCREATE INDEX probe ON jobs (created_at);",
)
BREAKING = (KNOWN + 2, "probe_rule", "CREATE TABLE probe_rule (kind text PRIMARY KEY);")
ARGS = ["--reap-interval-seconds", "0.2"]


@pytest.fixture
def cluster(postgres_url: str, tmp_path: Path) -> Iterator[list[Coordinator]]:
    started: list[Coordinator] = []
    yield started
    for coordinator in started:
        coordinator.kill()


def release(url: str, tmp_path: Path, *newer: tuple[int, str, str]) -> Coordinator:
    """A coordinator of this release, or, with migrations, of a newer one."""
    if not newer:
        return Coordinator(url, tmp_path, ARGS)
    return Coordinator(
        url,
        tmp_path,
        ARGS,
        program=["-m", "tests.newer_release"],
        env={"LEASEHOLD_TEST_MIGRATIONS": json.dumps(newer), "PYTHONPATH": str(REPO)},
    )


async def work(api: Api, worker_id: str, done: asyncio.Event) -> None:
    """Lease and complete until ``done``, or until its coordinator is gone."""
    while not done.is_set():
        try:
            got = await api.post(
                "/leases",
                {"worker_id": worker_id, "lease_seconds": 2, "max_jobs": 5, "wait_seconds": 0.2},
            )
            if got.status == 204:
                continue
            assert got.status == 200, got
            for lease in got.body["leases"]:
                await api.post(f"/jobs/{lease['job']['id']}/complete", {"token": lease["token"]})
        except aiohttp.ClientError:
            return  # its coordinator stopped


async def enqueue(api: Api, n: int, queue: str = "default") -> None:
    for _ in range(n):
        assert (await api.post("/jobs", {"kind": "k", "queue": queue})).status == 201


async def test_older_and_newer_coordinators_never_break_a_rule_of_either(
    postgres_url: str, tmp_path: Path, cluster: list[Coordinator]
) -> None:
    older = release(postgres_url, tmp_path).start()
    cluster.append(older)
    newer = release(postgres_url, tmp_path, COMPATIBLE).start()  # migrates: still compatible
    cluster.append(newer)
    done = asyncio.Event()
    async with aiohttp.ClientSession() as session:
        a, b = Api(older.url, session), Api(newer.url, session)
        assert (await b.post("/queues/held/pause")).status == 200
        await enqueue(a, 5, queue="held")
        await enqueue(a, 30)
        workers = [
            asyncio.create_task(work(a, "older", done)),
            asyncio.create_task(work(b, "newer", done)),
        ]
        await wait_for_jobs(postgres_url, "completed", 30)
        assert older.proc is not None and older.proc.poll() is None  # both served together
        await enqueue(a, 30)

        newest = release(postgres_url, tmp_path, COMPATIBLE, BREAKING)
        starting = asyncio.create_task(asyncio.to_thread(newest.start))
        cluster.append(newest)
        for stopped in (older, newer):  # they know less than the new floor: they stop
            assert stopped.proc is not None
            # Within the newest's start (a process, under load) and a look.
            assert await asyncio.to_thread(stopped.proc.wait, 120) == 5
            assert "leasehold: stopped: a newer release migrated the database" in stopped.logs()
        await starting
        c = Api(newest.url, session)
        workers.append(asyncio.create_task(work(c, "newest", done)))
        await wait_for_jobs(postgres_url, "completed", 60)
        assert (await c.post("/queues/held/resume")).status == 200
        await wait_for_jobs(postgres_url, "completed", 65)
        done.set()
        await asyncio.gather(*workers)
    await check_the_rules(postgres_url)


async def wait_for_jobs(url: str, status: str, count: int) -> None:
    async def reached() -> bool:
        pg = await asyncpg.connect(url)
        try:
            n = await pg.fetchval("SELECT count(*) FROM jobs WHERE status = $1", status)
        finally:
            await pg.close()
        return bool(n >= count)

    deadline = asyncio.get_running_loop().time() + 60
    while not await reached():
        assert asyncio.get_running_loop().time() < deadline, f"{count} jobs {status}"
        await asyncio.sleep(0.05)


async def check_the_rules(url: str) -> None:
    pg = await asyncpg.connect(url)
    try:
        attempts: list[Any] = await pg.fetch(
            "SELECT a.job_id, a.token, a.worker_id, a.leased_at, a.outcome, j.queue"
            " FROM attempts a JOIN jobs j ON j.id = a.job_id"
        )
        raised_at = await pg.fetchval("SELECT raised_at FROM schema_floor")
        resumed = await pg.fetchval("SELECT count(*) FROM queue_pauses")
        statuses = await pg.fetch("SELECT status, count(*) AS n FROM jobs GROUP BY status")
    finally:
        await pg.close()
    assert {r["status"]: r["n"] for r in statuses} == {"completed": 65}
    assert resumed == 0
    tokens = [r["token"] for r in attempts]
    assert len(tokens) == len(set(tokens))  # no token handed out twice
    completed = [r["job_id"] for r in attempts if r["outcome"] == "completed"]
    assert len(completed) == len(set(completed)) == 65  # every job completed once
    by = {w: [r for r in attempts if r["worker_id"] == w] for w in ("older", "newer", "newest")}
    assert by["older"] and by["newer"] and by["newest"]
    assert not any(r["queue"] == "held" for r in by["older"] + by["newer"])  # paused then
    before = max(r["leased_at"] for r in by["older"] + by["newer"])
    after = min(r["leased_at"] for r in by["newest"])
    # The older releases stopped, and only then did the newest serve: never both at once.
    assert before < after
    assert after.timestamp() >= raised_at.timestamp() + SETTLE_SECONDS - 0.1
