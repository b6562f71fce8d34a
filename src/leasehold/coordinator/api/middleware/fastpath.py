"""POST /jobs answered before FastAPI's layers, when nothing about the request is unusual.

One job enqueued per request is what a web application sends, and the layers a request
crosses on its way to a route (FastAPI's error, telemetry and body-size middleware, ours for
the protocol header, the request log and the body caps, then routing, the guard, header and
body dependencies and the exit stack) cost more CPU than the enqueue itself. So this is the
outermost layer of the app's middleware stack (``Coordinator.build_middleware_stack``), and
answers the plain case with the route's own pieces: the header checks of
``api.sameorigin``, the guard (``auth.PRODUCER``), the body model
(``schemas.EnqueueRequest``), the handler (``routes.enqueue_reply``) and the error table
(``errors``); it does what the layers it skips would have done for that case, through their
own functions: the route's body cap (``bodysize``), the protocol header (``protocol``) and
the request's log line (``requestlog``).

It takes only the plain case: POST /jobs, no query string, a declared Content-Length within
the route's cap, no Idempotency-Key header, the header checks passed, a token the guard lets
in (and not an unchecked token on an open coordinator, whose answer carries a warning), and
a body that parses and validates with no integer too long for JSON's doubles. Anything else
goes down the stack unchanged, with the body already read replayed, so every refusal, error
answer, log line and OpenAPI declaration stays the route's. Nothing is decided twice: a
request either takes this path or the route's.
"""

from __future__ import annotations

import time
from typing import Final

import orjson
from fastapi import Request
from pydantic import ValidationError
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leasehold.coordinator.api.auth import PRODUCER, authenticate
from leasehold.coordinator.api.errors import CLIENT_GONE, error_response, unexpected_response
from leasehold.coordinator.api.middleware.bodysize import declared_length
from leasehold.coordinator.api.middleware.protocol_header import stamp, unchecked_token
from leasehold.coordinator.api.middleware.requestlog import log_request
from leasehold.coordinator.api.middleware.sameorigin import (
    check_content_type,
    check_host,
    check_same_origin,
)
from leasehold.coordinator.api.routes.jobs import enqueue_reply, router
from leasehold.coordinator.api.schemas.jobs import EnqueueRequest
from leasehold.coordinator.rules.userjson import has_long_integer
from leasehold.coordinator.service.job_service import JobService
from leasehold.errors import LeaseholdError

# The route this path stands in for: its template is what the request log names.
_ROUTE: Final[BaseRoute] = next(
    r
    for r in router.routes
    if getattr(r, "path", None) == "/jobs" and "POST" in getattr(r, "methods", ())
)


def _replay(chunks: list[bytes], more_body: bool, receive: Receive) -> Receive:
    """A receive that gives what was already read as one message, then the connection's
    own."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": more_body}
        return await receive()

    return replay


def _plain(scope: Scope, receive: Receive) -> bool:
    """Whether the request leaves nothing to the route's fuller handling (its header key,
    its refusals): the route's own checks, which log nothing, pass."""
    request = Request(scope, receive)
    try:
        check_host(request)
        check_same_origin(request)
        check_content_type(request)
        return (
            "idempotency-key" not in request.headers  # the route reads it
            and not unchecked_token(scope)  # its answer carries a warning: the stack adds it
            and bool(authenticate(request) & PRODUCER.roles)  # else the guard answers, logs
        )
    except Exception:  # a refusal, or a header nothing expected: the route's layers answer
        return False


class FastEnqueue:
    """ASGI middleware answering plain POST /jobs requests (see the module docstring);
    ``max_body_bytes`` is the route's body cap."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] != "/jobs"
            or scope["query_string"]
        ):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        length = declared_length(scope)
        if length is None or length > self.max_body_bytes or not _plain(scope, receive):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more_body = 0, True
        while more_body:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nobody to answer
                log_request(scope, CLIENT_GONE, started)
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more_body = message.get("more_body", False)
            if size > self.max_body_bytes:  # more than it declared: the body cap answers
                await self.app(scope, _replay(chunks, more_body, receive), send)
                return
        body = b"".join(chunks)
        try:
            if has_long_integer(body):
                raise ValueError("the route answers it")
            parsed = EnqueueRequest.model_validate(orjson.loads(body))
        except (ValueError, ValidationError):  # orjson's errors are ValueErrors too
            await self.app(scope, _replay([body], False, receive), send)
            return
        scope["route"] = _ROUTE  # for the request log, as routing would set it
        response = await self._answer(scope, parsed)
        stamp(response.headers, warn=False)
        await response(scope, receive, send)
        log_request(scope, response.status_code, started)

    @staticmethod
    async def _answer(scope: Scope, parsed: EnqueueRequest) -> Response:
        service: JobService = scope["app"].state.service
        try:
            return await enqueue_reply(service, parsed, parsed.idempotency_key)
        except LeaseholdError as exc:
            return error_response(exc)
        except Exception:  # as the app's outermost error layer would: logged, a JSON 500
            return unexpected_response(scope)
