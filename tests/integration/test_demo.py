"""``leasehold demo`` as a person runs it: to the end, or cut short by Ctrl+C; either way
every process it started is gone afterwards, and so is its temporary directory."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process import free_port, wait_until

pytestmark = pytest.mark.slow(8)  # started early: see tests/conftest.py

WORKERS = 2


def started_by_demo(port: int, demo_pid: int) -> list[int]:
    """Live processes of a demo on ``port``: its coordinator (--port PORT) and its workers
    (--url http://127.0.0.1:PORT), found by their command lines."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == demo_pid:
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # it exited while we looked
        text = [a.decode(errors="replace") for a in args]
        serves = "serve" in text and "--port" in text and str(port) in text
        works = "worker" in text and f"http://127.0.0.1:{port}" in text
        if "leasehold" in text and (serves or works):
            found.append(int(entry.name))
    return found


@contextlib.contextmanager
def running_demo(port: int, jobs: int, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """``leasehold demo`` in a child process; if a test fails midway, it and whatever it
    started are killed, so that a failure does not leave a busy demo behind."""
    args = ["demo", "--jobs", str(jobs), "--workers", str(WORKERS), "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "leasehold", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Its temporary directory lands in tmp_path, where the test can see it go.
        env={**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "120"},
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        for pid in started_by_demo(port, proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def wait_for_children(proc: subprocess.Popen[str], port: int) -> list[int]:
    wait_until(
        lambda: len(started_by_demo(port, proc.pid)) == 1 + WORKERS or proc.poll() is not None,
        60,
        what="the demo's coordinator and workers",
    )
    return started_by_demo(port, proc.pid)


def test_a_short_demo_runs_to_the_end_and_leaves_nothing_behind(tmp_path: Path) -> None:
    port = free_port()
    with running_demo(port, 200, tmp_path) as proc:
        seen = wait_for_children(proc, port)
        out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, out + err
    assert len(seen) == 1 + WORKERS
    assert started_by_demo(port, proc.pid) == []
    assert list(tmp_path.glob("leasehold-demo-*")) == []
    assert err == ""
    assert f"Dashboard: http://127.0.0.1:{port}/ui/" in out
    assert "Done: 200 jobs in " in out
    # The handlers' failures are decided by the payloads, so the figures are known.
    dead = re.search(r"dead (\d+) \(expected (\d+)\)", out)
    retries = re.search(r"retries (\d+) \(expected (\d+)\)", out)
    assert dead is not None and dead[1] == dead[2]
    assert retries is not None and retries[1] == retries[2] and int(retries[1]) > 0


def test_ctrl_c_stops_everything_the_demo_started(tmp_path: Path) -> None:
    port = free_port()
    with running_demo(port, 50_000, tmp_path) as proc:  # far more than it can finish here
        seen = wait_for_children(proc, port)
        assert len(seen) == 1 + WORKERS and proc.poll() is None
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, out + err
    assert "Stopped early (SIGINT); everything the demo started is stopped." in out
    assert err == ""
    assert started_by_demo(port, proc.pid) == []
    assert list(tmp_path.glob("leasehold-demo-*")) == []
