"""The test coordinator's worker: leased jobs run one at a time by the worker's own parts.

Each job goes through ``worker.job_runner.JobRunner`` as it does in ``leasehold worker``:
the registry's handler (a typed task's payload validated into its signature), its time
limit, its retry policy, the renewals, and the report under the lease's token, batched as
the worker batches them. What is left out is the lease loop's polling and signals: the test
says when to lease, and jobs run one after the other so that a test reads in order.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

from leasehold.client import Client, Lease
from leasehold.model import Job, JobStatus
from leasehold.worker.context import WorkerContext, enter_worker, run_hook
from leasehold.worker.job_runner import JobRunner, Leased
from leasehold.worker.registry import Registry
from leasehold.worker.waiting import Flag, cancel_and_wait

WORKER_ID = "leasehold-testing"


@dataclass(frozen=True, slots=True)
class Drained:
    """What a ``drain`` or ``run_due`` ran: each run's job as it stood after its report,
    in the order they ran (a job retried within the drain is there once per run)."""

    runs: tuple[Job, ...] = ()

    def __len__(self) -> int:
        return len(self.runs)

    def __iter__(self) -> Iterator[Job]:
        return iter(self.runs)

    def _with(self, status: JobStatus) -> list[Job]:
        return [job for job in self.runs if job.status == status]

    @property
    def completed(self) -> list[Job]:
        return self._with(JobStatus.COMPLETED)

    @property
    def retried(self) -> list[Job]:
        """Runs that failed and left their job queued for another attempt."""
        return self._with(JobStatus.QUEUED)

    @property
    def dead(self) -> list[Job]:
        return self._with(JobStatus.DEAD)

    @property
    def cancelled(self) -> list[Job]:
        return self._with(JobStatus.CANCELLED)

    @property
    def failed(self) -> list[Job]:
        """Every run that did not complete (retried, dead or cancelled)."""
        return [job for job in self.runs if job.status != JobStatus.COMPLETED]

    def check(self) -> Drained:
        """AssertionError, with each error, if any run did not complete; else itself."""
        if failed := self.failed:
            lines = [f"job {j.id} ({j.kind}) {j.status}: {j.last_error}" for j in failed]
            raise AssertionError(f"{len(failed)} of {len(self)} runs failed:\n" + "\n".join(lines))
        return self

    def __repr__(self) -> str:
        counts = {s.value: len(self._with(s)) for s in JobStatus if self._with(s)}
        return f"<Drained {len(self)} runs {counts}>"


async def _no_polls() -> None:
    """Releases wait for the lease loop's polls to end: this worker has no loop."""


class TestWorker:
    """One registry's handlers, started once (its start-up hooks) and run job by job."""

    __test__ = False  # not a test class, whatever pytest makes of the name

    def __init__(self, client: Client, registry: Registry) -> None:
        self.client = client
        self.registry = registry
        self.runner = JobRunner(client, registry, Flag(), _no_polls)
        self.worker_context = WorkerContext(WORKER_ID, client.url)
        # The context every job's task starts from: the worker's, as in `leasehold worker`.
        self._context = contextvars.copy_context()
        self._context.run(enter_worker, self.worker_context)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Run the registry's start-up hooks, and the worker's renewer and reporter."""
        for hook in self.registry.startup:
            await self._in_context(run_hook(hook, self.worker_context))
        loop = asyncio.get_running_loop()
        for name, part in (("renewer", self.runner.renewer), ("reporter", self.runner.reporter)):
            task = loop.create_task(part.run(), name=f"leasehold-testing-{name}")
            self._tasks.append(task)

    async def run(self, lease: Lease) -> Job:
        """Run one leased job to its report; the job as it then stands."""
        now = asyncio.get_running_loop().time()  # the lease was just granted, in process
        leased = Leased.of(lease, WORKER_ID, now, now)
        await self._in_context(self.runner.run(leased, lambda: None))
        return await self.client.get(lease.job.id)

    async def close(self) -> None:
        """Stop the renewer and reporter; run the shutdown hooks, last first."""
        for task in self._tasks:
            await cancel_and_wait(task)
        for hook in reversed(self.registry.shutdown):
            await self._in_context(run_hook(hook, self.worker_context))

    async def _in_context(self, coroutine: Coroutine[Any, Any, None]) -> None:
        # Each in a task of its own on a copy of the worker's context, as the worker runs
        # jobs: what a job binds (its log fields, current_job()) ends with it.
        loop = asyncio.get_running_loop()
        await loop.create_task(coroutine, context=self._context.copy())
