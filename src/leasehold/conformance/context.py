"""What every vector gets: the wire, a prefix that makes its kinds its own, and the few
steps the vectors share (enqueue, lease, report, read, wait for a change). At the end the
runner sweeps what the vectors left: their unfinished jobs end cancelled, their limits are
lifted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from leasehold.conformance.wire import Answer, Mismatch, Wire
from leasehold.model import FINISHED

# How long a vector waits for the coordinator's own loops (the reaper's expiry, a start
# deadline): their interval is the operator's choice (a second by default), not announced.
LOOP_SECONDS = 15.0
# Leases that a vector lets run out: long enough that the requests made meanwhile are
# answered well inside them on a busy machine, short enough to keep the vector quick.
SHORT_LEASE_SECONDS = 0.5


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Mismatch(message)


@dataclass
class Ctx:
    """One run's wire and prefix, and what its vectors made (for the sweep)."""

    wire: Wire
    prefix: str
    kinds: set[str] = field(default_factory=set)
    limited: set[str] = field(default_factory=set)
    _protocol: dict[str, Any] | None = None

    @property
    def worker_id(self) -> str:
        return f"{self.prefix}-w"

    def kind(self, name: str) -> str:
        kind = f"{self.prefix}.{name}"
        self.kinds.add(kind)
        return kind

    async def enqueue(self, kind: str, **fields: Any) -> dict[str, Any]:
        answer = await self.wire.post("/jobs", {"kind": kind, **fields})
        job: dict[str, Any] = answer.expect(201, what="POST /jobs").body
        return job

    async def lease(self, kind: str, **fields: Any) -> Answer:
        return await self.wire.post(
            "/lease", {"worker_id": self.worker_id, "kinds": [kind], **fields}
        )

    async def lease_one(self, kind: str, **fields: Any) -> tuple[int, int, dict[str, Any]]:
        body = (await self.lease(kind, **fields)).expect(200, what="POST /lease").body
        return int(body["job"]["id"]), int(body["token"]), body

    async def leases(self, kind: str, max_jobs: int, **fields: Any) -> list[dict[str, Any]]:
        """``POST /leases`` for up to ``max_jobs`` of ``kind``: the LEASEs, [] for a 204."""
        body = {"worker_id": self.worker_id, "kinds": [kind], "max_jobs": max_jobs, **fields}
        answer = await self.wire.post("/leases", body)
        if answer.status == 204:
            return []
        found: list[dict[str, Any]] = answer.expect(200, what="POST /leases").body["leases"]
        return found

    async def report(self, job_id: int, verb: str, body: dict[str, Any]) -> Answer:
        return await self.wire.post(f"/jobs/{job_id}/{verb}", body)

    async def complete(self, lease: dict[str, Any], result: Any = None) -> dict[str, Any]:
        answer = await self.report(
            lease["job"]["id"], "complete", {"token": lease["token"], "result": result}
        )
        job: dict[str, Any] = answer.expect(200, what="complete").body
        return job

    async def job(self, job_id: int) -> dict[str, Any]:
        found: dict[str, Any] = (
            (await self.wire.get(f"/jobs/{job_id}")).expect(200, what="GET /jobs/{id}").body
        )
        return found

    async def jobs(self, kind: str, status: str | None = None) -> list[dict[str, Any]]:
        query = f"/jobs?kind={kind}&limit=1000" + (f"&status={status}" if status else "")
        found: list[dict[str, Any]] = (
            (await self.wire.get(query)).expect(200, what="GET /jobs").body["jobs"]
        )
        return found

    async def put_limit(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        self.limited.add(kind)
        answer = await self.wire.call("PUT", f"/limits/{kind}", body)
        limit: dict[str, Any] = answer.expect(200, what=f"PUT /limits/{kind}").body
        return limit

    async def protocol(self) -> dict[str, Any]:
        if self._protocol is None:
            answer = (await self.wire.get("/protocol")).expect(200, what="GET /protocol")
            self._protocol = answer.body
        return self._protocol

    async def require(self, *capabilities: str) -> None:
        """The vector's capabilities are listed: a 1.2 coordinator has them all."""
        listed = set((await self.protocol()).get("capabilities", []))
        missing = sorted(set(capabilities) - listed)
        check(not missing, f"GET /protocol does not list the capabilities {missing}")

    async def short_lease(self) -> float:
        least = float((await self.protocol())["limits"]["min_lease_seconds"])
        return max(least, SHORT_LEASE_SECONDS)

    async def until(
        self, what: str, predicate: Callable[[], Awaitable[bool]], seconds: float = LOOP_SECONDS
    ) -> None:
        """Poll ``predicate`` until it holds; a Mismatch naming ``what`` after ``seconds``."""
        deadline = time.monotonic() + seconds
        while not await predicate():
            check(time.monotonic() < deadline, f"{what}: not seen within {seconds:g} s")
            await asyncio.sleep(0.02)

    async def until_status(self, job_id: int, status: str, what: str) -> dict[str, Any]:
        seen: dict[str, Any] = {}

        async def reached() -> bool:
            seen.update(await self.job(job_id))
            return bool(seen["status"] == status)

        await self.until(f"{what} (job {job_id} {status})", reached)
        return seen

    async def sweep(self) -> None:
        """End every unfinished job of the run's kinds (a running one is released under
        its token, which the kit holds) and lift its limits. Best effort: a coordinator
        that fails here has failed a vector already."""
        with contextlib.suppress(aiohttp.ClientError, TimeoutError, Mismatch, KeyError):
            for kind in sorted(self.kinds):
                for job in await self.jobs(kind):
                    if job["status"] in FINISHED:
                        continue
                    await self.wire.post(f"/jobs/{job['id']}/cancel")
                    if job["status"] == "running":
                        await self.report(job["id"], "release", {"token": job["lease_token"]})
            for kind in sorted(self.limited):
                await self.wire.call("DELETE", f"/limits/{kind}")


Vector = Callable[[Ctx], Awaitable[None]]


def new_prefix() -> str:
    return f"conformance.{uuid.uuid4().hex[:10]}"
