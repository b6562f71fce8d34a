"""The request's headers as the route's checks read them: read once, each name's first value.

A protocol route reads five or six headers before its endpoint runs (Host, Origin,
Sec-Fetch-Site, Authorization, Content-Type, its header parameters), most of them absent.
Starlette's ``Headers`` scans the raw list and decodes on every lookup, and an absent name
costs it a raised ``KeyError`` (a sixth of the checks' CPU for a plain POST /jobs). The same
answers (the first value of a name, names in lower case as ASGI gives them) come from one
dict made on first use and kept in the request's scope.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from starlette.requests import HTTPConnection

_KEY: Final = "leasehold.headers"


def headers_of(request: HTTPConnection) -> Mapping[str, str]:
    """The request's headers by lower-case name, each name's first value."""
    found: dict[str, str] | None = request.scope.get(_KEY)
    if found is None:
        # Reversed, so that the first of a repeated name is the one kept, as Starlette's.
        found = {
            k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(request.scope["headers"])
        }
        request.scope[_KEY] = found
    return found
