"""Take docs/dashboard.png from a real coordinator under a simulated workload.

    .venv/bin/python -m tests.browser.screenshot docs/dashboard.png   (or: make screenshot)

Producers enqueue a few hundred jobs of several kinds at a varying rate while worker threads
lease, run (sleep), complete and fail them, and now and then abandon one so that its lease
expires and its late report is refused as stale. After about a minute of that, chromium takes
the overview at 1280x800. Everything stays on this machine.
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tests.browser.chromium import find_browser, start_browser
from tests.browser.page import assert_not_blank, status_counts, wait_for
from tests.browser.seed import Http
from tests.process import Coordinator


@dataclass(frozen=True)
class Kind:
    name: str
    share: float  # of the jobs enqueued
    seconds: tuple[float, float]  # how long a run takes
    failure: float  # chance that a run fails
    max_attempts: int = 5
    abandon: float = 0.0  # chance that the worker "crashes" and lets the lease expire


KINDS = (
    Kind("send-email", 0.40, (0.05, 0.3), 0.03),
    Kind("resize-image", 0.25, (0.3, 1.2), 0.06),
    Kind("sync-crm", 0.15, (0.2, 0.8), 0.45, max_attempts=3),
    Kind("generate-report", 0.10, (1.5, 4.0), 0.10, max_attempts=2),
    Kind("charge-card", 0.10, (0.1, 0.5), 0.02, abandon=0.08),
)
ERRORS = {
    "send-email": "SMTP 451 4.7.1 try again later",
    "resize-image": "PIL.UnidentifiedImageError: cannot identify image file",
    "sync-crm": "HTTP 503 from crm.internal: upstream timeout",
    "generate-report": "MemoryError while rendering page 212",
    "charge-card": "card_declined: insufficient_funds",
}
LEASE_SECONDS = 4.0


def producer(http: Http, stop: threading.Event, duration: float, rng: random.Random) -> None:
    """A few hundred jobs in a minute: a slow start, a burst that builds a backlog, a lull.
    Each report waits for the three jobs enqueued before it (a small fan-in)."""
    start = time.monotonic()
    recent: list[int] = []
    while not stop.is_set() and (elapsed := time.monotonic() - start) < duration:
        rate = 4 + 7 * math.sin(elapsed / duration * math.pi) ** 2  # jobs per second
        kind = rng.choices(KINDS, weights=[k.share for k in KINDS])[0]
        after = {"depends_on": recent[-3:]} if kind.name == "generate-report" and recent else {}
        job = http.enqueue(
            kind.name,
            payload={
                "n": rng.randrange(1_000_000),
                "tenant": rng.choice(["acme", "globex", "initech"]),
            },
            max_attempts=kind.max_attempts,
            **after,
        )
        recent.append(job["id"])
        stop.wait(rng.expovariate(rate))


def heartbeat(http: Http, name: str) -> None:
    """What a real worker says every 5 s, so the dashboard counts this one as live."""
    http.post(
        "/workers/heartbeat",
        {
            "worker_id": name,
            "host": "sim",
            "pid": 1,
            "version": "0.1.0",
            "kinds": [k.name for k in KINDS],
            "concurrency": 1,
            "started_at": datetime.now(UTC).isoformat(),
        },
    )


def worker(http: Http, name: str, stop: threading.Event, rng: random.Random) -> None:
    by_name = {k.name: k for k in KINDS}
    beat_at = 0.0
    while not stop.is_set():
        if time.monotonic() >= beat_at:
            heartbeat(http, name)
            beat_at = time.monotonic() + 5
        status, body = http.post(
            "/lease", {"worker_id": name, "lease_seconds": LEASE_SECONDS, "wait_seconds": 1}
        )
        if status != 200:
            continue
        job, token = body["job"], body["token"]
        kind = by_name[job["kind"]]
        stop.wait(rng.uniform(*kind.seconds))
        if rng.random() < kind.abandon:
            # A paused worker: it comes back after its lease ran out and someone else took over.
            stop.wait(LEASE_SECONDS + 2.5)
            http.post(f"/jobs/{job['id']}/complete", {"token": token})
        elif rng.random() < kind.failure:
            http.post(f"/jobs/{job['id']}/fail", {"token": token, "error": ERRORS[kind.name]})
        else:
            http.post(f"/jobs/{job['id']}/complete", {"token": token, "result": {"ok": True}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--seconds", type=float, default=70.0, help="workload before the shot")
    parser.add_argument("--workers", type=int, default=6)
    args = parser.parse_args()
    binary = find_browser()
    if binary is None:
        raise SystemExit("chromium and chromedriver are needed (scripts/ensure-browser.sh)")
    tmp = Path(tempfile.mkdtemp(prefix="leasehold-shot-"))
    coordinator = Coordinator(
        f"sqlite:///{tmp / 'leasehold.db'}",
        tmp,
        [
            "--retry-base-seconds",
            "0.5",
            "--retry-max-seconds",
            "5",
            "--reap-interval-seconds",
            "0.5",
        ],
    ).start()
    http = Http(coordinator.url)
    stop = threading.Event()
    rng = random.Random(7)
    threads = [threading.Thread(target=producer, args=(http, stop, args.seconds, rng), daemon=True)]
    threads += [
        threading.Thread(
            target=worker, args=(http, f"worker-{n}", stop, random.Random(n)), daemon=True
        )
        for n in range(1, args.workers + 1)
    ]
    browser = start_browser(binary)
    try:
        for thread in threads:
            thread.start()
        browser.driver.get(coordinator.url + "/ui/")
        stop.wait(args.seconds)
        wait_for(browser.driver, lambda d: all(v is not None for v in status_counts(d).values()))
        png = browser.driver.get_screenshot_as_png()
        assert_not_blank(png)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_bytes(png)
        print(f"wrote {args.output} ({len(png)} bytes); dashboard was {coordinator.url}/ui/")
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        browser.quit()
        coordinator.kill()


if __name__ == "__main__":
    main()
