"""The route class of every leasehold route: guarded first, then strict JSON bodies.

Bodies are declared as JSON (or undeclared), and NaN, Infinity and integers beyond 64 bits
are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Depends, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from leasehold.coordinator.api.auth import ADMIN, Allow, Guard, Public
from leasehold.coordinator.api.middleware.sameorigin import (
    STATE_CHANGING,
    check_content_type,
    check_host,
    check_same_origin,
    is_json,
)
from leasehold.coordinator.api.schemas.fields import ErrorOut
from leasehold.coordinator.rules.userjson import INT_MESSAGE, has_long_integer
from leasehold.errors import UnsupportedMediaType


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            # orjson refuses NaN and Infinity; its error is a json.JSONDecodeError, which
            # FastAPI answers with a 422.
            self._json = orjson.loads(await self.body())
        return self._json


def _error(description: str, **extra: Any) -> dict[str, Any]:
    return {"model": ErrorOut, "description": description, **extra}


_AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _error(
        "no bearer token, or a wrong one",
        headers={"WWW-Authenticate": {"schema": {"type": "string"}, "description": "Bearer"}},
    ),
    403: _error("the token's role may not call this"),
}
_BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    413: _error("the body, or the payload or result in it, is over its cap"),
}
_CHANGE_ERRORS: dict[int | str, dict[str, Any]] = {
    403: _error("the token's role may not call this, or a browser sent it from another site"),
    415: _error("the request is not declared as JSON (Content-Type: application/json)"),
}
_HOST_ERRORS: dict[int | str, dict[str, Any]] = {
    421: _error("access is open (no tokens) and the Host is not a loopback name"),
}
# Declared whenever a route takes input, also so FastAPI does not add its own 422, whose
# body is not ours.
_INPUT_ERRORS: dict[int | str, dict[str, Any]] = {
    422: _error("the input is not valid JSON or breaks the schema"),
}


def _query_names(dependant: Dependant) -> frozenset[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return frozenset(names)


class StrictJSONRoute(APIRoute):
    """Routes that check who calls before anything else, and parse bodies strictly.

    Each route declares one guard from ``leasehold.coordinator.api.auth`` in its ``dependencies``; a
    route that declares none is for admins only. The guard runs before the body is read.

    Before the guard, the checks of ``leasehold.coordinator.api.middleware.sameorigin``: a loopback Host while
    access is open, no cross-site browser request that changes state. After it, a
    state-changing request must declare ``Content-Type: application/json``, with a body or
    without one (415 otherwise); a body is always parsed by StrictJSONRequest.json.

    The error answers that the guard and the body add are documented on the route here, so
    the OpenAPI schema lists them for every route.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        dependencies = list(kwargs.pop("dependencies", None) or ())
        guards: list[Guard] = [
            d.dependency for d in dependencies if isinstance(d.dependency, Allow | Public)
        ]
        if not guards:
            guards = [ADMIN]  # fail closed
            dependencies.append(Depends(ADMIN))
        if len(set(map(id, guards))) > 1:
            raise ValueError(f"route {path} declares more than one guard")
        super().__init__(path, endpoint, dependencies=dependencies, **kwargs)
        self.guard: Guard = guards[0]
        self.query_names = _query_names(self.dependant)
        documented: dict[int | str, dict[str, Any]] = {}
        if isinstance(self.guard, Allow):  # open routes hold no data: any Host may read them
            documented |= _AUTH_ERRORS | _HOST_ERRORS
        if self.methods and self.methods & STATE_CHANGING:
            documented |= _CHANGE_ERRORS
        if self.body_field is not None:
            documented |= _BODY_ERRORS
        d = self.dependant
        if self.body_field or d.path_params or d.query_params or d.header_params:
            documented |= _INPUT_ERRORS
        self.responses = documented | dict(self.responses)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            if isinstance(self.guard, Allow):
                check_host(request)
            check_same_origin(request)
            self.guard.check(request)
            self._refuse_unknown_query_parameters(request)
            check_content_type(request)
            if self.body_field is not None and not is_json(request.headers.get("content-type", "")):
                raise UnsupportedMediaType()
            strict = StrictJSONRequest(request.scope, request.receive)
            if self.body_field is not None and has_long_integer(await strict.body()):
                # Here, because the parser would round it to a float without a word.
                raise RequestValidationError(
                    [{"type": "int_out_of_range", "loc": ("body",), "msg": INT_MESSAGE}]
                )
            return await handler(strict)

        return strict_handler

    def _refuse_unknown_query_parameters(self, request: Request) -> None:
        """Like an unknown body field: ``?stauts=dead`` must not quietly list every job."""
        unknown = [name for name in request.query_params if name not in self.query_names]
        if unknown:
            raise RequestValidationError(
                [
                    {"type": "extra_forbidden", "loc": ("query", name), "msg": "unknown parameter"}
                    for name in unknown
                ]
            )
