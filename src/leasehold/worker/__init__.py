"""The worker: handlers registered by kind, run by ``leasehold worker APP``."""

from leasehold.worker.context import WorkerContext, current_context, current_job
from leasehold.worker.errors import AppLoadError, PermanentFailure, Retry
from leasehold.worker.job import LeasedJob
from leasehold.worker.lease_loop import Worker, run_worker
from leasehold.worker.registry import Handler, Registry
from leasehold.worker.settings import WorkerSettings

__all__ = [
    "AppLoadError",
    "Handler",
    "LeasedJob",
    "PermanentFailure",
    "Registry",
    "Retry",
    "Worker",
    "WorkerContext",
    "WorkerSettings",
    "current_context",
    "current_job",
    "run_worker",
]
