"""Thin HTTP handlers: parse, call the JobService, serialise. No rules, no SQL."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from pydantic import BaseModel

from leasehold.api.auth import (
    ADMIN,
    FIGURES,
    HISTORY_READERS,
    JOB_READERS,
    PRODUCER,
    PUBLIC,
    READERS,
    WORKER,
)
from leasehold.api.body import StrictJSONRoute
from leasehold.api.schemas import (
    AttemptList,
    AttemptOut,
    BatchCompleteRequest,
    BatchEnqueueOut,
    BatchEnqueueRequest,
    BatchFailRequest,
    BatchRenewRequest,
    BatchResultOut,
    BulkRequeueRequest,
    CompleteRequest,
    EnqueueRequest,
    ErrorOut,
    FailRequest,
    Health,
    IdempotencyKey,
    JobOut,
    JobPage,
    LeaseBatchOut,
    LeaseOut,
    LeaseRequest,
    LeasesRequest,
    ReleaseRequest,
    RenewRequest,
    RequeueCount,
    StatsOut,
)
from leasehold.api.wire import (
    item_result_wire,
    job_json,
    lease_wire,
    reply_json,
    summary_wire,
)
from leasehold.core.requests import Complete, Enqueue, Fail, Renew
from leasehold.core.service import JobService
from leasehold.errors import (
    IdempotencyConflict,
    InvalidRequest,
    JobNotFound,
    LeaseholdError,
)
from leasehold.metrics import CONTENT_TYPE
from leasehold.model import Job, JobStatus
from leasehold.settings import MAX_WAIT_SECONDS
from leasehold.store.base import AttemptPage, DeadFilter, JobFilter
from leasehold.tracing import tag_jobs

router = APIRouter(route_class=StrictJSONRoute)

_JSON = "application/json"
_ID = re.compile(r"[0-9]{1,18}")
_WHY = {
    404: "no job has that id",
    409: "the job's state or the token forbids it",
    503: "the database is unavailable; retry",
}


def error_responses(why: Mapping[int, str], *codes: int) -> dict[int | str, dict[str, object]]:
    """The domain errors a route answers with, described by ``why`` (the guard's and the
    input's are added by StrictJSONRoute), so the OpenAPI schema lists every status a route
    can send; 503 always."""
    return {code: {"model": ErrorOut, "description": why[code]} for code in (*codes, 503)}


def errors(*codes: int) -> dict[int | str, dict[str, object]]:
    """The job routes' domain errors (``error_responses``)."""
    return error_responses(_WHY, *codes)


# Who may call what: one guard per route (see api/auth.py; undeclared means admin only).
_PUBLIC = [Depends(PUBLIC)]
_PRODUCER = [Depends(PRODUCER)]
_WORKER = [Depends(WORKER)]
_JOB_READERS = [Depends(JOB_READERS)]
_HISTORY_READERS = [Depends(HISTORY_READERS)]
_READERS = [Depends(READERS)]
_FIGURES = [Depends(FIGURES)]
_ADMIN = [Depends(ADMIN)]


def reply(model: BaseModel, status_code: int = 200) -> Response:
    """Serialise a response model straight to JSON bytes: the models are built from trusted
    data, so FastAPI's re-validation of every response is skipped (it is the hot path)."""
    return Response(model.__pydantic_serializer__.to_json(model), status_code, media_type=_JSON)


def service_of(request: Request) -> JobService:
    service: JobService = request.app.state.service
    return service


def parse_job_id(raw: str) -> int:
    """Ids are opaque to clients; anything that is not one of ours is simply not found."""
    if not _ID.fullmatch(raw):
        raise JobNotFound("no job has that id")  # the raw id is not echoed: it is input
    return int(raw)


@router.get("/health", response_model=Health, dependencies=_PUBLIC)
async def health() -> Health:
    return Health(status="ok")


@router.get("/stats", response_model=StatsOut, responses=errors(), dependencies=_FIGURES)
async def stats(request: Request) -> Response:
    figures = await service_of(request).stats()
    return reply(StatsOut.model_validate(dataclasses.asdict(figures)))


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text format"},
        **errors(),
    },
    dependencies=_FIGURES,
)
async def metrics(request: Request) -> Response:
    service = service_of(request)
    figures = await service.stats()
    body = service.metrics.render(figures.by_status, figures.by_kind, figures.by_queue)
    return Response(body, media_type=CONTENT_TYPE)


@router.post(
    "/jobs",
    status_code=201,
    response_model=JobOut,
    responses={200: {"model": JobOut, "description": "the key was used before"}, **errors()},
    dependencies=_PRODUCER,
)
async def enqueue(
    body: EnqueueRequest,
    request: Request,
    idempotency_key: Annotated[IdempotencyKey | None, Header(alias="Idempotency-Key")] = None,
) -> Response:
    key = body.idempotency_key
    if idempotency_key is not None:
        if key is not None and key != idempotency_key:
            raise IdempotencyConflict(
                "the Idempotency-Key header and the body carry different keys"
            )
        key = idempotency_key
    return await enqueue_reply(service_of(request), body, key)


