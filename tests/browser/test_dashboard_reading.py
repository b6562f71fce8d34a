"""What the dashboard shows a person reading it, in a real headless chromium: a failed job's
exception before its traceback, lists newest first, the Dead page's error filter (what
"Requeue all matching" takes), charts that keep their history across a reload, a job's
parents and dependents (paged) with why it is not running and its flow-control fields,
the waiting status in the queues, and the Limits page that shows and sets groups, rates
and turns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from tests.browser.chromium import Browser
from tests.browser.page import element, severe_console_errors, text_of, wait_for
from tests.browser.seed import Http
from tests.process import Coordinator, sqlite_coordinator

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    """One coordinator for the module (a process costs about a second of CPU to start):
    each test uses kinds of its own."""
    with sqlite_coordinator(tmp_path_factory.mktemp("reading")) as coordinator:
        yield coordinator


# A handler's KeyError as the Python worker reports it: three frames of the worker calling
# a plain def handler on a thread, then the application's own two.
INSTALLED = "/usr/lib/python3/dist-packages/leasehold/worker"
TRACEBACK = f"""Traceback (most recent call last):
  File "{INSTALLED}/handler_outcome.py", line 57, in call_handler
    result = await in_daemon_thread(handler, job)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{INSTALLED}/threads.py", line 53, in in_daemon_thread
    return await future
           ^^^^^^^^^^^^
  File "{INSTALLED}/threads.py", line 43, in target
    result, error = context.run(fn, arg), None
                    ^^^^^^^^^^^^^^^^^^^^
  File "/srv/app/jobs.py", line 9, in build_report
    return lookup(job.payload)
           ^^^^^^^^^^^^^^^^^^^
  File "/srv/app/jobs.py", line 5, in lookup
    return payload["customer"]
           ~~~~~~~^^^^^^^^^^^^
KeyError: 'customer'"""


def fail_for_good(http: Http, kind: str, error: str, attempts: int = 1) -> int:
    """A job of ``kind`` failed ``attempts`` times with ``error``, the last time for good."""
    job = http.enqueue(kind, max_attempts=attempts)
    for n in range(attempts):
        lease = http.lease(f"worker-{n + 1}", [kind])
        assert lease is not None and lease["job"]["id"] == job["id"]
        body = {"token": lease["token"], "error": error, "retry_after_seconds": 0}
        assert http.post(f"/jobs/{job['id']}/fail", body)[0] == 200
    return int(job["id"])


def shown_ids(driver: WebDriver) -> list[int]:
    rows = driver.find_elements(By.CSS_SELECTOR, "tbody tr[data-job-id]")
    return [int(r.get_attribute("data-job-id") or 0) for r in rows]


def test_a_failed_job_shows_its_exception_first_and_folds_the_worker_frames(
    browser: Browser, shared: Coordinator
) -> None:
    """The exception line comes first and whole; the application's frames follow; the
    worker's own frames are folded until opened; each attempt's row shows the exception,
    not "Traceback (most recent call last)"."""
    job_id = fail_for_good(Http(shared.url), "report", TRACEBACK, attempts=2)
    driver = browser.driver
    driver.get(f"{shared.url}/ui/#/jobs/{job_id}")
    box = "#last-error .traceback"
    wait_for(driver, lambda d: text_of(d, f"{box} .exception") == "KeyError: 'customer'")
    first = driver.execute_script(f"return document.querySelector('{box}').firstElementChild")
    assert first.get_attribute("class") == "exception"
    shown = text_of(driver, box)
    assert 'File "/srv/app/jobs.py", line 9, in build_report' in shown
    assert shown.rstrip().endswith("KeyError: 'customer'")  # the last line is not cut
    assert "handler_outcome.py" not in shown  # folded
    fold = element(driver, f"{box} details.internal-frames summary")
    assert fold.text.startswith("3 frames inside the worker")
    fold.click()
    assert "handler_outcome.py" in text_of(driver, f"{box} details.internal-frames pre")
    errors = [
        e.text for e in driver.find_elements(By.CSS_SELECTOR, "#attempts tbody td .error-text")
    ]
    assert errors == ["KeyError: 'customer'", "KeyError: 'customer'"]
    assert severe_console_errors(driver) == []


def test_dead_jobs_are_newest_first_and_the_error_box_filters_what_requeue_takes(
    browser: Browser, shared: Coordinator
) -> None:
    """The Dead page lists the newest first; "Error contains" filters the list, so that
    "Requeue all matching…" takes what is shown, and says how many."""
    http = Http(shared.url)
    timeouts = [fail_for_good(http, "charge", "TimeoutError: the bank did not answer")]
    refused = [fail_for_good(http, "charge", "ValueError: no such account") for _ in range(2)]
    timeouts += [fail_for_good(http, "charge", "TimeoutError: the bank did not answer")]
    driver = browser.driver
    driver.get(shared.url + "/ui/#/dead?kind=charge")
    wait_for(driver, lambda d: shown_ids(d) == sorted(timeouts + refused, reverse=True))
    box = element(driver, 'input[name="error_contains"]')
    box.send_keys("TimeoutError")
    driver.find_element(
        By.XPATH, "//form[@aria-label='Filter dead jobs']//button[.='Apply']"
    ).click()
    wait_for(driver, lambda d: shown_ids(d) == sorted(timeouts, reverse=True))
    assert "error_contains=TimeoutError" in driver.current_url
    element(driver, "#requeue-all").click()
    dialog = element(driver, "dialog#confirm[open]")
    assert "“TimeoutError”" in dialog.text and "about 2," in dialog.text
    element(driver, "#confirm-ok").click()
    wait_for(driver, lambda d: "2 dead jobs are queued again" in text_of(d, "#notice"))
    assert [http.get(f"/jobs/{i}")["status"] for i in timeouts] == ["queued", "queued"]
    assert [http.get(f"/jobs/{i}")["status"] for i in refused] == ["dead", "dead"]
    element(driver, ".empty-state")  # nothing dead matches the filter any more


def test_overview_charts_keep_their_history_across_a_reload(
    browser: Browser, shared: Coordinator
) -> None:
    """The figures the charts draw are kept in the browser: a reload draws the last minutes
    at once instead of starting empty."""
    driver = browser.driver
    driver.get(shared.url + "/ui/")
    key = "leasehold.stats-history"

    def kept(d: WebDriver) -> list[dict[str, object]]:
        samples: list[dict[str, object]] = json.loads(
            d.execute_script(f"return localStorage.getItem('{key}') || '[]'")
        )
        return samples

    (first, *_) = wait_for(driver, kept)  # the first answer is kept at once
    stats = first["stats"]
    assert isinstance(stats, dict) and set(stats["by_status"]) == {
        "waiting",
        "queued",
        "running",
        "dead",
    }
    assert "by_kind" not in stats and "by_queue" not in stats  # figures only: no names
    # As if the page had been open for the last minute: 30 answers, 2 s apart.
    now_ms = driver.execute_script("return performance.timeOrigin + performance.now()")
    earlier = [{"t": now_ms - 62_000 + 2_000 * n, "stats": stats} for n in range(30)]
    driver.execute_script(f"localStorage.setItem('{key}', arguments[0])", json.dumps(earlier))
    driver.refresh()

    def points(d: WebDriver) -> int:
        paths = d.find_elements(By.CSS_SELECTOR, "svg.chart path.s-queued")
        return (paths[0].get_attribute("d") or "").count("L") + 1 if paths else 0

    drawn = wait_for(driver, points)  # from the first answer on: a line needs two
    assert drawn >= 30, drawn  # the minute kept, and what this page added
    assert severe_console_errors(driver) == []


def rows(driver: WebDriver, table: str) -> list[tuple[int, str]]:
    """The (job id, status) of each row of a job page's parents or dependents table."""
    found = []
    for row in driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr[data-job-id]"):
        status = row.find_elements(By.CSS_SELECTOR, ".badge")
        found.append((int(row.get_attribute("data-job-id") or 0), status[0].text if status else ""))
    return found


