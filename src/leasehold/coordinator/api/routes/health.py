"""Readiness, apart from liveness.

``GET /health`` says the process answers HTTP (liveness: restart it when that fails).
``GET /health/ready`` also touches the database, along the path writes take, with a short
timeout: 503 while the database is locked, unreachable or failing (readiness: send no
traffic, but do not restart; the coordinator recovers when the database does).
Both name the release and the build (the commit), so that an operator sees which one
answers during a rolling upgrade (DESIGN.md §24).
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, Depends, Request, Response

from leasehold._version import __version__, build
from leasehold.coordinator.api.auth import PUBLIC
from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.routes.shared import reply, service_of
from leasehold.coordinator.api.schemas.fields import ErrorOut
from leasehold.coordinator.api.schemas.figures import Health

READY_TIMEOUT_SECONDS: Final = 2.0
_OK: Final = Health(status="ok", version=__version__, build=build())
_READY: Final = Health(status="ready", version=__version__, build=build())

router = APIRouter(route_class=StrictJSONRoute)


@router.get("/health", response_model=Health, dependencies=[Depends(PUBLIC)])
async def health() -> Response:
    return reply(_OK)


@router.get(
    "/health/ready",
    response_model=Health,
    dependencies=[Depends(PUBLIC)],
    responses={503: {"model": ErrorOut, "description": "the database does not answer"}},
)
async def ready(request: Request) -> Response:
    await service_of(request).ready(READY_TIMEOUT_SECONDS)
    return reply(_READY)
