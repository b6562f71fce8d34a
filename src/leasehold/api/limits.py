"""A cap on request bodies, answered with the same JSON error body as every other error."""

from __future__ import annotations

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leasehold.api.errors import error_body

# Past this multiple of the cap we stop reading and let the connection drop.
_DRAIN_FACTOR = 8


class BodyLimit:
    """ASGI middleware: a body over ``max_bytes`` gets 413 and never reaches a route.

    A declared Content-Length over the cap is refused before anything is read; a body
    streamed without one is counted as it arrives.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await self._drain(receive, 0)
                await self._refuse(send)
                return
        received = 0
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    refused = True
                    if message.get("more_body", False):
                        await self._drain(receive, received)
                    await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not refused:  # once the 413 is out, the route's own answer is dropped
                await send(message)

        await self.app(scope, counting_receive, guarded_send)

    async def _drain(self, receive: Receive, received: int) -> None:
        """Read and drop the rest of an oversize body (up to a bound), so that a client
        still sending it reads our 413 instead of a reset connection."""
        limit = self.max_bytes * _DRAIN_FACTOR
        while received <= limit:
            message = await receive()
            if message["type"] != "http.request":
                return
            received += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    async def _refuse(self, send: Send) -> None:
        body = orjson.dumps(
            error_body("payload_too_large", f"the request body is over {self.max_bytes} bytes")
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
