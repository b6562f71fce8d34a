"""Readiness, apart from liveness.

``GET /health`` says the process answers HTTP (liveness: restart it when that fails).
``GET /health/ready`` also touches the database, along the path writes take, with a short
timeout: 503 while the database is locked, unreachable or failing (readiness: send no
traffic, but do not restart; the coordinator recovers when the database does).
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, Depends, Request

from leasehold.api.auth import PUBLIC
from leasehold.api.body import StrictJSONRoute
from leasehold.api.routes import service_of
from leasehold.api.schemas import ErrorOut, Health

READY_TIMEOUT_SECONDS: Final = 2.0

router = APIRouter(route_class=StrictJSONRoute)


@router.get(
    "/health/ready",
    response_model=Health,
    dependencies=[Depends(PUBLIC)],
    responses={503: {"model": ErrorOut, "description": "the database does not answer"}},
)
async def ready(request: Request) -> Health:
    await service_of(request).ready(READY_TIMEOUT_SECONDS)
    return Health(status="ready")
