"""The worker: handlers registered by kind, run by ``leasehold worker APP``.

The names below are imported on first use (``leasehold._lazy``), so that the command line
can read the worker's settings without importing the HTTP client and the lease loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from leasehold._lazy import exports

if TYPE_CHECKING:
    from leasehold.model import Parent
    from leasehold.worker.context import WorkerContext, current_context, current_job
    from leasehold.worker.errors import AppLoadError, PermanentFailure, Retry
    from leasehold.worker.job import LeasedJob
    from leasehold.worker.lease_loop import Worker, run_worker
    from leasehold.worker.registry import Handler, Registry
    from leasehold.worker.retries import exponential, fixed
    from leasehold.worker.settings import WorkerSettings

_HOMES: dict[str, str] = {
    "WorkerContext": "leasehold.worker.context",
    "current_context": "leasehold.worker.context",
    "current_job": "leasehold.worker.context",
    "AppLoadError": "leasehold.worker.errors",
    "PermanentFailure": "leasehold.worker.errors",
    "Retry": "leasehold.worker.errors",
    "LeasedJob": "leasehold.worker.job",
    "Worker": "leasehold.worker.lease_loop",
    "run_worker": "leasehold.worker.lease_loop",
    "Handler": "leasehold.worker.registry",
    "Registry": "leasehold.worker.registry",
    "exponential": "leasehold.worker.retries",
    "fixed": "leasehold.worker.retries",
    "WorkerSettings": "leasehold.worker.settings",
    "Parent": "leasehold.model",  # a job's parent as its lease shows it (LeasedJob.parents)
}

__all__ = [
    "AppLoadError",
    "Handler",
    "LeasedJob",
    "Parent",
    "PermanentFailure",
    "Registry",
    "Retry",
    "Worker",
    "WorkerContext",
    "WorkerSettings",
    "current_context",
    "current_job",
    "exponential",
    "fixed",
    "run_worker",
]

__getattr__, __dir__ = exports(__name__, _HOMES)
