"""What a finished job's end means to a caller waiting for its result."""

from __future__ import annotations

from leasehold.errors import JobCancelled, JobFailed
from leasehold.model import JSON, Job, JobStatus


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
