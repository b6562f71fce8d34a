"""The chaos run's worker processes: the Python worker running chaoslib.handlers, and the
continuation worker (chaoslib/joiner.py), each replaced when it is killed or dies."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # scripts/: the processes import chaoslib


class Workers:
    """The worker processes and the continuation workers, replaced as they die."""

    def __init__(self, args: argparse.Namespace, url: str, fenced_db: Path, logs: Path) -> None:
        self.args, self.url, self.fenced_db, self.logs = args, url, fenced_db, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.paused: set[str] = set()
        self.gone: set[str] = set()  # dead and replaced
        self.started = 0

    def start(self, joiner: bool = False) -> str:
        self.started += 1
        worker_id = f"{'j' if joiner else 'w'}{self.started}"
        command = (
            ["-m", "chaoslib.joiner", self.url, worker_id, str(self.args.lease_seconds)]
            if joiner
            else [
                "-m",
                "leasehold",
                "worker",
                "chaoslib.handlers:registry",
                "--url",
                self.url,
                "--concurrency",
                str(self.args.concurrency),
                "--lease-seconds",
                str(self.args.lease_seconds),
                "--worker-id",
                worker_id,
            ]
        )
        log = (self.logs / f"{worker_id}.log").open("wb")
        self.procs[worker_id] = subprocess.Popen(
            [sys.executable, *command],
            cwd=HERE,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                "LEASEHOLD_CHAOS_DB": str(self.fenced_db),
                "LEASEHOLD_CHAOS_URL": self.url,
                "LEASEHOLD_LOG_LEVEL": "warning",
            },
        )
        log.close()
        return worker_id

    def running(self) -> list[str]:
        return [w for w, p in self.procs.items() if p.poll() is None and w not in self.paused]

    def kill(self, worker_id: str) -> None:
        self.procs[worker_id].kill()
        self.procs[worker_id].wait()
        self.paused.discard(worker_id)
        self.gone.add(worker_id)
        self.start(joiner=worker_id.startswith("j"))

    def revive(self) -> int:
        """Replace each process that died on its own (the workflows' handlers kill theirs
        with SIGKILL on purpose); how many were."""
        dead = [w for w, p in self.procs.items() if p.poll() is not None and w not in self.gone]
        for worker_id in dead:
            self.gone.add(worker_id)
            self.start(joiner=worker_id.startswith("j"))
        return len(dead)

    def stop_all(self) -> None:
        for worker_id in list(self.paused):
            self.procs[worker_id].send_signal(signal.SIGCONT)
        self.paused.clear()
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def keep_alive(workers: Workers, revived: Counter[str]) -> None:
    while True:
        revived["processes that killed themselves (replaced)"] += workers.revive()
        await asyncio.sleep(0.2)
