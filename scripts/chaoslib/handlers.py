"""The handler every chaos worker runs: some work, then a fenced write, then the result."""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from pathlib import Path

from chaoslib.fenced import connect, fenced_write, record_lease
from leasehold.worker import LeasedJob

_local = threading.local()


def _db() -> sqlite3.Connection:
    conn: sqlite3.Connection | None = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = connect(Path(os.environ["LEASEHOLD_CHAOS_DB"]))
    return conn


def chaos(job: LeasedJob) -> dict[str, object]:
    """Runs in a worker thread (a plain def): the sleep is the job's 'work'."""
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
    return {"token": job.token, "worker": job.worker_id, "fenced_write_accepted": accepted}


registry = {"chaos": chaos}
