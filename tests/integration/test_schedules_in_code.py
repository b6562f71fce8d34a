"""Schedules declared on the registry, synced to a real coordinator (served in the test
process, on each backend) as workers start: once however many start together, unchanged
schedules left alone, removed ones kept (or pruned), refusals logged."""

from __future__ import annotations

import asyncio
import logging

import pytest
import structlog
from structlog.testing import capture_logs

from leasehold import Client, task
from leasehold.client import NewJob
from leasehold.coordinator.auth_tokens import HashedToken, Role, hash_token
from leasehold.coordinator.clock import FakeClock
from leasehold.worker import Registry, Worker, WorkerSettings
from leasehold.worker.schedules import declare, sync_schedules
from tests.conftest import InProcessFactory
from tests.http import eventually
from tests.inproc import InProcessCoordinator, asgi_app

pytestmark = pytest.mark.timeout(60)


@task(kind="sc-report", queue="reports", priority=3, max_attempts=2)
def report(day: str, detailed: bool = False) -> str:
    return f"report for {day}"


def registry(cron: str = "0 3 * * *", *, prune: bool = False) -> Registry:
    r = Registry(prune_schedules=prune)
    r.register(report)
    r.add("sc-cleanup", print)
    r.schedule("nightly", report.new_job(day="yesterday"), cron=cron, timezone="Europe/Paris")
    r.schedule("sweep", "sc-cleanup", payload={"older_than": 30}, cron="*/15 * * * *")
    return r


async def sync(url: str, r: Registry) -> dict[str, list[str]]:
    async with Client(url) as client:
        done = await sync_schedules(client, r.schedules.values(), r.kinds, prune=r.prune_schedules)
    return done.fields()


async def test_workers_starting_together_store_each_schedule_once(
    inproc: InProcessCoordinator,
) -> None:
    reports = await asyncio.gather(*(sync(inproc.url, registry()) for _ in range(8)))
    assert all(set(r) <= {"created", "unchanged"} for r in reports)
    async with Client(inproc.url) as client:
        stored = {s["name"]: s for s in await client.schedules()}
        assert sorted(stored) == ["nightly", "sweep"]
        nightly = stored["nightly"]
        assert (nightly["kind"], nightly["queue"], nightly["priority"]) == (
            "sc-report",
            "reports",
            3,
        )
        assert (nightly["payload"], nightly["max_attempts"]) == (
            {"day": "yesterday", "detailed": False},
            2,
        )
        assert (nightly["timezone"], stored["sweep"]["payload"]) == (
            "Europe/Paris",
            {"older_than": 30},
        )
        # Once stored as declared, a start writes nothing: not even the same again.
        again = await asyncio.gather(*(sync(inproc.url, registry()) for _ in range(4)))
        assert again == [{"unchanged": ["nightly", "sweep"]}] * 4
        assert {s["name"]: s for s in await client.schedules()} == stored


async def test_changes_replace_and_removals_are_kept_unless_the_registry_prunes(
    inproc: InProcessCoordinator,
) -> None:
    await sync(inproc.url, registry())
    async with Client(inproc.url) as client:
        await client.put_schedule("by-hand", cron="0 * * * *", kind="sc-cleanup")
        await client.put_schedule("elsewhere", cron="0 * * * *", kind="another-app")
        assert await sync(inproc.url, registry(cron="0 4 * * *")) == {
            "replaced": ["nightly"],
            "unchanged": ["sweep"],
            "undeclared": ["by-hand"],  # of a kind this registry handles: named, kept
        }
        shrunk = registry()
        del shrunk.schedules["sweep"]  # as if removed from the code
        shrunk.prune_schedules = True
        assert await sync(inproc.url, shrunk) == {
            "replaced": ["nightly"],
            "deleted": ["by-hand", "sweep"],
        }
        assert sorted(s["name"] for s in await client.schedules()) == ["elsewhere", "nightly"]


async def test_the_same_schedule_again_keeps_its_next_fire_time(sqlite_url: str) -> None:
    """A PUT of the schedule as stored changes nothing, so a worker starting just as a fire
    time comes due does not skip that run; any change restarts it, as before."""
    clock = FakeClock()
    body = {"cron": "0 * * * *", "kind": "k"}
    async with asgi_app(sqlite_url, clock=clock) as api:
        first = (await api.put("/schedules/s", body)).body
        clock.advance(3600 + 30)  # its fire time has passed; no scheduler pass has run
        same = await api.put("/schedules/s", body)
        assert (same.status, same.body) == (200, first)
        changed = (await api.put("/schedules/s", {**body, "priority": 1})).body
        assert changed["next_fire_at"] > first["next_fire_at"]


async def test_a_starting_worker_syncs_and_a_refusal_is_logged_not_fatal(
    start_inproc: InProcessFactory,
) -> None:
    tokens = {role: f"{role.value}-token-0123456789abcdef" for role in (Role.WORKER, Role.ADMIN)}
    hashed = tuple(HashedToken(role, hash_token(t)) for role, t in tokens.items())
    coordinator = await start_inproc(tokens=hashed)
    for role, expected in ((Role.ADMIN, "schedules.synced"), (Role.WORKER, "schedules.not_synced")):
        settings = WorkerSettings(
            coordinator.url, token=tokens[role], wait_seconds=1, worker_id=f"w-{role.value}"
        )
        worker = Worker(registry(), settings)
        with capture_logs() as logs:
            # Info lines too: the served app's set-up logs warnings only.
            structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO))
            running = asyncio.create_task(worker.run())

            async def said_it(event: str = expected) -> bool:
                return any(e["event"] == event for e in logs)

            await eventually(said_it, 20)
            worker.stop()
            assert await running == 0
        (said,) = [e for e in logs if e["event"] == expected]
        if role is Role.WORKER:
            assert said["code"] == "forbidden" and "leasehold schedules sync" in said["hint"]
        else:
            assert said["created"] == ["nightly", "sweep"] or said["unchanged"]


def test_declarations_are_checked_where_they_are_made() -> None:
    with pytest.raises(ValueError, match="schedule name"):
        declare("-bad-", "k", cron="* * * * *")
    with pytest.raises(ValueError, match="invalid cron"):
        declare("s", "k", cron="61 * * * *")
    with pytest.raises(ValueError, match="unknown time zone"):
        declare("s", "k", cron="* * * * *", timezone="Mars/Base")
    with pytest.raises(ValueError, match="no run_after"):
        declare("s", NewJob("k", None, timeout_seconds=5), cron="* * * * *")
    r = registry()
    with pytest.raises(ValueError, match="declared already"):
        r.schedule("nightly", "k", cron="* * * * *")
    assert declare("s", "k", cron="* * * * *", catch_up="once").catch_up == "once"
