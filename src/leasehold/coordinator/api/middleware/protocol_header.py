"""The headers every answer carries: the protocol version, and the warning an open
coordinator adds when it was given a bearer token it did not check."""

from __future__ import annotations

from typing import Final

from starlette.types import Scope

from leasehold.coordinator.api.protocol import (
    AUTH_WARNING,
    AUTH_WARNING_HEADER,
    HEADER,
    PROTOCOL_VERSION,
)

RawHeaders = tuple[tuple[bytes, bytes], ...]

_VERSION: Final = (HEADER.lower().encode(), PROTOCOL_VERSION.encode())
_WARNING: Final = (AUTH_WARNING_HEADER.lower().encode(), AUTH_WARNING.encode())
_PLAIN: Final[RawHeaders] = (_VERSION,)
_WARNED: Final[RawHeaders] = (_VERSION, _WARNING)


def answer_headers(scope: Scope) -> RawHeaders:
    """The raw headers to add to the answer to this request: the protocol version, and the
    warning when an open coordinator was given a token it did not check."""
    return _WARNED if unchecked_token(scope) else _PLAIN


def unchecked_token(scope: Scope) -> bool:
    """Whether the request carried a bearer token that an open coordinator ignores."""
    app = scope.get("app")
    authenticator = getattr(getattr(app, "state", None), "authenticator", None)
    if authenticator is None or not authenticator.open:
        return False
    return any(name == b"authorization" for name, _ in scope.get("headers", ()))
