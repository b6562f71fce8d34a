"""The route class of every leasehold route: guarded first, then strict JSON bodies.

Bodies are declared as JSON, and NaN, Infinity and integers beyond 64 bits are refused
(``handler``).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from fastapi import Depends, Request, Response
from fastapi.dependencies.utils import get_dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel

from leasehold.coordinator.api.auth import ADMIN, Allow, Guard, Public
from leasehold.coordinator.api.handler import RouteHandler
from leasehold.coordinator.api.middleware.sameorigin import STATE_CHANGING
from leasehold.coordinator.api.schemas.fields import ErrorOut


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


class StrictJSONRoute(APIRoute):
    """Routes that check who calls before anything else, and parse bodies strictly.

    Each route declares one guard from ``leasehold.coordinator.api.auth`` in its
    ``dependencies``; a route that declares none is for admins only. Its handler is a
    ``handler.RouteHandler``, which runs the route's checks, the guard and the input's
    parsing once each, in the order its module gives, then the endpoint.

    That handler runs nothing else FastAPI could have made of the endpoint's signature, so
    a route may only declare what it does run: one guard and no other dependency; path,
    query and header parameters and at most one body, a Pydantic model, on a method that
    changes state; an ``async`` endpoint that returns a ``Response`` (``response_model``
    and ``status_code`` then only document the answer). Anything else is refused when the
    route is made. The handler is made from the route's own declaration: the app serves
    the routes themselves (``create_app``), not an inclusion of their router, which could
    add a prefix or dependencies.

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
        if len(dependencies) != len(guards):
            raise ValueError(f"route {path} declares a dependency other than its guard")
        self.guard: Guard = guards[0]  # before FastAPI asks for the handler, below
        # Documented before FastAPI makes the route, which turns each documented model into
        # the schema of that answer.
        responses = _documented(self.guard, path, endpoint, kwargs.get("methods"))
        kwargs["responses"] = responses | dict(kwargs.get("responses") or {})
        super().__init__(path, endpoint, dependencies=dependencies, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        _refuse_what_is_not_run(self)
        # Kept: the request pipeline calls it without FastAPI's routing (api/dispatch.py).
        self.handler = RouteHandler(self.guard, self.dependant, _body_of(self))
        return self.handler


def _documented(
    guard: Guard, path: str, endpoint: Callable[..., Any], methods: Iterable[str] | None
) -> dict[int | str, dict[str, Any]]:
    """The error answers the guard, the checks and the input add to a route's own."""
    documented: dict[int | str, dict[str, Any]] = {}
    if isinstance(guard, Allow):  # open routes hold no data: any Host may read them
        documented |= _AUTH_ERRORS | _HOST_ERRORS
    if methods and {m.upper() for m in methods} & STATE_CHANGING:
        documented |= _CHANGE_ERRORS
    d = get_dependant(path=path, call=endpoint)
    if d.body_params:
        documented |= _BODY_ERRORS
    if d.body_params or d.path_params or d.query_params or d.header_params:
        documented |= _INPUT_ERRORS
    return documented


def _body_of(route: APIRoute) -> tuple[str, type[BaseModel]] | None:
    """The route's body: its argument's name and model (None: it takes no body)."""
    if route.body_field is None:
        return None
    body = route.dependant.body_params
    model = route.body_field.field_info.annotation
    if len(body) != 1 or not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise TypeError(f"route {route.path}: the body must be one Pydantic model, or none")
    if not route.methods or not route.methods <= STATE_CHANGING:
        raise TypeError(f"route {route.path}: only a state-changing method may take a body")
    return body[0].name, model


def _refuse_what_is_not_run(route: APIRoute) -> None:
    """``RouteHandler`` runs the guard, path, query and header parameters, one body and
    the request: a route declaring anything else would have it silently ignored."""
    d = route.dependant
    if not inspect.iscoroutinefunction(route.endpoint):
        raise TypeError(f"route {route.path}: the endpoint must be a coroutine function")
    if not _returns_response(route.endpoint):
        raise TypeError(f"route {route.path}: the endpoint must return a Response")
    ignored = {
        "cookie parameters": d.cookie_params,
        "a connection parameter": d.http_connection_param_name,
        "a websocket parameter": d.websocket_param_name,
        "a response parameter": d.response_param_name,
        "background tasks": d.background_tasks_param_name,
        "security scopes": d.security_scopes_param_name,
    }
    declared = [what for what, there in ignored.items() if there]
    if declared:
        raise TypeError(f"route {route.path} declares {', '.join(declared)}")


def _returns_response(endpoint: Callable[..., Any]) -> bool:
    returned = typing.get_type_hints(endpoint).get("return")
    return isinstance(returned, type) and issubclass(returned, Response)
