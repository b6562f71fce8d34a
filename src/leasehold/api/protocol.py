"""The protocol's version and capabilities: announced on every answer and by GET /protocol.

A worker or producer in any language reads ``GET /protocol`` once to learn what this
coordinator speaks (PROTOCOL.md, "Versions and discovery"); every answer also carries the
``Leasehold-Protocol`` header, so a client sees the version without asking.
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leasehold.api.auth import PUBLIC
from leasehold.api.body import StrictJSONRoute
from leasehold.batch_items import MAX_BATCH
from leasehold.settings import MAX_LEASE_SECONDS, MAX_WAIT_SECONDS
from leasehold.store.base import LEASE_REQUEST_WINDOW_SECONDS

PROTOCOL_VERSION: Final = "1.1"
# Every version this coordinator answers as its documents say (1.1 only adds to 1.0).
SUPPORTED_VERSIONS: Final = ("1.0", "1.1")
CAPABILITIES: Final = (
    "batches",  # POST /jobs/batch, /batch/renew, /batch/complete, /batch/fail, max_jobs
    "cancel",  # POST /jobs/{id}/cancel and the job_cancelled answers
    "queues",  # named queues and priorities
    "schedules",  # /schedules
    "limits",  # /limits (per-kind concurrency)
    "long_poll",  # wait_seconds on a lease
    "lease_request_id",  # request_id on a lease: a retry gets the same leases back
    "lease_seconds_answer",  # lease answers carry the granted lease_seconds
    "leases_route",  # POST /leases: one answer shape for code generators
    "item_verdicts",  # batch items carry `verdict`, naming what the worker does
    "normalized_idempotency",  # enqueue retries compare requests with defaults filled in
    "job_headers",  # headers on enqueue, stored and handed to every lessee (trace context)
    "wait_finished",  # GET /jobs/{id}?wait_seconds: answered when the job has finished
)
HEADER: Final = "Leasehold-Protocol"
# Sent when an open coordinator (no tokens configured) is given a bearer token it cannot
# check: the request is served, and the client learns that its token meant nothing here.
AUTH_WARNING_HEADER: Final = "Leasehold-Auth-Warning"
AUTH_WARNING: Final = "open coordinator: the bearer token was not checked"


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
async def protocol(request: Request) -> ProtocolOut:
    """The protocol version, capabilities and limits (open, like /health)."""
    settings = request.app.state.settings
    return ProtocolOut(
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


class ProtocolHeader:
    """ASGI middleware: every HTTP answer names the protocol version; an open
    coordinator's answer to a request that carried a bearer token says it was not checked."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        warn = unchecked_token(scope)

        async def with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                stamp(MutableHeaders(scope=message), warn)
            await send(message)

        await self.app(scope, receive, with_header)


def stamp(headers: MutableHeaders, warn: bool) -> None:
    """The headers every answer carries: the protocol version, and the warning when an
    open coordinator was given a token it did not check (``unchecked_token``)."""
    headers[HEADER] = PROTOCOL_VERSION
    if warn:
        headers[AUTH_WARNING_HEADER] = AUTH_WARNING


def unchecked_token(scope: Scope) -> bool:
    """Whether the request carried a bearer token that an open coordinator ignores."""
    app = scope.get("app")
    authenticator = getattr(getattr(app, "state", None), "authenticator", None)
    if authenticator is None or not authenticator.open:
        return False
    return any(name == b"authorization" for name, _ in scope.get("headers", ()))
