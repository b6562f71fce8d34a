"""Thin HTTP handlers for operators: deleting jobs, run-now, queues, workers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from leasehold.coordinator.api.auth import ADMIN, READERS, WORKER
from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.encode import reply_json
from leasehold.coordinator.api.routes.shared import (
    cursor_of,
    parse_job_id,
    presence_of,
    reply,
    service_of,
)
from leasehold.coordinator.api.schemas.fields import MAX_QUEUE_LENGTH, ErrorOut, name_problem
from leasehold.coordinator.api.schemas.jobs import JobOut
from leasehold.coordinator.api.schemas.operations import (
    BulkDeleteRequest,
    DeletedCount,
    HeartbeatRequest,
    QueueList,
    QueueOut,
    QueueState,
    WorkerList,
    WorkerOut,
)
from leasehold.coordinator.service.answer import job_json
from leasehold.coordinator.service.operations import BulkDelete, Operations, WorkerView
from leasehold.coordinator.store.contract import WorkerBeat
from leasehold.errors import InvalidRequest
from leasehold.model import MAX_PAGE_LIMIT

router = APIRouter(route_class=StrictJSONRoute)

_WHY = {
    404: "no job has that id",
    409: "the job's state forbids it (a running job is not deleted: cancel it first)",
    503: "the database is unavailable; retry",
}
_READERS = [Depends(READERS)]
_WORKER = [Depends(WORKER)]
_ADMIN = [Depends(ADMIN)]
_QUEUE = Annotated[str, Path(max_length=400)]


def errors(*codes: int) -> dict[int | str, dict[str, object]]:
    """The domain errors a route answers with, for the OpenAPI schema."""
    return {code: {"model": ErrorOut, "description": _WHY[code]} for code in (*codes, 503)}


def operations_of(request: Request) -> Operations:
    operations: Operations = request.app.state.operations
    return operations


def _queue(raw: str) -> str:
    # The rule of every queue name in a body (schemas/fields.py QueueName).
    too_long = f"must be at most {MAX_QUEUE_LENGTH} characters"
    if problem := name_problem(raw) or (too_long if len(raw) > MAX_QUEUE_LENGTH else None):
        raise InvalidRequest(f"the queue name {problem}")
    return raw


@router.delete("/jobs/{job_id}", status_code=204, responses=errors(404, 409), dependencies=_ADMIN)
async def delete_job(job_id: str, request: Request) -> Response:
    """Delete a job and its attempt history. A running job is refused (409): cancel it
    first. Deleting frees its idempotency key."""
    await operations_of(request).delete(parse_job_id(job_id))
    return Response(status_code=204)


@router.post("/jobs/delete", response_model=DeletedCount, responses=errors(), dependencies=_ADMIN)
async def delete_jobs(body: BulkDeleteRequest, request: Request) -> Response:
    """Delete up to ``limit`` jobs matching the filter (never running ones), oldest id first,
    a thousand per transaction; answers how many went."""
    query = BulkDelete(body.status, body.kind, body.queue, body.finished_before, body.limit)
    deleted = await operations_of(request).delete_where(query)
    return reply(DeletedCount(deleted=deleted))


@router.post(
    "/jobs/{job_id}/run-now",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=_ADMIN,
)
async def run_now(job_id: str, request: Request) -> Response:
    """A queued job waiting for its run_after becomes due at once (repeats are safe)."""
    return reply_json(job_json(await service_of(request).run_now(parse_job_id(job_id))))


@router.get("/queues", response_model=QueueList, responses=errors(), dependencies=_READERS)
async def list_queues(request: Request) -> Response:
    views = await operations_of(request).queues()
    return reply(QueueList(queues=[QueueOut.of(v) for v in views]))


@router.post(
    "/queues/{name}/pause", response_model=QueueState, responses=errors(), dependencies=_ADMIN
)
async def pause_queue(name: _QUEUE, request: Request) -> Response:
    """Nothing more is leased from the queue (running jobs finish) until it is resumed;
    the pause is stored, so it holds across restarts and coordinators. Repeats are safe."""
    await operations_of(request).pause(_queue(name))
    return reply(QueueState(name=name, paused=True))


@router.post(
    "/queues/{name}/resume", response_model=QueueState, responses=errors(), dependencies=_ADMIN
)
async def resume_queue(name: _QUEUE, request: Request) -> Response:
    await operations_of(request).resume(_queue(name))
    return reply(QueueState(name=name, paused=False))


@router.post(
    "/workers/heartbeat", response_model=WorkerOut, responses=errors(), dependencies=_WORKER
)
async def heartbeat(body: HeartbeatRequest, request: Request) -> Response:
    """A worker says it is alive and what it serves; send one every 5 seconds."""
    beat = WorkerBeat(
        worker_id=body.worker_id,
        host=body.host,
        pid=body.pid,
        version=body.version,
        kinds=tuple(body.kinds) if body.kinds is not None else None,
        queues=tuple(body.queues) if body.queues is not None else None,
        concurrency=body.concurrency,
        started_at=body.started_at,
    )
    seen = await operations_of(request).beat(beat)
    presence_of(request).changed()  # the next enqueue sees this worker at once
    return reply(WorkerOut.of(WorkerView(seen, True, 0.0)))


@router.get("/workers", response_model=WorkerList, responses=errors(), dependencies=_READERS)
async def list_workers(
    request: Request,
    cursor: Annotated[str | None, Query(max_length=40)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = MAX_PAGE_LIMIT,
) -> Response:
    """Live workers (seen in the last 15 s) and those gone within the last hour, most
    recently seen first, a page at a time: ``limit`` of them, ending early before the
    answer passes its budget (``--max-answer-bytes``), with a ``next_cursor``. A worker
    that beats between two pages moves to the front: it may be listed twice or not at all."""
    offset = cursor_of(cursor) or 0
    views = await operations_of(request).workers(limit + 1, offset)
    budget: int = request.app.state.settings.max_answer_bytes
    page: list[WorkerOut] = []
    spent = 0
    for view in views[:limit]:
        out = WorkerOut.of(view)
        spent += _size(out)
        if page and spent > budget:
            break
        page.append(out)
    more = len(views) > len(page)
    return reply(WorkerList(workers=page, next_cursor=str(offset + len(page)) if more else None))


def _size(worker: WorkerOut) -> int:
    """About how many bytes a worker takes in the answer: its names, and the rest."""
    names = [*(worker.kinds or ()), *(worker.queues or ())]
    return 200 + len(worker.host) + len(worker.version) + sum(len(n) + 3 for n in names)
