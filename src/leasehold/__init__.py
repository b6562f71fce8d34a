"""leasehold: a distributed job queue with fenced leases."""

from leasehold.client import Client, SyncClient
from leasehold.errors import (
    Conflict,
    IdempotencyConflict,
    InvalidRequest,
    JobCancelled,
    JobFailed,
    JobNotFound,
    LeaseExpired,
    LeaseholdError,
    ReportConflict,
    ResultTimeout,
    StaleToken,
)
from leasehold.handles import AsyncHandle, Handle
from leasehold.model import Job, JobStatus
from leasehold.payload import PayloadError
from leasehold.tasks import Task, TaskOptions, TaskTimeout, task
from leasehold.version import __version__
from leasehold.worker.context import WorkerContext, current_context, current_job

__all__ = [
    "AsyncHandle",
    "Client",
    "Conflict",
    "Handle",
    "IdempotencyConflict",
    "InvalidRequest",
    "Job",
    "JobCancelled",
    "JobFailed",
    "JobNotFound",
    "JobStatus",
    "LeaseExpired",
    "LeaseholdError",
    "PayloadError",
    "ReportConflict",
    "ResultTimeout",
    "StaleToken",
    "SyncClient",
    "Task",
    "TaskOptions",
    "TaskTimeout",
    "WorkerContext",
    "__version__",
    "current_context",
    "current_job",
    "task",
]
