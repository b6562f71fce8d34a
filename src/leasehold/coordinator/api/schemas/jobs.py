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
    StrictBool,
    StrictFloat,
    StrictInt,
    model_validator,
)

from leasehold.batch_items import MAX_BATCH
from leasehold.coordinator.api.schemas.fields import (
    MAX_ERROR_LENGTH,
    GroupKey,
    Headers,
    IdempotencyKey,
    Kind,
    Priority,
    QueueName,
    Ref,
    Rfc3339Time,
    Strict,
    TimeoutSeconds,
    Token,
    UserJSON,
    UtcTime,
    _no_nul,
)
from leasehold.coordinator.service.answer import job_wire
from leasehold.coordinator.service.requests import Enqueue
from leasehold.errors import InvalidGraph
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    MAX_ATTEMPTS_LIMIT,
    MAX_PARENTS,
    MAX_REQUEUE_LIMIT,
    Attempt,
    AttemptOutcome,
    Dependency,
    EnqueueSpec,
    Job,
    JobStatus,
    OnFailure,
    Unique,
)

# An enqueue's fields are the model's EnqueueSpec: the wire model below gives each its wire
# type and documentation, in the same order (``check``, at import), and
# ``EnqueueRequest.spec`` carries them over.
_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(EnqueueSpec))
_spec_values = operator.attrgetter(*_SPEC_FIELDS)


JobId = Annotated[StrictInt, Field(ge=1, le=2**63 - 1)]
MAX_WEIGHT = 1_000_000
MAX_UNIQUE_PERIOD_SECONDS = 366 * 86_400.0
MAX_UNIQUE_FIELDS = 16


class DependencyIn(Strict):
    """A parent: a job by its ``id``, or an item of the same batch (or spawn) by its
    ``ref``; and what its failure does to this job."""

    id: JobId | None = None
    ref: Ref | None = Field(default=None, description="an item's ref (its key in a spawn)")
    on_failure: OnFailure = Field(
        default=OnFailure.CANCEL,
        description="cancel: this job is cancelled when the parent ends dead, cancelled or"
        " deleted (the default); run: it runs anyway once the parent has ended",
    )

    @model_validator(mode="after")
    def _one_parent(self) -> DependencyIn:
        if (self.id is None) == (self.ref is None):
            raise ValueError("a dependency names a job by exactly one of id and ref")
        return self


DependsOn = Annotated[
    list[JobId | DependencyIn],
    Field(
        min_length=1,
        max_length=MAX_PARENTS,
        description="the jobs that must complete before this one may start: ids, or"
        " {id|ref, on_failure} (DESIGN.md §22)",
    ),
]


class UniqueIn(Strict):
    """When this enqueue is a duplicate of a job already there (DESIGN.md §23)."""

    key: IdempotencyKey | None = Field(default=None, description="a key of your own")
    fields: (
        Annotated[
            list[Annotated[str, Field(min_length=1, max_length=200)]],
            Field(min_length=1, max_length=MAX_UNIQUE_FIELDS),
        ]
        | None
    ) = Field(default=None, description="top-level payload fields that must be equal")
    payload: StrictBool = Field(default=False, description="the whole payload must be equal")
    queue: StrictBool = Field(default=False, description="the queue must be equal")
    period_seconds: (
        Annotated[StrictFloat, Field(gt=0, le=MAX_UNIQUE_PERIOD_SECONDS, allow_inf_nan=False)]
        | None
    ) = Field(default=None, description="only a job created within this many seconds counts")
    states: Annotated[list[JobStatus], Field(min_length=1)] | None = Field(
        default=None,
        description="the states a duplicate may be in (default: any with a period, else"
        " waiting, queued and running)",
    )
    replace: StrictBool = Field(
        default=False,
        description="a duplicate not started yet takes this payload and run_after (debounce)",
    )

    def model(self) -> Unique:
        return Unique(
            key=self.key,
            fields=tuple(self.fields) if self.fields is not None else None,
            payload=self.payload,
            queue=self.queue,
            period_seconds=self.period_seconds,
            states=tuple(dict.fromkeys(self.states)) if self.states is not None else None,
            replace=self.replace,
        )


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
    depends_on: DependsOn | None = None
    group_key: GroupKey | None = Field(
        default=None,
        description="the tenant or account its kind's limits count it under (DESIGN.md §19)",
    )
    weight: Annotated[StrictInt, Field(ge=1, le=MAX_WEIGHT)] | None = Field(
        default=None, description="the units it takes under its kind's rate limit (default 1)"
    )
    start_by: Rfc3339Time | None = Field(
        default=None,
        description="if no lease has started it by then, it ends cancelled without running",
    )
    unique: UniqueIn | None = None

    def spec(
        self,
        idempotency_key: str | None,
        *,
        refs: bool = False,
        ref: str | None = None,
        spawn_key: str | None = None,
    ) -> Enqueue:
        """The request as the service takes it, under ``idempotency_key`` (the body's, or
        the Idempotency-Key header's). ``refs``: parents may name items of the same
        request (a batch, a spawn); otherwise a ref is refused."""
        request = Enqueue(*_spec_values(self))  # by position: as fast as spelling them out
        if idempotency_key != self.idempotency_key:
            request = dataclasses.replace(request, idempotency_key=idempotency_key)
        if ref is not None or spawn_key is not None:
            request = dataclasses.replace(request, ref=ref, spawn_key=spawn_key)
        if self.depends_on is None and self.unique is None:
            return request
        ids, after = [], []
        for parent in self.depends_on or ():
            if isinstance(parent, int):
                ids.append(Dependency(parent))
            elif parent.id is not None:
                ids.append(Dependency(parent.id, parent.on_failure))
            elif not refs:
                raise InvalidGraph(
                    "a ref names another item of a batch; this request has none",
                    loc=("depends_on",),
                )
            else:
                assert parent.ref is not None
                after.append((parent.ref, parent.on_failure))
        return dataclasses.replace(
            request,
            depends_on=tuple(ids) or None,
            after=tuple(after),
            unique=self.unique.model() if self.unique is not None else None,
        )


