"""The dashboard's operator pages in a real headless chromium: bulk actions, queues,
workers, the no-worker warning, error summaries, and the overview's fixed labels."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.chromium import Browser
from tests.browser.page import element, severe_console_errors, text_of, wait_for
from tests.browser.seed import Http, seed_small
from tests.process import Coordinator

pytestmark = pytest.mark.browser


def confirm(driver: WebDriver) -> str:
    dialog = element(driver, "dialog#confirm[open]")
    text = dialog.text
    element(driver, "#confirm-ok").click()
    wait_for(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog#confirm[open]"))
    return text


def test_bulk_delete_and_run_now_behind_a_confirmation(
    browser: Browser, dashboard: Coordinator
) -> None:
    """Ticked jobs are deleted after the confirmation; a running one is refused and stays.
    Run now makes a job waiting for its run-after due; error cells show the last line."""
    http = Http(dashboard.url)
    seeded = seed_small(http)
    driver = browser.driver
    driver.get(dashboard.url + "/ui/#/jobs?kind=thumbnail")
    wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "tbody tr[data-job-id]")) == 3)
    element(driver, "input.select-all").click()
    assert "3 selected" in text_of(driver, ".toolbar.bulk")
    element(driver, 'button[data-bulk="delete"]').click()
    assert "Delete 3 jobs?" in confirm(driver)
    wait_for(driver, lambda d: "refused" in text_of(d, "#notice"))
    assert "2 deleted, 1 refused" in text_of(driver, "#notice")
    for job_id in seeded.queued:
        assert http.call("GET", f"/jobs/{job_id}")[0] == 404
    assert http.get(f"/jobs/{seeded.running[0]}")["status"] == "running"

    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    waiting = http.enqueue("later", run_after=later)
    driver.get(dashboard.url + "/ui/#/jobs?kind=later")
    element(driver, f'tr[data-job-id="{waiting["id"]}"] input.select').click()
    element(driver, 'button[data-bulk="run-now"]').click()
    confirm(driver)
    wait_for(driver, lambda d: http.get(f"/jobs/{waiting['id']}")["run_after"] < later)

    driver.get(dashboard.url + "/ui/#/jobs?kind=report")
    cell = element(driver, f'tr[data-job-id="{seeded.dead[0]}"] .error-text')
    assert cell.text == '<b onmouseover="window.__xss=3">boom</b>'  # the last line, as text
    assert severe_console_errors(driver) == []


def test_queues_page_pauses_and_resumes(browser: Browser, dashboard: Coordinator) -> None:
    http = Http(dashboard.url)
    http.enqueue("mail", queue="emails")
    driver = browser.driver
    driver.get(dashboard.url + "/ui/#/queues")
    element(driver, 'button[data-pause="emails"]').click()
    assert "Pause queue “emails”?" in confirm(driver)
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, 'button[data-resume="emails"]'))
    (queue,) = http.get("/queues")["queues"]
    assert queue["paused"] and queue["counts"]["queued"] == 1
    assert "paused" in text_of(driver, 'tr[data-queue="emails"]')
    element(driver, 'button[data-resume="emails"]').click()
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, 'button[data-pause="emails"]'))
    assert not http.get("/queues")["queues"][0]["paused"]


def test_workers_page_and_the_no_worker_warning(browser: Browser, dashboard: Coordinator) -> None:
    http = Http(dashboard.url)
    http.enqueue("resize", queue="images")
    status, _ = http.post(
        "/workers/heartbeat",
        {
            "worker_id": "box-1-123",
            "host": "box-1",
            "pid": 123,
            "version": "0.1.0",
            "kinds": ["email"],
            "concurrency": 8,
            "started_at": datetime.now(UTC).isoformat(),
        },
    )
    assert status == 200
    driver = browser.driver
    driver.get(dashboard.url + "/ui/#/workers")
    row = element(driver, 'tr[data-worker="box-1-123"]')
    assert "live" in row.text and "box-1" in row.text and "email" in row.text
    warning = "No live worker serves kind “resize” in queue “images”: 1 job waiting."
    wait_for(driver, lambda d: warning in text_of(d, ".unserved"))
    driver.get(dashboard.url + "/ui/#/overview")
    wait_for(driver, lambda d: warning in text_of(d, "#unserved"))


def test_overview_labels_fit_and_the_cancelled_card_says_its_own(
    browser: Browser, dashboard: Coordinator
) -> None:
    """Minutes on the latency axis are not cut off at the left edge; the Cancelled card
    counts cancellations, not deaths."""
    http = Http(dashboard.url)
    long_ago = (datetime.now(UTC) - timedelta(minutes=7)).isoformat()
    http.enqueue("waits", run_after=long_ago)
    cancelled = http.enqueue("gone")
    http.post(f"/jobs/{cancelled['id']}/cancel")
    driver = browser.driver
    driver.get(dashboard.url + "/ui/")
    card = '.card[data-status="cancelled"] .sub'
    wait_for(driver, lambda d: text_of(d, card) == "1 cancelled in all")
    wait_for(
        driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "svg.chart text.axis-label")) > 8
    )
    lefts = driver.execute_script(
        "return [...document.querySelectorAll('svg.chart text.axis-label')]"
        ".map((t) => [t.textContent, t.getBBox().x])"
    )
    assert any(text.endswith(" m") for text, _ in lefts), lefts
    assert all(x >= 0 for _, x in lefts), lefts
