"""The dashboard under authentication: the token field, 401/403 messages, read-only mode.

Authentication is not in the coordinator yet, so the browser plays it: a script installed
before the page loads wraps fetch and answers as the coordinator will (DESIGN.md §9 error
bodies), letting an admin token through, reads only for a reader token, and 401 otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.browser.chromium import Browser
from tests.browser.page import element, severe_console_errors, wait_for
from tests.browser.seed import Http, seed_small
from tests.process import Coordinator

pytestmark = pytest.mark.browser

FAKE_AUTH = """
(() => {
  const realFetch = window.fetch.bind(window);
  window.__seen = [];
  const refuse = (status, error) => new Response(
    JSON.stringify({error, message: error}),
    {status, headers: {"Content-Type": "application/json"}});
  window.fetch = async (input, init = {}) => {
    const method = init.method || "GET";
    const auth = new Headers(init.headers).get("Authorization");
    window.__seen.push({url: String(input), method, auth});
    if (auth === "Bearer admin-token") return realFetch(input, init);
    if (auth === "Bearer reader-token") {
      return method === "GET" ? realFetch(input, init) : refuse(403, "forbidden");
    }
    return refuse(401, "unauthorized");
  };
})();
"""


@pytest.fixture
def fake_auth(browser: Browser) -> Iterator[WebDriver]:
    driver = browser.driver
    installed = driver.execute_cdp_cmd(
        "Page.addScriptToEvaluateOnNewDocument", {"source": FAKE_AUTH}
    )
    yield driver
    driver.execute_cdp_cmd(
        "Page.removeScriptToEvaluateOnNewDocument", {"identifier": installed["identifier"]}
    )


def use_token(driver: WebDriver, token: str) -> None:
    field = driver.find_element(By.ID, "token-input")
    field.clear()
    field.send_keys(token)
    driver.find_element(By.CSS_SELECTOR, '#token-form button[type="submit"]').click()


def requeue_buttons_shown(driver: WebDriver) -> bool:
    buttons = driver.find_elements(By.CSS_SELECTOR, "button.requeue, #requeue-all")
    return bool(buttons) and all(b.is_displayed() for b in buttons)


def requeue_buttons_hidden(driver: WebDriver) -> bool:
    buttons = driver.find_elements(By.CSS_SELECTOR, "button.requeue, #requeue-all")
    return not any(b.is_displayed() for b in buttons)


def test_token_roles_decide_what_the_page_offers(
    fake_auth: WebDriver, dashboard: Coordinator
) -> None:
    """401 asks for a token; a reader token is read-only; an admin token may requeue."""
    seed_small(Http(dashboard.url))
    driver = fake_auth
    driver.get(dashboard.url + "/ui/#/dead")
    assert "needs an API token" in element(driver, "#alert").text

    use_token(driver, "reader-token")
    element(driver, "tr[data-job-id]")  # the dead jobs load
    wait_for(driver, lambda d: d.find_element(By.ID, "access").text == "read-only")
    assert requeue_buttons_hidden(driver)
    assert element(driver, ".read-only-note").is_displayed()
    assert not driver.find_element(By.ID, "alert").is_displayed()

    use_token(driver, "admin-token")
    wait_for(driver, lambda d: d.find_element(By.ID, "access").text == "admin")
    wait_for(driver, requeue_buttons_shown)
    assert (
        driver.execute_script("return sessionStorage.getItem('leasehold.token')") == "admin-token"
    )

    seen = driver.execute_script("return window.__seen")
    assert seen, "the page made no API calls"
    last_reader = max(i for i, r in enumerate(seen) if r["auth"] == "Bearer reader-token")
    assert all(r["auth"] == "Bearer admin-token" for r in seen[last_reader + 1 :])
    first_with_token = next(i for i, r in enumerate(seen) if r["auth"])
    assert all(r["auth"] for r in seen[first_with_token:]), "a call went out without the token"

    use_token(driver, "wrong")
    assert "refused this API token" in element(driver, "#alert").text
    wait_for(driver, requeue_buttons_hidden)
    assert not driver.find_elements(By.CSS_SELECTOR, "tr[data-job-id]")  # nothing stale stays
    assert severe_console_errors(driver) == []


# What a coordinator behind a proxy it was not told about answers: changes are cross-site
# (403 cross_site), or, open, it answers nothing through a proxy (421).
REFUSING = """
(() => {
  const realFetch = window.fetch.bind(window);
  const [method, status, error] = %s;
  window.fetch = async (input, init = {}) => {
    if (method !== (init.method || "GET")) return realFetch(input, init);
    return new Response(
      JSON.stringify({error, message: `refused by the test (${error})`}),
      {status, headers: {"Content-Type": "application/json"}});
  };
})();
"""


def test_a_refusal_that_is_not_the_tokens_is_shown_as_it_is(
    browser: Browser, dashboard: Coordinator
) -> None:
    """Every refused action used to say it needed an admin token; a cross-site 403 or a
    421 is not about the token, and the page says what the coordinator said."""
    seed_small(Http(dashboard.url))
    driver = browser.driver
    for refusal, shown in [
        ('["POST", 403, "cross_site"]', "(cross_site, HTTP 403)"),
        ('["GET", 421, "misdirected_request"]', "(misdirected_request, HTTP 421)"),
    ]:
        installed = driver.execute_cdp_cmd(
            "Page.addScriptToEvaluateOnNewDocument", {"source": REFUSING % refusal}
        )
        try:
            driver.get("about:blank")  # the same address again would only be a new #hash
            driver.get(dashboard.url + "/ui/#/dead")
            wait_for(driver, lambda d: shown in d.find_element(By.ID, "alert").text)  # noqa: B023
            alert = driver.find_element(By.ID, "alert").text
            assert "refused by the test" in alert and "token" not in alert
            assert requeue_buttons_hidden(driver)
            if "403" in shown:  # the page reads, and does not blame the token for the rest
                assert not driver.find_element(By.CSS_SELECTOR, ".read-only-note").is_displayed()
            else:  # nothing can be read: no view, the reason instead
                assert "No access" in driver.find_element(By.ID, "main").text
        finally:
            driver.execute_cdp_cmd(
                "Page.removeScriptToEvaluateOnNewDocument", {"identifier": installed["identifier"]}
            )
