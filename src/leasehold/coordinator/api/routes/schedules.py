"""Thin HTTP handlers for schedules: PUT, GET, DELETE /schedules/{name} and GET /schedules."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response

from leasehold.coordinator.api.auth import ADMIN, READERS
from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.routes.shared import error_responses, reply
from leasehold.coordinator.api.schemas.schedules import (
    SCHEDULE_NAME_PATTERN,
    ScheduleList,
    ScheduleOut,
    ScheduleRequest,
)
from leasehold.coordinator.service.schedules import Schedules
from leasehold.errors import InvalidRequest

router = APIRouter(route_class=StrictJSONRoute)

# Also the limit routes' words (api/kind_limits.py): the OpenAPI document describes the two
# families together.
_WHY = {
    404: "no schedule or limit by that name (for a limit's kind: or none the path can carry)",
    422: "the schedule or limit is not acceptable",
    503: "the database is unavailable; retry",
}
# Reading is for readers (the dashboard, scrapers); changing is for operators.
_READERS = [Depends(READERS)]
_ADMIN = [Depends(ADMIN)]


def errors(*codes: int) -> dict[int | str, dict[str, object]]:
    """The schedule and limit routes' domain errors (``routes.error_responses``)."""
    return error_responses(_WHY, *codes)


# Names are checked here rather than by FastAPI's path validation, so that a bad name is a
# 404 like any unknown name on a GET or DELETE, and a 422 only where it would be created.
_NAME = Annotated[str, Path(max_length=400)]


def schedules_of(request: Request) -> Schedules:
    schedules: Schedules = request.app.state.schedules
    return schedules


@router.put(
    "/schedules/{name}",
    response_model=ScheduleOut,
    # 404: a name the path cannot carry (a "/" in it); any other bad name is a 422.
    responses={201: {"model": ScheduleOut, "description": "created"}, **errors(404, 422)},
    dependencies=_ADMIN,
)
async def put_schedule(name: _NAME, body: ScheduleRequest, request: Request) -> Response:
    """Create or replace a schedule; it next fires at its first fire time from now."""
    if not re.fullmatch(SCHEDULE_NAME_PATTERN, name):
        raise InvalidRequest(
            "a schedule name is 1-100 letters, digits, '.', '_' or '-', starting with a"
            " letter or digit"
        )
    schedule, created = await schedules_of(request).put(body.spec(name))
    return reply(ScheduleOut.of(schedule), 201 if created else 200)


@router.get("/schedules", response_model=ScheduleList, responses=errors(), dependencies=_READERS)
async def list_schedules(request: Request) -> Response:
    schedules = await schedules_of(request).list()
    return reply(ScheduleList(schedules=[ScheduleOut.of(s) for s in schedules]))


@router.get(
    "/schedules/{name}", response_model=ScheduleOut, responses=errors(404), dependencies=_READERS
)
async def get_schedule(name: _NAME, request: Request) -> Response:
    return reply(ScheduleOut.of(await schedules_of(request).get(name)))


@router.delete("/schedules/{name}", status_code=204, responses=errors(404), dependencies=_ADMIN)
async def delete_schedule(name: _NAME, request: Request) -> Response:
    await schedules_of(request).delete(name)
    return Response(status_code=204)