def field(driver: WebDriver, label: str) -> str:
    """The value beside ``label`` in the job page's fields ("" when it is not shown)."""
    found = driver.find_elements(
        By.XPATH, f"//dl[@class='fields']/dt[.='{label}']/following-sibling::dd[1]"
    )
    return found[0].text if found else ""


def seed_graph(http: Http) -> dict[str, Any]:
    """A root with the flow-control fields, 30 children on it, a fan-in on three of them,
    and a child spawned by a running job under a key."""
    items: list[dict[str, Any]] = [
        {
            "kind": "dash-root",
            "ref": "root",
            "group_key": "tenant-a",
            "weight": 3,
            "start_by": "2030-01-01T00:00:00+00:00",
            "unique": {"key": "nightly"},
        }
    ]
    items += [
        {"kind": "dash-child", "ref": f"c{n}", "depends_on": [{"ref": "root"}]} for n in range(30)
    ]
    edges = [{"ref": "c0"}, {"ref": "c1", "on_failure": "run"}, {"ref": "c2"}]
    items.append({"kind": "dash-fan-in", "depends_on": edges})
    status, body = http.post("/jobs/batch", {"jobs": items})
    assert status == 200, body
    ids = [item["job"]["id"] for item in body["jobs"]]
    spawner = http.enqueue("dash-spawner")
    lease = http.lease("dash-worker", ["dash-spawner"])
    assert lease is not None
    status, spawned = http.post(
        f"/jobs/{spawner['id']}/children",
        {"token": lease["token"], "jobs": [{"kind": "dash-spawned", "key": "part-1"}]},
    )
    assert status == 200, spawned
    return {
        "root": ids[0],
        "children": ids[1:31],
        "fan_in": ids[31],
        "spawner": spawner["id"],
        "spawned": spawned["jobs"][0]["job"]["id"],
    }


