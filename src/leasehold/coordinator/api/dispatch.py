"""Protocol routes reached by the request pipeline itself, past FastAPI's routing.

FastAPI reaches a route through its exception layer, an exit stack, its router and the
route's ``request_response`` wrapper (two more exit stacks and a second exception layer):
about 20 us of CPU for every request, half of a ``GET /health``. The pipeline's layer
(``middleware.pipeline``) instead finds the protocol route here, by the route's own match
and in the app's order (the protocol routes come first in it, so the first that matches
is the one FastAPI's router would choose), calls the route's handler (``api.handler``),
and answers what the handler raises with the app's exception handlers, the ones
``errors.install_error_handlers`` installed, as FastAPI's exception layer would: a
``LeaseholdError`` by the error table, a 422, a 499; anything else goes on up, to
FastAPI's outermost layer and its JSON 500.

What is not a protocol route's goes on to FastAPI's routing: the documentation, the
dashboard, the schema, an unknown path (404), a method the path does not take (405). So
does every request FastAPI's own telemetry records (``tracing.server_telemetry``): its
routing is what names the route on its span and metrics. Either way the same route
handler answers a protocol route.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from fastapi import Request
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

from leasehold.coordinator.api.body import StrictJSONRoute
from leasehold.coordinator.api.handler import RouteHandler

# An exception handler: a coroutine function giving the answer, or a plain function.
ErrorHandler = Callable[[Request, Exception], Any]

# Present in the scope when FastAPI's own telemetry records the request.
_FASTAPI_TELEMETRY: Final = "fastapi.telemetry"


class ProtocolRoutes:
    """The app's protocol routes (its ``StrictJSONRoute`` among ``routes``, in order) and
    its exception handlers (``handlers``: the app's own table, read when a handler raises)."""

    def __init__(self, routes: Sequence[BaseRoute], handlers: Mapping[Any, Callable[..., Any]]):
        by_method: dict[str, list[tuple[StrictJSONRoute, RouteHandler]]] = {}
        for route in routes:
            if isinstance(route, StrictJSONRoute):
                for method in route.methods or ():
                    by_method.setdefault(method, []).append((route, route.handler))
        self._by_method = {method: tuple(found) for method, found in by_method.items()}
        self._handlers = handlers

    def find(self, scope: Scope) -> RouteHandler | None:
        """The handler of the protocol route this request is for, its match (path
        parameters, route) put in ``scope``; None: FastAPI's routing takes it."""
        if _FASTAPI_TELEMETRY in scope:
            return None
        for route, handler in self._by_method.get(scope["method"], ()):
            match, child = route.matches(scope)
            if match is Match.FULL:
                scope.update(child)
                return handler
        return None

    async def serve(
        self, handler: RouteHandler, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Answer the request with ``handler``, or with the app's exception handler for
        what it raised."""
        request = Request(scope, receive, send)
        try:
            response = await handler(request)
        except Exception as exc:
            answer = self._handler_for(exc)
            if answer is None:
                raise
            if inspect.iscoroutinefunction(answer):
                response = await answer(request, exc)
            else:  # as Starlette runs a plain function: in a thread
                response = await run_in_threadpool(answer, request, exc)
            exc.__traceback__ = None  # as Starlette does: a reused exception keeps no frames
        await response(scope, receive, send)

    def _handler_for(self, exc: Exception) -> ErrorHandler | None:
        """The handler FastAPI's exception layer would choose: by status for an
        ``HTTPException``, else by the exception's classes; not ``Exception``'s nor
        500's, which are FastAPI's outermost layer's."""
        code = exc.status_code if isinstance(exc, HTTPException) else None
        if code is not None and code != 500 and code in self._handlers:
            found: ErrorHandler = self._handlers[code]
            return found
        for cls in type(exc).__mro__:
            if cls is Exception:
                return None
            if cls in self._handlers:
                handler: ErrorHandler = self._handlers[cls]
                return handler
        return None
