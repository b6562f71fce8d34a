"""leasehold: a distributed job queue with fenced leases."""

from leasehold.client import Client, SyncClient
from leasehold.errors import (
    Conflict,
    IdempotencyConflict,
    InvalidRequest,
    JobNotFound,
    LeaseExpired,
    LeaseholdError,
    ReportConflict,
    StaleToken,
)
from leasehold.model import Job, JobStatus

__all__ = [
    "Client",
    "Conflict",
    "IdempotencyConflict",
    "InvalidRequest",
    "Job",
    "JobNotFound",
    "JobStatus",
    "LeaseExpired",
    "LeaseholdError",
    "ReportConflict",
    "StaleToken",
    "SyncClient",
]
__version__ = "0.1.0"
