"""The demo's child processes: one coordinator and its workers, started and always stopped.

Each child runs in a session of its own, so a Ctrl+C at the terminal reaches the demo
alone. The demo then stops them in order: workers first (they finish and report their
jobs while the coordinator can still answer), the coordinator last. Were the terminal's
SIGINT to reach every process at once, the coordinator could be gone before the workers
report, and they would keep trying until their leases ran out.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, TracebackType

from leasehold.client import NO_RETRY, SyncClient
from leasehold.errors import LeaseholdError

COORDINATOR_START_SECONDS = 30.0
# A worker's graceful stop takes at most its long poll plus its grace for running jobs.
WORKER_WAIT_SECONDS = 1.0
WORKER_GRACE_SECONDS = 5.0
STOP_SECONDS = WORKER_GRACE_SECONDS + WORKER_WAIT_SECONDS + 4.0
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
        if self.running():
            self.proc.kill()

    def wait(self, deadline: float) -> None:
        """Until it exits, or SIGKILL at ``deadline`` (monotonic)."""
        try:
            self.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class DemoProcesses:
    """A temporary directory with the SQLite database and the logs, and the children.

    Use as a context manager: leaving it stops every child and removes the directory,
    whatever the reason for leaving.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.dir = Path(tempfile.mkdtemp(prefix="leasehold-demo-"))
        self.coordinator: Child | None = None
        self.workers: list[Child] = []

    def __enter__(self) -> DemoProcesses:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start_coordinator(self) -> None:
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
        self._wait_ready()

    def _wait_ready(self) -> None:
        assert self.coordinator is not None
        deadline = time.monotonic() + COORDINATOR_START_SECONDS
        with SyncClient(self.url, retry=NO_RETRY, timeout_seconds=2.0) as client:
            while True:
                self.coordinator.check()
                try:
                    client.stats()
                    return
                except LeaseholdError:
                    if time.monotonic() > deadline:
                        raise DemoError(
                            f"the coordinator did not answer within {COORDINATOR_START_SECONDS:g}"
                            f" s:\n{self.coordinator.log_tail()}"
                        ) from None
                    time.sleep(0.1)

    def start_workers(self, count: int, concurrency: int) -> None:
        for n in range(1, count + 1):
            args = [
                "worker",
                "leasehold.demo.handlers:registry",
                *("--url", self.url, "--worker-id", f"demo-worker-{n}"),
                *("--concurrency", str(concurrency)),
                *("--wait-seconds", f"{WORKER_WAIT_SECONDS:g}"),
                *("--grace-seconds", f"{WORKER_GRACE_SECONDS:g}"),
                *("--log-format", "json", "--log-level", "warning"),
            ]
            name = f"worker {n}"
            self.workers.append(Child(name, args, self.dir / f"worker-{n}.log"))

    def check(self) -> None:
        """Raise ``DemoError`` if any child has exited."""
        for child in self.children():
            child.check()

    def children(self) -> list[Child]:
        return [*self.workers, *([self.coordinator] if self.coordinator else [])]

    def stop(self) -> None:
        """Workers, then the coordinator: SIGTERM, and SIGKILL for any that outstay
        ``STOP_SECONDS``. Another Ctrl+C (or SIGTERM) while stopping kills them at once."""
        previous = {s: signal.signal(s, self._kill_all) for s in STOP_SIGNALS}
        try:
            for group in (self.workers, [self.coordinator] if self.coordinator else []):
                for child in group:
                    child.terminate()
                deadline = time.monotonic() + STOP_SECONDS
                for child in group:
                    child.wait(deadline)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            shutil.rmtree(self.dir, ignore_errors=True)

    def _kill_all(self, signum: int, frame: FrameType | None) -> None:
        for child in self.children():
            child.kill()


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


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
