"""Processes for the benchmarks: a coordinator, leasehold workers, a huey consumer; their
CPU time read from /proc, and SIGSTOP / SIGCONT to start every worker at the same moment."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def wait_until(predicate: object, timeout: float, what: str, interval: float = 0.01) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class Proc:
    """A child process with its output in a log file."""

    def __init__(self, name: str, args: Sequence[str], log_dir: Path, env: Mapping[str, str]):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        with self.log_path.open("wb") as log:
            self.popen = subprocess.Popen(
                list(args),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO), **env},
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_log(self, text: str, timeout: float = 30.0) -> None:
        def seen() -> bool:
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.name} exited:\n{self.log()[-3000:]}")
            return text in self.log()

        wait_until(seen, timeout, f"{self.name} to log {text!r}", interval=0.05)

    def tree(self) -> list[int]:
        """This process and its descendants (huey's worker processes)."""
        return process_tree(self.pid)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)


def process_tree(root: int) -> list[int]:
    """A process and its descendants."""
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            children = (task / "children").read_text().split()
            pending.extend(int(c) for c in children)
    return found


def cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU seconds these live processes have used so far."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # gone meanwhile (a database server's backend for a closed connection)
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return total / _TICKS


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        os.kill(pid, sig)


def start_coordinator(
    log_dir: Path,
    synchronous: str,
    log_level: str = "info",
    database_url: str | None = None,
    extra: Sequence[str] = (),
) -> tuple[Proc, str]:
    """``leasehold serve`` on a free port: on SQLite in ``log_dir`` unless ``database_url``
    names another database (PostgreSQL); ``extra``: more ``serve`` options."""
    port = free_port()
    proc = Proc(
        "coordinator",
        [
            sys.executable,
            "-m",
            "leasehold",
            "serve",
            "--port",
            str(port),
            "--database-url",
            database_url or f"sqlite:///{log_dir / 'leasehold.db'}",
            "--sqlite-synchronous",
            synchronous,
            "--log-format",
            "json",
            "--log-level",
            log_level,
            *extra,
        ],
        log_dir,
        {},
    )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.popen.poll() is not None:
            raise RuntimeError(f"the coordinator exited:\n{proc.log()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    wait_until(healthy, 30, "the coordinator")
    return proc, url


def start_leasehold_worker(
    name: str, url: str, log_dir: Path, env: Mapping[str, str], *args: str
) -> Proc:
    return Proc(
        name,
        [
            sys.executable,
            "-m",
            "leasehold",
            "worker",
            "bench.apps:registry",
            "--url",
            url,
            "--worker-id",
            name,
            "--log-format",
            "json",
            *args,
        ],
        log_dir,
        env,
    )


def start_huey_consumer(log_dir: Path, env: Mapping[str, str], *args: str) -> Proc:
    consumer = Path(sys.executable).parent / "huey_consumer"
    return Proc("huey", [str(consumer), "bench.hueyapp.huey", *args], log_dir, env)
