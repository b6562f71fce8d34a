"""The processes of a certification run: a coordinator on a temporary SQLite file, and the
worker commands under test, each started with the environment PROTOCOL.md §11 names."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from leasehold.conformance.workload import KINDS

LEASE_SECONDS = 2.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_coordinator(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``leasehold serve`` with quick reaper and retry timings; its URL once healthy."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (folder / "coordinator.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "leasehold", "serve", "--port", str(port),
         "--database-url", f"sqlite:///{folder / 'certify.db'}", "--log-format", "json",
         "--reap-interval-seconds", "0.2", "--retry-base-seconds", "0.05",
         "--retry-max-seconds", "0.5", "--min-lease-seconds", "0.5"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    log.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as answer:
                if answer.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"the coordinator did not start; see {folder / 'coordinator.log'}")


@dataclass
class Worker:
    worker_id: str
    command: list[str]
    proc: subprocess.Popen[bytes]
    exit_code: int | None = None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass
class Fleet:
    """The worker processes, each with its own id (LEASEHOLD_WORKER_ID)."""

    url: str
    folder: Path
    kinds: tuple[str, ...] = KINDS
    workers: list[Worker] = field(default_factory=list)

    def start(self, command: list[str]) -> Worker:
        worker_id = f"cert-{len(self.workers) + 1}"
        env = {
            **os.environ,
            "LEASEHOLD_URL": self.url,
            "LEASEHOLD_KINDS": ",".join(self.kinds),
            "LEASEHOLD_WORKER_ID": worker_id,
            "LEASEHOLD_LEASE_SECONDS": str(LEASE_SECONDS),
            "LEASEHOLD_CONCURRENCY": "4",
        }
        log = (self.folder / f"{worker_id}.log").open("wb")
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        worker = Worker(worker_id, command, proc)
        self.workers.append(worker)
        return worker

    def signal(self, worker: Worker, sig: int) -> None:
        if worker.proc.poll() is None:
            worker.proc.send_signal(sig)

    @property
    def alive(self) -> list[Worker]:
        return [w for w in self.workers if w.alive]

    def terminate_all(self) -> None:
        """SIGTERM (a graceful stop) to every worker still running."""
        for worker in self.workers:
            self.signal(worker, signal.SIGCONT)
            self.signal(worker, signal.SIGTERM)

    def wait_all(self, timeout: float = 15.0) -> None:
        """Each worker's exit status, SIGKILLing whatever is left after ``timeout``."""
        deadline = time.monotonic() + timeout
        for worker in self.workers:
            if worker.exit_code is not None:
                continue
            try:
                worker.exit_code = worker.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                worker.exit_code = worker.proc.wait()

    def stop_all(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL whatever is left after ``timeout``."""
        self.terminate_all()
        self.wait_all(timeout)
