"""/stats, /metrics, the attempt history and the logs tell exactly what happened."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

import leasehold
from leasehold.model import JobStatus
from tests.conftest import CoordinatorFactory
from tests.http import Api, eventually
from tests.inproc import InProcessCoordinator, asgi_app
from tests.process import Coordinator


@pytest.fixture
def api(inproc_api: Api) -> Api:
    """Nothing here is about the process: the app served in the test process will do."""
    return inproc_api


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[s.name, tuple(sorted(s.labels.items()))] = s.value
    return found


async def scripted_scenario(
    api: Api, advance: Callable[[float], Awaitable[None]] | None = None
) -> dict[str, Any]:
    """a: 3 completed, 1 retried then pending, 1 dead; b: 1 expired-and-requeued, 1 queued.

    ``advance`` moves an in-process coordinator's time past the short lease (and sweeps);
    without it, a coordinator process's own reaper is waited for.
    """
    a_ids = [(await api.enqueue("a", payload={"secret": "hunter2"}))["id"] for _ in range(5)]
    b_ids = [(await api.enqueue("b", max_attempts=3))["id"] for _ in range(2)]
    tokens = {}
    for _ in range(5):
        lease = await api.lease("wa", kinds=["a"], lease_seconds=30)
        assert lease is not None
        tokens[lease["job"]["id"]] = lease["token"]
    for job_id in a_ids[:3]:
        a = await api.post(f"/jobs/{job_id}/complete", {"token": tokens[job_id]})
        assert a.status == 200
    retry = await api.post(
        f"/jobs/{a_ids[3]}/fail",
        {"token": tokens[a_ids[3]], "error": "try later", "retry_after_seconds": 3600},
    )
    assert retry.body["status"] == "queued"
    dead = await api.post(
        f"/jobs/{a_ids[4]}/fail", {"token": tokens[a_ids[4]], "error": "no", "retryable": False}
    )
    assert dead.body["status"] == "dead"
    stale = await api.post(f"/jobs/{a_ids[0]}/complete", {"token": 7})
    assert stale.status == 409
    expiring = await api.lease("wb", kinds=["b"], lease_seconds=0.2)
    assert expiring is not None
    expired_id = expiring["job"]["id"]
    if advance is not None:
        await advance(0.3)  # past the 0.2 s lease: an expiry exactly at now is a float away

    async def reaped() -> bool:
        return bool((await api.job(expired_id))["status"] == "queued")

    await eventually(reaped)
    return {"a": a_ids, "b": b_ids, "expired": expired_id}


async def test_stats_match_the_scenario(api: Api, inproc: InProcessCoordinator) -> None:
    await scripted_scenario(api, inproc.advance)
    stats = (await api.get("/stats")).body
    counts = {"waiting": 0, "running": 0, "cancelled": 0}
    assert stats["by_status"] == {**counts, "queued": 3, "completed": 3, "dead": 1}
    assert stats["by_kind"]["a"] == {**counts, "queued": 1, "completed": 3, "dead": 1}
    assert stats["by_kind"]["b"] == {**counts, "queued": 2, "completed": 0, "dead": 0}
    assert stats["by_queue"] == {"default": stats["by_status"]}
    assert stats["lease_expirations"] == 1
    assert stats["stale_token_rejections"] == 1
    assert stats["completed_last_minute"] == 3
    assert stats["failed_last_minute"] == 2
    totals = stats["totals"]
    assert (totals["enqueued"], totals["leased"], totals["dead"]) == (7, 6, 1)
    assert stats["totals_by_kind"]["b"]["lease_expired"] == 1
    assert stats["oldest_queued_age_seconds"] is not None
    assert stats["oldest_queued_age_seconds"] >= 0
    assert stats["avg_run_seconds"] is not None


async def test_empty_stats_have_every_status_and_null_averages(api: Api) -> None:
    stats = (await api.get("/stats")).body
    assert stats["by_status"] == dict.fromkeys(
        ["waiting", "queued", "running", "completed", "dead", "cancelled"], 0
    )
    assert stats["by_queue"] == {}
    assert stats["avg_wait_seconds"] is None
    assert stats["avg_run_seconds"] is None
    assert stats["oldest_queued_age_seconds"] is None
    assert stats["completed_last_minute"] == 0


async def test_averages_match_measured_wait_and_run(api: Api, inproc: InProcessCoordinator) -> None:
    """On SQLite only the fake clock moves, so the figures are exact. On PostgreSQL the
    database's clock stamps each step somewhere within its request, so each figure lies
    between what passed from the end of one request to the start of the next and what
    passed from the start of one to the end of the next, as measured here."""
    enqueue_sent = time.monotonic()
    job = await api.enqueue("timed")
    enqueue_answered = time.monotonic()
    await inproc.advance(0.4, sweep=False)  # the wait being measured
    lease_sent = time.monotonic()
    lease = await api.lease("w")
    lease_answered = time.monotonic()
    assert lease is not None
    await inproc.advance(0.3, sweep=False)  # the run being measured
    complete_sent = time.monotonic()
    await api.post(f"/jobs/{job['id']}/complete", {"token": lease["token"]})
    complete_answered = time.monotonic()
    stats = (await api.get("/stats")).body
    if inproc.clock is not None:
        assert abs(stats["avg_wait_seconds"] - 0.4) < 0.001
        assert abs(stats["avg_run_seconds"] - 0.3) < 0.001
        return
    slack = 0.01  # the database's and this process's clocks tick apart
    low, high = lease_sent - enqueue_answered, lease_answered - enqueue_sent
    assert low - slack <= stats["avg_wait_seconds"] <= high + slack
    low, high = complete_sent - lease_answered, complete_answered - lease_sent
    assert low - slack <= stats["avg_run_seconds"] <= high + slack


async def test_totals_survive_a_restart(coordinator: Coordinator) -> None:
    """A real process, killed: the totals are in the database, not in its memory."""
    async with aiohttp.ClientSession() as session:
        api = Api(coordinator.url, session)
        await scripted_scenario(api)
        before = (await api.get("/stats")).body
        coordinator.restart(kill=True)
        after = (await api.get("/stats")).body
    for field in ("by_status", "totals", "lease_expirations", "stale_token_rejections"):
        assert after[field] == before[field], field


async def test_metrics_in_prometheus_format(api: Api, inproc: InProcessCoordinator) -> None:
    await scripted_scenario(api, inproc.advance)
    answer = await api.get("/metrics")
    assert answer.status == 200
    found = samples(answer.body.decode())
    assert found["leasehold_jobs_enqueued_total", (("kind", "a"),)] == 5
    assert found["leasehold_jobs_completed_total", (("kind", "a"),)] == 3
    assert found["leasehold_jobs_failed_total", (("kind", "a"),)] == 2
    assert found["leasehold_jobs_dead_total", (("kind", "a"),)] == 1
    assert found["leasehold_lease_expirations_total", (("kind", "b"),)] == 1
    assert found["leasehold_stale_token_rejections_total", (("kind", "a"),)] == 1
    assert found["leasehold_jobs", (("status", "queued"),)] == 3
    assert found["leasehold_jobs", (("status", "completed"),)] == 3
    assert found["leasehold_job_wait_seconds_count", (("kind", "a"), ("queue", "default"))] == 5
    assert found["leasehold_job_run_seconds_count", (("kind", "a"),)] == 3


async def test_metrics_have_what_the_standard_alerts_need(
    api: Api, inproc: InProcessCoordinator
) -> None:
    """Queued jobs by queue and kind, each queue's oldest waiting job and pause, live
    workers, unserved work; every status the model has; the release, the HTTP requests and
    the process (deploy/prometheus/leasehold-alerts.yml reads them)."""
    for kind, queue in [("a", "q1"), ("a", "q1"), ("b", "default")]:
        await api.enqueue(kind, queue=queue)
    assert (await api.post("/queues/q1/pause")).status == 200
    await inproc.advance(0.2, sweep=False)  # both jobs wait (a real 0.2 s on PostgreSQL)
    beat = {
        "worker_id": "w1",
        "host": "h",
        "pid": 1,
        "version": "1",
        "kinds": ["b"],
        "queues": ["default"],
        "concurrency": 1,
        "started_at": inproc.now().isoformat(),
    }
    assert (await api.post("/workers/heartbeat", beat)).status == 200
    found = samples((await api.get("/metrics")).body.decode())
    assert found["leasehold_jobs_queued", (("kind", "a"), ("queue", "q1"))] == 2
    assert found["leasehold_jobs_queued", (("kind", "b"), ("queue", "default"))] == 1
    assert found["leasehold_oldest_queued_age_seconds", (("queue", "q1"),)] >= 0.2
    assert found["leasehold_queue_paused", (("queue", "q1"),)] == 1
    assert found["leasehold_queue_paused", (("queue", "default"),)] == 0
    assert found["leasehold_workers_live", ()] == 1
    assert found["leasehold_unserved_jobs", (("kind", "a"), ("queue", "q1"))] == 2
    assert ("leasehold_unserved_jobs", (("kind", "b"), ("queue", "default"))) not in found
    statuses = {dict(labels)["status"] for name, labels in found if name == "leasehold_jobs"}
    assert statuses == {status.value for status in JobStatus}  # a new status shows by itself
    (build,) = [dict(labels) for name, labels in found if name == "leasehold_build_info"]
    assert build["version"] == leasehold.__version__
    posted = (("method", "POST"), ("route", "/jobs"), ("status", "201"))
    assert found["leasehold_http_requests_total", posted] == 3
    timed = (("method", "POST"), ("route", "/jobs"))
    assert found["leasehold_http_request_duration_seconds_count", timed] == 3
    assert found["process_cpu_seconds_total", ()] > 0
    # A kind gets every counter at 0 when it gets series: its first death is an increase.
    assert found["leasehold_jobs_dead_total", (("kind", "a"),)] == 0


async def test_http_metrics_keep_to_their_labels(sqlite_url: str) -> None:
    """A request's labels are its route's template and a known method: never its path, nor
    a method a client made up (each would be a series of its own)."""
    async with asgi_app(sqlite_url) as app:
        await app.request("FOO", "/jobs/hunter2")
        await app.get("/no/such/hunter2")
        await app.get("/ui/")
        body = (await app.get("/metrics")).body.decode()
    found = samples(body)
    assert "hunter2" not in body and "FOO" not in body
    assert (
        found[
            "leasehold_http_requests_total",
            (("method", ""), ("route", "/jobs/{job_id}"), ("status", "405")),
        ]
        == 1
    )
    assert (
        found[
            "leasehold_http_requests_total",
            (("method", "GET"), ("route", "unmatched"), ("status", "404")),
        ]
        == 1
    )
    assert (
        found[
            "leasehold_http_requests_total",
            (("method", "GET"), ("route", "/ui"), ("status", "200")),
        ]
        == 1
    )


async def test_attempt_history_shows_the_takeover(api: Api, inproc: InProcessCoordinator) -> None:
    ids = await scripted_scenario(api, inproc.advance)
    # The other b job has waited longer, so it comes first.
    leased = [await api.lease("rescuer", kinds=["b"]) for _ in range(2)]
    assert ids["expired"] in {lease["job"]["id"] for lease in leased if lease}
    history = (await api.get(f"/jobs/{ids['expired']}/attempts")).body["attempts"]
    assert [(h["worker_id"], h["outcome"]) for h in history] == [
        ("wb", "expired"),
        ("rescuer", "running"),
    ]
    assert history[0]["token"] < history[1]["token"]
    assert "lease expired" in history[0]["error"]
    assert history[0]["finished_at"] is not None


async def test_logs_are_json_with_job_fields_and_no_payloads(
    start_coordinator: CoordinatorFactory,
) -> None:
    coordinator = start_coordinator(
        "--retry-base-seconds",
        "0.05",
        "--retry-max-seconds",
        "1",
        "--reap-interval-seconds",
        "0.1",
        "--log-level",
        "debug",
    )
    async with aiohttp.ClientSession() as session:
        await scripted_scenario(Api(coordinator.url, session))
    lines = [json.loads(line) for line in coordinator.logs().splitlines() if line.startswith("{")]
    events = {line["event"] for line in lines}
    levels = {line["event"]: line["level"] for line in lines}
    # One line per job per lease and per enqueue would double a busy coordinator's logging.
    assert (levels["job.enqueued"], levels["job.leased"]) == ("debug", "debug")
    assert (levels["job.completed"], levels["job.dead"]) == ("info", "warning")
    for expected in (
        "job.enqueued",
        "job.leased",
        "job.completed",
        "job.failed",
        "job.dead",
        "lease.expired",
        "token.stale",
    ):
        assert expected in events, expected
    for line in lines:
        if line["event"].startswith(("job.", "lease.", "token.")) and "job_id" in line:
            for field in ("job_id", "kind", "attempt", "worker_id", "token"):
                assert field in line, (field, line)
    assert "hunter2" not in coordinator.logs()
    requests = [line for line in lines if line["event"] == "http.request"]
    assert any(r["status"] == 409 for r in requests)
    assert all({"method", "route", "status", "duration_ms"} <= r.keys() for r in requests)
    # Which coordinator, who asked, and which request: on every request's lines.
    assert {line.get("instance") for line in lines} == {
        f"{socket.gethostname()}:{coordinator.port}"
    }
    assert {r["client"] for r in requests} == {"127.0.0.1"}
    assert len({r["request_id"] for r in requests}) == len(requests)
    enqueued = [line for line in lines if line["event"] == "job.enqueued"]
    assert {line["request_id"] for line in enqueued} <= {r["request_id"] for r in requests}


async def test_a_request_id_is_taken_or_made_sent_back_and_logged(sqlite_url: str) -> None:
    """X-Request-ID: the client's when it is a plain token, else a new one; the answer
    carries it back, and every line logged while the request is answered carries it."""
    # Open access would refuse a request through a proxy: the operator allows it here.
    async with asgi_app(sqlite_url, trusted_proxies="127.0.0.1", allow_open_access=True) as app:
        with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
            given = await app.post(
                "/jobs",
                {"kind": "k"},
                headers={"x-request-id": "abc-123", "x-forwarded-for": "203.0.113.7"},
            )
            made = [await app.get("/jobs/1") for _ in range(2)]
            hostile = await app.get("/jobs/1", headers={"x-request-id": "a b\x1b[2J"})
    assert given.headers["x-request-id"] == "abc-123"
    ids = [a.headers["x-request-id"] for a in (*made, hostile)]
    assert all(re.fullmatch("[0-9a-f]{32}", i) for i in ids) and len(set(ids)) == 3
    lines = {(line["event"], line["request_id"]): line for line in logs}
    assert lines["job.enqueued", "abc-123"]["client"] == "203.0.113.7"  # a trusted proxy's
    assert lines["http.request", "abc-123"]["route"] == "/jobs"
    assert lines["http.request", ids[0]]["client"] == "127.0.0.1"
