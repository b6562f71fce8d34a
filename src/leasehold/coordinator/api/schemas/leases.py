"""Wire models of the worker's routes: leases, and the reports fenced by their tokens."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
)

from leasehold.batch_items import MAX_BATCH, ItemOutcome, ItemVerdict
from leasehold.coordinator.api.schemas.fields import (
    MAX_ERROR_LENGTH,
    MAX_JOBS_PER_LEASE,
    MAX_KINDS_PER_LEASE,
    MAX_QUEUES_PER_LEASE,
    Kind,
    LeaseRequestId,
    LeaseSeconds,
    QueueName,
    Strict,
    Token,
    UserJSON,
    WorkerId,
    _no_nul,
)
from leasehold.coordinator.api.schemas.jobs import EdgeOut, JobOut
from leasehold.model import MAX_WAIT_SECONDS


class LeaseRequest(Strict):
    worker_id: WorkerId
    max_jobs: Annotated[StrictInt, Field(ge=1, le=MAX_JOBS_PER_LEASE)] | None = Field(
        default=None,
        description="lease up to this many jobs at once; the answer is then"
        " {'leases': [...]} instead of a single {'job', 'token'}",
    )
    lease_seconds: LeaseSeconds | None = None
    kinds: Annotated[list[Kind], Field(min_length=1, max_length=MAX_KINDS_PER_LEASE)] | None = None
    queues: (
        Annotated[list[QueueName], Field(min_length=1, max_length=MAX_QUEUES_PER_LEASE)] | None
    ) = Field(default=None, description="lease only from these queues (default: any)")
    wait_seconds: Annotated[StrictFloat, Field(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)] = (
        Field(default=0.0, description="long poll: wait this long for a job before a 204")
    )
    request_id: LeaseRequestId | None = Field(
        default=None,
        description="the worker's id for this request: a retry with the same id (same"
        " worker_id) within the window gets the same leases back, not new ones",
    )


class LeasesRequest(LeaseRequest):
    """POST /leases: as POST /lease, but always answered ``{"leases": [...]}``."""

    max_jobs: Annotated[StrictInt, Field(ge=1, le=MAX_JOBS_PER_LEASE)] = Field(
        default=1, description="lease up to this many jobs at once"
    )


class RenewRequest(Strict):
    token: Token
    lease_seconds: LeaseSeconds | None = None


class CompleteRequest(Strict):
    token: Token
    result: UserJSON = None


class FailRequest(Strict):
    token: Token
    error: Annotated[str, Field(max_length=MAX_ERROR_LENGTH), AfterValidator(_no_nul)]
    retryable: StrictBool = True
    retry_after_seconds: Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)] | None = Field(
        default=None, description="retry after this delay instead of the backoff (capped)"
    )


class ReleaseRequest(Strict):
    token: Token


JobId = Annotated[StrictInt, Field(ge=1, le=2**63 - 1)]


class RenewItem(RenewRequest):
    id: JobId


class CompleteItem(CompleteRequest):
    id: JobId


class FailItem(FailRequest):
    id: JobId


class BatchRenewRequest(Strict):
    items: Annotated[list[RenewItem], Field(min_length=1, max_length=MAX_BATCH)]


class BatchCompleteRequest(Strict):
    items: Annotated[list[CompleteItem], Field(min_length=1, max_length=MAX_BATCH)]


class BatchFailRequest(Strict):
    items: Annotated[list[FailItem], Field(min_length=1, max_length=MAX_BATCH)]


class LeaseOut(BaseModel):
    job: JobOut
    token: int
    lease_seconds: float = Field(description="the length of the lease granted, in seconds")
    parents: list[EdgeOut] | None = Field(
        default=None,
        description="for a job that depends on others: each parent, its status and result"
        " (absent for a job without parents; DESIGN.md §22)",
    )


class LeaseBatchOut(BaseModel):
    leases: list[LeaseOut]


class ItemResultOut(BaseModel):
    id: int
    outcome: ItemOutcome = Field(description="protocol 1.0's classification, kept as it was")
    verdict: ItemVerdict = Field(description="what the worker does (protocol 1.1)")
    error: str | None = Field(default=None, description="the error code when not ok")
    message: str | None = None
    job: JobOut | None = None


class BatchResultOut(BaseModel):
    results: list[ItemResultOut]
