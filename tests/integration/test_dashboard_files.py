"""The coordinator serves the dashboard's files, safely, and ships all of them."""

from __future__ import annotations

import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

import pytest

import leasehold
from leasehold.coordinator.dashboard import STATIC_DIR
from tests.process import Coordinator, sqlite_coordinator

ROOT = Path(__file__).resolve().parents[2]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("dashboard")) as started:
        yield started


def test_root_redirects_to_the_dashboard(coordinator: Coordinator) -> None:
    """/ and /ui send the browser to /ui/ (relative, so a path prefix survives)."""
    status, headers, _ = fetch(coordinator.url + "/")
    assert (status, headers["location"]) == (307, "ui/")
    status, headers, _ = fetch(coordinator.url + "/ui")
    assert status in (307, 308) and headers["location"].endswith("/ui/")


def test_page_is_served_with_a_strict_content_security_policy(coordinator: Coordinator) -> None:
    """The page and its scripts come with a CSP that forbids inline and foreign scripts."""
    status, headers, body = fetch(coordinator.url + "/ui/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b'<script type="module" src="js/main.js">' in body
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    status, headers, _ = fetch(coordinator.url + "/ui/js/main.js")
    assert status == 200 and "javascript" in headers["content-type"]


def test_missing_files_are_json_404s(coordinator: Coordinator) -> None:
    """A file that is not there is the API's usual error body, not a stack trace or a page."""
    status, headers, body = fetch(coordinator.url + "/ui/nope.js")
    assert status == 404 and headers["content-type"] == "application/json"
    assert b'"error":"not_found"' in body.replace(b" ", b"")
    status, _, _ = fetch(coordinator.url + "/ui/../pyproject.toml")
    assert status == 404


def test_the_dashboard_is_not_in_the_api_schema(coordinator: Coordinator) -> None:
    """The OpenAPI schema (and anything fuzzing from it) stays about the API alone."""
    _, _, body = fetch(coordinator.url + "/openapi.json")
    assert b'"/ui' not in body and b'"/":' not in body


def test_every_static_file_is_package_data() -> None:
    """Each file under dashboard/static matches a package-data pattern, so wheels ship it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["leasehold"]
    package = Path(leasehold.__file__).parent
    files = [p.relative_to(package).as_posix() for p in STATIC_DIR.rglob("*") if p.is_file()]
    assert files
    missing = [
        f
        for f in files
        if not any(fnmatch(f, p) and f.count("/") == p.count("/") for p in patterns)
    ]
    assert missing == []
