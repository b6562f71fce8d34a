"""Thin HTTP handlers for per-kind limits: GET /limits, PUT and DELETE /limits/{kind}. The
limits are applied where jobs are leased (store/leasing.py, store/flow.py)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from leasehold.coordinator.api.auth import ADMIN, READERS
from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.routes.schedules import errors  # one description of both families
from leasehold.coordinator.api.routes.shared import reply, service_of
from leasehold.coordinator.api.schemas.fields import MAX_KIND_LENGTH, name_problem
from leasehold.coordinator.api.schemas.limits import LimitList, LimitOut, LimitRequest
from leasehold.errors import InvalidRequest

router = APIRouter(route_class=StrictJSONRoute)

# Reading is for readers (the dashboard, scrapers); changing is for operators.
_READERS = [Depends(READERS)]
_ADMIN = [Depends(ADMIN)]


def _kind(raw: str) -> str:
    # The rule of every kind in a body (schemas/fields.py Kind).
    too_long = f"must be at most {MAX_KIND_LENGTH} characters"
    if problem := name_problem(raw) or (too_long if len(raw) > MAX_KIND_LENGTH else None):
        raise InvalidRequest(f"the kind {problem}")
    return raw


@router.get("/limits", response_model=LimitList, responses=errors(), dependencies=_READERS)
async def list_limits(request: Request) -> Response:
    limits = await service_of(request).limits()
    return reply(LimitList(limits=[LimitOut.of(limit) for limit in limits]))


# A kind with a line break cannot be matched by the path at all (404); any other bad kind
# is refused as input (422).
@router.put(
    "/limits/{kind:path}", response_model=LimitOut, responses=errors(404, 422), dependencies=_ADMIN
)
async def put_limit(kind: str, body: LimitRequest, request: Request) -> Response:
    """The kind's limits, from the next lease on: running jobs at once, per group key
    too, starts per period, turns between groups (DESIGN.md §19). A PUT sets them all:
    those it leaves out are lifted."""
    limit = await service_of(request).limit_put(_kind(kind), body.flow())
    return reply(LimitOut.of(limit))


@router.delete("/limits/{kind:path}", status_code=204, responses=errors(404), dependencies=_ADMIN)
async def delete_limit(kind: str, request: Request) -> Response:
    await service_of(request).limit_delete(kind)
    return Response(status_code=204)