def test_job_page_shows_its_graph_why_it_waits_and_its_new_fields(
    browser: Browser, shared: Coordinator
) -> None:
    """A root shows its 30 dependents a page at a time, why it does not run and its group,
    weight, start deadline and unique key; a fan-in shows its parents and what it waits
    for; a spawned child names its parent and key; queues count waiting jobs."""
    seeded = seed_graph(Http(shared.url))
    children = seeded["children"]
    driver = browser.driver
    driver.get(f"{shared.url}/ui/#/jobs/{seeded['root']}")
    wait_for(driver, lambda d: rows(d, "dependents") == [(c, "waiting") for c in children[:25]])
    assert text_of(driver, "#dependents h2") == "Dependents (30)"
    assert "no live worker takes its kind" in text_of(driver, "#explain")
    assert (field(driver, "Group key"), field(driver, "Weight")) == ("tenant-a", "3")
    assert field(driver, "Start by").startswith("20")  # in the browser's zone
    assert field(driver, "Unique key").startswith("u1:")
    assert not driver.find_elements(By.CSS_SELECTOR, "#parents")
    driver.find_element(
        By.XPATH, "//section[@id='dependents']//button[contains(., 'Next')]"
    ).click()
    wait_for(driver, lambda d: rows(d, "dependents") == [(c, "waiting") for c in children[25:]])

    driver.get(f"{shared.url}/ui/#/jobs/{seeded['fan_in']}")
    wait_for(driver, lambda d: rows(d, "parents") == [(c, "waiting") for c in children[:3]])
    runs = driver.find_elements(By.CSS_SELECTOR, f'#parents tr[data-job-id="{children[1]}"] td')
    assert "runs anyway" in [cell.text for cell in runs]
    assert "it waits for 3 parent job(s) to complete" in text_of(driver, "#explain")
    assert field(driver, "Waiting for") == "3 parents to complete"

    driver.get(f"{shared.url}/ui/#/jobs/{seeded['spawned']}")
    wait_for(driver, lambda d: field(d, "Spawned by") == f"#{seeded['spawner']} · key part-1")
    element(driver, f'dd a[href="#/jobs/{seeded["spawner"]}"]')

    driver.get(f"{shared.url}/ui/#/queues")
    row = element(driver, 'tr[data-queue="default"]')
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "thead th")]
    waiting = row.find_elements(By.TAG_NAME, "td")[heads.index("Waiting") - 1]
    assert waiting.text == "31"  # the children and the fan-in
    assert severe_console_errors(driver) == []


def test_limits_page_sets_edits_and_removes_a_kinds_limits(
    browser: Browser, shared: Coordinator
) -> None:
    """The form sets every limit at once (a rate per group, a cap per group); Edit brings a
    kind's limits back into the form to change them; Remove asks first."""
    http = Http(shared.url)
    driver = browser.driver
    driver.get(f"{shared.url}/ui/#/limits")
    element(driver, ".empty-state")

    def fill_in(**values: str) -> None:
        for name, value in values.items():
            box = driver.find_element(By.ID, f"limit-{name}")
            box.clear()
            box.send_keys(value)

    fill_in(kind="dash-mail", max_running="8", max_running_per_group="2", rate_limit="600")
    Select(driver.find_element(By.ID, "limit-rate_unit")).select_by_value("m")
    element(driver, "#limit-rate_per_group").click()
    element(driver, "#limit-save").click()
    row = 'tr[data-kind="dash-mail"]'
    wait_for(driver, lambda d: "600 per 1 min per group" in text_of(d, row))
    assert "are set" in text_of(driver, "#notice")
    (stored,) = http.get("/limits")["limits"]
    assert stored["rate"] == {"limit": 600, "period_seconds": 60.0, "per_group": True}
    assert (stored["max_running"], stored["max_running_per_group"]) == (8, 2)

    element(driver, f'{row} button[data-edit="dash-mail"]').click()
    assert driver.find_element(By.ID, "limit-kind").get_attribute("value") == "dash-mail"
    assert driver.find_element(By.ID, "limit-rate_period").get_attribute("value") == "1"
    fill_in(max_running="4", max_running_per_group="")
    # Groups take turns under a limit per group: the coordinator says so, and the form too.
    assert driver.find_element(By.ID, "limit-fair").is_selected()
    element(driver, "#limit-rate_per_group").click()  # off again
    element(driver, "#limit-save").click()
    wait_for(
        driver, lambda d: "600 per 1 min" in text_of(d, row) and "group" not in text_of(d, row)
    )
    (stored,) = http.get("/limits")["limits"]
    assert (stored["max_running"], stored["max_running_per_group"], stored["fair"]) == (
        4,
        None,
        True,
    )

    element(driver, f'{row} button[data-remove="dash-mail"]').click()
    assert "dash-mail" in element(driver, "dialog#confirm[open]").text
    element(driver, "#confirm-ok").click()
    element(driver, ".empty-state")
    assert http.get("/limits")["limits"] == []
    assert severe_console_errors(driver) == []
