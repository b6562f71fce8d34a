"""A headless chromium shared by the browser tests, and a coordinator for each test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from selenium.common.exceptions import WebDriverException

from tests.browser.chromium import Browser, find_browser, start_browser
from tests.process import Coordinator


def unavailable(why: str) -> NoReturn:
    """Skip loudly on a developer's machine; in CI the browser tests must run."""
    if os.environ.get("CI"):
        pytest.fail(f"the dashboard's browser tests must run in CI, but {why}")
    pytest.skip(f"!!! {why}: dashboard browser tests SKIPPED (scripts/ensure-browser.sh) !!!")


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    binary = find_browser()
    if binary is None:
        unavailable("chromium or /usr/bin/chromedriver is not installed")
    try:
        started = start_browser(binary)
    except WebDriverException as error:
        unavailable(f"chromium did not start ({error.msg})")
    yield started
    started.quit()


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[Coordinator]:
    """A coordinator on a fresh SQLite database (the page does not depend on the backend)."""
    coordinator = Coordinator(f"sqlite:///{tmp_path / 'leasehold.db'}", tmp_path).start()
    yield coordinator
    coordinator.kill()
