"""The protocol header on every answer, and the warning an open coordinator adds when it was
given a bearer token it did not check."""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from leasehold.coordinator.api.protocol import (
    AUTH_WARNING,
    AUTH_WARNING_HEADER,
    HEADER,
    PROTOCOL_VERSION,
)


class ProtocolHeader:
    """ASGI middleware: every HTTP answer names the protocol version; an open
    coordinator's answer to a request that carried a bearer token says it was not checked."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        warn = unchecked_token(scope)

        async def with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                stamp(MutableHeaders(scope=message), warn)
            await send(message)

        await self.app(scope, receive, with_header)


def stamp(headers: MutableHeaders, warn: bool) -> None:
    """The headers every answer carries: the protocol version, and the warning when an
    open coordinator was given a token it did not check (``unchecked_token``)."""
    headers[HEADER] = PROTOCOL_VERSION
    if warn:
        headers[AUTH_WARNING_HEADER] = AUTH_WARNING


def unchecked_token(scope: Scope) -> bool:
    """Whether the request carried a bearer token that an open coordinator ignores."""
    app = scope.get("app")
    authenticator = getattr(getattr(app, "state", None), "authenticator", None)
    if authenticator is None or not authenticator.open:
        return False
    return any(name == b"authorization" for name, _ in scope.get("headers", ()))
