"""Lease and complete cost as the queue grows: 10k, 100k and 1M jobs already queued.

    python bench/scale.py [--sizes 10000,100000,1000000] [--samples 2000]
                          [--database-url sqlite:///PATH | postgresql://...]

For each size it fills a fresh database with that many queued jobs (in batches of 1,000),
then times ``samples`` lease+complete cycles through the JobService (the store and the rules,
no HTTP), and GET /stats' computation. Prints microseconds per operation and the ratio to the
smallest size. The cost must stay flat: leasing reads the head of an index.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from leasehold.core.service import Complete, Enqueue, JobService
from leasehold.logs import configure_logging
from leasehold.store.open import open_store


async def measure(url: str, size: int, samples: int) -> dict[str, float]:
    store = open_store(url)
    await store.open()
    service = JobService(store)
    try:
        batch = [Enqueue("bench", {"n": i}) for i in range(1000)]
        for _ in range(size // 1000):
            await store.job_insert_many([e.new_job() for e in batch])
        lease_us, complete_us = [], []
        for _ in range(samples):
            t0 = time.perf_counter()
            (job,) = await service.lease("bench", 60.0)
            t1 = time.perf_counter()
            await service.complete_many([Complete(job.id, job.lease_token, None)])
            t2 = time.perf_counter()
            lease_us.append((t1 - t0) * 1e6)
            complete_us.append((t2 - t1) * 1e6)
        stats_us = []
        for _ in range(20):
            t0 = time.perf_counter()
            await service.stats()
            stats_us.append((time.perf_counter() - t0) * 1e6)
        return {
            "lease_us": statistics.median(lease_us),
            "complete_us": statistics.median(complete_us),
            "stats_us": statistics.median(stats_us),
        }
    finally:
        await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    args = parser.parse_args()
    configure_logging("console", "warning")
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            url = args.database_url or f"sqlite:///{Path(tmp) / f'scale-{size}.db'}"
            started = time.perf_counter()
            results[size] = await measure(url, size, args.samples)
            print(f"size {size:>9,}: measured in {time.perf_counter() - started:.1f}s", flush=True)
    base = results[sizes[0]]
    print(
        f"\n{'queued jobs':>12} {'lease µs':>10} {'complete µs':>12} {'/stats µs':>10}  ratio(lease)"
    )
    for size in sizes:
        r = results[size]
        print(
            f"{size:>12,} {r['lease_us']:>10.0f} {r['complete_us']:>12.0f} {r['stats_us']:>10.0f}"
            f"  {r['lease_us'] / base['lease_us']:.2f}x"
        )


if __name__ == "__main__":
    asyncio.run(main())
