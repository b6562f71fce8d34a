"""Pydantic models of every request and response body: the wire contract (DESIGN.md)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    StrictBool,
    StrictFloat,
    StrictInt,
)

from leasehold.batch_items import MAX_BATCH, ItemOutcome, ItemVerdict
from leasehold.core.answer import job_wire
from leasehold.core.userjson import INVISIBLE_MESSAGE, has_invisible, json_problem
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    RESERVED_KEY_PREFIX,
    Attempt,
    AttemptOutcome,
    CatchUp,
    Job,
    JobStatus,
    Schedule,
    ScheduleSpec,
)
from leasehold.settings import MAX_LEASE_SECONDS, MAX_WAIT_SECONDS
from leasehold.store.base import KindLimit

MAX_KIND_LENGTH = 200
MAX_KEY_LENGTH = 255
MAX_WORKER_ID_LENGTH = 200
MAX_ERROR_LENGTH = 65_536
MAX_KINDS_PER_LEASE = 100
MAX_JOBS_PER_LEASE = 1000
MAX_ATTEMPTS_LIMIT = 1000
MAX_QUEUE_LENGTH = 100
MAX_QUEUES_PER_LEASE = 100
MIN_PRIORITY, MAX_PRIORITY = -1000, 1000
MAX_RUNNING_LIMIT = 100_000


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _printable(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only white space")
    if _CONTROL.search(value):  # a regex: a character loop in Python was a tenth of enqueue
        raise ValueError("must not contain control characters")
    return value


def _visible(value: str) -> str:
    if has_invisible(value):
        raise ValueError(INVISIBLE_MESSAGE)
    return value


def _not_reserved(value: str) -> str:
    if value.startswith(RESERVED_KEY_PREFIX):
        raise ValueError(f"keys starting with {RESERVED_KEY_PREFIX!r} are the scheduler's")
    return value


def _user_json(value: object) -> object:
    # Before Pydantic's own walk, which fails on deep values with a message of its own.
    if problem := json_problem(value):
        raise ValueError(problem)
    return value


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character")
    return value


UserJSON = Annotated[JsonValue, BeforeValidator(_user_json)]
"""A payload or result: JSON within ``core.userjson``'s limits (depth, NUL, 64 bits)."""
Kind = Annotated[
    str,
    Field(min_length=1, max_length=MAX_KIND_LENGTH),
    AfterValidator(_printable),
    AfterValidator(_visible),
]
# Up to 16 headers, names like HTTP's, values up to 512 printable characters.
HeaderName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
HeaderValue = Annotated[str, Field(max_length=512), AfterValidator(_printable)]
Headers = Annotated[dict[HeaderName, HeaderValue], Field(max_length=16)]
IdempotencyKey = Annotated[
    str,
    Field(min_length=1, max_length=MAX_KEY_LENGTH),
    AfterValidator(_printable),
    AfterValidator(_not_reserved),
]
WorkerId = Annotated[
    str,
    Field(min_length=1, max_length=MAX_WORKER_ID_LENGTH),
    AfterValidator(_printable),
    AfterValidator(_visible),
]
QueueName = Annotated[
    str,
    Field(min_length=1, max_length=MAX_QUEUE_LENGTH),
    AfterValidator(_printable),
    AfterValidator(_visible),
]
LeaseRequestId = Annotated[
    str, Field(min_length=1, max_length=MAX_KEY_LENGTH), AfterValidator(_printable)
]
Priority = Annotated[
    StrictInt,
    Field(ge=MIN_PRIORITY, le=MAX_PRIORITY, description="higher is leased first (default 0)"),
]
Token = Annotated[StrictInt, Field(ge=0, le=2**63 - 1, description="the lease's fencing token")]
# Numbers are JSON numbers: StrictFloat refuses "10" and true, which lax floats take.
LeaseSeconds = Annotated[
    StrictFloat,
    Field(gt=0, le=MAX_LEASE_SECONDS, allow_inf_nan=False, description="lease length"),
]
TimeoutSeconds = Annotated[
    StrictFloat, Field(gt=0, le=MAX_LEASE_SECONDS, allow_inf_nan=False, description="time limit")
]
# Times the coordinator can store and read back on every backend.
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(9999, 1, 1, tzinfo=UTC)
_RFC3339_START = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}")


