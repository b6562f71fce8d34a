"""The coordinator behind a real nginx, configured as README shows (DESIGN.md §16).

One nginx for the module (``tests/nginx.py``: loopback ports, run as an unprivileged user),
in front of coordinators served in the test process on ports it was given:

- README's server (TLS, the coordinator under ``/leasehold/``, nginx's default ``Host``, the
  upstream's address) in front of a coordinator with tokens, ``--public-origin`` and
  ``--trusted-proxies``;
- a server that passes ``Host $host`` on, on a port other than 80 or 443, to the same one;
- a server in front of an open coordinator (no tokens), which must refuse all of it.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog
from structlog.testing import capture_logs

from leasehold.coordinator.auth_tokens import HashedToken, Role, hash_token
from leasehold.coordinator.clock import FakeClock
from tests.inproc import InProcessCoordinator, in_process_store, quick_settings, serve_app
from tests.integration.test_readme import blocks
from tests.nginx import Nginx, find_nginx, start_nginx
from tests.process import free_port

ADMIN = "admin-token-0123456789abcdef"
PUBLIC = "https://jobs.example.com"


def unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"nginx must run in CI, but {why}")
    pytest.skip(f"!!! {why}: nginx tests SKIPPED (scripts/ensure-debian-package.sh nginx) !!!")


def certificate() -> dict[str, bytes]:
    """A self-signed certificate for jobs.example.com and its key (EC: made in a blink)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        unavailable("openssl is not installed")
        raise AssertionError  # unreachable: unavailable() skips or fails
    with tempfile.TemporaryDirectory() as folder:
        cert, key = Path(folder, "cert.pem"), Path(folder, "key.pem")
        command = "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2"
        files = ["-keyout", str(key), "-out", str(cert)]
        subprocess.run(
            [openssl, *command.split(), "-subj", "/CN=jobs.example.com", *files],
            check=True,
            capture_output=True,
        )
        return {"cert.pem": cert.read_bytes(), "key.pem": key.read_bytes()}


@dataclass
class Proxy:
    nginx: Nginx
    readme_port: int  # README's server: TLS, /leasehold/, the default Host
    host_port: int  # `proxy_set_header Host $host`, on a port of its own
    open_port: int  # in front of an open coordinator
    guarded_upstream: int
    open_upstream: int


