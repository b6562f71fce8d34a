"""The handlers every chaos worker runs: some work, then a fenced write, then the result.

The workflow kinds (chaoslib/workflows.py) add a parent that spawns its children through
``POST /jobs/{id}/children`` under its lease's token, and kills its own worker with SIGKILL
halfway through the spawn on its first attempt, so that every run sees a parent leased
again spawning the same keys."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from chaoslib.fenced import connect, fenced_write, record_lease, record_spawn
from chaoslib.wire import call_until
from leasehold.worker import LeasedJob, PermanentFailure

_local = threading.local()


def _db() -> sqlite3.Connection:
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = connect(Path(os.environ["LEASEHOLD_CHAOS_DB"]))
    return conn


def _work(job: LeasedJob, **result: Any) -> dict[str, object]:
    """Sleep (the job's 'work'), then write the side effect under the job's token."""
    started = time.time()
    conn = _db()
    rng = random.Random(job.id * 1_000_003 + job.token)
    # Mostly quick jobs; some long enough to be caught by a pause or a kill, and a few
    # that outlast one lease, so they live on renewals.
    draw = rng.random()
    time.sleep(0.005 + 0.05 * rng.random() if draw < 0.85 else 0.8 if draw < 0.98 else 2.5)
    record_lease(conn, job.id, job.token, job.worker_id, started, job.lease_expires_at.timestamp())
    accepted = fenced_write(conn, job.id, job.token, job.worker_id, f"done by {job.worker_id}")
    record_lease(conn, job.id, job.token, job.worker_id, started, job.lease_expires_at.timestamp())
    return {
        "token": job.token,
        "worker": job.worker_id,
        "fenced_write_accepted": accepted,
        **result,
    }


def chaos(job: LeasedJob) -> dict[str, object]:
    """Runs in a worker thread (a plain def). Also the flow-controlled kind's handler."""
    return _work(job)


def step(job: LeasedJob) -> dict[str, object]:
    """A child or a graph's step: its result carries the value its continuation sums."""
    payload: Any = job.payload
    return _work(job, value=payload["value"])


def doomed(job: LeasedJob) -> dict[str, object]:
    """Fails for good, so that its dependents are cancelled (or run, with on_failure)."""
    raise PermanentFailure("this step always fails")


def spawner(job: LeasedJob) -> dict[str, object]:
    """Spawns ``children`` children in requests of ``chunk``, then their continuation (one
    more child depending on all of them), then completes: the continuation runs after."""
    payload: Any = job.payload
    n, chunk = payload["children"], payload["chunk"]
    url, conn = os.environ["LEASEHOLD_CHAOS_URL"], _db()
    ids: list[int] = []
    for start in range(0, n, chunk):
        items = [
            {"key": f"c{i}", "kind": "wf-child", "payload": {"value": 3 * i + 1}}
            for i in range(start, min(n, start + chunk))
        ]
        ids += _spawn(job, url, conn, items)
        if job.attempt == 1 and start + chunk >= n // 2:
            os.kill(os.getpid(), signal.SIGKILL)  # the worker dies mid-spawn, for real
    join = {"key": "join", "kind": "wf-join", "payload": {"expect": n}, "depends_on": ids}
    (join_id,) = _spawn(job, url, conn, [join])
    return _work(job, children=len(ids), join=join_id)


def _spawn(job: LeasedJob, url: str, conn: sqlite3.Connection, items: list[Any]) -> list[int]:
    """One spawn request, sent again while the coordinator cannot be reached (a spawn is
    keyed: sending it again is safe); a refusal (a stale token) ends the handler."""
    for item in items:
        item["max_attempts"] = 1000
    body = {"token": job.token, "jobs": items}
    answer = call_until(url, "POST", f"/jobs/{job.id}/children", body, within=60)["jobs"]
    record_spawn(conn, job.id, job.token, job.attempt, items[0]["key"], answer)
    return [a["job"]["id"] for a in answer]


registry = {
    "chaos": chaos,
    "chaos-flow": chaos,
    "wf-parent": spawner,
    "wf-child": step,
    "wf-step": step,
    "wf-doom": doomed,
}
