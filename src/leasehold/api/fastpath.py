"""POST /jobs answered without FastAPI's routing and dependency layers, when nothing about
the request is unusual.

One job enqueued per request is what a web application sends, and FastAPI's per-request
machinery (matching the route among all the others, solving the guard, header and body
dependencies, the exit stack, the exception middleware) cost more CPU than the enqueue
itself: about half the coordinator's time per request (README, Performance). This ASGI
middleware sits inside ``RequestLog`` and ``BodyLimit`` (both still apply) and answers a
request with the route's own code (``routes.enqueue_reply``), guard (``auth.PRODUCER``), body
model (``schemas.EnqueueRequest``) and error table (``errors.error_response``).

It takes only the plain case: POST /jobs, no query string, no Idempotency-Key header, the
header checks of ``api.sameorigin`` passed (Host, Origin, Content-Type: application/json), a
token the guard lets in, and a body that parses and validates with no integer too long for
JSON's doubles. Anything else (a refusal, invalid input, the header) goes to the FastAPI route
unchanged, with the body it already read replayed, so every error answer, log line and
OpenAPI declaration stays the route's. Nothing is decided twice: a request either takes
this path or the route's.
"""

from __future__ import annotations

from typing import Final

import orjson
from fastapi import Request
from pydantic import ValidationError
from starlette.requests import ClientDisconnect
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leasehold.api.auth import PRODUCER, authenticate
from leasehold.api.errors import error_response
from leasehold.api.routes import enqueue_reply, router
from leasehold.api.sameorigin import check_content_type, check_host, check_same_origin
from leasehold.api.schemas import EnqueueRequest
from leasehold.core.service import JobService
from leasehold.core.userjson import has_long_integer
from leasehold.errors import LeaseholdError

# The route this path stands in for: its template is what the request log names.
_ROUTE: Final[BaseRoute] = next(
    r
    for r in router.routes
    if getattr(r, "path", None) == "/jobs" and "POST" in getattr(r, "methods", ())
)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the body already read once, then the connection's own."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _plain(scope: Scope) -> bool:
    """Whether the request leaves nothing to the route's fuller handling (its header
    key, its refusals): the route's own checks, which log nothing, pass."""
    if any(name == b"idempotency-key" for name, _ in scope["headers"]):
        return False
    request = Request(scope)
    try:
        check_host(request)
        check_same_origin(request)
        check_content_type(request)
    except LeaseholdError:
        return False
    return bool(authenticate(request) & PRODUCER.roles)  # else the guard answers and logs


class FastEnqueue:
    """ASGI middleware answering plain POST /jobs requests (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] != "/jobs"
            or scope["query_string"]
            or not _plain(scope)
        ):
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            body = await request.body()
        except ClientDisconnect:
            return  # gone, or cut off by BodyLimit, which has answered
        try:
            if has_long_integer(body):
                raise ValueError("the route answers it")
            parsed = EnqueueRequest.model_validate(orjson.loads(body))
        except (ValueError, ValidationError):  # orjson's errors are ValueErrors too
            await self.app(scope, _replay(body, receive), send)
            return
        scope["route"] = _ROUTE  # for the request log, as routing would set it
        service: JobService = request.app.state.service
        try:
            response = await enqueue_reply(service, parsed, parsed.idempotency_key)
        except LeaseholdError as exc:
            response = error_response(exc)
        await response(scope, receive, send)
