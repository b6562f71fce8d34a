"""leasehold: a distributed job queue with fenced leases."""

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
]
__version__ = "0.1.0"
