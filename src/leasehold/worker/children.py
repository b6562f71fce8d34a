"""A running job's way to the coordinator besides its reports (DESIGN.md §22): spawning
children under its lease's token, and fetching the parents' results its lease left out.

Both go through the worker's client and are bounded by the lease: a spawn is tried again
until answered or the lease runs out, and a spawn refused because the lease is no longer
this run's (409: a newer lease, a report, a cancelled job) loses the lease, which stops the
handler as a refused renewal does.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from leasehold.client import Client, Enqueued, NewJob
from leasehold.errors import Conflict
from leasehold.model import Parent
from leasehold.worker.handler_outcome import call_handler
from leasehold.worker.job import LeasedJob
from leasehold.worker.registry import Handler
from leasehold.worker.renewal import LeaseKeeper, try_seconds

# Parents' results fetched at once when a lease left some out (the rest wait their turn).
FETCH_CONCURRENCY = 8


class JobLink:
    """One lease's way to the coordinator, for its handler (``LeasedJob.spawn``)."""

    def __init__(self, client: Client, keeper: LeaseKeeper) -> None:
        self.client = client
        self.keeper = keeper
        self.loop = asyncio.get_running_loop()

    async def spawn(self, job: LeasedJob, children: Sequence[NewJob]) -> list[Enqueued]:
        keeper = self.keeper
        if not keeper.held():
            reason = keeper.reason or "expired"
            raise Conflict(f"job {job.id}'s lease is lost ({reason}): nothing was spawned")
        try:
            async with asyncio.timeout_at(keeper.deadline):
                return await self._client().spawn(job.id, job.token, children)
        except Conflict as exc:  # stale_token, not_running, lease_expired, job_cancelled
            keeper.lose(exc.code, exc.message)
            raise

    def spawn_sync(self, job: LeasedJob, children: Sequence[NewJob]) -> list[Enqueued]:
        try:
            on_loop = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            raise RuntimeError(
                "spawn_sync() from the worker's event loop would wait forever: in an"
                " async def handler, use await job.spawn(...)"
            )
        return asyncio.run_coroutine_threadsafe(self.spawn(job, children), self.loop).result()

    async def fill_parents(self, parents: tuple[Parent, ...]) -> tuple[Parent, ...]:
        """The parents with the results the lease left out (``result_omitted``: they passed
        the answer's share for them) read from the coordinator, within the lease."""
        gate = asyncio.Semaphore(FETCH_CONCURRENCY)

        async def filled(parent: Parent) -> Parent:
            if not parent.result_omitted:
                return parent
            async with gate:
                job = await self._client().get(parent.id)
            return dataclasses.replace(parent, result=job.result, result_omitted=False)

        async with asyncio.timeout_at(self.keeper.deadline):
            return tuple(await asyncio.gather(*(filled(p) for p in parents)))

    def _client(self) -> Client:
        # One try gets a share of the lease, as a renewal's does: one that hangs leaves
        # time for another, on the next coordinator.
        return self.client.with_timeout(try_seconds(self.client, self.keeper.seconds))


def with_parents(handler: Handler, link: JobLink) -> Callable[[LeasedJob], Awaitable[Any]]:
    """``handler``, called once the job's parents have every result (``fill_parents``)."""

    async def run(job: LeasedJob) -> Any:
        job.parents = await link.fill_parents(job.parents)
        return await call_handler(handler, job)

    return run
