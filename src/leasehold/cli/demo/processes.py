"""The demo's child processes: one coordinator and its workers, started and always stopped.

Each child runs in a session of its own, so a Ctrl+C at the terminal reaches the demo
alone. The demo then stops them in order: workers first (they finish and report their
jobs while the coordinator can still answer), the coordinator last. Were the terminal's
SIGINT to reach every process at once, the coordinator could be gone before the workers
report, and they would keep trying until their leases ran out.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from leasehold.client import NO_RETRY, Client
from leasehold.errors import LeaseholdError

COORDINATOR_START_SECONDS = 30.0
# A worker's graceful stop takes at most its long poll plus its grace for running jobs.
WORKER_WAIT_SECONDS = 1.0
WORKER_GRACE_SECONDS = 5.0
STOP_SECONDS = WORKER_GRACE_SECONDS + WORKER_WAIT_SECONDS + 4.0
POLL_SECONDS = 0.05
LOG_TAIL_LINES = 15


class DemoError(Exception):
    """The demo cannot go on; the message says why."""


class Child:
    """One ``python -m leasehold ...`` process and its log file."""

    def __init__(self, name: str, args: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "leasehold", *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def running(self) -> bool:
        return self.proc.poll() is None

    def check(self) -> None:
        if not self.running():
            raise DemoError(
                f"the {self.name} exited with status {self.proc.returncode}:\n{self.log_tail()}"
            )

    def log_tail(self) -> str:
        lines = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(lines[-LOG_TAIL_LINES:])

    def terminate(self) -> None:
        if self.running():
            self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        if self.running():
            self.proc.kill()
        self.proc.wait()

    async def exited(self, deadline: float, hurry: asyncio.Event) -> None:
        """Wait for it to exit; SIGKILL at ``deadline`` (loop time) or once ``hurry`` is set."""
        loop = asyncio.get_running_loop()
        while self.running() and loop.time() < deadline and not hurry.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_SECONDS):
                    await hurry.wait()
        self.kill()


class DemoProcesses:
    """A temporary directory with the SQLite database and the logs, and the children.

    ``stop`` stops them in order; ``clean`` (always call it, in a ``finally``) kills any
    that are left and removes the directory.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.dir = Path(tempfile.mkdtemp(prefix="leasehold-demo-"))
        self.coordinator: Child | None = None
        self.workers: list[Child] = []

    async def start_coordinator(self) -> None:
        args = [
            "serve",
            *("--host", "127.0.0.1", "--port", str(self.port)),
            *("--database-url", f"sqlite:///{self.dir / 'demo.db'}"),
            # A process crash loses nothing with NORMAL; a power loss does not matter here.
            *("--sqlite-synchronous", "NORMAL"),
            # Quick retries, so that the flaky jobs finish within the run.
            *("--retry-base-seconds", "0.2", "--retry-max-seconds", "2"),
            *("--log-format", "json", "--log-level", "warning"),
        ]
        self.coordinator = Child("coordinator", args, self.dir / "coordinator.log")
        await self._ready(self.coordinator)

    async def _ready(self, coordinator: Child) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + COORDINATOR_START_SECONDS
        async with Client(self.url, retry=NO_RETRY, timeout_seconds=2.0) as client:
            while True:
                coordinator.check()
                try:
                    await client.stats()
                    return
                except LeaseholdError:
                    if loop.time() > deadline:
                        raise DemoError(
                            f"the coordinator did not answer within {COORDINATOR_START_SECONDS:g}"
                            f" s:\n{coordinator.log_tail()}"
                        ) from None
                    await asyncio.sleep(0.1)

    def start_workers(self, count: int, concurrency: int) -> None:
        for n in range(1, count + 1):
            args = [
                "worker",
                "leasehold.cli.demo.handlers:registry",
                *("--url", self.url, "--worker-id", f"demo-worker-{n}"),
                *("--concurrency", str(concurrency)),
                *("--wait-seconds", f"{WORKER_WAIT_SECONDS:g}"),
                *("--grace-seconds", f"{WORKER_GRACE_SECONDS:g}"),
                *("--log-format", "json", "--log-level", "warning"),
            ]
            self.workers.append(Child(f"worker {n}", args, self.dir / f"worker-{n}.log"))

    def check(self) -> None:
        """Raise ``DemoError`` if any child has exited."""
        for child in self.children():
            child.check()

    def children(self) -> list[Child]:
        return [*self.workers, *([self.coordinator] if self.coordinator else [])]

    async def stop(self, hurry: asyncio.Event) -> None:
        """Workers, then the coordinator: SIGTERM, and SIGKILL for any that outstay
        ``STOP_SECONDS``, or at once when ``hurry`` is set (another Ctrl+C)."""
        loop = asyncio.get_running_loop()
        for group in (self.workers, [self.coordinator] if self.coordinator else []):
            for child in group:
                child.terminate()
            deadline = loop.time() + STOP_SECONDS
            for child in group:
                await child.exited(deadline, hurry)

    def clean(self) -> None:
        """Kill whatever still runs (after an error, say) and remove the directory."""
        for child in self.children():
            child.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