def readme_server(upstream: int, port: int) -> str:
    """README's configuration, on the test's ports and certificate: each part a test
    changes must be there as README prints it."""
    text = blocks()["nginx"]
    for shown, here in [
        ("127.0.0.1:8080", f"127.0.0.1:{upstream}"),
        ("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
        ("/etc/ssl/certs/jobs.example.com.pem", "{folder}/cert.pem"),
        ("/etc/ssl/private/jobs.example.com.key", "{folder}/key.pem"),
    ]:
        assert shown in text, shown
        text = text.replace(shown, here)
    return text


@pytest.fixture(scope="module")
def proxy() -> Iterator[Proxy]:
    binary = find_nginx()
    if binary is None:
        unavailable("nginx is not installed")
        raise AssertionError
    ports = [free_port() for _ in range(5)]
    readme_port, host_port, open_port, guarded, opened = ports
    servers = f"""
{readme_server(guarded, readme_port)}
server {{
    listen 127.0.0.1:{host_port};
    location / {{
        proxy_pass http://127.0.0.1:{guarded};
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }}
}}
server {{
    listen 127.0.0.1:{open_port};
    location / {{
        proxy_pass http://127.0.0.1:{opened};
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }}
}}
"""
    started = start_nginx(binary, servers, ports[:3], certificate())
    yield Proxy(started, readme_port, host_port, open_port, guarded, opened)
    started.stop()


async def coordinator_on(port: int, tmp_path: Path, **settings: Any) -> Any:
    """An in-process coordinator on ``port`` (a context manager)."""
    store, clock = in_process_store(
        f"sqlite:///{tmp_path / f'{port}.db'}", FakeClock(datetime.now(UTC))
    )
    return serve_app(store, quick_settings(**settings), clock, port=port)


@pytest.fixture
async def guarded(proxy: Proxy, tmp_path: Path) -> AsyncIterator[InProcessCoordinator]:
    tokens = (HashedToken(Role.ADMIN, hash_token(ADMIN)),)
    served = await coordinator_on(
        proxy.guarded_upstream,
        tmp_path,
        tokens=tokens,
        public_origin=f"{PUBLIC},http://localhost:{proxy.host_port}",
        trusted_proxies="127.0.0.1",
    )
    async with served as coordinator:
        yield coordinator


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    # The certificate is self-signed; what is tested is nginx's forwarding, not TLS.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as s:
        yield s


async def send(
    session: aiohttp.ClientSession, method: str, url: str, headers: dict[str, str], body: Any = None
) -> tuple[int, Any, Mapping[str, str]]:
    if method != "GET":
        headers = {**headers, "Content-Type": "application/json"}
    async with session.request(
        method, url, headers=headers, json=body, allow_redirects=False
    ) as answer:
        data = await answer.json() if answer.content_type == "application/json" else None
        return answer.status, data, dict(answer.headers)


async def test_the_dashboard_works_behind_readmes_nginx_on_a_sub_path(
    proxy: Proxy, guarded: InProcessCoordinator, session: aiohttp.ClientSession
) -> None:
    """The page loads under the prefix, its admin probe and a requeue pass the same-origin
    check whatever Host nginx sends, and the logs name the request and the client."""
    base = f"https://127.0.0.1:{proxy.readme_port}/leasehold"
    named = {"Host": "jobs.example.com"}
    status, _, headers = await send(session, "GET", base + "/", named)
    assert (status, headers["Location"]) == (307, "ui/")
    async with session.get(base + "/ui/", headers=named) as page:
        assert page.status == 200 and "<title>" in await page.text()
    client = {**named, "Authorization": f"Bearer {ADMIN}"}
    status, job, _ = await send(session, "POST", base + "/jobs", client, {"kind": "k"})
    assert status == 201, job
    status, lease, _ = await send(session, "POST", base + "/lease", client, {"worker_id": "w"})
    assert status == 200, lease
    failed = {"token": lease["token"], "error": "no", "retryable": False}
    status, dead, _ = await send(session, "POST", f"{base}/jobs/{job['id']}/fail", client, failed)
    assert (status, dead["status"]) == (200, "dead")
    # What the browser sends with the page's requests; and a client behind it.
    browser = {
        **client,
        "Origin": PUBLIC,
        "Sec-Fetch-Site": "same-origin",
        "X-Forwarded-For": "198.51.100.23",
    }
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    with capture_logs(processors=[structlog.contextvars.merge_contextvars]) as logs:
        probe, body, _ = await send(session, "POST", base + "/jobs/probe/requeue", browser)
        assert (probe, body["error"]) == (404, "job_not_found")  # an admin: no job has that id
        url = f"{base}/jobs/{job['id']}/requeue"
        status, requeued, headers = await send(session, "POST", url, browser)
        assert (status, requeued["status"]) == (200, "queued")
    request_id = headers["X-Request-ID"]
    assert re.fullmatch("[0-9a-f]{32}", request_id)  # nginx's $request_id
    (line,) = [e for e in logs if e["event"] == "job.requeued"]
    assert (line["request_id"], line["client"]) == (request_id, "198.51.100.23")
    evil = {**browser, "Origin": "https://evil.example"}
    status, refused, _ = await send(session, "POST", url, evil)
    assert (status, refused["error"]) == (403, "cross_site")


async def test_host_passed_on_from_another_port_with_its_public_origin(
    proxy: Proxy, guarded: InProcessCoordinator, session: aiohttp.ClientSession
) -> None:
    """``proxy_set_header Host $host`` drops the port: the Host says localhost, the
    browser's Origin localhost:PORT, which --public-origin names."""
    browser = {
        "Host": f"localhost:{proxy.host_port}",
        "Origin": f"http://localhost:{proxy.host_port}",
        "Authorization": f"Bearer {ADMIN}",
    }
    url = f"http://127.0.0.1:{proxy.host_port}/jobs"
    status, job, _ = await send(session, "POST", url, browser, {"kind": "k"})
    assert status == 201, job


async def test_an_open_coordinator_behind_nginx_answers_nobody(
    proxy: Proxy, session: aiohttp.ClientSession, tmp_path: Path
) -> None:
    """nginx sends the upstream's loopback address as the Host: the Host check alone let
    everyone who reached nginx in as admin. Its X-Forwarded-For gives the proxy away."""
    async with await coordinator_on(proxy.open_upstream, tmp_path) as opened:
        base = f"http://127.0.0.1:{proxy.open_port}"
        for method, path, body in [("GET", "/jobs", None), ("POST", "/jobs", {"kind": "k"})]:
            status, refused, _ = await send(session, method, base + path, {}, body)
            assert (status, refused["error"]) == (421, "misdirected_request")
            assert "proxy" in refused["message"]
        status, listed, _ = await send(session, "GET", opened.url + "/jobs", {})
        assert (status, listed["jobs"]) == (200, [])  # asked directly: served, and empty
