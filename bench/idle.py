"""What an idle system costs: coordinator and worker CPU while long polls wait.

    .venv/bin/python -m bench.idle [--workers 4] [--seconds 60]

One coordinator (SQLite, ``synchronous=FULL``) and ``--workers`` worker processes
long-polling with ``--wait-seconds 30`` and nothing to do. After they have started, it reads
their CPU time from /proc, waits ``--seconds``, and prints what each side used meanwhile.
Run it with ``--workers 0`` too: the difference is what the waiting polls cost.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.harness import Proc, cpu_seconds, load_average, start_coordinator, start_leasehold_worker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    print(f"load average before: {load_average()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="leasehold-bench-") as tmp:
        coordinator, url = start_coordinator(Path(tmp), "FULL")
        workers: list[Proc] = []
        try:
            for n in range(args.workers):
                worker = start_leasehold_worker(f"w{n}", url, Path(tmp), {}, "--wait-seconds", "30")
                workers.append(worker)
            for worker in workers:
                worker.wait_log("worker.started")
            time.sleep(2.0)  # past start-up
            pids = [w.pid for w in workers]
            coordinator_before, workers_before = cpu_seconds([coordinator.pid]), cpu_seconds(pids)
            started = time.monotonic()
            time.sleep(args.seconds)
            elapsed = time.monotonic() - started
            coordinator_used = cpu_seconds([coordinator.pid]) - coordinator_before
            workers_used = cpu_seconds(pids) - workers_before
        finally:
            for worker in workers:
                worker.stop()
            coordinator.stop()
    print(
        f"idle {elapsed:.0f} s with {args.workers} long-polling workers: coordinator CPU "
        f"{coordinator_used:.2f} s, workers CPU {workers_used:.2f} s (together)"
    )


if __name__ == "__main__":
    main()
