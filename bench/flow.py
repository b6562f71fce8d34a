"""Flow control's cost: the lease with many rate-limit and concurrency keys against the
plain lease, in one run, and the starvation scenario.

    .venv/bin/python -m bench.flow [--jobs 100000] [--keys 10000] [--samples 2000]
                                   [--max-jobs 1,10] [--postgres] [--profile FILE]
                                   [--starve-big 100000] [--starve-small 50]

Through the JobService (the store and the rules, no HTTP), each on a fresh database:

1. **Lease cost.** ``--jobs`` queued jobs of one kind, then ``--samples`` leases of
   ``--max-jobs`` jobs each (the leased jobs completed, untimed), median and p99 µs per
   lease, for each shape:

   - ``plain``: no limit anywhere (the plain lease);
   - ``max_running``: the kind under ``max_running`` (the capped lease, not planned);
   - ``groups``: the jobs spread over ``--keys`` group keys, with a limit per group
     (``max_running_per_group``), a rate per group (``rate`` with ``per_group``: one bucket
     per key) and turns (``fair``): ``--keys`` concurrency keys and as many rate buckets,
     none of them full, so that the figure is the planned lease's cost, not its waiting.

   The target (issue 28): ``groups`` at most 2x ``plain``.

2. **Starvation.** One group key holding ``--starve-big`` queued jobs, enqueued first, then
   ``--starve-small`` keys holding 10 each, the kind taking turns (``fair``); leases of one
   job each, each completed: after how many leases every small key had its first job
   started, and after how many all of their jobs had. Without turns, every small job would
   wait behind the big key's backlog.

SQLite runs with ``synchronous=OFF`` unless ``--synchronous`` says otherwise: a lease is a
write, and with FULL its fsync on this machine's virtual disk (milliseconds, and varying with
the disk's other load) would hide what the lease itself costs. ``--postgres`` runs on the
throwaway PostgreSQL server of the tests (durable) instead of SQLite files. Each lease is
timed on the wall clock and in CPU (the process's, the store's thread included: nothing
else runs meanwhile), the CPU being the steadier figure on a shared machine. ``--profile FILE`` writes a cProfile of the ``groups`` shape's leases.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from bench.harness import load_average
from bench.peers import Servers
from leasehold.cli.logs import configure_logging
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Complete, Enqueue
from leasehold.coordinator.store.contract import Flow, RateLimit
from leasehold.coordinator.store.open import open_store

KIND = "work"
SHAPES = {
    "plain": None,
    "max_running": Flow(max_running=1_000_000),
    "groups": Flow(
        max_running_per_group=5,
        rate=RateLimit(limit=1000, period_seconds=60, per_group=True),
        fair=True,
    ),
}


class Databases:
    """A fresh database per measurement: a SQLite file, or a PostgreSQL database."""

    def __init__(self, tmp: Path, postgres: bool, synchronous: str) -> None:
        self.tmp, self.servers = tmp, Servers(tmp) if postgres else None
        self.synchronous = synchronous
        self.made = 0

    def url(self, name: str) -> str:
        self.made += 1
        if self.servers is not None:
            return self.servers.postgres_dsn(f"flow_{name}_{self.made}")
        return f"sqlite:///{self.tmp / f'{name}-{self.made}.db'}"

    def close(self) -> None:
        if self.servers is not None:
            self.servers.close()


@asynccontextmanager
async def service_on(databases: Databases, name: str) -> AsyncIterator[JobService]:
    store = open_store(databases.url(name), synchronous=databases.synchronous)
    await store.open()
    service = JobService(store)
    try:
        yield service
    finally:
        await service.close()
        await store.close()


async def fill(service: JobService, n: int, group: Callable[[int], str | None]) -> float:
    """Enqueue ``n`` jobs in batches of 1,000; seconds taken."""
    started = time.perf_counter()
    for start in range(0, n, 1000):
        batch = [
            Enqueue(KIND, {"n": i}, group_key=group(i)) for i in range(start, min(n, start + 1000))
        ]
        await service.enqueue_many(batch)
    return time.perf_counter() - started


async def lease_cost(
    service: JobService, samples: int, max_jobs: int, profile: cProfile.Profile | None
) -> tuple[list[float], list[float]]:
    """µs of each of ``samples`` leases, wall clock and CPU (the process's, the store's
    thread included); each leased job is then completed, untimed."""
    wall, cpu = [], []
    for _ in range(samples):
        if profile is not None:
            profile.enable()
        t0, c0 = time.perf_counter(), time.process_time()
        jobs = await service.lease("bench", 60.0, [KIND], max_jobs=max_jobs)
        wall.append((time.perf_counter() - t0) * 1e6)
        cpu.append((time.process_time() - c0) * 1e6)
        if profile is not None:
            profile.disable()
        if not jobs:
            raise RuntimeError("a lease found nothing: the queue is too short for the samples")
        await service.complete_many([Complete(j.id, j.lease_token, None) for j in jobs])
    return wall, cpu


def p99(values: list[float]) -> float:
    return sorted(values)[min(len(values) - 1, int(len(values) * 0.99))]


async def measure_leases(args: argparse.Namespace, databases: Databases) -> None:
    print(
        f"lease cost: {args.jobs:,} queued jobs, {args.samples:,} leases per shape,"
        f" {args.keys:,} keys for 'groups'",
        flush=True,
    )
    figures: dict[tuple[str, int], tuple[list[float], list[float]]] = {}
    for max_jobs in args.max_jobs:
        for shape, flow in SHAPES.items():
            if shape not in args.shapes:
                continue
            async with service_on(databases, shape) as service:
                if flow is not None:
                    await service.limit_put(KIND, flow)
                keys = args.keys if shape == "groups" else 0
                filled = await fill(
                    service, args.jobs, lambda i, k=keys: f"k{i % k}" if k else None
                )
                # CPU time, not the wall clock: on a shared machine, time spent descheduled
                # would be charged to whatever happened to be running.
                profile = cProfile.Profile(time.process_time) if args.profile else None
                started = time.perf_counter()
                timings = await lease_cost(service, args.samples, max_jobs, profile)
                if profile is not None:
                    profile.dump_stats(f"{args.profile}.{shape}.max{max_jobs}")
                figures[shape, max_jobs] = timings
                print(
                    f"  {shape:<12} max_jobs {max_jobs:>3}: filled in {filled:.1f}s,"
                    f" leases in {time.perf_counter() - started:.1f}s",
                    flush=True,
                )
    for index, what in enumerate(("wall clock", "CPU")):
        print(f"\nµs per lease, {what} (median / p99), and the ratio of the medians to 'plain'")
        print(f"{'max_jobs':>8}  " + "  ".join(f"{s:>22}" for s in args.shapes))
        for max_jobs in args.max_jobs:
            base = statistics.median(figures["plain", max_jobs][index])
            cells = []
            for shape in args.shapes:
                t = figures[shape, max_jobs][index]
                median = statistics.median(t)
                cells.append(f"{median:>6.0f} / {p99(t):>6.0f} ({median / base:4.2f}x)")
            print(f"{max_jobs:>8}  " + "  ".join(f"{c:>22}" for c in cells))


async def measure_starvation(args: argparse.Namespace, databases: Databases) -> None:
    big, small = args.starve_big, args.starve_small
    async with service_on(databases, "starve") as service:
        await service.limit_put(KIND, Flow(fair=True))
        await fill(service, big, lambda i: "big")
        await fill(service, small * 10, lambda i: f"small{i % small}")
        first: dict[str, int] = {}
        started_small = leases = 0
        all_started = None
        while all_started is None and leases < big:
            (job,) = await service.lease("bench", 60.0, [KIND])
            leases += 1
            if job.group_key != "big":
                assert job.group_key is not None
                first.setdefault(job.group_key, leases)
                started_small += 1
                if started_small == small * 10:
                    all_started = leases
            await service.complete_many([Complete(job.id, job.lease_token, None)])
    print(
        f"\nstarvation: one key with {big:,} queued jobs (enqueued first), {small} keys with"
        f" 10 each, turns (fair), leases of one job"
    )
    print(f"  every small key's first job started after {max(first.values())} leases")
    print(f"  every small key's job ({small * 10}) started after {all_started} leases")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--max-jobs", default="1,10")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument(
        "--synchronous", default="OFF", help="SQLite's: OFF measures CPU, not fsync"
    )
    parser.add_argument(
        "--profile", default=None, help="cProfile each shape's leases: FILE.SHAPE.maxN"
    )
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--starve-big", type=int, default=100_000)
    parser.add_argument("--starve-small", type=int, default=50)
    parser.add_argument("--skip", default="", help="leases and/or starvation")
    args = parser.parse_args()
    args.max_jobs = [int(n) for n in args.max_jobs.split(",")]
    args.shapes = [s for s in args.shapes.split(",") if s]
    if "plain" not in args.shapes:
        parser.error("--shapes must include plain: the others are compared with it")
    configure_logging("console", "warning")
    print(f"load average before: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        databases = Databases(Path(tmp), args.postgres, args.synchronous)
        try:
            if "leases" not in args.skip:
                await measure_leases(args, databases)
            if "starvation" not in args.skip:
                await measure_starvation(args, databases)
        finally:
            databases.close()
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    asyncio.run(main())
