"""Protocol 1.1 seen by a client: a lost lease answer retried under its request id, a
coordinator that predates request ids, the announcement headers, the minimum lease."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import aiohttp
import pytest

from leasehold.client import Client, RetryPolicy
from leasehold.errors import InvalidRequest
from leasehold.model import Job
from tests.conftest import InProcessFactory
from tests.inproc import InProcessCoordinator

QUICK_RETRY = RetryPolicy(attempts=3, base_seconds=0.01, max_seconds=0.02)


async def test_a_lost_lease_answer_is_asked_again_and_gets_the_same_lease(
    inproc: InProcessCoordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first answer fails after the lease committed; the client's retry carries the
    same request id and gets that lease back, so the job spends one attempt, not two."""
    real = inproc.service.lease
    ids: list[str | None] = []

    async def lossy(*args: Any, **kwargs: Any) -> Sequence[Job]:
        jobs = await real(*args, **kwargs)
        ids.append(kwargs.get("request_id"))
        if len(ids) == 1:
            raise RuntimeError("the answer is lost after the commit")
        return jobs

    monkeypatch.setattr(inproc.service, "lease", lossy)
    async with Client(inproc.url, retry=QUICK_RETRY) as client:
        job = await client.enqueue("k", max_attempts=1)
        lease = await client.lease("w", kinds=["k"])
        assert lease is not None and lease.job.id == job.id
        assert ids[0] is not None and ids == [ids[0], ids[0]]
        assert (await client.complete(job.id, lease.token, "done")).status == "completed"
        assert (await client.get(job.id)).attempts == 1


async def test_the_client_leases_without_an_id_from_a_coordinator_that_predates_them(
    inproc: InProcessCoordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1.0 coordinator refuses the unknown field (422); the client leases without it,
    then and from then on."""
    real = inproc.service.lease
    seen: list[str | None] = []

    async def old(*args: Any, request_id: str | None = None, **kwargs: Any) -> Sequence[Job]:
        seen.append(request_id)
        if request_id is not None:
            raise InvalidRequest("invalid request: body.<unknown field>: extra inputs")
        return await real(*args, **kwargs)

    monkeypatch.setattr(inproc.service, "lease", old)
    async with Client(inproc.url, retry=QUICK_RETRY) as client:
        await client.enqueue("k")
        await client.enqueue("k")
        assert await client.lease("w", kinds=["k"]) is not None
        assert await client.lease("w", kinds=["k"]) is not None
    assert seen[0] is not None and seen[1:] == [None, None]


async def test_answers_announce_the_protocol_and_an_unchecked_token(
    inproc: InProcessCoordinator,
) -> None:
    """Every answer names the version; an open coordinator says when it ignored a token."""
    async with aiohttp.ClientSession() as session:
        async with session.get(inproc.url + "/jobs/1") as plain:
            assert plain.headers["Leasehold-Protocol"] == "1.2"
            assert "Leasehold-Auth-Warning" not in plain.headers
        bearer = {"Authorization": "Bearer not-a-token-anyone-configured"}
        async with session.get(inproc.url + "/jobs/1", headers=bearer) as warned:
            assert warned.status == 404  # served, as before: the coordinator is open
            assert warned.headers["Leasehold-Auth-Warning"].startswith("open coordinator")
        async with session.get(inproc.url + "/protocol") as found:
            body = await found.json()
    assert body["protocol"] == "1.2" and "lease_request_id" in body["capabilities"]
    assert body["open_access"] is True


async def test_a_lease_shorter_than_the_minimum_is_refused(start_inproc: InProcessFactory) -> None:
    """Below --min-lease-seconds (1 s by default) a lease or renewal is 422, naming it."""
    coordinator = await start_inproc(min_lease_seconds=1.0)
    async with aiohttp.ClientSession() as session:
        body = {"worker_id": "w", "lease_seconds": 0.5}
        async with session.post(coordinator.url + "/lease", json=body) as short:
            assert short.status == 422
            assert "lease_seconds must be at least 1" in (await short.json())["message"]
        body["lease_seconds"] = 1.0
        async with session.post(coordinator.url + "/lease", json=body) as enough:
            assert enough.status == 204


async def test_an_abandoned_long_poll_leases_nothing(inproc: InProcessCoordinator) -> None:
    """A long poll whose client gave up is not handed the job enqueued after it left: the
    job stays queued with its attempts untouched (PROTOCOL.md §4, Lease)."""
    body = {"worker_id": "gone", "kinds": ["later"], "wait_seconds": 10}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=0.3)) as session:
        with pytest.raises(TimeoutError):
            await session.post(inproc.url + "/lease", json=body)
    async with Client(inproc.url, retry=QUICK_RETRY) as client:
        job = await client.enqueue("later")
        # Long enough for the abandoned poll's next looks (every 0.5 s) to have happened.
        deadline = asyncio.get_running_loop().time() + 1.5
        while asyncio.get_running_loop().time() < deadline:
            now = await client.get(job.id)
            assert (now.status, now.attempts) == ("queued", 0), now
            await asyncio.sleep(0.1)
