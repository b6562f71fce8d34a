"""A 2xx means committed: a coordinator killed with SIGKILL right after acknowledging many
concurrent enqueues, completions and failures has every one of them after a restart. And
SIGTERM stops it cleanly: long polls answered at once, requests in flight finished, the
database closed, exit status 0."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.http import Api, eventually
from tests.process import Coordinator, wait_until

pytestmark = pytest.mark.slow(10)  # started early: see tests/conftest.py

CLIENTS = 48
ACKS_BEFORE_KILL = 300


@pytest.fixture
def sqlite_coordinator(tmp_path: Path) -> Iterator[Coordinator]:
    c = Coordinator(
        f"sqlite:///{tmp_path / 'durable.db'}",
        tmp_path,
        ["--log-level", "debug", "--reap-interval-seconds", "60"],  # no reaping mid-test
    )
    c.start()
    yield c
    c.kill()


async def burst(
    url: str,
    requests: list[tuple[str, dict[str, Any]]],
    on_ack: Callable[[int, Any], None],
    stop_after: int | None = None,
    stop: Callable[[], None] | None = None,
) -> list[int]:
    """Send ``requests`` from CLIENTS concurrent connections. Each 2xx is passed to
    ``on_ack(index, body)``; after ``stop_after`` of them, ``stop()`` is called at once,
    with the others still in flight. Returns the statuses seen (0: no answer)."""
    statuses = [0] * len(requests)
    acked = 0
    queue = iter(range(len(requests)))

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal acked, stop_after
        for i in queue:
            path, body = requests[i]
            try:
                async with session.post(url + path, json=body) as r:
                    statuses[i] = r.status
                    payload = await r.json(content_type=None)
            except (TimeoutError, aiohttp.ClientError):
                continue  # in flight when the process died: may or may not have happened
            if 200 <= r.status < 300:
                on_ack(i, payload)
                acked += 1
                if stop is not None and stop_after is not None and acked >= stop_after > 0:
                    stop_after = 0  # once
                    stop()

    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await asyncio.gather(*(client(session) for _ in range(CLIENTS)))
    return statuses


async def read_jobs(api: Api, ids: list[int]) -> dict[int, dict[str, Any]]:
    jobs = await asyncio.gather(*(api.job(i) for i in ids))
    return dict(zip(ids, jobs, strict=True))


async def test_every_acknowledged_change_survives_sigkill(sqlite_coordinator: Coordinator) -> None:
    c = sqlite_coordinator
    # 1. Enqueues, killed right after the 300th acknowledgement.
    enqueued: dict[int, Any] = {}
    requests = [("/jobs", {"kind": "durable", "payload": {"n": n}}) for n in range(2000)]

    def record_enqueue(i: int, job: Any) -> None:
        enqueued[job["id"]] = requests[i][1]["payload"]

    statuses = await burst(c.url, requests, record_enqueue, ACKS_BEFORE_KILL, c.kill)
    assert len(enqueued) >= ACKS_BEFORE_KILL
    assert 0 in statuses  # the kill did land with requests still unanswered
    assert all(s == 0 or 200 <= s < 300 for s in statuses), set(statuses)
    c.start()
    async with aiohttp.ClientSession() as session:
        api = Api(c.url, session)
        stored = await read_jobs(api, sorted(enqueued))
        assert all(stored[i]["payload"] == enqueued[i] for i in enqueued)
        # 2. Completions and failures of leased jobs, killed the same way.
        leased = (await api.post("/lease", {"worker_id": "w", "max_jobs": 900})).body["leases"]
    reports: list[tuple[str, dict[str, Any]]] = []
    for n, lease in enumerate(leased):
        jid, token = lease["job"]["id"], lease["token"]
        if n % 3 == 0:
            reports.append((f"/jobs/{jid}/complete", {"token": token, "result": {"r": n}}))
        else:
            reports.append(
                (f"/jobs/{jid}/fail", {"token": token, "error": f"e{n}", "retryable": n % 3 == 1})
            )
    acked: dict[int, Any] = {}

    def record_report(i: int, job: Any) -> None:
        acked[job["id"]] = reports[i]

    await burst(c.url, reports, record_report, ACKS_BEFORE_KILL, c.kill)
    assert len(acked) >= ACKS_BEFORE_KILL
    c.start()
    async with aiohttp.ClientSession() as session:
        stored = await read_jobs(Api(c.url, session), sorted(acked))
    for jid, (path, body) in acked.items():
        job = stored[jid]
        if path.endswith("/complete"):
            assert (job["status"], job["result"]) == ("completed", body["result"]), job
        elif body["retryable"]:
            assert (job["status"], job["last_error"]) == ("queued", body["error"]), job
        else:
            assert (job["status"], job["last_error"]) == ("dead", body["error"]), job


def log_events(c: Coordinator) -> list[dict[str, Any]]:
    return [json.loads(line) for line in c.logs().splitlines() if line.startswith("{")]


async def test_sigterm_answers_long_polls_finishes_requests_and_exits_0(
    sqlite_coordinator: Coordinator, tmp_path: Path
) -> None:
    c = sqlite_coordinator
    async with aiohttp.ClientSession() as session:
        api = Api(c.url, session)
        poll = asyncio.create_task(
            api.post("/lease", {"worker_id": "w", "kinds": ["none"], "wait_seconds": 25})
        )
        await eventually(_async(lambda: any(e["event"] == "lease.waiting" for e in log_events(c))))
        enqueued: list[int] = []
        enqueues = [("/jobs", {"kind": "k", "payload": n}) for n in range(400)]
        in_flight = asyncio.create_task(
            burst(c.url, enqueues, lambda i, job: enqueued.append(job["id"]))
        )
        await eventually(_async(lambda: len(enqueued) >= 20))
        asked = time.monotonic()
        c.signal(signal.SIGTERM)
        answer = await poll
        assert answer.status == 204, answer  # answered at once, not after 25 s
        assert time.monotonic() - asked < 5
        statuses = await in_flight
    assert c.proc is not None
    wait_until(lambda: c.proc is not None and c.proc.poll() is not None, 15, what="the exit")
    assert c.proc.returncode == 0, c.logs()[-3000:]
    assert all(s == 0 or 200 <= s < 300 for s in statuses), set(statuses)  # never a 5xx
    assert not (tmp_path / "durable.db-wal").exists()  # closed: the WAL was checkpointed away
    events = [e["event"] for e in log_events(c)]
    assert "coordinator.stopping" in events
    assert not [e for e in log_events(c) if e.get("level") in ("error", "critical")]
    for trouble in ("Traceback", "timeout graceful shutdown exceeded"):  # uvicorn's own lines
        assert trouble not in c.logs()
    c.start()
    async with aiohttp.ClientSession() as session:
        stored = await read_jobs(Api(c.url, session), enqueued)
    assert len(stored) == len(enqueued)


def _async(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def run() -> bool:
        return check()

    return run
