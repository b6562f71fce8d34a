"""Waiting for a job's result: long polls until it ends, and what its end means."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from leasehold.errors import JobCancelled, JobFailed, ResultTimeout
from leasehold.model import FINISHED, JSON, MAX_WAIT_SECONDS, Job, JobStatus


async def wait_finished(
    get: Callable[..., Awaitable[Job]],
    job_id: int,
    timeout: float | None,  # noqa: ASYNC109 (sent as the long poll's wait)
) -> Job:
    """``get(job_id, wait_seconds=...)`` until the job has ended or ``timeout`` passed."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while True:
        # One long poll waits at most MAX_WAIT_SECONDS; a longer wait is a few in a row.
        remaining = MAX_WAIT_SECONDS if deadline is None else deadline - loop.time()
        job = await get(job_id, wait_seconds=min(max(remaining, 0.0), MAX_WAIT_SECONDS))
        if job.status in FINISHED:
            return job
        if deadline is not None and loop.time() >= deadline:
            raise ResultTimeout(
                f"job {job_id} did not finish within {timeout} s (it is {job.status})"
            )


def result_of(job: Job) -> JSON:
    """The finished job's result, or the typed error its end stands for."""
    if job.status is JobStatus.DEAD:
        raise JobFailed(
            f"job {job.id} ({job.kind}) failed: {job.last_error}",
            job_id=job.id,
            error=job.last_error or "",
        )
    if job.status is JobStatus.CANCELLED:
        raise JobCancelled(f"job {job.id} ({job.kind}) was cancelled")
    return job.result
