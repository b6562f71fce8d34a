"""The route handler of every protocol route: what a route does with a request before its
endpoint runs, once each and in this order.

1. The Host check (routes behind a token guard, while access is open: 421) and the
   same-origin check (a cross-site browser request that changes state: 403), both on
   headers alone (``middleware.sameorigin``).
2. The guard (401/403, ``auth``), before anything the request carries is parsed.
3. Unknown query parameters (422): ``?stauts=dead`` must not quietly list every job.
4. A state-changing request must declare ``Content-Type: application/json`` (415).
5. The body, on a route that takes one: read, refused if it holds an integer beyond 64
   bits (422: the parser would round it to a float without a word), parsed as strict JSON
   (NaN and Infinity refused: 422 ``invalid_json``) and validated by its model, off the
   event loop when it is large (``json_body``).
6. The path, query and header parameters validated, with the fields FastAPI made from the
   endpoint's signature (the ones the OpenAPI schema shows): one 422 naming every error
   of these and of the body, in that order.
7. The endpoint, called with the values; its ``Response`` is the answer.

The request pipeline calls it (``api.dispatch``); FastAPI's routing does while FastAPI's
own telemetry records the request. Errors are raised, and answered by the exception
handlers of ``errors``.

FastAPI's own handler would instead solve the route's dependencies on every request (the
guard a second time, with the bearer scheme under it), parse the Content-Type with the
email package, read the cookies and build a response object for dependencies to change:
most of a small request's CPU. The guard stays declared as a dependency, for the OpenAPI
schema and so that a route under another route class is still guarded; this handler runs
it itself, once, and ``StrictJSONRoute`` refuses any dependency or parameter it would not
run.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel

from leasehold.coordinator.api.auth import Allow, Guard
from leasehold.coordinator.api.json_body import Decoded, decoded, missing, read_body
from leasehold.coordinator.api.middleware.sameorigin import (
    check_content_type,
    check_host,
    check_same_origin,
)
from leasehold.coordinator.api.request_headers import headers_of

Endpoint = Callable[..., Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Param:
    """A path, query or header parameter of the endpoint: its argument's ``name``, where the
    request carries it (``loc``: ``("query", "limit")``, as errors name it; ``key``: the
    name it is read under, a header's in lower case), and the ``field`` FastAPI made of it,
    which validates a value as FastAPI would (and says so in the OpenAPI schema)."""

    name: str
    loc: tuple[str, str]
    key: str
    field: Any  # fastapi's ModelField: typed as FastAPI keeps it, privately

    def value(self, given: str | None, values: dict[str, Any], errors: list[Any]) -> None:
        """Validate ``given`` (None: absent) into ``values``, or add its errors."""
        info = self.field.field_info
        if given is None:
            if info.is_required():
                errors.append(missing(self.loc))
                return
            default = copy.deepcopy(info.get_default(call_default_factory=True))
            if not info.validate_default:
                values[self.name] = default
                return
            given = default
        valid, wrong = self.field.validate(given, values, loc=self.loc)
        if wrong:
            errors += wrong
        else:
            values[self.name] = valid


def params_of(where: str, fields: Any) -> tuple[Param, ...]:
    """The ``Param`` of each of FastAPI's ``fields`` for one place of the request (``path``,
    ``query``, ``header``). Each is one value under its alias (a header's name as it is,
    read without regard to case); anything FastAPI would read otherwise (a list, a model of
    parameters, alias choices, an underscore turned into a dash) is refused."""
    made = []
    for field in fields:
        info = field.field_info
        annotation = info.annotation
        plain = not (
            info.validation_alias not in (None, field.alias)
            or (isinstance(annotation, type) and issubclass(annotation, BaseModel))
            or typing.get_origin(annotation) in (list, set, frozenset, tuple)
            or (where == "header" and field.alias == field.name and "_" in field.name)
        )
        if not plain:
            raise TypeError(f"parameter {field.name}: must be one value under its alias")
        key = field.alias.lower() if where == "header" else field.alias
        made.append(Param(field.name, (where, field.alias), key, field))
    return tuple(made)


class RouteHandler:
    """One route's handler (see the module docstring): ``guard`` its guard, ``dependant``
    what FastAPI found in the endpoint's signature, ``body`` the body's argument and model
    (None: the route takes no body)."""

    def __init__(
        self, guard: Guard, dependant: Dependant, body: tuple[str, type[BaseModel]] | None
    ) -> None:
        assert dependant.call is not None
        self.endpoint: Endpoint = dependant.call
        self.guard = guard
        self.host_checked = isinstance(guard, Allow)  # open routes hold no data
        self.path = params_of("path", dependant.path_params)
        self.query = params_of("query", dependant.query_params)
        self.header = params_of("header", dependant.header_params)
        self.query_names = frozenset(param.key for param in self.query)
        self.request_name = dependant.request_param_name
        self.body = body

    async def __call__(self, request: Request) -> Response:
        if self.host_checked:
            check_host(request)
        check_same_origin(request)
        self.guard.check(request)
        if request.scope["query_string"]:
            self._refuse_unknown_query_parameters(request)
        check_content_type(request)
        body = None
        if self.body is not None:
            body = await decoded(await read_body(request), self.body[1])
        values = self._values(request, body)
        return await self.endpoint(**values)

    def _refuse_unknown_query_parameters(self, request: Request) -> None:
        unknown = [name for name in request.query_params if name not in self.query_names]
        if unknown:
            raise RequestValidationError(
                [
                    {"type": "extra_forbidden", "loc": ("query", name), "msg": "unknown parameter"}
                    for name in unknown
                ]
            )

    def _values(self, request: Request, body: Decoded | None) -> dict[str, Any]:
        """The endpoint's arguments, or one 422 naming every invalid input (in FastAPI's
        order: path, query, header, body); ``body``: the body decoded (None: the route
        takes none)."""
        values: dict[str, Any] = {}
        errors: list[Any] = []
        if self.path:
            _read(self.path, request.path_params, values, errors)
        if self.query:
            _read(self.query, request.query_params, values, errors)
        if self.header:
            _read(self.header, headers_of(request), values, errors)
        if self.body is not None and body is not None:
            if isinstance(body, list):
                errors += body
            else:
                values[self.body[0]] = body
        if errors:
            raise RequestValidationError(errors)
        if self.request_name:
            values[self.request_name] = request
        return values


def _read(
    params: tuple[Param, ...], given: Mapping[str, str], values: dict[str, Any], errors: list[Any]
) -> None:
    """Each of ``params`` read from ``given`` (the path's, the query's or the headers')."""
    for param in params:
        param.value(given.get(param.key), values, errors)
