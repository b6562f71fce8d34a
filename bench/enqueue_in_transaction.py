"""What an enqueue inside the application's own transaction costs (DESIGN.md §26).

    .venv/bin/python -m bench.enqueue_in_transaction [--jobs 500] [--repeat 3]

Starts the tests' throwaway PostgreSQL (``durable=True``), migrates a database as a
coordinator would, and times, best of ``--repeat``:

- ``server``: ``leasehold_enqueue`` alone, ``--jobs`` calls in one statement (no network,
  no Python): what the function itself costs the database;
- ``in one transaction``: ``leasehold.transactional.enqueue`` on an asyncpg connection,
  ``--jobs`` of them in one transaction (the job checked in Python, the function, the row
  read back);
- ``a transaction of its own``: BEGIN, the application's own insert, the enqueue, COMMIT
  (the fold of its counts, its notification), less the same transaction without the
  enqueue (whose commit pays the same fsync).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg

from leasehold.client import NewJob
from leasehold.coordinator.store.open import open_store
from leasehold.transactional import enqueue
from leasehold.transactional._prepare import prepared
from tests.pgserver import find_pg_bin, start_pg_server


async def measure(url: str, jobs: int, repeat: int) -> dict[str, float]:
    store = open_store(url)
    await store.open()
    await store.close()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE TABLE accounts (n integer)")
        argument = prepared(NewJob("bench", {"to": "ada@example.com", "n": 1}))
        await conn.execute(f"SELECT leasehold_enqueue('{argument}'::json)")  # the kind known
        best: dict[str, float] = {}

        def keep(name: str, seconds: float) -> None:
            best[name] = min(best.get(name, float("inf")), seconds)

        for _ in range(repeat):
            start = time.perf_counter()
            await conn.execute(
                f"DO $$ BEGIN PERFORM leasehold_enqueue('{argument}'::json, false)"
                f" FROM generate_series(1, {jobs}); END $$"
            )
            keep("server", (time.perf_counter() - start) / jobs)
            start = time.perf_counter()
            async with conn.transaction():
                for n in range(jobs):
                    await enqueue(conn, "bench", {"to": "ada@example.com", "n": n})
            keep("in one transaction", (time.perf_counter() - start) / jobs)
            bare = await _transactions(conn, jobs // 5, with_enqueue=False)
            full = await _transactions(conn, jobs // 5, with_enqueue=True)
            keep("a transaction of its own", full - bare)
            keep("(the transaction without it)", bare)
        return best
    finally:
        await conn.close()


async def _transactions(conn: asyncpg.Connection, n: int, *, with_enqueue: bool) -> float:
    start = time.perf_counter()
    for i in range(n):
        async with conn.transaction():
            await conn.execute("INSERT INTO accounts VALUES ($1)", i)  # the application's own
            if with_enqueue:
                await enqueue(conn, "bench", {"n": i})
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise SystemExit("PostgreSQL binaries not found: scripts/ensure-postgres.sh")
    print(f"load before: {os.getloadavg()}")
    server = start_pg_server(Path(tempfile.gettempdir()), bin_dir=bin_dir, durable=True)
    try:
        url = server.create_database(f"bench_{uuid.uuid4().hex[:8]}")
        figures = asyncio.run(measure(url, args.jobs, args.repeat))
    finally:
        server.stop()
    for name, seconds in figures.items():
        print(f"{name:32} {seconds * 1000:7.3f} ms per enqueue")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
