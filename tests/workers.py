"""Real `leasehold worker` processes, their JSON logs, and the handlers' ledger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fixtures.handlers import LEDGER_ENV
from tests.process import wait_until

REPO = Path(__file__).resolve().parent.parent
COORDINATOR_ARGS = (
    "--reap-interval-seconds",
    "0.1",
    "--retry-base-seconds",
    "0.05",
    "--retry-max-seconds",
    "1",
    # Safe against a process crash, which is all these tests inflict; quicker on a shared box.
    "--sqlite-synchronous",
    "NORMAL",
)

Event = dict[str, Any]


class WorkerProcess:
    """``python -m leasehold worker tests.fixtures.handlers:registry`` in a child process."""

    def __init__(
        self, url: str, log_dir: Path, ledger: Path, args: Sequence[str] = (), name: str = "w"
    ) -> None:
        self.log_path = log_dir / f"worker-{name}.log"
        self.name = name
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "leasehold",
                "worker",
                "tests.fixtures.handlers:registry",
                "--url",
                url,
                "--worker-id",
                name,
                "--log-format",
                "json",
                *args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1", LEDGER_ENV: str(ledger)},
        )
        log.close()

    def events(self, name: str | None = None, **fields: Any) -> list[Event]:
        found = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a traceback or anything else that is not a log event
            if (name is None or event.get("event") == name) and all(
                event.get(k) == v for k, v in fields.items()
            ):
                found.append(event)
        return found

    def wait_for(self, name: str, timeout: float = 20.0, **fields: Any) -> Event:
        wait_until(lambda: self.events(name, **fields), timeout, what=f"{self.name}: {name}")
        return self.events(name, **fields)[0]

    def wait_started(self, timeout: float = 30.0) -> WorkerProcess:
        self.wait_for("worker.started", timeout)
        return self

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass(frozen=True)
class Entry:
    event: str
    job_id: int
    token: int
    pid: int


class Ledger:
    """What the handlers recorded, one entry per line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self, event: str | None = None) -> list[Entry]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            name, job_id, token, pid = line.split()
            if event is None or name == event:
                out.append(Entry(name, int(job_id), int(token), int(pid)))
        return out

    def has(self, event: str, job_id: int, token: int | None = None) -> bool:
        return any(
            e.job_id == job_id and (token is None or e.token == token) for e in self.entries(event)
        )

    def successes(self) -> Counter[tuple[int, int]]:
        """How often each (job id, token) recorded success."""
        return Counter((e.job_id, e.token) for e in self.entries("ok"))


def poll(predicate: Callable[[], object], timeout: float = 20.0, what: str = "") -> None:
    wait_until(predicate, timeout, what=what)
