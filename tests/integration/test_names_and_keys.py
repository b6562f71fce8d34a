"""Names that reach logs, tables and /metrics are visible text, and the scheduler's
idempotency keys are its own (issue 15, items 5 and 18)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from urllib.parse import quote

import pytest
import structlog

from leasehold.coordinator.maintenance.scheduler import Scheduler
from leasehold.coordinator.rules.fire_times import ScheduleSpec, idempotency_key
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.store.contract import NewJob, Store
from leasehold.coordinator.store.open import open_store
from tests.http import Api

# NEL (Cc), RIGHT-TO-LEFT OVERRIDE and ZERO WIDTH SPACE (Cf), LINE and PARAGRAPH SEPARATOR.
INVISIBLE = ["a\u0085b", "a\u202eb", "a\u200bb", "a\u2028b", "a\u2029b", "\ufeffa"]


@pytest.fixture
def api(inproc_api: Api) -> Api:
    return inproc_api


async def test_names_with_invisible_characters_are_refused(api: Api) -> None:
    """Kinds, queues, worker ids and limit kinds of Unicode categories Cc, Cf, Zl, Zp
    get a 422 and change nothing."""
    for name in INVISIBLE:
        for path, body in [
            ("/jobs", {"kind": name}),
            ("/jobs", {"kind": "k", "queue": name}),
            ("/jobs/batch", {"jobs": [{"kind": "k"}, {"kind": name}]}),
            ("/lease", {"worker_id": name}),
            ("/lease", {"worker_id": "w", "kinds": [name]}),
            ("/lease", {"worker_id": "w", "queues": [name]}),
        ]:
            got = await api.post(path, body)
            assert got.status == 422, (name, path, got)
            assert "control, format or line-separator" in got.body["message"]
        schedule = {"cron": "* * * * *", "kind": name}
        got = await api.request("PUT", "/schedules/s", json=schedule)
        assert got.status == 422, (name, got)
        limit = await api.request("PUT", f"/limits/{name}", json={"max_running": 1})
        assert limit.status == 422, (name, limit)
    assert (await api.get("/jobs")).body["jobs"] == []
    assert (await api.get("/schedules")).body["schedules"] == []
    assert (await api.get("/limits")).body["limits"] == []


async def test_visible_unicode_names_are_kept(api: Api) -> None:
    made = await api.post("/jobs", {"kind": "résumé-渲染", "queue": "façade"})
    assert made.status == 201, made
    assert (made.body["kind"], made.body["queue"]) == ("résumé-渲染", "façade")


# What still passed before one rule held every name and key: NUL (stored by SQLite where
# PostgreSQL answered 422), ESC, the C1 control U+009B (CSI on a terminal), a bidi override.
ANY_BACKEND_ALIKE = ["a\x00b", "a\x1b[2Jb", "a\u009bb", "a\u202eb"]


async def test_every_name_and_key_refuses_invisible_characters_alike(api: Api) -> None:
    """Heartbeat host and version, idempotency keys (body and header), job header values,
    lease request ids and the queue of a pause or resume: 422 on both backends, nothing
    stored."""
    started = "2030-01-01T00:00:00+00:00"
    beat = {"worker_id": "w", "host": "h", "pid": 1, "version": "1", "concurrency": 1}
    for bad in ANY_BACKEND_ALIKE:
        for path, body in [
            ("/workers/heartbeat", {**beat, "host": bad, "started_at": started}),
            ("/workers/heartbeat", {**beat, "version": bad, "started_at": started}),
            ("/jobs", {"kind": "k", "idempotency_key": bad}),
            ("/jobs/batch", {"jobs": [{"kind": "k"}, {"kind": "k", "idempotency_key": bad}]}),
            ("/jobs", {"kind": "k", "headers": {"traceparent": bad}}),
            ("/lease", {"worker_id": "w", "request_id": bad}),
        ]:
            got = await api.post(path, body)
            assert got.status == 422, (bad, path, got)
        for action in ("pause", "resume"):
            got = await api.post(f"/queues/{quote(bad, safe='')}/{action}")
            assert got.status == 422, (bad, action, got)
            assert "control, format or line-separator" in got.body["message"]
    # A header carries Latin-1 only: U+009B is the one of them an HTTP client can send.
    got = await api.post("/jobs", {"kind": "k"}, headers={"Idempotency-Key": "a\u009bb"})
    assert got.status == 422, got
    assert (await api.post("/jobs/requeue", {"error_contains": "a\x00b"})).status == 422
    assert (await api.get("/jobs")).body["jobs"] == []
    assert (await api.get("/workers")).body["workers"] == []
    assert (await api.get("/queues")).body["queues"] == []


async def test_producers_cannot_use_the_scheduler_keys(api: Api) -> None:
    """A key in the scheduler's namespace is refused, in the body, the header and batches."""
    key = idempotency_key("nightly", datetime(2030, 1, 1).astimezone())
    got = await api.post("/jobs", {"kind": "k", "idempotency_key": key})
    assert got.status == 422, got
    assert "scheduler" in got.body["message"]
    batch = {"jobs": [{"kind": "k"}, {"kind": "k", "idempotency_key": "schedule:x"}]}
    assert (await api.post("/jobs/batch", batch)).status == 422
    assert (await api.get("/jobs")).body["jobs"] == []
    assert (await api.post("/jobs", {"kind": "k", "idempotency_key": "scheduled:x"})).status == 201


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    opened = open_store(database_url)
    await opened.open()
    yield opened
    await opened.close()


async def test_a_producer_job_holding_a_run_key_is_logged_at_warning(store: Store) -> None:
    """A job that got a run's key before the prefix was reserved (inserted here directly)
    makes the scheduler log the conflict at warning instead of staying silent."""
    scheduler = Scheduler(JobService(store), interval=60, grace=60)
    now = await store.now()
    fire_at = (now - timedelta(seconds=1)).replace(microsecond=0)
    spec = ScheduleSpec(name="nightly", cron="* * * * * *", kind="report")
    await store.schedule_put(spec, lambda _spec, _now: fire_at)
    key = idempotency_key("nightly", fire_at)
    squatter = NewJob("report", {"mine": True}, 1, None, key, request_hash="producer")
    await store.job_insert_many([squatter])
    with structlog.testing.capture_logs() as logs:
        assert await scheduler.fire() == 1
    conflicts = [e for e in logs if e["event"] == "schedule.key_conflict"]
    assert len(conflicts) == 1, logs
    assert conflicts[0]["log_level"] == "warning" and conflicts[0]["name"] == "nightly"
