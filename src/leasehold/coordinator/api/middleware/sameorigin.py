"""What keeps a browser on another site from using the coordinator (DESIGN.md §16), and a
proxy from opening an open coordinator to the network.

A web page can make its visitor's browser send requests anywhere, the coordinator on
localhost included: an HTML form (no preflight, no custom headers) or a ``fetch`` without a
Content-Type can post to it, and a page under a name the attacker controls that then
resolves to 127.0.0.1 (DNS rebinding) can even read the answers, as a page of the "same
origin". Three checks, all on headers only, before the guard or the body:

- while access is open (no tokens), a guarded route answers only a client on this machine
  that talks to it directly (421 ``misdirected_request`` otherwise): under a Host that is a
  loopback name (else it is the rebinding page), from a loopback peer, and without the
  headers a proxy adds (``forwarded.is_proxied``): a reverse proxy on the same host passes
  its own loopback Host on by default, and would otherwise make every caller of the proxy
  an admin. With tokens, the browser has none to send, and a proxy is welcome.
- a state-changing request (POST, PUT, PATCH, DELETE) a browser marks as cross-site
  (``Sec-Fetch-Site: cross-site``, or an ``Origin`` other than the coordinator's own: the
  Host it was sent to, or one of the ``--public-origin`` a proxy serves it under) is
  refused (403 ``cross_site``). Clients that are not browsers send neither header.
- a state-changing request must declare ``Content-Type: application/json``, with a body or
  not (415): a browser cannot send that type across sites without a CORS preflight, which
  the coordinator never grants.
"""

from __future__ import annotations

import functools
from typing import Final
from urllib.parse import urlsplit

from starlette.requests import Request

from leasehold.coordinator.api.middleware.forwarded import (
    DEFAULT_PORTS,
    ProxySettings,
    is_proxied,
    loopback_peer,
    origin_of,
    peer_of,
)
from leasehold.coordinator.api.request_headers import headers_of
from leasehold.coordinator.auth_tokens import is_loopback
from leasehold.errors import CrossSite, MisdirectedRequest, UnsupportedMediaType

STATE_CHANGING: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_NO_PROXY: Final = ProxySettings()


def is_json(content_type: str) -> bool:
    """``application/json``, or a ``+json`` type, whatever its parameters."""
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime == "application/json" or (
        mime.startswith("application/") and mime.endswith("+json")
    )


def _host_and_port(netloc: str, scheme: str) -> tuple[str, int | None] | None:
    """A Host header's (or an origin's) name and port; None if it does not parse."""
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:
        return None
    if parts.hostname is None or parts.username is not None:
        return None
    return parts.hostname, port if port is not None else DEFAULT_PORTS.get(scheme)


def check_host(request: Request) -> None:
    """While access is open, only a client on this machine, talking to the coordinator
    directly, is served: a loopback Host, a loopback peer, no proxy's headers."""
    authenticator = getattr(request.app.state, "authenticator", None)
    settings = getattr(request.app.state, "settings", None)
    if authenticator is None or not authenticator.open:
        return
    if settings is not None and settings.allow_open_access:
        return  # the operator said the network is the boundary (DESIGN.md §15)
    headers = headers_of(request)
    if not _loopback_host(headers.get("host", ""), request.scope.get("scheme", "http")):
        raise MisdirectedRequest()
    if not loopback_peer(peer_of(request.scope)):
        raise MisdirectedRequest(
            "this coordinator has no tokens (open access): it answers clients on its own"
            " machine only; configure tokens to serve others"
        )
    if is_proxied(headers):
        raise MisdirectedRequest(
            "this coordinator has no tokens (open access): it answers no request that came"
            " through a proxy (Forwarded, X-Forwarded-*, X-Real-IP, Via), which would make"
            " every caller of the proxy an admin; configure tokens to serve behind a proxy"
        )


@functools.lru_cache(maxsize=64)
def _loopback_host(host: str, scheme: str) -> bool:
    """Whether a Host header names a loopback address. Cached: clients send the same few
    Host values on every request, and parsing them was a tenth of a plain enqueue's CPU."""
    named = _host_and_port(host, scheme)
    return named is not None and is_loopback(named[0])


def check_same_origin(request: Request) -> None:
    """A state-changing request a browser sent from another site is refused."""
    if request.method not in STATE_CHANGING:
        return
    if headers_of(request).get("sec-fetch-site", "").strip().lower() == "cross-site":
        raise CrossSite()
    origin = headers_of(request).get("origin")
    if origin is None:
        return  # not a browser (or a same-origin GET-like request from an old one)
    theirs = origin_of(origin)
    if theirs is None:
        raise CrossSite()  # "null" (a sandboxed frame, a file: page), or no origin at all
    proxy: ProxySettings = getattr(request.app.state, "proxy", _NO_PROXY)
    if theirs in proxy.public_origins:
        return  # a page the proxy serves (--public-origin)
    # Our own origin as the browser saw it: the Host it sent, under the origin's scheme (a
    # TLS proxy in front makes the origin https while this server speaks http).
    ours = _host_and_port(headers_of(request).get("host", ""), theirs.scheme)
    if ours is None or ours != (theirs.host, theirs.port):
        raise CrossSite()


def check_content_type(request: Request) -> None:
    """A state-changing request declares a JSON body, even when it sends none."""
    if request.method not in STATE_CHANGING:
        return
    if not is_json(headers_of(request).get("content-type", "")):
        raise UnsupportedMediaType(
            "state-changing requests must declare Content-Type: application/json,"
            " with a body or without one"
        )
