"""StrictJSONRoute refuses, when a route is made, what its handler (api/handler.py) would
not run: a route never declares something that is silently skipped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import pytest
from fastapi import APIRouter, Cookie, Depends, Request, Response
from pydantic import BaseModel

from leasehold.coordinator.api.auth import ADMIN, PRODUCER
from leasehold.coordinator.api.body import StrictJSONRoute


class Body(BaseModel):
    kind: str


def _other() -> int:
    return 1


def _make(method: str, endpoint: Callable[..., Any], **options: Any) -> None:
    router = APIRouter(route_class=StrictJSONRoute)
    router.add_api_route("/x", endpoint, methods=[method], **options)


async def _fine(body: Body, request: Request) -> Response:
    return Response()


async def _no_body() -> Response:
    return Response()


async def _model() -> Body:
    return Body(kind="k")


def _sync() -> Response:
    return Response()


async def _cookie(session: Annotated[str | None, Cookie()] = None) -> Response:
    return Response()


async def _two_bodies(a: Body, b: Body) -> Response:
    return Response()


def test_a_guarded_route_with_a_body_is_made() -> None:
    _make("POST", _fine, dependencies=[Depends(PRODUCER)])


@pytest.mark.parametrize(
    ("method", "endpoint", "options", "refusal"),
    [
        ("POST", _fine, {"dependencies": [Depends(PRODUCER), Depends(_other)]}, ValueError),
        ("GET", _fine, {"dependencies": [Depends(PRODUCER)]}, TypeError),  # a body on a GET
        ("GET", _model, {}, TypeError),
        ("GET", _sync, {}, TypeError),
        ("GET", _cookie, {}, TypeError),
        ("POST", _two_bodies, {}, TypeError),
    ],
)
def test_what_the_handler_would_not_run_is_refused(
    method: str, endpoint: Callable[..., Any], options: dict[str, Any], refusal: type[Exception]
) -> None:
    with pytest.raises(refusal):
        _make(method, endpoint, **options)


def test_a_route_without_a_guard_is_for_admins() -> None:
    router = APIRouter(route_class=StrictJSONRoute)
    router.add_api_route("/x", _no_body, methods=["GET"])
    (route,) = router.routes
    assert isinstance(route, StrictJSONRoute)
    assert route.guard is ADMIN
