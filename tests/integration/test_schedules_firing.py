"""Schedules firing: each run enqueued once, per second; catch-up after every coordinator
was down; two coordinators on one PostgreSQL never enqueue a run twice.

The first two serve the app in the test process (tests/inproc.py): on SQLite its FakeClock
moves a second at a time and a pass is fired at once, on PostgreSQL (whose clock is the
database's) time really passes; "down" is the app stopped and started again on the same
database. Only the last starts processes, since several coordinators are its point.
Waits are polls with deadlines; the one sleep is the length of an outage on PostgreSQL.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from leasehold.coordinator.clock import FakeClock
from tests.conftest import InProcessFactory
from tests.http import Api, eventually
from tests.inproc import InProcessCoordinator, in_process_store, quick_settings, serve_app
from tests.process import Coordinator

# A pass every 0.1 s. The grace is what a stalled process on a busy machine may lag without
# a run counting as missed; the catch-up test wants misses, so it has a shorter one.
FAST = ("--schedule-interval-seconds", "0.1", "--schedule-grace-seconds", "3")
CATCH_UP = {"schedule_interval_seconds": 0.1, "schedule_grace_seconds": 1.5}
GRACE = timedelta(seconds=1.5)
EVERY_SECOND = "* * * * * *"


async def runs(api: Api, name: str) -> list[tuple[datetime, datetime]]:
    """(fire time, created at) of every job the schedule enqueued, by fire time."""
    answer = await api.get("/jobs", params={"kind": "tick", "limit": "1000"})
    prefix = f"schedule:{name}:"
    found = [
        (
            datetime.fromisoformat(j["idempotency_key"].removeprefix(prefix)),
            datetime.fromisoformat(j["created_at"]),
        )
        for j in answer.body["jobs"]
        if (j["idempotency_key"] or "").startswith(prefix)
    ]
    return sorted(found)


async def put_schedule(api: Api, name: str, **fields: Any) -> dict[str, Any]:
    body = {"cron": EVERY_SECOND, "kind": "tick", **fields}
    answer = await api.request("PUT", f"/schedules/{name}", json=body)
    assert answer.status == 201, answer
    result: dict[str, Any] = answer.body
    return result


def assert_consecutive_seconds(fires: list[datetime]) -> None:
    assert fires == [fires[0] + timedelta(seconds=i) for i in range(len(fires))]


async def count_at_least(api: Api, name: str, n: int) -> list[tuple[datetime, datetime]] | None:
    found = await runs(api, name)
    return found if len(found) >= n else None


async def a_second_later(
    coordinator: InProcessCoordinator, api: Api, name: str, n: int
) -> list[tuple[datetime, datetime]] | None:
    """Let a second pass for the coordinator and fire what is due; the runs once n exist."""
    await coordinator.advance(1.0, sweep=False)
    await coordinator.fire()
    return await count_at_least(api, name, n)


async def test_a_schedule_enqueues_every_run_once(start_inproc: InProcessFactory) -> None:
    coordinator = await start_inproc(schedule_interval_seconds=0.1, schedule_grace_seconds=3.0)
    async with aiohttp.ClientSession() as session:
        api = Api(coordinator.url, session)
        await put_schedule(api, "beat", queue="cron", priority=9, payload={"x": 1})
        await eventually(lambda: a_second_later(coordinator, api, "beat", 4), within=30)
        assert (await api.request("DELETE", "/schedules/beat")).status == 204
        fires = [fire for fire, _ in await runs(api, "beat")]
        assert_consecutive_seconds(fires)
        jobs = (await api.get("/jobs", params={"kind": "tick"})).body["jobs"]
        assert {(j["queue"], j["priority"], str(j["payload"])) for j in jobs} == {
            ("cron", 9, "{'x': 1}")
        }


@pytest.mark.parametrize("catch_up", ["skip", "once"])
async def test_catch_up_after_every_coordinator_was_down(database_url: str, catch_up: str) -> None:
    fake = FakeClock(datetime.now(UTC))  # shared by both starts (SQLite only)

    def serve() -> AbstractAsyncContextManager[InProcessCoordinator]:
        store, clock = in_process_store(database_url, fake)
        return serve_app(store, quick_settings(**CATCH_UP), clock)

    async with aiohttp.ClientSession() as session:
        async with serve() as first:
            api = Api(first.url, session)
            await put_schedule(api, "beat", catch_up=catch_up)
            await eventually(lambda: a_second_later(first, api, "beat", 2), within=30)
        down_at = first.now()  # once it has stopped: its scheduler may fire until then
        # The outage: fire times pass with no coordinator (its scheduler stopped with it).
        await first.advance(5.0, sweep=False)
        async with serve() as second:
            api = Api(second.url, session)
            before = [fire for fire, created in await runs(api, "beat") if created <= down_at]

            async def after_restart() -> list[tuple[datetime, datetime]]:
                await second.fire()
                return [(f, c) for f, c in await runs(api, "beat") if c > down_at]

            back = await eventually(after_restart, within=30)
            first_pass = min(created for _, created in back)
            missed = [f for f, _ in back if f < first_pass - GRACE]
            assert first_pass - GRACE - before[-1] > timedelta(seconds=2)  # runs were missed
            if catch_up == "skip":
                assert missed == []
            else:
                latest_missed = (first_pass - GRACE).replace(microsecond=0)
                if latest_missed == first_pass - GRACE:
                    latest_missed -= timedelta(seconds=1)
                assert missed == [latest_missed]
            fires = [f for f, _ in await runs(api, "beat")]
            assert len(fires) == len(set(fires))
            assert_consecutive_seconds([f for f in fires if f >= first_pass - GRACE])


@pytest.mark.postgres
async def test_two_coordinators_on_one_postgresql_enqueue_each_run_once(
    postgres_url: str, tmp_path: Path
) -> None:
    one = Coordinator(postgres_url, tmp_path, FAST)
    two = Coordinator(postgres_url, tmp_path, FAST)
    try:
        await asyncio.gather(asyncio.to_thread(one.start), asyncio.to_thread(two.start))
        async with aiohttp.ClientSession() as session:
            api, other = Api(one.url, session), Api(two.url, session)
            names = [f"beat{n}" for n in range(5)]  # several, so both have some to fire
            for n, name in enumerate(names):
                await put_schedule(api if n % 2 else other, name)
            for name in names:
                await eventually(lambda name=name: count_at_least(api, name, 5), within=30)
            for name in names:
                assert (await api.request("DELETE", f"/schedules/{name}")).status == 204
            total = 0
            for name in names:
                fires = [f for f, _ in await runs(api, name)]
                assert_consecutive_seconds(fires)
                total += len(fires)
    finally:
        one.kill()
        two.kill()
    # Each run was enqueued by exactly one of them, and neither ever failed a pass.
    logs = [c.logs() for c in (one, two)]
    assert sum(log.count('"schedule.fired"') for log in logs) == total
    assert not any('"scheduler.error"' in log for log in logs)
