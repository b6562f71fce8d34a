"""Pydantic models of every request and response body: the wire contract (DESIGN.md)."""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    StrictBool,
    StrictInt,
)

from leasehold.model import Attempt, AttemptOutcome, Job, JobStatus
from leasehold.settings import MAX_LEASE_SECONDS, MAX_WAIT_SECONDS

MAX_KIND_LENGTH = 200
MAX_KEY_LENGTH = 255
MAX_WORKER_ID_LENGTH = 200
MAX_ERROR_LENGTH = 65_536
MAX_KINDS_PER_LEASE = 100
MAX_JOBS_PER_LEASE = 1000
MAX_ATTEMPTS_LIMIT = 1000


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _printable(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only white space")
    if _CONTROL.search(value):  # a regex: a character loop in Python was a tenth of enqueue
        raise ValueError("must not contain control characters")
    return value


def _no_nul_json(value: JsonValue) -> JsonValue:
    # PostgreSQL's text and jsonb cannot hold NUL; refusing it everywhere keeps the backends
    # answering alike.
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ValueError("must not contain the NUL character (\\u0000)")
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return value


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character")
    return value


UserJSON = Annotated[JsonValue, AfterValidator(_no_nul_json)]
Kind = Annotated[str, Field(min_length=1, max_length=MAX_KIND_LENGTH), AfterValidator(_printable)]
IdempotencyKey = Annotated[
    str, Field(min_length=1, max_length=MAX_KEY_LENGTH), AfterValidator(_printable)
]
WorkerId = Annotated[
    str, Field(min_length=1, max_length=MAX_WORKER_ID_LENGTH), AfterValidator(_printable)
]
Token = Annotated[StrictInt, Field(ge=0, le=2**63 - 1, description="the lease's fencing token")]
LeaseSeconds = Annotated[
    float, Field(gt=0, le=MAX_LEASE_SECONDS, allow_inf_nan=False, description="lease length")
]
# Times go out as RFC 3339 in UTC with an explicit +00:00 offset.
UtcTime = Annotated[datetime, PlainSerializer(lambda d: d.isoformat(), return_type=str)]


class Strict(BaseModel):
    """Requests reject unknown fields, so a misspelt option is an error, not a no-op."""

    model_config = ConfigDict(extra="forbid")


class EnqueueRequest(Strict):
    kind: Kind
    payload: UserJSON = None
    max_attempts: Annotated[StrictInt, Field(ge=1, le=MAX_ATTEMPTS_LIMIT)] | None = Field(
        default=None, description="leases allowed before the job is dead (default 5)"
    )
    run_after: AwareDatetime | None = Field(
        default=None, description="not leased before this time (default: at once)"
    )
    idempotency_key: IdempotencyKey | None = None


class LeaseRequest(Strict):
    worker_id: WorkerId
    max_jobs: Annotated[StrictInt, Field(ge=1, le=MAX_JOBS_PER_LEASE)] | None = Field(
        default=None,
        description="lease up to this many jobs at once; the answer is then"
        " {'leases': [...]} instead of a single {'job', 'token'}",
    )
    lease_seconds: LeaseSeconds | None = None
    kinds: Annotated[list[Kind], Field(min_length=1, max_length=MAX_KINDS_PER_LEASE)] | None = None
    wait_seconds: Annotated[float, Field(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False)] = Field(
        default=0.0, description="long poll: wait this long for a job before a 204"
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
    retry_after_seconds: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        default=None, description="retry after this delay instead of the backoff (capped)"
    )


class ReleaseRequest(Strict):
    token: Token


MAX_BATCH = 1000
JobId = Annotated[StrictInt, Field(ge=1, le=2**63 - 1)]


class BatchEnqueueRequest(Strict):
    jobs: Annotated[list[EnqueueRequest], Field(min_length=1, max_length=MAX_BATCH)]


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


class BulkRequeueRequest(Strict):
    kind: Kind | None = None
    error_contains: Annotated[str, Field(min_length=1, max_length=MAX_ERROR_LENGTH)] | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] = 1000


class JobOut(BaseModel):
    id: int
    kind: str
    payload: JsonValue
    status: JobStatus
    attempts: int
    max_attempts: int
    run_after: UtcTime
    created_at: UtcTime
    lease_owner: str | None
    lease_expires_at: UtcTime | None
    lease_token: int
    idempotency_key: str | None
    result: JsonValue
    last_error: str | None
    leased_at: UtcTime | None
    finished_at: UtcTime | None

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls.model_construct(
            id=job.id,
            kind=job.kind,
            payload=job.payload,
            status=job.status,
            attempts=job.attempts,
            max_attempts=job.max_attempts,
            run_after=job.run_after,
            created_at=job.created_at,
            lease_owner=job.lease_owner,
            lease_expires_at=job.lease_expires_at,
            lease_token=job.lease_token,
            idempotency_key=job.idempotency_key,
            result=job.result,
            last_error=job.last_error,
            leased_at=job.leased_at,
            finished_at=job.finished_at,
        )


class LeaseOut(BaseModel):
    job: JobOut
    token: int


class LeaseBatchOut(BaseModel):
    leases: list[LeaseOut]


class EnqueuedOut(BaseModel):
    job: JobOut
    created: bool = Field(description="false: the idempotency key was used before")


class BatchEnqueueOut(BaseModel):
    jobs: list[EnqueuedOut]


class ItemOutcome(StrEnum):
    OK = "ok"  # applied, or an idempotent repeat
    STALE = "stale"  # the token is not the job's current one
    CONFLICT = "conflict"  # lease expired, or a different outcome already reported
    NOT_FOUND = "not_found"


class ItemResultOut(BaseModel):
    id: int
    outcome: ItemOutcome
    error: str | None = Field(default=None, description="the error code when not ok")
    message: str | None = None
    job: JobOut | None = None


class BatchResultOut(BaseModel):
    results: list[ItemResultOut]


class JobPage(BaseModel):
    jobs: list[JobOut]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page")


class AttemptOut(BaseModel):
    token: int
    worker_id: str
    leased_at: UtcTime
    finished_at: UtcTime | None
    outcome: AttemptOutcome
    error: str | None

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptOut:
        return cls.model_construct(
            token=attempt.token,
            worker_id=attempt.worker_id,
            leased_at=attempt.leased_at,
            finished_at=attempt.finished_at,
            outcome=attempt.outcome,
            error=attempt.error,
        )


class AttemptList(BaseModel):
    job_id: int
    attempts: list[AttemptOut]


class RequeueCount(BaseModel):
    requeued: int


class StatsOut(BaseModel):
    by_status: dict[str, int] = Field(description="jobs by status, every status present")
    by_kind: dict[str, dict[str, int]] = Field(description="jobs by kind, then status")
    totals: dict[str, int] = Field(description="events since the database began")
    totals_by_kind: dict[str, dict[str, int]]
    avg_wait_seconds: float | None = Field(
        description="mean time from available to leased, over the averaging window"
    )
    avg_run_seconds: float | None = Field(
        description="mean time from lease to completion, over the averaging window"
    )
    average_window_seconds: int
    lease_expirations: int
    stale_token_rejections: int
    oldest_queued_age_seconds: float | None = Field(
        description="how long the longest-waiting available job has waited"
    )
    completed_last_minute: int
    failed_last_minute: int


class Health(BaseModel):
    status: str


class ErrorOut(BaseModel):
    error: str = Field(description="a stable machine-readable code")
    message: str
    detail: list[dict[str, Any]] | None = None
