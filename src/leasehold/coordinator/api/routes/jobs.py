"""The producer's and reader's job routes: enqueue (one or a batch), list, read, wait for,
the attempt history, cancel and requeue."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Request, Response

from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.encode import (
    enqueued_wire,
    job_json,
    reply_json,
    summary_wire,
    with_unserved,
)
from leasehold.coordinator.api.routes.shared import (
    FOR_ADMINS,
    FOR_HISTORY_READERS,
    FOR_JOB_READERS,
    FOR_PRODUCERS,
    FOR_READERS,
    FOR_WORKERS,
    cursor_of,
    errors,
    parse_job_id,
    presence_of,
    reply,
    service_of,
)
from leasehold.coordinator.api.schemas.fields import IdempotencyKey
from leasehold.coordinator.api.schemas.jobs import (
    AttemptList,
    AttemptOut,
    BatchEnqueueOut,
    BatchEnqueueRequest,
    BulkRequeueRequest,
    EdgePage,
    EnqueueRequest,
    ExplanationOut,
    JobOut,
    JobPage,
    RequeueCount,
    SpawnRequest,
)
from leasehold.coordinator.service.presence import unserved_pairs
from leasehold.coordinator.store.contract import AttemptPage, DeadFilter, JobFilter
from leasehold.errors import (
    IdempotencyConflict,
)
from leasehold.model import MAX_PAGE_LIMIT, MAX_WAIT_SECONDS, JobStatus
from leasehold.tracing import tag_jobs

router = APIRouter(route_class=StrictJSONRoute)

DUPLICATE_HEADER = "Leasehold-Duplicate"
"""On an enqueue's 200: the job answered was there already, and this enqueue is its
duplicate (``true``), or took this enqueue's payload and run_after (``replaced``)."""


@router.post(
    "/jobs",
    status_code=201,
    response_model=JobOut,
    responses={200: {"model": JobOut, "description": "the key was used before"}, **errors()},
    dependencies=FOR_PRODUCERS,
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
    served = await presence_of(request).served()  # before the commit: it may not fail after
    inserted = await service_of(request).enqueue(body.spec(key))
    tag_jobs([inserted.job.id])
    answer = reply_json(job_json(inserted.job), 201 if inserted.created else 200)
    if inserted.duplicate:
        answer.headers[DUPLICATE_HEADER] = "replaced" if inserted.replaced else "true"
    return with_unserved(answer, unserved_pairs(served, [inserted.job]))


@router.post(
    "/jobs/batch",
    response_model=BatchEnqueueOut,
    responses=errors(),
    dependencies=FOR_PRODUCERS,
)
async def enqueue_batch(body: BatchEnqueueRequest, request: Request) -> Response:
    """Up to 1,000 jobs in one transaction: a conflicting idempotency key inserts none,
    nor does a graph that cannot be (items depend on each other by ``ref``)."""
    served = await presence_of(request).served()
    inserted = await service_of(request).enqueue_many(
        [j.spec(j.idempotency_key, refs=True, ref=j.ref) for j in body.jobs]
    )
    answer = reply_json({"jobs": [enqueued_wire(i) for i in inserted]})
    return with_unserved(answer, unserved_pairs(served, [i.job for i in inserted]))


@router.post(
    "/jobs/{job_id}/children",
    response_model=BatchEnqueueOut,
    responses=errors(404, 409),
    dependencies=FOR_WORKERS,
)
async def spawn(job_id: str, body: SpawnRequest, request: Request) -> Response:
    """A running job's children, under its lease's token: each keyed by (the job, its
    ``key``), so spawning a key again gives back the child made the first time; a stale
    token is 409 and spawns nothing (DESIGN.md §22)."""
    children = [j.spec(j.idempotency_key, refs=True, spawn_key=j.key) for j in body.jobs]
    inserted = await service_of(request).spawn(parse_job_id(job_id), body.token, children)
    return reply_json({"jobs": [enqueued_wire(i) for i in inserted]})


@router.get(
    "/jobs/{job_id}/parents",
    response_model=EdgePage,
    responses=errors(404),
    dependencies=FOR_JOB_READERS,
)
async def job_parents(
    job_id: str,
    request: Request,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = 100,
) -> Response:
    """The jobs this one depends on, by id, as they stand now."""
    return await _edges(job_id, request, cursor, limit, parents=True)


@router.get(
    "/jobs/{job_id}/dependents",
    response_model=EdgePage,
    responses=errors(404),
    dependencies=FOR_JOB_READERS,
)
async def job_dependents(
    job_id: str,
    request: Request,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = 100,
) -> Response:
    """The jobs that depend on this one, by id, as they stand now."""
    return await _edges(job_id, request, cursor, limit, parents=False)


@router.get(
    "/jobs/{job_id}/explain",
    response_model=ExplanationOut,
    responses=errors(404),
    dependencies=FOR_JOB_READERS,
)
async def explain(job_id: str, request: Request) -> Response:
    """Why the job is not running right now: what a lease would meet (DESIGN.md §19)."""
    found = await service_of(request).explain(parse_job_id(job_id))
    return reply_json(found)


async def _edges(
    job_id: str, request: Request, cursor: str | None, limit: int, *, parents: bool
) -> Response:
    jid = parse_job_id(job_id)
    found = await service_of(request).edges(
        jid, parents=parents, after_id=cursor_of(cursor) or 0, limit=limit
    )
    more = str(found[-1].id) if len(found) == limit else None
    return reply_json({"job_id": jid, "jobs": found, "next_cursor": more})


@router.get("/jobs", response_model=JobPage, responses=errors(), dependencies=FOR_READERS)
async def list_jobs(
    request: Request,
    status: JobStatus | None = None,
    kind: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = 100,
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
        cursor_of(cursor),
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


@router.post(
    "/jobs/requeue", response_model=RequeueCount, responses=errors(), dependencies=FOR_ADMINS
)
async def requeue_dead(body: BulkRequeueRequest, request: Request) -> Response:
    moved = await service_of(request).requeue_dead(
        DeadFilter(body.kind, body.error_contains, body.limit)
    )
    return reply(RequeueCount(requeued=moved))


@router.get(
    "/jobs/{job_id}", response_model=JobOut, responses=errors(404), dependencies=FOR_JOB_READERS
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
    dependencies=FOR_HISTORY_READERS,
)
async def job_attempts(
    job_id: str,
    request: Request,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = 100,
) -> Response:
    """The job's lease history, oldest first, a page at a time."""
    jid = parse_job_id(job_id)
    attempts = await service_of(request).attempts(jid, AttemptPage(cursor_of(cursor), limit))
    next_cursor = str(attempts[-1].token) if len(attempts) == limit else None
    return reply(
        AttemptList(
            job_id=jid, attempts=[AttemptOut.of(a) for a in attempts], next_cursor=next_cursor
        )
    )


@router.post(
    "/jobs/{job_id}/cancel",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=FOR_PRODUCERS,
)
async def cancel(job_id: str, request: Request) -> Response:
    """Queued and dead jobs are cancelled at once; a running job is marked, and ends
    cancelled at its holder's next report (its renewals answer 409 job_cancelled)."""
    return reply_json(job_json(await service_of(request).cancel(parse_job_id(job_id))))


@router.post(
    "/jobs/{job_id}/requeue",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=FOR_ADMINS,
)
async def requeue(job_id: str, request: Request) -> Response:
    return reply_json(job_json(await service_of(request).requeue(parse_job_id(job_id))))
