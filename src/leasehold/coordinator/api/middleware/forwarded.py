"""Who sent a request, and where browsers reach the coordinator, when a reverse proxy stands
in front of it (DESIGN.md §16, "Behind a reverse proxy").

Two settings say what the proxy does, and nothing is believed without them:

- ``--public-origin``: the origins (``scheme://host[:port]``) under which browsers reach the
  coordinator through the proxy. A proxy passes its own Host on by default (nginx's
  ``proxy_set_header Host $proxy_host``), or a Host without its port (``$host``), so the
  browser's ``Origin`` names another place than the ``Host`` the coordinator is sent: the
  same-origin check (``sameorigin.py``) takes these origins as its own too.
- ``--trusted-proxies``: the addresses (or networks) of the proxies. A request from one of
  them has its client read from ``X-Forwarded-For`` (or ``Forwarded: for=``), right to left,
  skipping the trusted hops; from anyone else, those headers are the client's own words and
  the client is the connection's peer.

A proxy's headers are also how an open coordinator (no tokens) tells that it is not being
reached from its own machine, whatever the Host says (``PROXY_HEADERS``, ``is_proxied``).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from starlette.types import Scope

from leasehold.coordinator.auth_tokens import is_loopback

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Headers a proxy adds that a client talking to us directly has no reason to send: any of
# them on a request means it came through a proxy (or pretends to, which an open
# coordinator refuses just the same). ``x-forwarded-`` covers the rest of that family.
PROXY_HEADERS: Final = frozenset({"forwarded", "x-real-ip", "via"})
_FORWARDED_PREFIX: Final = "x-forwarded-"
DEFAULT_PORTS: Final = {"http": 80, "https": 443}
# The most hops read from X-Forwarded-For: a client cannot make us parse thousands.
_MAX_HOPS: Final = 32


class ProxyConfigError(ValueError):
    """A proxy setting that does not parse; the message names the setting and the value's
    problem (the values are the operator's, not a client's, so they may be quoted)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """A web origin: scheme, host (lower case) and port (the scheme's default filled in)."""

    scheme: str
    host: str
    port: int


def origin_of(text: str) -> Origin | None:
    """The origin ``scheme://host[:port]`` names (an ``Origin`` header, a public origin);
    None if it is not one: another scheme, a path, credentials, a bad port."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or parts.hostname is None or parts.username is not None:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return Origin(scheme, parts.hostname, port if port is not None else DEFAULT_PORTS[scheme])


def parse_public_origins(text: str) -> frozenset[Origin]:
    """``--public-origin``: origins separated by commas (none: empty)."""
    found = set()
    for item in text.split(","):
        if not item.strip():
            continue
        origin = origin_of(item)
        if origin is None:
            raise ProxyConfigError(
                f"--public-origin: {item.strip()!r} is not an origin: expected"
                " http[s]://host[:port], without a path (e.g. https://jobs.example.com)"
            )
        found.add(origin)
    return frozenset(found)


def parse_trusted_proxies(text: str) -> tuple[Network, ...]:
    """``--trusted-proxies``: addresses or networks (CIDR) separated by commas."""
    found = []
    for item in text.split(","):
        if not item.strip():
            continue
        try:
            found.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ProxyConfigError(
                f"--trusted-proxies: {item.strip()!r} is not an IP address or network"
                " (e.g. 127.0.0.1, 10.0.0.0/8, ::1)"
            ) from None
    return tuple(found)


def _address(text: str) -> Address | None:
    """An address as X-Forwarded-For or ``Forwarded: for=`` write it (``1.2.3.4``,
    ``1.2.3.4:5678``, ``2001:db8::1``, ``[2001:db8::1]:5678``, quoted); None otherwise."""
    text = text.strip().strip('"')
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.partition(":")[0]  # IPv4 with a port
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _forwarded_for(header: str) -> list[str]:
    """The ``for=`` values of a ``Forwarded`` header (RFC 7239), in order."""
    found = []
    for element in header.split(","):
        for pair in element.split(";"):
            name, _, value = pair.partition("=")
            if name.strip().lower() == "for":
                found.append(value)
    return found


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """The parsed proxy settings (``from_text``), kept in the app's state."""

    public_origins: frozenset[Origin] = frozenset()
    trusted: tuple[Network, ...] = ()

    @classmethod
    def from_text(cls, public_origin: str, trusted_proxies: str) -> ProxySettings:
        """Parse the two settings; ``ProxyConfigError`` naming the one that is wrong."""
        return cls(parse_public_origins(public_origin), parse_trusted_proxies(trusted_proxies))

    @property
    def configured(self) -> bool:
        """Whether the operator said that clients come through a proxy."""
        return bool(self.public_origins or self.trusted)

    def trusts(self, address: Address) -> bool:
        return any(address in network for network in self.trusted)

    def client_of(self, scope: Scope) -> str | None:
        """The client's address: the connection's peer, or, when the peer is a trusted
        proxy, the nearest address the forwarding headers name that is not one."""
        peer = peer_of(scope)
        if peer is None or not self.trusted:
            return peer
        address = _address(peer)
        if address is None or not self.trusts(address):
            return peer
        hops = _hops(scope["headers"])
        for hop in reversed(hops[-_MAX_HOPS:]):
            found = _address(hop)
            if found is None:
                break  # a name, "unknown", garbage: the chain ends at the last trusted hop
            address = found
            if not self.trusts(found):
                break
        return str(address)


def peer_of(scope: Scope) -> str | None:
    """The address of the connection's other end (None: not known, e.g. a UNIX socket)."""
    client = scope.get("client")
    return str(client[0]) if client else None


def _hops(headers: Iterable[tuple[bytes, bytes]]) -> list[str]:
    """The forwarding chain, first hop first: every X-Forwarded-For line (in order), or,
    without one, every ``Forwarded: for=``."""
    xff = [v.decode("latin-1") for k, v in headers if k == b"x-forwarded-for"]
    if xff:
        return [hop for line in xff for hop in line.split(",")]
    forwarded = [v.decode("latin-1") for k, v in headers if k == b"forwarded"]
    return [hop for line in forwarded for hop in _forwarded_for(line)]


def is_proxied(headers: Mapping[str, str]) -> bool:
    """Whether the request carries a header that a proxy adds (``PROXY_HEADERS``, or any
    ``X-Forwarded-*``)."""
    return any(name in PROXY_HEADERS or name.startswith(_FORWARDED_PREFIX) for name in headers)


@functools.lru_cache(maxsize=64)
def loopback_peer(peer: str | None) -> bool:
    """Whether the connection comes from this machine (a loopback address). Cached: the
    same few peers connect again and again."""
    return peer is not None and is_loopback(peer)
