"""GET /protocol: the version, capabilities and limits a client reads once (PROTOCOL.md,
"Versions and discovery")."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from leasehold.batch_items import MAX_BATCH
from leasehold.coordinator.api.auth import PUBLIC
from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.protocol import CAPABILITIES, PROTOCOL_VERSION, SUPPORTED_VERSIONS
from leasehold.coordinator.api.routes.shared import reply
from leasehold.coordinator.store.contract import LEASE_REQUEST_WINDOW_SECONDS
from leasehold.model import MAX_LEASE_SECONDS, MAX_WAIT_SECONDS


class Limits(BaseModel):
    min_lease_seconds: float
    max_lease_seconds: float
    max_wait_seconds: float
    max_batch: int
    max_payload_bytes: int
    max_body_bytes: int
    lease_request_window_seconds: float


class ProtocolOut(BaseModel):
    protocol: str = Field(description="the version this coordinator speaks")
    supported: list[str] = Field(description="versions whose documented behaviour it keeps")
    capabilities: list[str]
    limits: Limits
    open_access: bool = Field(description="no tokens configured: every caller is admin")


router = APIRouter(route_class=StrictJSONRoute)


@router.get("/protocol", response_model=ProtocolOut, dependencies=[Depends(PUBLIC)])
async def protocol(request: Request) -> Response:
    """The protocol version, capabilities and limits (open, like /health)."""
    settings = request.app.state.settings
    answer = ProtocolOut(
        protocol=PROTOCOL_VERSION,
        supported=list(SUPPORTED_VERSIONS),
        capabilities=list(CAPABILITIES),
        limits=Limits(
            min_lease_seconds=settings.min_lease_seconds,
            max_lease_seconds=MAX_LEASE_SECONDS,
            max_wait_seconds=MAX_WAIT_SECONDS,
            max_batch=MAX_BATCH,
            max_payload_bytes=settings.max_payload_bytes,
            max_body_bytes=settings.max_body_bytes,
            lease_request_window_seconds=LEASE_REQUEST_WINDOW_SECONDS,
        ),
        open_access=request.app.state.authenticator.open,
    )
    return reply(answer)
