"""leasehold: a distributed job queue with fenced leases.

The names below are imported on first use (PEP 562), so that a process which needs only a
part of the package (the coordinator, the command line) does not pay for the rest: the
HTTP client alone takes a third of a second to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from leasehold._lazy import exports

if TYPE_CHECKING:
    from leasehold._version import __version__
    from leasehold.client import Client, SyncClient, UnservedWarning
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
    from leasehold.model import Job, JobStatus
    from leasehold.tasks import Task, TaskOptions, TaskTimeout, task
    from leasehold.tasks.handles import AsyncHandle, Handle
    from leasehold.tasks.payload import PayloadError
    from leasehold.worker.context import WorkerContext, current_context, current_job

# Where each public name lives.
_HOMES: dict[str, str] = {
    "Client": "leasehold.client",
    "SyncClient": "leasehold.client",
    "UnservedWarning": "leasehold.client",
    "Conflict": "leasehold.errors",
    "IdempotencyConflict": "leasehold.errors",
    "InvalidRequest": "leasehold.errors",
    "JobCancelled": "leasehold.errors",
    "JobFailed": "leasehold.errors",
    "JobNotFound": "leasehold.errors",
    "LeaseExpired": "leasehold.errors",
    "LeaseholdError": "leasehold.errors",
    "ReportConflict": "leasehold.errors",
    "ResultTimeout": "leasehold.errors",
    "StaleToken": "leasehold.errors",
    "AsyncHandle": "leasehold.tasks.handles",
    "Handle": "leasehold.tasks.handles",
    "Job": "leasehold.model",
    "JobStatus": "leasehold.model",
    "PayloadError": "leasehold.tasks.payload",
    "Task": "leasehold.tasks",
    "TaskOptions": "leasehold.tasks",
    "TaskTimeout": "leasehold.tasks",
    "task": "leasehold.tasks",
    "__version__": "leasehold._version",
    "WorkerContext": "leasehold.worker.context",
    "current_context": "leasehold.worker.context",
    "current_job": "leasehold.worker.context",
}

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
    "UnservedWarning",
    "WorkerContext",
    "__version__",
    "current_context",
    "current_job",
    "task",
]

__getattr__, __dir__ = exports(__name__, _HOMES)
