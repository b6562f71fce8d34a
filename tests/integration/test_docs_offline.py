"""/docs and /redoc work without internet: every asset comes from the coordinator, under a
Content-Security-Policy that refuses inline scripts and other origins."""

from __future__ import annotations

import re
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from tests.process import Coordinator, sqlite_coordinator

_REFERENCE = re.compile(r'(?:src|href|spec-url)="([^"]*)"')


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.status, dict(answer.headers), answer.read()


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("docs")) as started:
        yield started


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css", "swagger-init.js"}),
        ("/redoc", {"redoc.standalone.js", "openapi.json"}),
    ],
)
def test_a_docs_page_loads_only_same_origin_assets_and_they_are_served(
    coordinator: Coordinator, page: str, expected: set[str]
) -> None:
    """Every src/href of the page is relative (same origin) and answers 200; no inline
    script; the CSP allows scripts from this origin only."""
    status, headers, body = fetch(coordinator.url + page)
    assert status == 200
    html = body.decode()
    csp = headers["content-security-policy"]
    assert "script-src 'self';" in csp and "default-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html) is None  # no inline script
    references = _REFERENCE.findall(html)
    assert {ref.rsplit("/", 1)[-1] for ref in references} >= expected
    for ref in references:
        assert not urllib.parse.urlsplit(ref).netloc and not ref.startswith("//"), ref
        status, asset_headers, asset = fetch(urllib.parse.urljoin(coordinator.url + page, ref))
        assert status == 200 and asset, ref
        if ref.endswith(".js"):
            assert "javascript" in asset_headers["content-type"], ref
            assert "script-src 'self'" in asset_headers.get("content-security-policy", csp)
