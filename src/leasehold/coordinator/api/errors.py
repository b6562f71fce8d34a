"""Errors to HTTP answers, in one table. Routes raise; they never build error bodies."""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import Scope

from leasehold.coordinator.api.middleware.protocol_header import answer_headers
from leasehold.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    LeaseholdError,
    MisdirectedRequest,
    NotFound,
    PayloadTooLarge,
    Unanswerable,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)

log = structlog.get_logger("leasehold")

STATUS_CODES: dict[type[LeaseholdError], int] = {
    NotFound: 404,
    Conflict: 409,
    InvalidRequest: 422,
    PayloadTooLarge: 413,
    UnsupportedMediaType: 415,
    Unavailable: 503,
    Unauthorized: 401,
    Forbidden: 403,
    MisdirectedRequest: 421,
    Unanswerable: 500,  # a bug, or data stored before the input checks: rolled back
}
# Headers an error's answer must carry (RFC 6750: a 401 names the scheme it wants).
HEADERS: dict[type[LeaseholdError], dict[str, str]] = {
    Unauthorized: {"WWW-Authenticate": 'Bearer realm="leasehold"'},
}

# What the request log records for a request whose client left before it had sent the whole
# body (nginx's 499): nobody reads the answer, and it is no server error to be alerted on.
CLIENT_GONE = 499

_HTTP_CODES = {
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def status_code_of(error: LeaseholdError) -> int:
    for cls in type(error).__mro__:
        if cls in STATUS_CODES:
            return STATUS_CODES[cls]
    return 500


def error_body(
    code: str, message: str, detail: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"error": code, "message": message}
    if detail is not None:
        body["detail"] = detail
    return body


# Stands in for a field name the client made up: the name is its input, not our schema's.
UNKNOWN_FIELD = "<unknown field>"
# Stands in for a key of a map whose keys the client chooses (a job's headers): a name the
# client made up as well, which may be anything, a secret pasted in the wrong place included.
CLIENT_KEY = "<key>"
_CLIENT_KEYED = frozenset({"headers"})


def _scrubbed(error: dict[str, Any]) -> dict[str, Any]:
    """Where and what, never the offending input, so no payload or secret is echoed back
    (nor logged by whatever logs our answers)."""
    loc = [str(part) for part in error.get("loc", ())]
    if error.get("type") == "extra_forbidden" and loc:
        loc[-1] = UNKNOWN_FIELD
    for at, part in enumerate(loc[:-1]):
        if part in _CLIENT_KEYED:
            loc[at + 1] = CLIENT_KEY
            break
    msg = str(error.get("msg", ""))
    given = error.get("input")
    # Pydantic's messages describe the rule, but a few quote what they were given.
    if isinstance(given, str) and len(given) >= 4 and given in msg:
        msg = "invalid value"
    return {"loc": loc, "msg": msg, "type": error.get("type")}


def _validation_detail(exc: RequestValidationError) -> list[dict[str, Any]]:
    return [_scrubbed(e) for e in exc.errors()]


def error_response(exc: LeaseholdError) -> JSONResponse:
    """The answer to a domain error (also the request pipeline's 413, made before any
    exception handler could run)."""
    return JSONResponse(
        error_body(exc.code, exc.message, exc.detail),
        status_code=status_code_of(exc),
        headers=HEADERS.get(type(exc)),
    )


async def _on_leasehold_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LeaseholdError)
    return error_response(exc)


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    detail = _validation_detail(exc)
    if any(d["type"] == "json_invalid" for d in detail):
        return JSONResponse(
            error_body(
                "invalid_json",
                "the request body is not valid JSON (NaN and Infinity are not JSON)",
                detail,
            ),
            status_code=422,
        )
    summary = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in detail)
    return JSONResponse(
        error_body("validation_error", f"invalid request: {summary}", detail), status_code=422
    )


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    return JSONResponse(
        error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers
    )


def unexpected_response(scope: Scope) -> JSONResponse:
    """The answer to an exception nothing expected, logged with its traceback. FastAPI
    sends it from its outermost layer, outside the request pipeline's, so it carries the
    headers every answer carries itself."""
    # The route's template, not the raw path: a path can carry anything a client typed.
    route = getattr(scope.get("route"), "path", None)
    log.exception("request.error", method=scope["method"], route=route)
    response = JSONResponse(error_body("internal", "internal error"), status_code=500)
    response.raw_headers.extend(answer_headers(scope))
    return response


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    return unexpected_response(request.scope)


async def _on_client_gone(request: Request, exc: Exception) -> JSONResponse:
    """Never read (the client has gone), but logged as ``CLIENT_GONE``, at info."""
    assert isinstance(exc, ClientDisconnect)
    message = "the client closed the connection before its request arrived whole"
    return JSONResponse(error_body("client_closed_request", message), status_code=CLIENT_GONE)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ClientDisconnect, _on_client_gone)
    app.add_exception_handler(LeaseholdError, _on_leasehold_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(HTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_unexpected)
