"""Lease + complete cycles per second with 1 and 2 coordinators on one PostgreSQL.

Run from the repository root (it uses the tests' throwaway server and process helpers)::

    .venv/bin/python -m bench.postgres_coordinators
    .venv/bin/python -m bench.postgres_coordinators --repeat 0 --deep 1000000

Each run starts a throwaway PostgreSQL server (tests/pgserver.py: fsync and
synchronous_commit off, so the database's disk is not what is measured), fills a fresh
database with jobs, starts the coordinators (``leasehold serve``, log level warning) and
runs ``--clients`` HTTP workers in this process, split evenly over the coordinators. Each
worker leases one job, completes it and repeats. After a warm-up the completions in a fixed
window are counted; the runs of each setting are interleaved. It also prints the CPU time
the coordinators, the PostgreSQL server and the clients spent per cycle, which is steadier
than the rate when the machine is shared. Everything shares this machine's cores: the
figures are for comparison on one machine, not a capacity claim.

``--deep N`` adds N queued jobs of other kinds, then times single leases through the store
with and without a kinds filter, to show leasing stays flat however long the queue.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from leasehold.coordinator.store.contract import LeaseRequest, NewJob
from leasehold.coordinator.store.postgres.driver import PostgresStore
from tests.pgserver import PgServer, start_pg_server
from tests.process import Coordinator

BATCH = 1000  # jobs per insert transaction while filling
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Result:
    rate: float  # cycles per second
    cpu_ms: dict[str, float]  # CPU milliseconds per cycle, by process group


def cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU time the processes have used so far (Linux /proc)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


def children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, IndexError, ValueError):
            if (
                entry.name.isdigit()
                and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent
            ):
                found.append(int(entry.name))
    return found


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def fill(url: str, kind: str, n: int, writers: int = 8) -> None:
    store = PostgresStore(url, max_connections=writers)
    await store.open()
    try:

        async def writer(count: int) -> None:
            for start in range(0, count, BATCH):
                size = min(BATCH, count - start)
                await store.job_insert_many(
                    [NewJob(kind, {"i": i}, 5, None, None, "") for i in range(size)]
                )

        share = n // writers
        await asyncio.gather(
            *(writer(share + (n % writers if w == 0 else 0)) for w in range(writers))
        )
    finally:
        await store.close()


async def cycles(
    urls: Sequence[str], clients: int, warmup: float, window: float, groups: dict[str, list[int]]
) -> Result:
    """Lease + complete cycles per second over ``window`` seconds, and what each process
    group (pids) spent on a cycle."""
    done = 0
    stop = asyncio.Event()

    async def worker(n: int, session: aiohttp.ClientSession) -> None:
        nonlocal done
        base = urls[n % len(urls)]
        while not stop.is_set():
            async with session.post(f"{base}/lease", json={"worker_id": f"w{n}"}) as r:
                if r.status == 204:
                    raise RuntimeError("the queue ran dry: fill more jobs (--jobs)")
                lease = await r.json()
            job_id, token = lease["job"]["id"], lease["token"]
            async with session.post(f"{base}/jobs/{job_id}/complete", json={"token": token}) as r:
                assert r.status == 200, await r.text()
            done += 1

    def spent() -> dict[str, float]:
        return {name: cpu_seconds(pids) for name, pids in groups.items()} | {"client": own_cpu()}

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        tasks = [asyncio.create_task(worker(n, session)) for n in range(clients)]
        await asyncio.sleep(warmup)
        start_count, start_time, start_cpu = done, time.perf_counter(), spent()
        await asyncio.sleep(window)
        count, elapsed, end_cpu = done - start_count, time.perf_counter() - start_time, spent()
        stop.set()
        await asyncio.gather(*tasks)
    cpu_ms = {name: (end_cpu[name] - start_cpu[name]) * 1000 / count for name in end_cpu}
    return Result(count / elapsed, cpu_ms)


def measure(
    server: PgServer, n_coordinators: int, args: argparse.Namespace, log_dir: Path
) -> Result:
    url = server.create_database(f"bench_{uuid.uuid4().hex[:12]}")
    asyncio.run(fill(url, "bench", args.jobs))
    coordinators = [
        Coordinator(url, log_dir, ["--log-level", "warning"]).start() for _ in range(n_coordinators)
    ]
    try:
        groups = {
            "coordinators": [c.proc.pid for c in coordinators if c.proc is not None],
            "postgres": [server.pid, *children(server.pid)],
        }
        urls = [c.url for c in coordinators]
        return asyncio.run(cycles(urls, args.clients, args.warmup, args.window, groups))
    finally:
        for c in coordinators:
            c.stop()


async def lease_latency(url: str, kinds: tuple[str, ...] | None, n: int = 300) -> float:
    """Median milliseconds of one lease through the store (the job is left running)."""
    store = PostgresStore(url, min_connections=1, max_connections=1)
    await store.open()
    try:
        times: list[float] = []
        for _ in range(n):
            start = time.perf_counter()
            leased = await store.job_lease(LeaseRequest("bench", 60, kinds))
            times.append((time.perf_counter() - start) * 1000)
            assert len(leased) == 1
        return statistics.median(times)
    finally:
        await store.close()


def deep_queue(server: PgServer, depth: int) -> None:
    print(f"\nlease latency through the store, median of 300 (ms), {depth:,} other jobs queued:")
    url = server.create_database(f"deep_{uuid.uuid4().hex[:12]}")
    for queued in (0, depth):
        if queued:
            started = time.perf_counter()
            asyncio.run(fill(url, "other", depth))
            print(f"  (filled {depth:,} jobs in {time.perf_counter() - started:.0f} s)")
        asyncio.run(fill(url, "rare", 600))
        any_kind = asyncio.run(lease_latency(url, None))
        rare = asyncio.run(lease_latency(url, ("rare", "missing")))
        print(f"  depth {queued:>9,}: any kind {any_kind:.2f}   kinds=[rare, missing] {rare:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=40_000, help="jobs queued before each run")
    parser.add_argument("--clients", type=int, default=32, help="concurrent HTTP workers")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before counting")
    parser.add_argument("--window", type=float, default=10.0, help="seconds counted")
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration")
    parser.add_argument("--coordinators", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--deep", type=int, default=0, help="also time leases at this depth")
    args = parser.parse_args()

    load = "  ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"cores: {os.cpu_count()}, load average {load}; clients: {args.clients}", flush=True)
    results: dict[int, list[Result]] = {n: [] for n in args.coordinators}
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        server = start_pg_server(Path(tmp))
        try:
            # Interleaved, so that a change in the machine's load falls on every setting.
            for _ in range(args.repeat):
                for n in args.coordinators:
                    results[n].append(measure(server, n, args, Path(tmp)))
            for n, runs in results.items():
                if runs:
                    report(n, runs)
            if args.deep:
                deep_queue(server, args.deep)
        finally:
            server.stop()
    load = "  ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average at the end {load}")


def report(n_coordinators: int, runs: list[Result]) -> None:
    rates = "  ".join(f"{r.rate:,.0f}" for r in runs)
    median = statistics.median(r.rate for r in runs)
    cpu = "  ".join(
        f"{name} {statistics.median(r.cpu_ms[name] for r in runs):.2f}" for name in runs[0].cpu_ms
    )
    print(f"{n_coordinators} coordinator(s): median {median:,.0f} cycles/s   (runs: {rates})")
    print(f"    CPU ms per cycle (medians): {cpu}")


if __name__ == "__main__":
    main()