async def enqueue_reply(service: JobService, body: EnqueueRequest, key: str | None) -> Response:
    """POST /jobs once its input is parsed (also answered by ``api.fastpath``)."""
    inserted = await service.enqueue(
        Enqueue(
            body.kind,
            body.payload,
            body.max_attempts,
            body.run_after,
            key,
            body.priority,
            body.queue,
            body.headers,
            body.timeout_seconds,
        )
    )
    tag_jobs([inserted.job.id])
    return reply_json(job_json(inserted.job), 201 if inserted.created else 200)


@router.post(
    "/jobs/batch",
    response_model=BatchEnqueueOut,
    responses=errors(),
    dependencies=_PRODUCER,
)
async def enqueue_batch(body: BatchEnqueueRequest, request: Request) -> Response:
    """Up to 1,000 jobs in one transaction: a conflicting idempotency key inserts none."""
    inserted = await service_of(request).enqueue_many(
        [
            Enqueue(
                j.kind,
                j.payload,
                j.max_attempts,
                j.run_after,
                j.idempotency_key,
                j.priority,
                j.queue,
                j.headers,
                j.timeout_seconds,
            )
            for j in body.jobs
        ]
    )
    return reply_json({"jobs": [{"job": job_json(i.job), "created": i.created} for i in inserted]})


@router.post(
    "/lease",
    response_model=LeaseOut | LeaseBatchOut,
    responses={204: {"description": "no job is available"}, **errors()},
    dependencies=_WORKER,
)
async def lease(body: LeaseRequest, request: Request) -> Response:
    """Without ``max_jobs`` the answer is one ``{job, token, lease_seconds}``, with it
    ``{"leases": [...]}`` (protocol 1.0's two shapes; ``POST /leases`` has one)."""
    jobs = await _lease(body, body.max_jobs or 1, request)
    if not jobs:
        return Response(status_code=204)
    tag_jobs(j.id for j in jobs)
    if body.max_jobs is not None:
        return reply_json({"leases": [lease_wire(j) for j in jobs]})
    return reply_json(lease_wire(jobs[0]))


@router.post(
    "/leases",
    response_model=LeaseBatchOut,
    responses={204: {"description": "no job is available"}, **errors()},
    dependencies=_WORKER,
)
async def leases(body: LeasesRequest, request: Request) -> Response:
    """POST /lease with one answer shape: ``{"leases": [...]}`` (``max_jobs`` default 1)."""
    jobs = await _lease(body, body.max_jobs, request)
    if not jobs:
        return Response(status_code=204)
    return reply_json({"leases": [lease_wire(j) for j in jobs]})


async def _lease(body: LeaseRequest, max_jobs: int, request: Request) -> list[Job]:
    settings = request.app.state.settings
    seconds = check_lease_length(body.lease_seconds, request) or settings.default_lease_seconds
    return await service_of(request).lease(
        body.worker_id,
        seconds,
        body.kinds,
        max_jobs=max_jobs,
        wait_seconds=body.wait_seconds,
        queues=body.queues,
        gone=request.is_disconnected,
        request_id=body.request_id,
    )


def check_lease_length(seconds: float | None, request: Request) -> float | None:
    """A lease shorter than the coordinator's minimum is refused: it would run out before
    its holder could renew it."""
    least: float = request.app.state.settings.min_lease_seconds
    if seconds is not None and seconds < least:
        raise InvalidRequest(f"lease_seconds must be at least {least:g}")
    return seconds


def _batch_results(ids: list[int], answers: list[Job | LeaseholdError]) -> Response:
    """``BatchResultOut``: each item answered on its own."""
    results = [item_result_wire(i, a) for i, a in zip(ids, answers, strict=True)]
    return reply_json({"results": results})


@router.post(
    "/batch/renew", response_model=BatchResultOut, responses=errors(), dependencies=_WORKER
)
async def renew_batch(body: BatchRenewRequest, request: Request) -> Response:
    items = [Renew(i.id, i.token, check_lease_length(i.lease_seconds, request)) for i in body.items]
    answers = await service_of(request).renew_many(items)
    return _batch_results([i.id for i in body.items], answers)


@router.post(
    "/batch/complete", response_model=BatchResultOut, responses=errors(), dependencies=_WORKER
)
async def complete_batch(body: BatchCompleteRequest, request: Request) -> Response:
    items = [Complete(i.id, i.token, i.result) for i in body.items]
    answers = await service_of(request).complete_many(items)
    return _batch_results([i.id for i in body.items], answers)


@router.post("/batch/fail", response_model=BatchResultOut, responses=errors(), dependencies=_WORKER)
async def fail_batch(body: BatchFailRequest, request: Request) -> Response:
    items = [Fail(i.id, i.token, i.error, i.retryable, i.retry_after_seconds) for i in body.items]
    answers = await service_of(request).fail_many(items)
    return _batch_results([i.id for i in body.items], answers)


