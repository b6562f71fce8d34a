"""The pipeline's dispatch answers what a route handler raises as FastAPI's exception
layer would (api/dispatch.py): by status, then by class, Exception's left to the 500."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, cast

import pytest
from fastapi import Request, Response
from starlette.exceptions import HTTPException

from leasehold.coordinator.api.dispatch import ProtocolRoutes
from leasehold.coordinator.api.handler import RouteHandler
from tests.inproc import http_scope


class Odd(Exception):
    pass


class Odder(Odd):
    pass


def _answer(text: str) -> Any:
    async def handle(request: Request, exc: Exception) -> Response:
        return Response(text)

    return handle


def _plain(request: Request, exc: Exception) -> Response:
    return Response("plain")


HANDLERS: dict[Any, Any] = {
    HTTPException: _answer("http"),
    404: _answer("404"),
    500: _answer("500 by status"),
    Odd: _plain,
    Exception: _answer("exception"),
}


async def _serve(raised: Exception) -> bytes:
    async def handler(request: Request) -> Response:
        raise raised

    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    routes = ProtocolRoutes([], HANDLERS)
    await routes.serve(cast(RouteHandler, handler), http_scope("GET", "/x", []), receive, send)
    return bytes(sent[1]["body"])


@pytest.mark.parametrize(
    ("raised", "answer"),
    [
        (HTTPException(404), b"404"),  # by status first
        (HTTPException(409), b"http"),  # then by class
        (HTTPException(500), b"http"),  # 500's status handler is the outermost layer's
        (Odder(), b"plain"),  # by the closest class, a plain function run in a thread
    ],
)
async def test_a_raised_exception_gets_the_handler_fastapi_would_give_it(
    raised: Exception, answer: bytes
) -> None:
    assert await _serve(raised) == answer


async def test_what_only_exceptions_handler_would_answer_goes_on_up() -> None:
    with pytest.raises(RuntimeError):
        await _serve(RuntimeError("a bug"))
