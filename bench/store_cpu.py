"""CPU per job of the three steps every plain job takes, through the JobService (the store
and the rules, no HTTP), on SQLite with ``synchronous=OFF``: the figures to compare two
versions of the code by, run in each checkout in turn.

    .venv/bin/python -m bench.store_cpu [--rounds 20] [--profile FILE]

Each round enqueues 1,000 plain jobs in one ``enqueue_many``, then leases and completes
them 100 at a time (``lease(max_jobs=100)``, ``complete_many``). Prints the median over
the rounds of the process's CPU (the store's writer thread included) per job for each
step. ``--profile FILE`` runs it under py-spy instead (collapsed stacks for
``bench.profile_summary``; py-spy is in the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from leasehold.cli.logs import configure_logging
from leasehold.coordinator.service.job_service import JobService
from leasehold.coordinator.service.requests import Complete, Enqueue
from leasehold.coordinator.store.open import open_store


async def measure(rounds: int) -> dict[str, float]:
    steps: dict[str, list[float]] = {"enqueue": [], "lease": [], "complete": []}
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'cpu.db'}", synchronous="OFF")
        await store.open()
        service = JobService(store)
        try:
            for _ in range(rounds):
                requests = [Enqueue("bench", None) for _ in range(1000)]
                started = time.process_time()
                await service.enqueue_many(requests)
                steps["enqueue"].append((time.process_time() - started) / 1000)
                for _ in range(10):
                    started = time.process_time()
                    jobs = await service.lease("bench", 60.0, ["bench"], max_jobs=100)
                    steps["lease"].append((time.process_time() - started) / len(jobs))
                    started = time.process_time()
                    await service.complete_many([Complete(j.id, j.lease_token, None) for j in jobs])
                    steps["complete"].append((time.process_time() - started) / len(jobs))
        finally:
            await service.close()
            await store.close()
    return {step: statistics.median(times) * 1e6 for step, times in steps.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--profile", type=Path, default=None)
    args = parser.parse_args()
    if args.profile is not None:
        spy = Path(sys.executable).parent / "py-spy"
        command = [sys.executable, "-m", "bench.store_cpu", "--rounds", str(args.rounds)]
        subprocess.run(
            [
                str(spy),
                "record",
                "--rate",
                "500",
                "--format",
                "raw",
                "-o",
                str(args.profile),
                "--",
                *command,
            ],
            check=True,
        )
        return
    configure_logging("console", "warning")
    figures = asyncio.run(measure(args.rounds))
    print(
        "µs of CPU per job, median of rounds:  "
        + "   ".join(f"{step} {us:.1f}" for step, us in figures.items())
        + f"   total {sum(figures.values()):.1f}"
    )


if __name__ == "__main__":
    main()
