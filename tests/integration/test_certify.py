"""``leasehold certify-worker``: the Python worker and the JavaScript reference worker (both
claiming workflows), and both on one queue, pass the certification run; a worker that
ignores cancellations, drops its jobs' parents and keeps leases at its stop fails it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON_WORKER = [
    sys.executable,
    "-m",
    "leasehold",
    "worker",
    "leasehold.conformance.handlers:registry",
]
JS_WORKER = ["node", str(ROOT / "workers" / "js" / "worker.mjs")]
pytestmark = pytest.mark.slow  # about ten seconds each: started first when run in parallel
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def certify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leasehold", "certify-worker", *args],
        capture_output=True,
        text=True,
        timeout=150,
    )


def assert_certified(run: subprocess.CompletedProcess[str], checks: int = 8) -> None:
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == f"{checks} passed, 0 failed"


def test_the_python_worker_is_certified() -> None:
    """Kills, a pause past the lease and a cancellation: every invariant holds, and those
    of workflows: its handlers get their parents' results, and a job killed between its
    spawns spawns every child once."""
    run = certify("--workflows", "--", *PYTHON_WORKER)
    assert_certified(run, checks=10)
    assert "SIGKILL cert-1 mid-spawn" in run.stdout


@needs_node
def test_the_javascript_worker_is_certified() -> None:
    """The Node worker, written from PROTOCOL.md, meets the same invariants, and those of
    workflows: its handlers get their parents' results, and a job killed between its
    spawns spawns every child once."""
    run = certify("--workflows", "--", *JS_WORKER)
    assert_certified(run, checks=10)
    assert "SIGKILL cert-1 mid-spawn" in run.stdout


@needs_node
def test_a_mixed_run_of_both_workers_is_certified() -> None:
    """Both workers on one queue, the faults hitting either, a job spawned by one worker
    joined by the other."""
    run = certify("--workflows", "--with", " ".join(JS_WORKER), "--", *PYTHON_WORKER)
    assert_certified(run, checks=10)


@needs_node
def test_a_worker_that_ignores_cancellation_parents_and_its_stop_fails(tmp_path: Path) -> None:
    """A worker that does not release a cancelled job (it holds it until its lease runs
    out), whose handlers never see their jobs' parents, and that does not release the jobs
    a poll brings back after SIGTERM, fails: one line says so for each (one run checks all
    three: a run costs ten seconds)."""
    handlers = tmp_path / "orphans.mjs"
    source = (ROOT / "workers" / "js" / "handlers.mjs").read_text()
    assert "job.parents.map(" in source
    # Handlers that still stop when told to: a sleep that ignored it would hold both stops
    # for their whole 15 s bound, and the cancelled job is unreleased without that.
    handlers.write_text(source.replace("job.parents.map(", "[].map("))
    broken = (ROOT / "workers" / "js" / "worker.mjs").read_text()
    for line in (
        'if (answer.code === "job_cancelled") await report(held, "release", { token: held.token });',
        'await call("POST", `/jobs/${lease.job.id}/release`, { token: lease.token }).catch(() => {});',
    ):
        assert line in broken
        broken = broken.replace(line, "")
    script = tmp_path / "worker.mjs"
    script.write_text(broken)
    run = certify("--workflows", "--", "node", str(script), str(handlers))
    assert run.returncode == 1
    failed = {line[6:].split("  ")[0] for line in run.stdout.splitlines() if line[:4] == "FAIL"}
    assert {
        "the cancelled job was stopped by its worker",
        "parents' results handed to the handler",
        "jobs a poll brings back after SIGTERM are released",
    } <= failed, run.stdout
