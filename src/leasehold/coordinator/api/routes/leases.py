"""The worker's routes: leasing jobs, and renewing, completing, failing and releasing them,
one at a time or in batches; every report is fenced by its lease's token."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.encode import (
    item_result_wire,
    job_json,
    lease_wire,
    reply_json,
)
from leasehold.coordinator.api.routes.shared import (
    FOR_WORKERS,
    errors,
    parse_job_id,
    service_of,
)
from leasehold.coordinator.api.schemas.jobs import (
    JobOut,
)
from leasehold.coordinator.api.schemas.leases import (
    BatchCompleteRequest,
    BatchFailRequest,
    BatchRenewRequest,
    BatchResultOut,
    CompleteRequest,
    FailRequest,
    LeaseBatchOut,
    LeaseOut,
    LeaseRequest,
    LeasesRequest,
    ReleaseRequest,
    RenewRequest,
)
from leasehold.coordinator.service.requests import Complete, Fail, Renew
from leasehold.errors import (
    InvalidRequest,
    LeaseholdError,
)
from leasehold.model import LEASE_WAIT_SHARE, Job
from leasehold.tracing import tag_jobs

router = APIRouter(route_class=StrictJSONRoute)


@router.post(
    "/lease",
    response_model=LeaseOut | LeaseBatchOut,
    responses={204: {"description": "no job is available"}, **errors()},
    dependencies=FOR_WORKERS,
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
    dependencies=FOR_WORKERS,
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
        # At most a quarter of the lease (capability `lease_wait_cap`): a worker whose
        # answer hangs can then time out and ask again under the same request id while
        # the leases the answer carried still run (PROTOCOL.md §5).
        wait_seconds=min(body.wait_seconds, seconds * LEASE_WAIT_SHARE),
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
    "/batch/renew", response_model=BatchResultOut, responses=errors(), dependencies=FOR_WORKERS
)
async def renew_batch(body: BatchRenewRequest, request: Request) -> Response:
    items = [Renew(i.id, i.token, check_lease_length(i.lease_seconds, request)) for i in body.items]
    answers = await service_of(request).renew_many(items)
    return _batch_results([i.id for i in body.items], answers)


@router.post(
    "/batch/complete", response_model=BatchResultOut, responses=errors(), dependencies=FOR_WORKERS
)
async def complete_batch(body: BatchCompleteRequest, request: Request) -> Response:
    items = [Complete(i.id, i.token, i.result) for i in body.items]
    answers = await service_of(request).complete_many(items)
    return _batch_results([i.id for i in body.items], answers)


@router.post(
    "/batch/fail", response_model=BatchResultOut, responses=errors(), dependencies=FOR_WORKERS
)
async def fail_batch(body: BatchFailRequest, request: Request) -> Response:
    items = [Fail(i.id, i.token, i.error, i.retryable, i.retry_after_seconds) for i in body.items]
    answers = await service_of(request).fail_many(items)
    return _batch_results([i.id for i in body.items], answers)


@router.post(
    "/jobs/{job_id}/renew",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=FOR_WORKERS,
)
async def renew(job_id: str, body: RenewRequest, request: Request) -> Response:
    seconds = check_lease_length(body.lease_seconds, request)
    job = await service_of(request).renew(parse_job_id(job_id), body.token, seconds)
    return reply_json(job_json(job))


@router.post(
    "/jobs/{job_id}/complete",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=FOR_WORKERS,
)
async def complete(job_id: str, body: CompleteRequest, request: Request) -> Response:
    job = await service_of(request).complete(parse_job_id(job_id), body.token, body.result)
    return reply_json(job_json(job))


@router.post(
    "/jobs/{job_id}/fail",
    response_model=JobOut,
    responses=errors(404, 409),
    dependencies=FOR_WORKERS,
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
    dependencies=FOR_WORKERS,
)
async def release(job_id: str, body: ReleaseRequest, request: Request) -> Response:
    job = await service_of(request).release(parse_job_id(job_id), body.token)
    return reply_json(job_json(job))
