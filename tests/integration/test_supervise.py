"""The supervisor of ``leasehold worker --processes N`` and ``--reload``, run as a real
process over small child processes that record what they are sent (a real worker under it
is in test_worker_processes.py): signals passed on once, a crash stopping the rest, a
change to a .py file restarting the children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.process import wait_until

# A child: records each stop signal, exits 0 on the first unless told to wait for two (as
# a worker forced by the second). It says it started once its handlers are in place; one
# told to EXIT does so once every child has said so (a signal sent to a child still
# starting ends it before it can record anything).
CHILD = """
import os, signal, sys, time
out = open(os.environ["OUT"], "a", buffering=1)
n = os.environ["N"]
seen = []
def on(signum, frame):
    seen.append(signum)
    out.write(f"signal {n} {signal.Signals(signum).name}\\n")
    if len(seen) >= int(os.environ.get("SIGNALS", "1")):
        sys.exit(0)
signal.signal(signal.SIGINT, on)
signal.signal(signal.SIGTERM, on)
out.write(f"start {n} {os.getpid()}\\n")
if os.environ.get("EXIT_" + n):
    def started():
        with open(os.environ["OUT"]) as f:
            return sum(line.startswith("start") for line in f)
    while started() < int(os.environ["PROCESSES"]):
        time.sleep(0.01)
    sys.exit(int(os.environ["EXIT_" + n]))
while True:
    time.sleep(0.05)
"""

SUPERVISOR = """
import os, sys
from pathlib import Path
from typing import IO
from leasehold.cli.supervise import Supervisor
watch = os.environ.get("WATCH")
def environment(n):
    return {**os.environ, "N": str(n)}
supervisor = Supervisor([sys.executable, "-c", os.environ["CHILD"]], environment,
                        int(os.environ["PROCESSES"]), Path(watch) if watch else None)
sys.exit(supervisor.run())
"""


class Supervised:
    def __init__(self, tmp: Path, processes: int, **env: str) -> None:
        self.out = tmp / "children.log"
        self.out.touch()
        with (tmp / "supervisor.log").open("wb") as log:
            self.proc = self._start(processes, log, env)

    def _start(
        self, processes: int, log: IO[bytes], env: dict[str, str]
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-c", SUPERVISOR],
            env={
                **os.environ,
                "CHILD": CHILD,
                "OUT": str(self.out),
                "PROCESSES": str(processes),
                **env,
            },
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # a group of its own, as a shell's foreground job
        )

    def lines(self, word: str) -> list[str]:
        return [line for line in self.out.read_text().splitlines() if line.startswith(word)]

    def wait_lines(self, word: str, count: int) -> list[str]:
        wait_until(lambda: len(self.lines(word)) >= count, 20, what=f"{count} x {word}")
        return self.lines(word)

    def wait(self) -> int:
        return self.proc.wait(20)


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[list[Supervised]]:
    started: list[Supervised] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_a_terminals_ctrl_c_reaches_each_child_once(
    tmp_path: Path, supervised: list[Supervised]
) -> None:
    """Ctrl+C goes to the whole foreground group; the children are in groups of their own,
    so each gets the supervisor's copy alone, and a second Ctrl+C is a second signal."""
    s = Supervised(tmp_path, 2, SIGNALS="2")
    supervised.append(s)
    s.wait_lines("start", 2)
    os.killpg(s.proc.pid, signal.SIGINT)  # what a terminal does
    s.wait_lines("signal", 2)
    assert s.proc.poll() is None  # the children wait for a second signal
    os.killpg(s.proc.pid, signal.SIGINT)
    assert s.wait() == 0
    assert sorted(s.lines("signal")) == ["signal 1 SIGINT"] * 2 + ["signal 2 SIGINT"] * 2


def test_a_child_that_exits_stops_the_others_with_its_status(
    tmp_path: Path, supervised: list[Supervised]
) -> None:
    s = Supervised(tmp_path, 3, EXIT_2="3")
    supervised.append(s)
    assert s.wait() == 3
    assert sorted(s.lines("signal")) == ["signal 1 SIGTERM", "signal 3 SIGTERM"]


def test_reload_restarts_the_children_when_python_code_changes(
    tmp_path: Path, supervised: list[Supervised]
) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "jobs.py").write_text("x = 1\n")
    s = Supervised(tmp_path, 1, WATCH=str(code))
    supervised.append(s)
    s.wait_lines("start", 1)
    (code / "notes.txt").write_text("not code\n")  # no restart for this
    (code / "jobs.py").write_text("x = 2\n")
    first, second = s.wait_lines("start", 2)
    assert first.split()[2] != second.split()[2]  # a new process
    assert s.lines("signal") == ["signal 1 SIGTERM"]  # the old one, stopped gracefully
    s.proc.send_signal(signal.SIGTERM)
    assert s.wait() == 0
    assert len(s.lines("start")) == 2
