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
   (NaN and Infinity refused: 422 ``invalid_json``).
6. The path, query and header parameters and the body validated, with the fields FastAPI
   made from the endpoint's signature (the ones the OpenAPI schema shows): one 422 naming
   every error, in that order.
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
from typing import Any, Final

import orjson
from fastapi import Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from leasehold.coordinator.api.auth import Allow, Guard
from leasehold.coordinator.api.middleware.sameorigin import (
    check_content_type,
    check_host,
    check_same_origin,
)
from leasehold.coordinator.api.request_headers import headers_of
from leasehold.coordinator.rules.userjson import INT_MESSAGE, has_long_integer

Endpoint = Callable[..., Awaitable[Response]]

_BODY: Final = ("body",)


def _body_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """The body model's errors, located under ``body`` as FastAPI locates them."""
    return [{**e, "loc": (*_BODY, *e["loc"])} for e in exc.errors(include_url=False)]


def _missing(loc: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "missing", "loc": loc, "msg": "Field required", "input": None}


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
                errors.append(_missing(self.loc))
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
        parsed = await self._parsed_body(request) if self.body is not None else None
        values = self._values(request, parsed)
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

    @staticmethod
    async def _parsed_body(request: Request) -> Any:
        """The body as JSON (``_EMPTY`` for no body at all), or a 422."""
        raw = await _body(request)
        if not raw:
            return _EMPTY
        if has_long_integer(raw):
            raise RequestValidationError(
                [{"type": "int_out_of_range", "loc": _BODY, "msg": INT_MESSAGE}]
            )
        try:
            return orjson.loads(raw)  # NaN and Infinity are not JSON to orjson
        except orjson.JSONDecodeError as e:
            raise RequestValidationError(
                [
                    {
                        "type": "json_invalid",
                        "loc": (*_BODY, e.pos),
                        "msg": "JSON decode error",
                        "input": {},
                        "ctx": {"error": e.msg},
                    }
                ]
            ) from e

    def _values(self, request: Request, parsed: Any) -> dict[str, Any]:
        """The endpoint's arguments, or one 422 naming every invalid input (in FastAPI's
        order: path, query, header, body)."""
        values: dict[str, Any] = {}
        errors: list[Any] = []
        if self.path:
            _read(self.path, request.path_params, values, errors)
        if self.query:
            _read(self.query, request.query_params, values, errors)
        if self.header:
            _read(self.header, headers_of(request), values, errors)
        if self.body is not None:
            name, model = self.body
            if parsed is _EMPTY:
                errors.append(_missing(_BODY))
            else:
                try:  # as FastAPI validates a body: the same errors for a non-object
                    values[name] = model.model_validate(parsed, from_attributes=True)
                except ValidationError as exc:
                    errors += _body_errors(exc)
        if errors:
            raise RequestValidationError(errors)
        if self.request_name:
            values[self.request_name] = request
        return values


async def _body(request: Request) -> bytes:
    """The request's body, read from the connection; ``ClientDisconnect`` if the client
    left first (answered as ``errors.CLIENT_GONE``). Starlette's ``Request.body`` reads
    through an async generator, and cost a lone POST /jobs about 8 us more; the endpoint
    is given the body parsed and never reads it again."""
    chunks: list[bytes] = []
    while True:
        message = await request.receive()
        if message["type"] != "http.request":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read(
    params: tuple[Param, ...], given: Mapping[str, str], values: dict[str, Any], errors: list[Any]
) -> None:
    """Each of ``params`` read from ``given`` (the path's, the query's or the headers')."""
    for param in params:
        param.value(given.get(param.key), values, errors)


# No body at all (FastAPI validates nothing then: the body is missing).
_EMPTY: Final = object()
