"""The dashboard in a real headless chromium against a real coordinator."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from tests.browser.chromium import Browser
from tests.browser.page import (
    assert_not_blank,
    element,
    severe_console_errors,
    status_counts,
    text_of,
    wait_for,
)
from tests.browser.seed import Http, seed_small
from tests.process import Coordinator

pytestmark = pytest.mark.browser


def seconds_left(text: str) -> int:
    """ "9 m 58 s left" -> 598."""
    minutes, _, seconds, _, _ = text.split()
    return int(minutes) * 60 + int(seconds)


def open_tab(driver: WebDriver, name: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f'nav a[data-route="{name}"]').click()
    element(driver, f'nav a[data-route="{name}"][aria-current="page"]')


@pytest.mark.slow(20)
def test_overview_counts_match_the_api(
    browser: Browser, dashboard: Coordinator, tmp_path: Path
) -> None:
    """The status cards show GET /stats's counts, the charts draw, and the page is not blank."""
    http = Http(dashboard.url)
    seed_small(http)
    driver = browser.driver
    driver.get(dashboard.url + "/")  # redirects to /ui/
    expected = http.get("/stats")["by_status"]
    assert expected == {
        "waiting": 0,
        "queued": 2,
        "running": 1,
        "completed": 4,
        "dead": 2,
        "cancelled": 0,
    }
    wait_for(driver, lambda d: status_counts(d) == expected)
    assert driver.current_url.endswith("/ui/")
    assert text_of(driver, "#count-dead") == "2"
    # Two polls make the first line of every chart.
    wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "svg.chart path.series")) >= 4)
    png = driver.get_screenshot_as_png()
    (tmp_path / "overview.png").write_bytes(png)
    assert_not_blank(png)
    assert severe_console_errors(driver) == []


def test_job_detail_shows_attempts_and_requeue_works(
    browser: Browser, dashboard: Coordinator
) -> None:
    """A dead job's page shows payload, error and both attempts; requeueing it there queues it."""
    http = Http(dashboard.url)
    seeded = seed_small(http)
    dead_id = seeded.dead[0]
    driver = browser.driver
    driver.get(dashboard.url + "/ui/")
    open_tab(driver, "dead")
    element(driver, f'tr[data-job-id="{dead_id}"] a').click()
    element(driver, "#attempts")
    rows = driver.find_elements(By.CSS_SELECTOR, "#attempts tbody tr")
    cells = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    assert [(c[1], c[5]) for c in cells] == [("reporter-1", "failed"), ("reporter-2", "failed")]
    tokens = [int(c[0]) for c in cells]
    assert tokens == sorted(set(tokens))  # coordinator-wide tokens: increasing, not 1, 2
    assert all("boom" in c[6] for c in cells)
    # Payloads are shown as text: the markup in them is visible and never ran.
    payload = driver.find_element(By.CSS_SELECTOR, "pre.json").text
    assert '<img src=x onerror=\\"window.__xss=1\\">' in payload
    assert driver.execute_script("return window.__xss") is None

    element(driver, "#requeue-job").click()
    element(driver, "dialog#confirm[open]")
    element(driver, "#confirm-ok").click()
    wait_for(driver, lambda d: http.get(f"/jobs/{dead_id}")["status"] == "queued")
    assert "queued again" in element(driver, "#notice").text
    assert severe_console_errors(driver) == []


def test_cancelling_the_confirmation_changes_nothing(
    browser: Browser, dashboard: Coordinator
) -> None:
    """Bulk requeue asks first; Cancel leaves every dead job dead."""
    http = Http(dashboard.url)
    seeded = seed_small(http)
    driver = browser.driver
    driver.get(dashboard.url + "/ui/#/dead")
    element(driver, "#requeue-all").click()
    dialog = element(driver, "dialog#confirm[open]")
    assert "every kind" in dialog.text
    dialog.find_element(By.CSS_SELECTOR, 'button[value="cancel"]').click()
    wait_for(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog#confirm[open]"))
    assert [http.get(f"/jobs/{i}")["status"] for i in seeded.dead] == ["dead", "dead"]


def test_running_job_shows_its_lease_counting_down(
    browser: Browser, dashboard: Coordinator
) -> None:
    """A running job's row shows its worker and a lease countdown that ticks."""
    http = Http(dashboard.url)
    seeded = seed_small(http)
    driver = browser.driver
    driver.get(dashboard.url + "/ui/#/running")
    row = f'tr[data-job-id="{seeded.running[0]}"]'
    first: str = wait_for(driver, lambda d: text_of(d, f"{row} .countdown"))
    # A 600 s lease; the page reads the coordinator's clock from Date headers (to the second).
    assert 585 <= seconds_left(first) <= 601, first
    assert "thumbnailer-1" in text_of(driver, row)
    wait_for(driver, lambda d: text_of(d, f"{row} .countdown") not in ("", first))


def test_jobs_filter_by_kind_and_page_with_the_cursor(
    browser: Browser, dashboard: Coordinator
) -> None:
    """The jobs list filters by kind and status, lists the newest first (or the oldest)
    and walks pages with next_cursor."""
    http = Http(dashboard.url)
    seed_small(http)
    bulk = [http.enqueue("bulk", payload={"n": n})["id"] for n in range(30)]
    newest = bulk[::-1]
    driver = browser.driver
    driver.get(dashboard.url + "/ui/#/jobs?kind=bulk&limit=25")

    def shown_ids(d: WebDriver) -> list[int]:
        rows = d.find_elements(By.CSS_SELECTOR, "tbody tr[data-job-id]")
        return [int(r.get_attribute("data-job-id") or 0) for r in rows]

    wait_for(driver, lambda d: shown_ids(d) == newest[:25])
    driver.find_element(By.XPATH, "//button[contains(., 'Next')]").click()
    wait_for(driver, lambda d: shown_ids(d) == newest[25:])
    assert not driver.find_element(By.XPATH, "//button[contains(., 'Next')]").is_enabled()
    driver.find_element(By.XPATH, "//button[contains(., 'Previous')]").click()
    wait_for(driver, lambda d: shown_ids(d) == newest[:25])
    Select(driver.find_element(By.CSS_SELECTOR, 'select[name="order"]')).select_by_value("asc")
    wait_for(driver, lambda d: shown_ids(d) == bulk[:25])
    assert "order=asc" in driver.current_url

    Select(driver.find_element(By.CSS_SELECTOR, 'select[name="status"]')).select_by_value("dead")
    element(driver, ".empty-state")
    assert "status=dead" in driver.current_url and "kind=bulk" in driver.current_url