def _cursor(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    if not _ID.fullmatch(cursor):
        raise InvalidRequest("cursor is not one this server issued")
    return int(cursor)


@router.get("/jobs", response_model=JobPage, responses=errors(), dependencies=_READERS)
async def list_jobs(
    request: Request,
    status: JobStatus | None = None,
    kind: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    queue: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    error_contains: Annotated[str | None, Query(min_length=1, max_length=1000)] = None,
    idempotency_key: Annotated[str | None, Query(min_length=1, max_length=400)] = None,
    order: Annotated[Literal["asc", "desc"], Query(description="by id: oldest first")] = "asc",
    fields: Annotated[
        Literal["full", "summary"],
        Query(description="`summary` leaves each job's payload and result out"),
    ] = "full",
) -> Response:
    """A page by id (``order=desc``: newest first), filtered. It also ends early, with a
    ``next_cursor``, before its jobs' payloads and results pass the answer budget
    (``--max-answer-bytes``)."""
    summary = fields == "summary"
    budget = request.app.state.settings.max_answer_bytes
    query = JobFilter(
        status,
        kind,
        _cursor(cursor),
        limit,
        queue,
        error_contains,
        idempotency_key,
        order == "desc",
        max_bytes=budget,
        summary=summary,
    )
    page = await service_of(request).list_jobs(query)
    more = page and (len(page) == limit or page.cut)
    wire = [summary_wire(j) for j in page] if summary else [job_json(j) for j in page]
    return reply_json({"jobs": wire, "next_cursor": str(page[-1].id) if more else None})


@router.post("/jobs/requeue", response_model=RequeueCount, responses=errors(), dependencies=_ADMIN)
async def requeue_dead(body: BulkRequeueRequest, request: Request) -> Response:
    moved = await service_of(request).requeue_dead(
        DeadFilter(body.kind, body.error_contains, body.limit)
    )
    return reply(RequeueCount(requeued=moved))


@router.get(
    "/jobs/{job_id}", response_model=JobOut, responses=errors(404), dependencies=_JOB_READERS
)
async def get_job(
    job_id: str,
    request: Request,
    wait_seconds: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_SECONDS,
            allow_inf_nan=False,
            description="wait up to this long for the job to be completed, dead or cancelled",
        ),
    ] = 0.0,
) -> Response:
    service, jid = service_of(request), parse_job_id(job_id)
    tag_jobs([jid])
    job = await (service.wait(jid, wait_seconds) if wait_seconds > 0 else service.get(jid))
    return reply(JobOut.of(job))


@router.get(
    "/jobs/{job_id}/attempts",
    response_model=AttemptList,
    responses=errors(404),
    dependencies=_HISTORY_READERS,
)
async def job_attempts(
    job_id: str,
    request: Request,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    """The job's lease history, oldest first, a page at a time."""
    jid = parse_job_id(job_id)
    attempts = await service_of(request).attempts(jid, AttemptPage(_cursor(cursor), limit))
    next_cursor = str(attempts[-1].token) if len(attempts) == limit else None
    return reply(
        AttemptList(
            job_id=jid, attempts=[AttemptOut.of(a) for a in attempts], next_cursor=next_cursor
        )
    )


@router.post(
    "/jobs/{job_id}/renew", response_model=JobOut, responses=errors(404, 409), dependencies=_WORKER
)
async def renew(job_id: str, body: RenewRequest, request: Request) -> Response:
    seconds = check_lease_length(body.lease_seconds, request)
    job = await service_of(request).renew(parse_job_id(job_id), body.token, seconds)
    return reply_json(job_json(job))


@router.post(
    "/jobs/{job_id}/complete",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=_WORKER,
)
async def complete(job_id: str, body: CompleteRequest, request: Request) -> Response:
    job = await service_of(request).complete(parse_job_id(job_id), body.token, body.result)
    return reply_json(job_json(job))


@router.post(
    "/jobs/{job_id}/fail", response_model=JobOut, responses=errors(404, 409), dependencies=_WORKER
)
async def fail(job_id: str, body: FailRequest, request: Request) -> Response:
    job = await service_of(request).fail(
        parse_job_id(job_id),
        body.token,
        body.error,
        retryable=body.retryable,
        retry_after_seconds=body.retry_after_seconds,
    )
    return reply_json(job_json(job))


@router.post(
    "/jobs/{job_id}/release",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=_WORKER,
)
async def release(job_id: str, body: ReleaseRequest, request: Request) -> Response:
    job = await service_of(request).release(parse_job_id(job_id), body.token)
    return reply_json(job_json(job))


@router.post(
    "/jobs/{job_id}/cancel",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=_PRODUCER,
)
async def cancel(job_id: str, request: Request) -> Response:
    """Queued and dead jobs are cancelled at once; a running job is marked, and ends
    cancelled at its holder's next report (its renewals answer 409 job_cancelled)."""
    return reply_json(job_json(await service_of(request).cancel(parse_job_id(job_id))))


@router.post(
    "/jobs/{job_id}/requeue",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=_ADMIN,
)
async def requeue(job_id: str, request: Request) -> Response:
    return reply_json(job_json(await service_of(request).requeue(parse_job_id(job_id))))
