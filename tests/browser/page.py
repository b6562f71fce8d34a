"""What the tests look for on the page, and how they wait for it (always with a deadline)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from PIL import Image
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 10.0


def wait_for(
    driver: WebDriver, condition: Callable[[WebDriver], Any], timeout: float = TIMEOUT
) -> Any:
    # The page re-renders lists as data arrives: an element found a moment ago may be gone.
    return WebDriverWait(
        driver, timeout, poll_frequency=0.05, ignored_exceptions=[StaleElementReferenceException]
    ).until(condition)


def element(driver: WebDriver, css: str, timeout: float = TIMEOUT) -> WebElement:
    """The first element matching css, once it is displayed."""

    def shown(d: WebDriver) -> WebElement | bool:
        found = d.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found and found[0].is_displayed() else False

    found: WebElement = wait_for(driver, shown, timeout)
    return found


def text_of(driver: WebDriver, css: str) -> str:
    """The element's text, or "" when it is not there (or was just replaced)."""
    try:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        return found[0].text if found else ""
    except StaleElementReferenceException:
        return ""


def number(text: str) -> int | None:
    digits = "".join(c for c in text if c.isdigit())
    return int(digits) if digits else None


def status_counts(driver: WebDriver) -> dict[str, int | None]:
    """The count on each status card of the overview."""
    return {
        card.get_attribute("data-status") or "": number(
            card.find_element(By.CSS_SELECTOR, ".count").text
        )
        for card in driver.find_elements(By.CSS_SELECTOR, ".card[data-status]")
    }


def severe_console_errors(driver: WebDriver) -> list[str]:
    """Console errors other than answers with an error status (the page expects some:
    the admin probe's 404, and 401/403 under authentication)."""
    return [
        entry["message"]
        for entry in driver.get_log("browser")  # type: ignore[attr-defined]  # chromium only
        if entry["level"] == "SEVERE" and "Failed to load resource" not in entry["message"]
    ]


def assert_not_blank(png: bytes) -> None:
    """A real page has text, charts and badges: many colours, no single one nearly everywhere."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None  # more than a million colours would be fine too, but unlikely
    pixels = image.width * image.height
    most = max(n for n, _ in colours)
    assert len(colours) >= 64, f"only {len(colours)} colours: the screenshot looks blank"
    assert most < 0.9 * pixels, "one colour covers 90% of the screenshot: it looks blank"
