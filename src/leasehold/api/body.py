"""Request bodies are strict JSON: declared as JSON (or undeclared), NaN and Infinity refused."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.routing import APIRoute

from leasehold.errors import UnsupportedMediaType

_JSON = (b"content-type", b"application/json")


def _is_json(content_type: str) -> bool:
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime == "application/json" or (
        mime.startswith("application/") and mime.endswith("+json")
    )


class StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            # orjson refuses NaN and Infinity; its error is a json.JSONDecodeError, which
            # FastAPI answers with a 422.
            self._json = orjson.loads(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """Routes whose bodies are always parsed by StrictJSONRequest.json.

    A body with no Content-Type is taken as JSON (curl and scripts often omit it); one
    declared as anything else is refused with 415, rather than parsed leniently.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            scope = request.scope
            if self.body_field is not None:
                content_type = request.headers.get("content-type")
                if content_type is None:
                    scope = {**scope, "headers": [*scope["headers"], _JSON]}
                elif not _is_json(content_type):
                    raise UnsupportedMediaType()
            return await handler(StrictJSONRequest(scope, request.receive))

        return strict_handler
