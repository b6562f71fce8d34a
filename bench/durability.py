"""What synchronous=FULL costs against NORMAL on the embedded SQLite store, in one run.

    python bench/durability.py [--dir DIR] [--ops 400] [--clients 32] [--rounds 3]

For each mode, on a fresh database file in DIR (default: a temporary directory under the
current one, so on the disk a real database would use), it times through the JobService
(the store and the rules, no HTTP):

- enqueue: one job per transaction, by 1 client and by ``--clients`` concurrent ones;
- lease+complete: lease one job, then complete it, by 1 client and by ``--clients``.

One client pays one commit per operation; concurrent clients share commits (group commit),
which is where FULL's fsync is amortised. Prints operations per second (the median of
``--rounds`` rounds) and NORMAL's speed-up. Both modes survive a process crash (WAL); only
FULL keeps every acknowledged write through a power loss or an OS crash.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from leasehold.cli.logs import configure_logging
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.sqlite.driver import SqliteStore

MODES = ("FULL", "NORMAL")


async def rate(clients: int, ops: int, one: Callable[[], Awaitable[None]]) -> float:
    """Operations per second with ``clients`` tasks sharing ``ops`` operations."""

    async def client(n: int) -> None:
        for _ in range(n):
            await one()

    share = [ops // clients + (1 if i < ops % clients else 0) for i in range(clients)]
    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in share))
    return ops / (time.perf_counter() - started)


async def measure(path: Path, mode: str, ops: int, clients: int) -> dict[str, float]:
    store = SqliteStore(str(path), synchronous=mode)
    await store.open()
    service = JobService(store)

    async def enqueue() -> None:
        await service.enqueue(Enqueue("bench", {"n": 1}))

    async def lease_and_complete() -> None:
        (job,) = await service.lease("bench", 60.0)
        await service.complete(job.id, job.lease_token, None)

    try:
        figures = {}
        for label, n in (("1 client", 1), (f"{clients} clients", clients)):
            figures[f"enqueue, {label}"] = await rate(n, ops, enqueue)
            # Enough queued for the lease+complete run (each enqueue round adds ``ops``).
            figures[f"lease+complete, {label}"] = await rate(n, ops, lease_and_complete)
        return figures
    finally:
        await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--ops", type=int, default=400)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    configure_logging("json", "warning")
    results: dict[str, dict[str, list[float]]] = {mode: {} for mode in MODES}
    with tempfile.TemporaryDirectory(dir=args.dir or Path.cwd()) as tmp:
        for round_ in range(args.rounds):
            for mode in MODES:  # interleaved, so drift in the machine's load hits both
                path = Path(tmp) / f"{mode}-{round_}.db"
                for name, value in (await measure(path, mode, args.ops, args.clients)).items():
                    results[mode].setdefault(name, []).append(value)
    print(
        f"{'ops/s (median of ' + str(args.rounds) + ')':<32}{'FULL':>10}{'NORMAL':>10}  NORMAL/FULL"
    )
    for name in results["FULL"]:
        full = statistics.median(results["FULL"][name])
        normal = statistics.median(results["NORMAL"][name])
        print(f"{name:<32}{full:>10.0f}{normal:>10.0f}  {normal / full:>10.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