def check(request_model: type[BaseModel]) -> None:
    """Refuse an enqueue's wire model whose fields are not ``EnqueueSpec``'s, in order."""
    if tuple(request_model.model_fields) != _SPEC_FIELDS:
        raise TypeError(
            f"{request_model.__name__}'s fields {tuple(request_model.model_fields)} are not"
            f" model.EnqueueSpec's {_SPEC_FIELDS}"
        )


check(EnqueueRequest)


class BatchItem(EnqueueRequest):
    ref: Ref | None = Field(
        default=None, description="a name for this item, which others may depend on"
    )


class BatchEnqueueRequest(Strict):
    jobs: Annotated[list[BatchItem], Field(min_length=1, max_length=MAX_BATCH)]


class ChildItem(EnqueueRequest):
    key: Ref = Field(
        description="the child's key under its parent: spawning the same key again (a parent"
        " leased again after a crash) gives back the child made the first time; also the"
        " name siblings depend on it by (`ref`)"
    )


class SpawnRequest(Strict):
    token: Token
    jobs: Annotated[list[ChildItem], Field(min_length=1, max_length=MAX_BATCH)]


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
    waiting_for: int = Field(
        default=0, description="parents not yet done with (while waiting; DESIGN.md §22)"
    )
    depth: int = Field(default=0, description="the longest chain of parents above it")
    dependents: int = Field(default=0, description="how many jobs depend on it")
    blocked_by: int | None = Field(default=None, description="the parent whose end cancelled it")
    spawned_by: int | None = Field(default=None, description="the job that spawned it")
    spawn_key: str | None = Field(default=None, description="its key under that job")
    group_key: str | None = None
    weight: int = 1
    start_by: UtcTime | None = None
    unique_key: str | None = Field(
        default=None, description="the fingerprint its duplicates are found by"
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
    duplicate: bool = Field(
        default=False, description="the job was there already: this item is its duplicate"
    )
    replaced: bool = Field(
        default=False, description="... and took this item's payload and run_after"
    )


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
    waiting_for: int = 0
    depth: int = 0
    dependents: int = 0
    blocked_by: int | None = None
    spawned_by: int | None = None
    spawn_key: str | None = None
    group_key: str | None = None
    weight: int = 1
    start_by: UtcTime | None = None
    unique_key: str | None = None
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


class EdgeOut(BaseModel):
    id: int
    kind: str | None = Field(description="null: the job was deleted")
    status: JobStatus | None = Field(description="null: the job was deleted")
    result: JsonValue = Field(default=None, description="in a lease's parents: its result")
    result_omitted: bool = Field(
        default=False,
        description="in a lease's parents: the results passed the answer's share for them;"
        " GET /jobs/{id} has it",
    )
    spawn_key: str | None = None
    on_failure: OnFailure


class EdgePage(BaseModel):
    job_id: int
    jobs: list[EdgeOut]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page")


class ReasonOut(BaseModel):
    code: str = Field(
        description="running, waiting_for_parents, finished, deadline_passed, scheduled,"
        " queue_paused, kind_limit, group_limit, rate_limited, too_heavy, turns, no_worker,"
        " behind"
    )
    message: str
    until: UtcTime | None = Field(default=None, description="when it stops, if known")
    detail: dict[str, JsonValue] = Field(default_factory=dict)


class ExplanationOut(BaseModel):
    job_id: int
    status: JobStatus
    runnable: bool = Field(
        description="queued with nothing holding it back but the jobs ahead of it"
    )
    reasons: list[ReasonOut]


class RequeueCount(BaseModel):
    requeued: int
