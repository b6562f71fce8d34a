"""Browsers on other sites cannot change the queue, nor read it by DNS rebinding (§16)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from leasehold.coordinator.auth_tokens import HashedToken, Role, hash_token
from tests.inproc import AsgiApi, asgi_app

ADMIN_TOKEN = "admin-token-0123456789abcdef"
FORM = {"content-type": "application/x-www-form-urlencoded"}
NONE: dict[str, str | None] = {"content-type": None}


@pytest.fixture
async def open_app(sqlite_url: str) -> AsyncIterator[AsgiApi]:
    async with asgi_app(sqlite_url) as app:
        yield app


@pytest.fixture
async def guarded_app(tmp_path: Path) -> AsyncIterator[AsgiApi]:
    tokens = (HashedToken(Role.ADMIN, hash_token(ADMIN_TOKEN)),)
    async with asgi_app(f"sqlite:///{tmp_path / 'g.db'}", tokens=tokens) as app:
        yield app


async def queued_job(app: AsgiApi) -> int:
    made = await app.post("/jobs", {"kind": "k"})
    assert made.status == 201, made
    job_id: int = made.body["id"]
    return job_id


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("POST", "/jobs/{id}/cancel", NONE),  # a bodyless POST: what an HTML form can send
        ("POST", "/jobs/{id}/cancel", FORM),
        ("POST", "/jobs/{id}/requeue", {"content-type": "text/plain"}),
        ("DELETE", "/limits/k", NONE),
        ("PUT", "/limits/k", NONE),
    ],
)
async def test_a_state_change_must_declare_json_even_without_a_body(
    open_app: AsgiApi, method: str, path: str, headers: dict[str, str | None]
) -> None:
    job_id = await queued_job(open_app)
    a = await open_app.request(method, path.format(id=job_id), None, headers)
    assert a.status == 415, a
    assert a.body["error"] == "unsupported_media_type"
    assert (await open_app.get(f"/jobs/{job_id}")).body["status"] == "queued"
    a = await open_app.request("POST", f"/jobs/{job_id}/cancel")
    assert a.status == 200, a
    assert a.body["status"] == "cancelled"


@pytest.mark.parametrize("route", ["/jobs", "/lease"])
async def test_a_body_without_content_type_is_refused(open_app: AsgiApi, route: str) -> None:
    """``fetch`` with a text body and no type is a "simple" cross-site request: not JSON."""
    body = b'{"kind": "k"}' if route == "/jobs" else b'{"worker_id": "w"}'
    a = await open_app.request("POST", route, body, NONE)
    assert a.status == 415, a
    assert (await open_app.get("/jobs")).body["jobs"] == []


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example"},
        {"origin": "http://127.0.0.1:9999"},  # another port is another origin
        {"origin": "null"},  # a sandboxed frame or a file: page
        {"sec-fetch-site": "cross-site"},
    ],
)
async def test_a_cross_site_state_change_is_refused(
    open_app: AsgiApi, headers: dict[str, str]
) -> None:
    a = await open_app.post("/jobs", {"kind": "k"}, headers=headers)
    assert a.status == 403, a
    assert a.body["error"] == "cross_site"
    assert (await open_app.get("/jobs")).body["jobs"] == []


@pytest.mark.parametrize(
    "headers",
    [
        {
            "host": "127.0.0.1:8080",
            "origin": "http://127.0.0.1:8080",
            "sec-fetch-site": "same-origin",
        },
        {"host": "localhost", "origin": "http://localhost"},
        {"sec-fetch-site": "none"},  # typed by the user
        {},  # not a browser: no Origin at all
    ],
)
async def test_same_origin_and_non_browser_changes_pass(
    open_app: AsgiApi, headers: dict[str, str]
) -> None:
    a = await open_app.post("/jobs", {"kind": "k"}, headers=headers)
    assert a.status == 201, a


async def test_reads_are_not_refused_for_their_origin(open_app: AsgiApi) -> None:
    """A cross-site GET cannot read the answer without CORS, which is never granted."""
    a = await open_app.get("/jobs", headers={"sec-fetch-site": "cross-site"})
    assert a.status == 200, a


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8080", "10.0.0.1:8080", "127.0.0.1.evil.example", ""]
)
async def test_open_access_answers_only_loopback_names(open_app: AsgiApi, host: str) -> None:
    """DNS rebinding: a page under another name that resolves to 127.0.0.1 reads nothing."""
    await queued_job(open_app)
    for path in ("/jobs", "/jobs/1", "/stats"):
        a = await open_app.get(path, headers={"host": host})
        assert a.status == 421, a
        assert a.body["error"] == "misdirected_request"


@pytest.mark.parametrize("host", ["localhost:8080", "127.0.0.1", "127.1.2.3:80", "[::1]:8080"])
async def test_open_access_answers_loopback_names(open_app: AsgiApi, host: str) -> None:
    a = await open_app.get("/jobs", headers={"host": host})
    assert a.status == 200, a


async def test_with_tokens_any_host_is_served(guarded_app: AsgiApi) -> None:
    """The token is the protection then (a rebinding page has none to send)."""
    auth = {"authorization": f"Bearer {ADMIN_TOKEN}", "host": "queue.example:443"}
    assert (await guarded_app.get("/jobs", headers=auth)).status == 200
    assert (await guarded_app.get("/jobs", headers={"host": "queue.example"})).status == 401
    # A TLS proxy in front: the browser's origin is https, the Host the proxy passes on.
    behind = {**auth, "origin": "https://queue.example"}
    assert (await guarded_app.post("/jobs", {"kind": "k"}, headers=behind)).status == 201


# -- behind a reverse proxy (DESIGN.md §16) -------------------------------------------------

PROXIED = [
    {"x-forwarded-for": "203.0.113.7"},
    {"x-forwarded-proto": "https"},
    {"x-forwarded-host": "jobs.example.com"},
    {"forwarded": "for=203.0.113.7;proto=https"},
    {"x-real-ip": "203.0.113.7"},
    {"via": "1.1 proxy.example"},
]


@pytest.mark.parametrize("headers", PROXIED)
async def test_an_open_coordinator_refuses_requests_through_a_proxy(
    open_app: AsgiApi, headers: dict[str, str]
) -> None:
    """nginx passes its own loopback address on as the Host by default (``proxy_set_header
    Host $proxy_host``): the Host check alone made every caller of the proxy an admin."""
    proxied = {"host": "127.0.0.1:8080", **headers}
    for path in ("/jobs", "/stats", "/metrics"):
        a = await open_app.get(path, headers=proxied)
        assert a.status == 421, a
        assert a.body["error"] == "misdirected_request"
        assert "proxy" in a.body["message"]
    a = await open_app.post("/jobs", {"kind": "k"}, headers=proxied)
    assert a.status == 421, a
    assert (await open_app.get("/jobs")).body["jobs"] == []
    assert (await open_app.get("/health", headers=proxied)).status == 200  # holds no data


async def test_an_open_coordinator_refuses_a_peer_off_loopback(open_app: AsgiApi) -> None:
    """Whatever Host it names: only this machine may be admin without a token."""
    a = await open_app.get("/jobs", client=("192.0.2.10", 50000))
    assert a.status == 421, a
    assert "own machine" in a.body["message"]
    assert (await open_app.get("/jobs", client=("::1", 50000))).status == 200


async def test_open_access_allowed_or_tokens_serve_a_proxy(
    guarded_app: AsgiApi, tmp_path: Path
) -> None:
    async with asgi_app(f"sqlite:///{tmp_path / 'o.db'}", allow_open_access=True) as app:
        assert (await app.get("/jobs", headers=PROXIED[0])).status == 200
    auth = {"authorization": f"Bearer {ADMIN_TOKEN}", **PROXIED[0]}
    assert (await guarded_app.get("/jobs", headers=auth)).status == 200


PUBLIC = "https://jobs.example.com,http://localhost:8088"


@pytest.fixture
async def proxied_app(tmp_path: Path) -> AsyncIterator[AsgiApi]:
    tokens = (HashedToken(Role.ADMIN, hash_token(ADMIN_TOKEN)),)
    url = f"sqlite:///{tmp_path / 'p.db'}"
    async with asgi_app(url, tokens=tokens, public_origin=PUBLIC) as app:
        yield app


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8080", "https://jobs.example.com"),  # nginx's default Host: $proxy_host
        ("localhost", "http://localhost:8088"),  # $host drops a non-default port
    ],
)
async def test_a_public_origin_passes_whatever_host_the_proxy_sends(
    guarded_app: AsgiApi, proxied_app: AsgiApi, host: str, origin: str
) -> None:
    """The dashboard's changes through a proxy: the browser's Origin is the proxy's, the
    Host the coordinator is sent is not; ``--public-origin`` says the first is ours too."""
    sent = {
        "authorization": f"Bearer {ADMIN_TOKEN}",
        "host": host,
        "origin": origin,
        "sec-fetch-site": "same-origin",
        "x-forwarded-for": "203.0.113.7",
    }
    refused = await guarded_app.post("/jobs", {"kind": "k"}, headers=sent)
    assert (refused.status, refused.body["error"]) == (403, "cross_site")
    assert (await proxied_app.post("/jobs", {"kind": "k"}, headers=sent)).status == 201


@pytest.mark.parametrize(
    "origin",
    [
        "http://jobs.example.com",  # another scheme
        "https://jobs.example.com:8443",  # another port
        "https://evil.example",
        "http://localhost:8089",
        "null",
    ],
)
async def test_only_the_public_origins_listed_pass(proxied_app: AsgiApi, origin: str) -> None:
    sent = {"authorization": f"Bearer {ADMIN_TOKEN}", "host": "127.0.0.1:8080", "origin": origin}
    a = await proxied_app.post("/jobs", {"kind": "k"}, headers=sent)
    assert (a.status, a.body["error"]) == (403, "cross_site")
