"""Retention under a steady stream: the database stops growing, and leases stay quick
while a big backlog of old finished jobs is pruned.

    .venv/bin/python -m bench.retention [--seconds 180] [--rate 200] [--retain 30]
                                        [--backlog 200000]

One coordinator (SQLite, ``synchronous=NORMAL``) keeps completed jobs ``--retain`` seconds
and prunes every 2 s. Before it starts, ``--backlog`` completed jobs finished two days ago
(with an attempt row each) are written into its database, as a coordinator that ran
without retention would have left them. Then this process enqueues ``--rate`` jobs a second
and leases and completes them (batches of 50), for ``--seconds``. Every 10 s it prints the
database file size (main file plus WAL), the rows in jobs and attempts, the completed
count /stats gives, and the lease round trip's p50 and p99 over those 10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from bench.harness import load_average, start_coordinator
from leasehold.client import Client, CompleteItem, NewJob

BATCH = 50
REPORT_EVERY = 10.0


def prefill(db: Path, n: int) -> None:
    """n completed jobs, finished two days ago, with one attempt each (schema by migrating
    through a store first: the coordinator's own migrations create the tables)."""
    import asyncio as _asyncio

    from leasehold.coordinator.store.sqlite.driver import SqliteStore

    async def migrate() -> None:
        store = SqliteStore(str(db))
        await store.open()
        await store.close()

    _asyncio.run(migrate())
    old = time.time() - 2 * 86_400
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO jobs (kind, payload, status, attempts, max_attempts, run_after,"
            " created_at, lease_token, finished_at, result)"
            " VALUES ('old', '{\"n\": 1}', 'completed', 1, 5, ?, ?, 1, ?, 'null')",
            [(old, old, old)] * n,
        )
        conn.execute(
            "INSERT INTO attempts (job_id, token, worker_id, leased_at, finished_at, outcome)"
            " SELECT id, 1, 'w', created_at, finished_at, 'completed' FROM jobs"
        )


def measure(db: Path) -> tuple[float, int, int]:
    size = sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        (jobs,) = conn.execute("SELECT count(*) FROM jobs").fetchone()
        (attempts,) = conn.execute("SELECT count(*) FROM attempts").fetchone()
    return size / 1e6, jobs, attempts


async def stream(url: str, db: Path, seconds: float, rate: int) -> None:
    async with Client(url) as client:
        started = time.monotonic()
        next_report = started + REPORT_EVERY
        latencies: list[float] = []
        sent = 0
        while time.monotonic() - started < seconds:
            due = int((time.monotonic() - started) * rate)
            if due - sent >= BATCH:
                await client.enqueue_many([NewJob("tick", {"n": i}) for i in range(BATCH)])
                sent += BATCH
                t0 = time.monotonic()
                leases = await client.lease("bench", max_jobs=BATCH)
                latencies.append(time.monotonic() - t0)
                items = [CompleteItem(lease.job.id, lease.token) for lease in leases]
                if items:
                    await client.complete_many(items)
            else:
                await asyncio.sleep(0.01)
            if time.monotonic() >= next_report:
                size, jobs, attempts = measure(db)
                stats = await client.stats()
                p50 = statistics.median(latencies) * 1000 if latencies else 0.0
                p99 = sorted(latencies)[int(len(latencies) * 0.99)] * 1000 if latencies else 0.0
                print(
                    f"{time.monotonic() - started:6.0f} s  db {size:7.1f} MB  jobs {jobs:7d}"
                    f"  attempts {attempts:7d}  completed (stats) {stats['by_status']['completed']:7d}"
                    f"  total completed {stats['totals']['completed']:7d}"
                    f"  lease p50 {p50:5.1f} ms  p99 {p99:6.1f} ms",
                    flush=True,
                )
                latencies = []
                next_report += REPORT_EVERY


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--retain", type=float, default=30.0)
    parser.add_argument("--backlog", type=int, default=200_000)
    args = parser.parse_args()
    print(f"load average before: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        db = Path(tmp) / "leasehold.db"
        prefill(db, args.backlog)
        size, jobs, attempts = measure(db)
        print(f"     0 s  db {size:7.1f} MB  jobs {jobs:7d}  attempts {attempts:7d}  (backlog)")
        extra = [
            "--retain-completed-seconds",
            str(args.retain),
            "--prune-interval-seconds",
            "2",
        ]
        coordinator, url = start_coordinator(Path(tmp), "NORMAL", "warning", extra=extra)
        try:
            asyncio.run(stream(url, db, args.seconds, args.rate))
        finally:
            coordinator.stop()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
