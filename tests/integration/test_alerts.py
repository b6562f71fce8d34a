"""The standard alerts (deploy/prometheus/leasehold-alerts.yml): checked and unit-tested by
promtool, then run in a real Prometheus (``tests/prometheus.py``) that scrapes a coordinator
served in the test process with README's scrape configuration, every 250 ms: each alert is
made to fire by what it is about, and ``promtool check metrics`` reads the /metrics it got.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from leasehold.coordinator.auth_tokens import HashedToken, Role, hash_token
from leasehold.coordinator.clock import FakeClock
from tests.http import Api, eventually
from tests.inproc import in_process_store, quick_settings, serve_app
from tests.integration.test_readme import blocks
from tests.process import free_port
from tests.prometheus import Prometheus, find_program, start_prometheus

# Prometheus 2.42 applies new scrape targets every 5 s: the first scrape waits for that, so
# the module starts early (tests/conftest.py), beside the short ones.
pytestmark = pytest.mark.slow(8)

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "prometheus" / "leasehold-alerts.yml"
RULE_TESTS = RULES.with_name("leasehold-alerts.test.yml")
METRICS_TOKEN = "metrics-token-0123456789abcdef"
ADMIN_TOKEN = "admin-token-0123456789abcdef"
WITHIN = 30.0


def program(name: str) -> str:
    found = find_program(name)
    if found is None:
        why = f"{name} is not installed"
        if os.environ.get("CI"):
            pytest.fail(f"Prometheus must run in CI, but {why}")
        pytest.skip(f"!!! {why}: alert tests SKIPPED (scripts/ensure-debian-package.sh) !!!")
    return found


def promtool(*args: str, stdin: bytes | None = None) -> None:
    done = subprocess.run(
        [program("promtool"), *args], input=stdin, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, (done.stdout + done.stderr).decode()


def test_promtool_checks_the_rules_and_runs_their_unit_tests() -> None:
    """Each alert fires when it should and not before, over two coordinators' series."""
    promtool("check", "rules", str(RULES))
    promtool("test", "rules", str(RULE_TESTS))


@dataclass
class Scraper:
    prometheus: Prometheus
    target_port: int  # where the coordinator it scrapes is to be served


@pytest.fixture(scope="module")
def scraper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scraper]:
    """README's scrape configuration, its paths and target made the test's."""
    binary = program("prometheus")
    token = tmp_path_factory.mktemp("scraper") / "metrics.token"
    token.write_text(METRICS_TOKEN)
    port = free_port()
    config = blocks()["prometheus"]
    for shown, here in [
        ("/etc/prometheus/leasehold-alerts.yml", str(RULES)),
        ("/etc/prometheus/leasehold-metrics.token", str(token)),
        ("127.0.0.1:8080", f"127.0.0.1:{port}"),
    ]:
        assert shown in config, shown
        config = config.replace(shown, here)
    started = start_prometheus(binary, config)
    yield Scraper(started, port)
    started.stop()


class PromQL:
    """Prometheus' HTTP API, asked without blocking the loop the coordinator serves on."""

    def __init__(self, url: str, session: aiohttp.ClientSession) -> None:
        self.url = url
        self.session = session

    async def query(self, expr: str) -> list[dict[str, Any]]:
        async with self.session.get(self.url + "/api/v1/query", params={"query": expr}) as r:
            found: list[dict[str, Any]] = (await r.json())["data"]["result"]
            return found

    async def until(self, expr: str, holds: Callable[[list[float]], bool]) -> None:
        """Wait until the query's values (one per series) satisfy ``holds``."""

        async def check() -> bool:
            return holds([float(s["value"][1]) for s in await self.query(expr)])

        await eventually(check, WITHIN, 0.1)

    async def alerts(self) -> dict[str, set[str]]:
        """The alerts pending or firing: name -> states."""
        async with self.session.get(self.url + "/api/v1/alerts") as r:
            found = (await r.json())["data"]["alerts"]
        states: dict[str, set[str]] = {}
        for alert in found:
            states.setdefault(alert["labels"]["alertname"], set()).add(alert["state"])
        return states

    async def until_alerts(self, names: set[str]) -> dict[str, set[str]]:
        async def raised() -> dict[str, set[str]] | None:
            states = await self.alerts()
            return states if names <= states.keys() else None

        found: dict[str, set[str]] = await eventually(raised, WITHIN, 0.1)
        return found


def present(values: list[float]) -> bool:
    return bool(values)


async def test_the_standard_alerts_fire_in_a_real_prometheus(
    scraper: Scraper, tmp_path: Path
) -> None:
    """Work nobody serves, a job that goes dead, leases that run out, jobs an hour old, a
    growing queue and, at the end, the coordinator itself stopped: each raises its alert."""
    tokens = (
        HashedToken(Role.METRICS, hash_token(METRICS_TOKEN)),
        HashedToken(Role.ADMIN, hash_token(ADMIN_TOKEN)),
    )
    store, clock = in_process_store(
        f"sqlite:///{tmp_path / 'alerts.db'}", FakeClock(datetime.now(UTC))
    )
    settings = quick_settings(tokens=tokens)
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with aiohttp.ClientSession() as plain, aiohttp.ClientSession(headers=admin) as session:
        prom = PromQL(scraper.prometheus.url, plain)
        async with serve_app(store, settings, clock, port=scraper.target_port) as coordinator:
            api = Api(coordinator.url, session)
            await prom.until('up{job="leasehold"}', lambda v: v == [1.0])

            async def enqueue(kind: str, n: int = 1, **fields: Any) -> None:
                batch = {"jobs": [{"kind": kind, **fields}] * n}
                assert (await api.post("/jobs/batch", batch)).status == 200

            await enqueue("doomed", max_attempts=1)
            await enqueue("flaky", 6)
            await enqueue("orphan", queue="nobody-serves")
            await enqueue("bulk", 150, queue="bulk")
            # Scraped once before anything happens to them: a kind's counters start at 0.
            await prom.until('leasehold_jobs_dead_total{kind="doomed"}', present)
            await prom.until('leasehold_lease_expirations_total{kind="flaky"}', present)
            await prom.until(
                'leasehold_jobs_by_queue{queue="bulk",status="queued"}', [150.0].__eq__
            )

            doomed = await api.lease("w", kinds=["doomed"])
            assert doomed is not None
            failed = {"token": doomed["token"], "error": "no", "retryable": False}
            assert (await api.post(f"/jobs/{doomed['job']['id']}/fail", failed)).status == 200
            for _ in range(6):
                assert await api.lease("w", kinds=["flaky"], lease_seconds=0.5) is not None
            await coordinator.advance(3600)  # the leases run out; the waiting jobs age an hour
            await enqueue("bulk", 150, queue="bulk")
            metrics = await api.get("/metrics")
            states = await prom.until_alerts(
                {
                    "LeaseholdBacklogGrowing",
                    "LeaseholdOldestJobTooOld",
                    "LeaseholdDeadJobsRising",
                    "LeaseholdNoLiveWorker",
                    "LeaseholdLeaseExpirations",
                }
            )
            assert "LeaseholdCoordinatorDown" not in states
        await prom.until_alerts({"LeaseholdCoordinatorDown"})
    promtool("check", "metrics", stdin=metrics.body)
