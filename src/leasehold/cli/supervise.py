"""``leasehold worker --processes N`` and ``--reload``: worker processes under this one.

Each child is an ordinary ``leasehold worker`` (``python -m leasehold worker APP``), told
its settings through the environment (``LEASEHOLD_*``, so a token never shows on a command
line) and started in a process group of its own, so that a terminal's Ctrl+C reaches only
this process, which passes each stop signal on exactly once: the first stops the children
gracefully (running jobs finish), a second forces them, as for one worker. A child whose
supervisor is gone (killed with SIGKILL, say) stops by itself (``WorkerSettings.parent_pid``).

- ``--processes N``: N workers, for handlers that need more than one CPU. A child that
  exits on its own (a crash, a fatal refusal) stops the others, and this command exits
  with its status: whatever runs it (systemd, a container) sees the failure and restarts
  the whole, rather than a worker that quietly runs at N - 1.
- ``--reload`` (development): the children are started again, gracefully, whenever a
  ``.py`` file under the current directory changes; a child that exits on its own (an
  import error in the code being edited) is started again at the next change.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import structlog

log = structlog.get_logger("leasehold.worker")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class Supervisor:
    """Runs ``processes`` copies of ``command`` until stopped (see the module docstring).

    ``environment(n)`` is child ``n``'s environment (1-based). ``watch`` is the directory
    whose ``.py`` files restart the children when they change (None: no reload).
    """

    command: Sequence[str]
    environment: Callable[[int], dict[str, str]]
    processes: int = 1
    watch: Path | None = None
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _wake: threading.Event = field(default_factory=threading.Event)
    _signals: list[int] = field(default_factory=list)
    _changed: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> int:
        """Until stopped; the exit status (see ``exit_status``)."""
        previous = {s: signal.signal(s, self._on_signal) for s in (*STOP_SIGNALS, signal.SIGCHLD)}
        stop_watching = threading.Event()
        watcher = None
        if self.watch is not None:
            watcher = threading.Thread(
                target=self._watch, args=(stop_watching,), name="leasehold-reload", daemon=True
            )
            watcher.start()
        log.info(
            "worker.supervising",
            processes=self.processes,
            reload=str(self.watch) if self.watch else None,
        )
        try:
            self._start_all()
            return self._loop()
        finally:
            stop_watching.set()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self._kill_all()

    def _loop(self) -> int:
        forwarded = 0
        while True:
            self._wake.wait()
            self._wake.clear()
            while forwarded < len(self._signals):  # each signal passed on once
                self._send_all(self._signals[forwarded])
                forwarded += 1
            codes = [child.poll() for child in self.children]
            if self._signals:
                if all(code is not None for code in codes):
                    return exit_status(codes)
                continue
            ended = [
                (c, code) for c, code in zip(self.children, codes, strict=True) if code is not None
            ]
            if self._take_changes():
                self._restart_all()
                continue
            if ended and self.watch is None:
                child, code = ended[0]
                log.error("worker.process_exited", pid=child.pid, exit_code=code)
                self._send_all(signal.SIGTERM)
                for other in self.children:
                    other.wait()
                return exit_status([code])
            for child, code in ended:
                log.warning(
                    "worker.process_exited", pid=child.pid, exit_code=code, restart="on change"
                )
                self.children.remove(child)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum != signal.SIGCHLD:
            self._signals.append(signum)
        self._wake.set()

    def _start_all(self) -> None:
        self.children = [self._start(n) for n in range(1, self.processes + 1)]

    def _start(self, n: int) -> subprocess.Popen[bytes]:
        # A process group of its own: a terminal's Ctrl+C goes to this process alone, which
        # passes it on once (else each child would see it twice: a forced stop).
        child = subprocess.Popen(list(self.command), env=self.environment(n), process_group=0)
        log.info("worker.process_started", pid=child.pid, process=n)
        return child

    def _send_all(self, signum: int) -> None:
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signum)

    def _restart_all(self) -> None:
        """Stop every child gracefully, then start them again (a reload)."""
        self._send_all(signal.SIGTERM)
        for child in self.children:
            child.wait()
        self._start_all()

    def _kill_all(self) -> None:
        """On the way out: no child outlives its supervisor."""
        for child in self.children:
            if child.poll() is None:
                child.kill()
                child.wait()

    def _take_changes(self) -> bool:
        with self._lock:
            changed, self._changed[:] = list(self._changed), []
        if changed:
            log.info("worker.reloading", changed=changed[:10])
        return bool(changed)

    def _watch(self, stop: threading.Event) -> None:
        from watchfiles import PythonFilter, watch

        assert self.watch is not None
        for changes in watch(self.watch, watch_filter=PythonFilter(), stop_event=stop):
            with self._lock:
                self._changed += sorted({os.path.relpath(path, self.watch) for _, path in changes})
            self._wake.set()


def exit_status(codes: Sequence[int | None]) -> int:
    """The command's status: the first child's that failed, as a shell shows it (a child
    killed by signal N is 128 + N), else 0."""
    for code in codes:
        if code:
            return 128 - code if code < 0 else code
    return 0


def child_command(app: str) -> list[str]:
    """A child: the same worker, its settings in the environment."""
    return [sys.executable, "-m", "leasehold", "worker", app]
