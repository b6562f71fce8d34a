"""SIGHUP rotates the coordinator's tokens without a restart, under load: the tokens file
is read again and logged; a token added works at once, a token removed is refused, a file
that cannot be used keeps the tokens in use, and no request with a valid token fails."""

from __future__ import annotations

import asyncio
import json
import signal
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from leasehold.coordinator.auth_tokens import hash_token
from tests.http import Api
from tests.process import Coordinator

pytestmark = pytest.mark.slow(8)

OLD = "producer-old-0123456789abcdef"
NEW = "producer-new-0123456789abcdef"
WORKER = "worker-token-0123456789abcdef"


def tokens_file(path: Path, *tokens: tuple[str, str]) -> None:
    path.write_text("".join(f"{role}:{hash_token(token).hex()}\n" for role, token in tokens))


def as_bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Producer:
    """Enqueues without pause with the token it is given, which may change meanwhile."""

    def __init__(self, api: Api, token: str) -> None:
        self.api = api
        self.token = token
        self.statuses: Counter[int] = Counter()
        self.stop = asyncio.Event()
        self.answered = asyncio.Condition()

    async def run(self) -> None:
        while not self.stop.is_set():
            made = await self.api.post("/jobs", {"kind": "k"}, headers=as_bearer(self.token))
            self.statuses[made.status] += 1
            async with self.answered:
                self.answered.notify_all()

    async def more(self, n: int) -> None:
        """Until ``n`` more of its requests have been answered."""
        target = self.statuses.total() + n
        async with self.answered:
            await self.answered.wait_for(lambda: self.statuses.total() >= target)


async def work(api: Api, stop: asyncio.Event, statuses: Counter[int]) -> None:
    """A worker that keeps leasing and completing with its own token throughout."""
    while not stop.is_set():
        got = await api.post(
            "/leases",
            {"worker_id": "w", "max_jobs": 10, "wait_seconds": 0.1},
            headers=as_bearer(WORKER),
        )
        statuses[got.status] += 1
        for lease in got.body["leases"] if got.status == 200 else []:
            done = await api.post(
                f"/jobs/{lease['job']['id']}/complete",
                {"token": lease["token"]},
                headers=as_bearer(WORKER),
            )
            statuses[done.status] += 1


def reloads(coordinator: Coordinator, event: str) -> list[dict[str, object]]:
    lines = [json.loads(x) for x in coordinator.logs().splitlines() if x.startswith("{")]
    return [x for x in lines if x["event"] == event]


async def logged(coordinator: Coordinator, event: str, count: int) -> dict[str, object]:
    deadline = asyncio.get_running_loop().time() + 10
    while len(found := reloads(coordinator, event)) < count:
        assert asyncio.get_running_loop().time() < deadline, f"no {event} #{count}"
        await asyncio.sleep(0.02)
    return found[count - 1]


async def test_sighup_rotates_a_token_under_load(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    tokens_file(file, ("producer", OLD), ("worker", WORKER))
    coordinator = Coordinator(
        f"sqlite:///{tmp_path / 'leasehold.db'}", tmp_path, ["--tokens-file", str(file)]
    ).start()
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(coordinator.url, session)
            producer = Producer(api, OLD)
            worked: Counter[int] = Counter()
            stop = asyncio.Event()
            load = [
                asyncio.create_task(producer.run()),
                asyncio.create_task(work(api, stop, worked)),
            ]
            await producer.more(20)  # load before the rotation

            tokens_file(file, ("producer", OLD), ("producer", NEW), ("worker", WORKER))
            coordinator.signal(signal.SIGHUP)
            added = await logged(coordinator, "auth.reloaded", 1)
            assert (added["producer"], added["worker"], added["tokens_file"]) == (2, 1, str(file))
            producer.token = NEW  # the producer moves to the new token
            await producer.more(20)  # load with the new token

            tokens_file(file, ("producer", NEW), ("worker", WORKER))
            coordinator.signal(signal.SIGHUP)
            assert (await logged(coordinator, "auth.reloaded", 2))["producer"] == 1
            old = await api.post("/jobs", {"kind": "k"}, headers=as_bearer(OLD))
            assert old.status == 401  # the old token is gone

            file.write_text("producer:not-a-digest\n")
            coordinator.signal(signal.SIGHUP)
            failed = await logged(coordinator, "auth.reload_failed", 1)
            assert "expected role:sha256hex" in str(failed["error"]) and "not-a-digest" not in str(
                failed
            )
            assert (await api.post("/jobs", {"kind": "k"}, headers=as_bearer(NEW))).status == 201

            producer.stop.set()
            stop.set()
            await asyncio.gather(*load)
        # No request with a token valid at the time failed: no downtime for anyone.
        assert set(producer.statuses) == {201} and producer.statuses[201] > 20
        assert set(worked) <= {200, 204} and worked[200] > 20
        assert coordinator.stop() == 0
    finally:
        coordinator.kill()
