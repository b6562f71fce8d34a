"""Lease and complete cost as the queue grows: 10k, 100k and 1M jobs already queued.

    python bench/scale.py [--sizes 10000,100000,1000000] [--samples 2000]
                          [--shapes any,kinds,queues,both,limited]
                          [--database-url sqlite:///PATH | postgresql://...]

For each size it fills a fresh database with that many queued jobs (in batches of 1,000;
4 kinds, 4 queues, priorities -5..5 mixed), then, for each lease shape, times ``samples``
lease+complete cycles through the JobService (the store and the rules, no HTTP):

- ``any``: no narrowing (the plain path);
- ``kinds``: two of the kinds; ``queues``: one queue; ``both``: two kinds in two queues;
- ``limited``: no narrowing, with a concurrency limit set on one kind (the capped path).

It also times enqueueing (per job, in the fill's batches) and GET /stats' computation.
Prints microseconds per operation and the ratio to the smallest size. The cost must stay
flat: leasing reads the head of an index per kind / queue.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from leasehold.cli.logs import configure_logging
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Complete, Enqueue
from leasehold.coordinator.store.contract import Flow
from leasehold.coordinator.store.open import open_store

SHAPES = {
    "any": {},
    "kinds": {"kinds": ["k1", "k2"]},
    "queues": {"queues": ["q3"]},
    "both": {"kinds": ["k0", "k3"], "queues": ["q0", "q2"]},
    "limited": {},
}


def mixed(i: int) -> Enqueue:
    return Enqueue(f"k{i % 4}", {"n": i}, priority=(i * 7) % 11 - 5, queue=f"q{(i // 4) % 4}")


async def measure(url: str, size: int, samples: int, shapes: list[str]) -> dict[str, float]:
    store = open_store(url)
    await store.open()
    service = JobService(store)
    try:
        enqueue_us = []
        for start in range(0, size, 1000):
            batch = [mixed(i).new_job() for i in range(start, start + 1000)]
            t0 = time.perf_counter()
            await store.job_insert_many(batch)
            enqueue_us.append((time.perf_counter() - t0) * 1e6 / len(batch))
        figures = {"enqueue_us": statistics.median(enqueue_us)}
        for shape in shapes:
            if shape == "limited":
                await service.limit_put(
                    "k1", Flow(1_000_000)
                )  # never reached: the cost of checking
            figures[shape] = await cycles(service, samples, **SHAPES[shape])
        stats_us = []
        for _ in range(20):
            t0 = time.perf_counter()
            await service.stats()
            stats_us.append((time.perf_counter() - t0) * 1e6)
        figures["stats_us"] = statistics.median(stats_us)
        return figures
    finally:
        await store.close()


async def cycles(service: JobService, samples: int, **narrow: list[str]) -> float:
    """Median microseconds of one lease (each then completed, untimed).

    First tops the queue up with ``samples`` jobs this shape can lease, so that a narrow
    shape never runs dry at the smallest size and the queue stays at its size.
    """
    kind, queue = narrow.get("kinds", ["k0"])[0], narrow.get("queues", ["q0"])[0]
    for start in range(0, samples, 1000):
        top_up = [
            Enqueue(kind, {"n": i}, priority=(i * 7) % 11 - 5, queue=queue).new_job()
            for i in range(start, min(samples, start + 1000))
        ]
        await service.store.job_insert_many(top_up)
    lease_us = []
    for _ in range(samples):
        t0 = time.perf_counter()
        (job,) = await service.lease(
            "bench", 60.0, narrow.get("kinds"), queues=narrow.get("queues")
        )
        lease_us.append((time.perf_counter() - t0) * 1e6)
        await service.complete_many([Complete(job.id, job.lease_token, None)])
    return statistics.median(lease_us)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    args = parser.parse_args()
    configure_logging("console", "warning")
    sizes = [int(s) for s in args.sizes.split(",")]
    shapes = [s for s in args.shapes.split(",") if s]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            url = args.database_url or f"sqlite:///{Path(tmp) / f'scale-{size}.db'}"
            started = time.perf_counter()
            results[size] = await measure(url, size, args.samples, shapes)
            print(f"size {size:>9,}: measured in {time.perf_counter() - started:.1f}s", flush=True)
    base = results[sizes[0]]
    columns = ["enqueue_us", *shapes, "stats_us"]
    print("\nmedian µs per operation (lease shapes: one lease; enqueue: per job in batches)")
    print(f"{'queued jobs':>12} " + " ".join(f"{c.removesuffix('_us'):>9}" for c in columns))
    for size in sizes:
        r = results[size]
        print(f"{size:>12,} " + " ".join(f"{r[c]:>9.0f}" for c in columns))
    worst = max(results[sizes[-1]][s] / base[s] for s in shapes) if shapes else 0.0
    print(f"\nlargest lease ratio, {sizes[-1]:,} vs {sizes[0]:,} queued: {worst:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