def _rfc3339_text(value: object) -> object:
    # Pydantic alone takes numbers, and strings of digits, as Unix times (seconds or
    # milliseconds, by size): a guess. Only RFC 3339 text is a time here.
    if not isinstance(value, str) or not _RFC3339_START.match(value):
        raise ValueError("must be an RFC 3339 date-time with an offset")
    return value


def _storable(value: datetime) -> datetime:
    try:
        in_range = EARLIEST_TIME <= value < LATEST_TIME
    except OverflowError:  # e.g. 9999-12-31T23:00-05:00 is past year 9999 in UTC
        in_range = False
    if not in_range:
        raise ValueError("must be from 1970-01-01 to 9998-12-31 (UTC)")
    return value


Rfc3339Time = Annotated[AwareDatetime, BeforeValidator(_rfc3339_text), AfterValidator(_storable)]
# Times go out as RFC 3339 in UTC with an explicit +00:00 offset.
UtcTime = Annotated[datetime, PlainSerializer(lambda d: d.isoformat(), return_type=str)]


class Strict(BaseModel):
    """Requests reject unknown fields, so a misspelt option is an error, not a no-op."""

    model_config = ConfigDict(extra="forbid")


class EnqueueRequest(Strict):
    kind: Kind
    payload: UserJSON = None
    max_attempts: Annotated[StrictInt, Field(ge=1, le=MAX_ATTEMPTS_LIMIT)] | None = Field(
        default=None,
        description=f"leases allowed before the job is dead (default {DEFAULT_MAX_ATTEMPTS})",
    )
    run_after: Rfc3339Time | None = Field(
        default=None, description="not leased before this time (default: at once)"
    )
    idempotency_key: IdempotencyKey | None = None
    priority: Priority | None = Field(default=None, description=f"default {DEFAULT_PRIORITY}")
    queue: QueueName | None = Field(default=None, description=f'default "{DEFAULT_QUEUE}"')
    headers: Headers | None = Field(
        default=None,
        description="strings handed to every worker that leases the job (e.g. W3C trace"
        " context: traceparent, tracestate); not part of the idempotency comparison",
    )
    timeout_seconds: TimeoutSeconds | None = Field(
        default=None,
        description="the worker stops an attempt that runs longer and fails it (retryable)"
        " with error type 'timeout' (default: the handler's own, else none)",
    )


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
    priority: int
    queue: str
    cancel_requested: bool = Field(
        description="a cancel was asked for: a running job ends at its holder's next report"
    )
    headers: dict[str, str] | None = Field(
        default=None, description="what the producer sent with the job (trace context)"
    )
    timeout_seconds: float | None = Field(
        default=None, description="the attempt's time limit in seconds (null: none)"
    )
    error_summary: str | None = Field(
        default=None, description="the last line of last_error: the exception and message"
    )

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls.model_construct(**job_wire(job))


class LeaseOut(BaseModel):
    job: JobOut
    token: int
    lease_seconds: float = Field(description="the length of the lease granted, in seconds")


class LeaseBatchOut(BaseModel):
    leases: list[LeaseOut]


class EnqueuedOut(BaseModel):
    job: JobOut
    created: bool = Field(description="false: the idempotency key was used before")


class BatchEnqueueOut(BaseModel):
    jobs: list[EnqueuedOut]


class ItemResultOut(BaseModel):
    id: int
    outcome: ItemOutcome = Field(description="protocol 1.0's classification, kept as it was")
    verdict: ItemVerdict = Field(description="what the worker does (protocol 1.1)")
    error: str | None = Field(default=None, description="the error code when not ok")
    message: str | None = None
    job: JobOut | None = None


class BatchResultOut(BaseModel):
    results: list[ItemResultOut]


class JobSummaryOut(BaseModel):
    """A job without its payload and result (``GET /jobs?fields=summary``)."""

    id: int
    kind: str
    status: JobStatus
    attempts: int
    max_attempts: int
    run_after: UtcTime
    created_at: UtcTime
    lease_owner: str | None
    lease_expires_at: UtcTime | None
    lease_token: int
    idempotency_key: str | None
    last_error: str | None
    leased_at: UtcTime | None
    finished_at: UtcTime | None
    priority: int
    queue: str
    cancel_requested: bool
    headers: dict[str, str] | None = None
    timeout_seconds: float | None = None
    error_summary: str | None = None


