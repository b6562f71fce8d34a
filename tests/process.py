"""Real coordinator processes for the tests, on free loopback ports."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def terminate(process: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout``; its exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    return process.returncode


def wait_until(predicate: object, timeout: float, interval: float = 0.02, what: str = "") -> None:
    """Poll ``predicate()`` until it is true, failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():  # type: ignore[operator]
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


class Coordinator:
    """``leasehold serve`` in a child process; restartable on the same database."""

    def __init__(
        self,
        database_url: str,
        log_dir: Path,
        extra_args: Sequence[str] = (),
        port: int = 0,
        env: Mapping[str, str] | None = None,
        preexec: Callable[[], None] | None = None,
        program: Sequence[str] = ("-m", "leasehold"),
    ) -> None:
        self.database_url = database_url
        self.program = list(program)  # what the interpreter runs: leasehold, or a stand-in
        self.preexec = preexec  # run in the child before it starts (e.g. a lower rlimit)
        self.env = dict(env or {})
        self.log_dir = log_dir
        self.extra_args = list(extra_args)
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"coordinator-{self.port}-{self.starts}.log"

    def start(self) -> Coordinator:
        for _ in range(5):
            if not self.port or self.starts == 0:
                self.port = self.port or free_port()
            self.starts += 1
            log = self.log_path.open("wb")
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    *self.program,
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--database-url",
                    self.database_url,
                    "--log-format",
                    "json",
                    # Tests use leases of a fraction of a second to see expiry quickly.
                    "--min-lease-seconds",
                    "0.01",
                    *self.extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
                preexec_fn=self.preexec,
            )
            log.close()
            if self._wait_healthy():
                return self
            if b"address already in use" in self.log_path.read_bytes().lower():
                self.port = free_port()
                continue
            break
        raise RuntimeError(f"coordinator did not start:\n{self.log_path.read_text()[-4000:]}")

    def _wait_healthy(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.02)
        return False

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no shutdown of any kind."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None:
            return 0
        return terminate(self.proc, timeout)

    def restart(self, *, kill: bool = True) -> Coordinator:
        """Stop (SIGKILL by default) and start again on the same port and database."""
        if kill:
            self.kill()
        else:
            self.stop()
        return self.start()

    def logs(self) -> str:
        return "".join(
            p.read_text(errors="replace")
            for p in sorted(self.log_dir.glob(f"coordinator-{self.port}-*.log"))
        )


@contextmanager
def sqlite_coordinator(folder: Path, extra_args: Sequence[str] = ()) -> Iterator[Coordinator]:
    """A coordinator on a new SQLite file in ``folder``, SIGKILLed when the block ends."""
    coordinator = Coordinator(f"sqlite:///{folder / 'leasehold.db'}", folder, extra_args).start()
    try:
        yield coordinator
    finally:
        coordinator.kill()
