"""GET /stats and GET /metrics: the figures, as JSON and in Prometheus' text format."""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Request, Response

from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.routes.shared import (
    FOR_FIGURES,
    errors,
    reply,
    service_of,
)
from leasehold.coordinator.api.schemas.figures import StatsOut
from leasehold.coordinator.metrics import CONTENT_TYPE

router = APIRouter(route_class=StrictJSONRoute)


@router.get("/stats", response_model=StatsOut, responses=errors(), dependencies=FOR_FIGURES)
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
    dependencies=FOR_FIGURES,
)
async def metrics(request: Request) -> Response:
    service = service_of(request)
    body = service.metrics.render(await service.readings())
    return Response(body, media_type=CONTENT_TYPE)