class JobPage(BaseModel):
    jobs: list[JobOut | JobSummaryOut] = Field(
        description="in id order; each a JobSummaryOut with `fields=summary`"
    )
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page: set when the page is full, or when"
        " it stopped at the answer's byte budget"
    )


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
    next_cursor: str | None = Field(
        default=None, description="pass as `cursor` for the next page (null: no more)"
    )


class RequeueCount(BaseModel):
    requeued: int


class StatsOut(BaseModel):
    by_status: dict[str, int] = Field(description="jobs by status, every status present")
    by_kind: dict[str, dict[str, int]] = Field(description="jobs by kind, then status")
    by_queue: dict[str, dict[str, int]] = Field(description="jobs by queue, then status")
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
    unserved: list[UnservedOut] = Field(
        default_factory=list,
        description="queued jobs of a kind in a queue that no live worker serves",
    )


class UnservedOut(BaseModel):
    queue: str
    kind: str
    queued: int


class Health(BaseModel):
    status: str


class ErrorOut(BaseModel):
    error: str = Field(description="a stable machine-readable code")
    message: str
    detail: list[dict[str, Any]] | None = None


# -- schedules and limits ------------------------------------------------------------------

SCHEDULE_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}"


class ScheduleRequest(Strict):
    cron: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        description="5 fields (minute hour day month weekday) or 6 with seconds first"
    )
    timezone: Annotated[str, Field(min_length=1, max_length=64)] = Field(
        default="UTC", description="IANA time zone the cron expression is read in"
    )
    kind: Kind
    payload: UserJSON = None
    queue: QueueName = DEFAULT_QUEUE
    priority: Priority = DEFAULT_PRIORITY
    max_attempts: Annotated[StrictInt, Field(ge=1, le=MAX_ATTEMPTS_LIMIT)] = DEFAULT_MAX_ATTEMPTS
    catch_up: CatchUp = Field(
        default=CatchUp.SKIP,
        description="fire times missed while no coordinator ran: skip them, or run the"
        " latest of them once",
    )
    enabled: StrictBool = True

    def spec(self, name: str) -> ScheduleSpec:
        return ScheduleSpec(
            name=name,
            cron=self.cron,
            kind=self.kind,
            timezone=self.timezone,
            payload=self.payload,
            queue=self.queue,
            priority=self.priority,
            max_attempts=self.max_attempts,
            catch_up=self.catch_up,
            enabled=self.enabled,
        )


class ScheduleOut(BaseModel):
    name: str
    cron: str
    timezone: str
    kind: str
    payload: JsonValue
    queue: str
    priority: int
    max_attempts: int
    catch_up: CatchUp
    enabled: bool
    next_fire_at: UtcTime = Field(description="the next fire time not yet handled")
    last_fire_at: UtcTime | None = Field(description="the latest fire time that got a job")
    created_at: UtcTime
    updated_at: UtcTime

    @classmethod
    def of(cls, schedule: Schedule) -> ScheduleOut:
        spec = schedule.spec
        return cls.model_construct(
            name=spec.name,
            cron=spec.cron,
            timezone=spec.timezone,
            kind=spec.kind,
            payload=spec.payload,
            queue=spec.queue,
            priority=spec.priority,
            max_attempts=spec.max_attempts,
            catch_up=spec.catch_up,
            enabled=spec.enabled,
            next_fire_at=schedule.next_fire_at,
            last_fire_at=schedule.last_fire_at,
            created_at=schedule.created_at,
            updated_at=schedule.updated_at,
        )


class ScheduleList(BaseModel):
    schedules: list[ScheduleOut]


class LimitRequest(Strict):
    max_running: Annotated[StrictInt, Field(ge=1, le=MAX_RUNNING_LIMIT)] = Field(
        description="at most this many jobs of the kind running at once"
    )


class LimitOut(BaseModel):
    kind: str
    max_running: int
    running: int = Field(description="jobs of the kind running when this was read")

    @classmethod
    def of(cls, limit: KindLimit) -> LimitOut:
        return cls.model_construct(
            kind=limit.kind, max_running=limit.max_running, running=limit.running
        )


class LimitList(BaseModel):
    limits: list[LimitOut]
