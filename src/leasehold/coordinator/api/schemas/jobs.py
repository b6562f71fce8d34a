"""Wire models of the job routes: enqueue, job answers, pages, attempts."""

from __future__ import annotations

import dataclasses
import operator
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    JsonValue,
    StrictInt,
)

from leasehold.batch_items import MAX_BATCH
from leasehold.coordinator.api.schemas.fields import (
    MAX_ERROR_LENGTH,
    Headers,
    IdempotencyKey,
    Kind,
    Priority,
    QueueName,
    Rfc3339Time,
    Strict,
    TimeoutSeconds,
    UserJSON,
    UtcTime,
    _no_nul,
)
from leasehold.coordinator.service.answer import job_wire
from leasehold.coordinator.service.requests import Enqueue
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    MAX_ATTEMPTS_LIMIT,
    MAX_REQUEUE_LIMIT,
    Attempt,
    AttemptOutcome,
    EnqueueSpec,
    Job,
    JobStatus,
)

# An enqueue's fields are the model's EnqueueSpec: the wire model below gives each its wire
# type and documentation, in the same order (``check``, at import), and
# ``EnqueueRequest.spec`` carries them over.
_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(EnqueueSpec))
_spec_values = operator.attrgetter(*_SPEC_FIELDS)


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

    def spec(self, idempotency_key: str | None) -> Enqueue:
        """The request as the service takes it, under ``idempotency_key`` (the body's, or
        the Idempotency-Key header's)."""
        request = Enqueue(*_spec_values(self))  # by position: as fast as spelling them out
        if idempotency_key != self.idempotency_key:
            request = dataclasses.replace(request, idempotency_key=idempotency_key)
        return request


def check(request_model: type[BaseModel]) -> None:
    """Refuse an enqueue's wire model whose fields are not ``EnqueueSpec``'s, in order."""
    if tuple(request_model.model_fields) != _SPEC_FIELDS:
        raise TypeError(
            f"{request_model.__name__}'s fields {tuple(request_model.model_fields)} are not"
            f" model.EnqueueSpec's {_SPEC_FIELDS}"
        )


check(EnqueueRequest)


class BatchEnqueueRequest(Strict):
    jobs: Annotated[list[EnqueueRequest], Field(min_length=1, max_length=MAX_BATCH)]


class BulkRequeueRequest(Strict):
    kind: Kind | None = None
    error_contains: (
        Annotated[str, Field(min_length=1, max_length=MAX_ERROR_LENGTH), AfterValidator(_no_nul)]
        | None
    ) = None
    limit: Annotated[StrictInt, Field(ge=1, le=MAX_REQUEUE_LIMIT)] = 1000


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


class EnqueuedOut(BaseModel):
    job: JobOut
    created: bool = Field(description="false: the idempotency key was used before")


class BatchEnqueueOut(BaseModel):
    jobs: list[EnqueuedOut]


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
