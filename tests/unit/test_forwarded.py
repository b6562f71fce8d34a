"""Proxy settings and the client behind a trusted proxy (api/middleware/forwarded.py)."""

from __future__ import annotations

import pytest

from leasehold.coordinator.api.middleware.forwarded import (
    Origin,
    ProxyConfigError,
    ProxySettings,
    is_proxied,
    origin_of,
    parse_public_origins,
    parse_trusted_proxies,
)
from tests.inproc import http_scope


def test_public_origins_parse_with_default_ports() -> None:
    assert parse_public_origins(" https://Jobs.Example.com , http://127.0.0.1:8088/,") == {
        Origin("https", "jobs.example.com", 443),
        Origin("http", "127.0.0.1", 8088),
    }
    assert parse_public_origins("") == frozenset()


@pytest.mark.parametrize(
    "bad",
    ["jobs.example.com", "ftp://x", "https://x/sub", "https://u@x", "https://x:99999", "https://"],
)
def test_a_public_origin_that_is_not_one_is_refused(bad: str) -> None:
    with pytest.raises(ProxyConfigError, match="--public-origin"):
        parse_public_origins(bad)
    assert origin_of(bad) is None


def test_trusted_proxies_are_addresses_or_networks() -> None:
    assert [str(n) for n in parse_trusted_proxies("127.0.0.1, 10.0.0.0/8,::1")] == [
        "127.0.0.1/32",
        "10.0.0.0/8",
        "::1/128",
    ]
    with pytest.raises(ProxyConfigError, match=r"--trusted-proxies: 'proxy\.local'"):
        parse_trusted_proxies("proxy.local")


def client(settings: ProxySettings, peer: str, *headers: tuple[str, str]) -> str | None:
    raw = [(k.encode(), v.encode()) for k, v in headers]
    return settings.client_of(http_scope("GET", "/", raw, client=(peer, 1)))


TRUSTED = ProxySettings.from_text("", "127.0.0.1,10.0.0.0/8")


def test_the_client_behind_trusted_proxies_is_the_nearest_untrusted_hop() -> None:
    xff = ("x-forwarded-for", "198.51.100.1, 203.0.113.7, 10.1.2.3")
    assert client(TRUSTED, "127.0.0.1", xff) == "203.0.113.7"
    # Several header lines are one list, in order.
    lines = [("x-forwarded-for", "198.51.100.1"), ("x-forwarded-for", "203.0.113.7:5555")]
    assert client(TRUSTED, "127.0.0.1", *lines) == "203.0.113.7"
    forwarded = ("forwarded", 'for=198.51.100.1, for="[2001:db8::7]:4711";proto=https')
    assert client(TRUSTED, "127.0.0.1", forwarded) == "2001:db8::7"
    # Every hop trusted: the first one.
    assert client(TRUSTED, "127.0.0.1", ("x-forwarded-for", "10.0.0.9")) == "10.0.0.9"
    # A hop that is no address ends the chain at the last trusted one.
    assert client(TRUSTED, "127.0.0.1", ("x-forwarded-for", "evil, 10.0.0.9")) == "10.0.0.9"
    assert client(TRUSTED, "127.0.0.1") == "127.0.0.1"  # no header: the proxy itself


def test_forwarding_headers_from_an_untrusted_peer_are_not_believed() -> None:
    xff = ("x-forwarded-for", "203.0.113.7")
    assert client(TRUSTED, "192.0.2.5", xff) == "192.0.2.5"
    assert client(ProxySettings(), "127.0.0.1", xff) == "127.0.0.1"  # no proxy trusted


def test_a_request_through_a_proxy_is_told_by_its_headers() -> None:
    assert is_proxied({"x-forwarded-port": "443"})
    assert is_proxied({"via": "1.1 x"})
    assert not is_proxied({"host": "127.0.0.1", "x-request-id": "a"})
