"""``leasehold certify-worker``: the Python worker, the JavaScript reference worker, and
both on one queue pass the certification run; a worker that ignores cancellations fails it."""

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


def assert_certified(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1] == "6 passed, 0 failed"


def test_the_python_worker_is_certified() -> None:
    """Kills, a pause past the lease and a cancellation: every invariant holds."""
    assert_certified(certify("--", *PYTHON_WORKER))


@needs_node
def test_the_javascript_worker_is_certified() -> None:
    """The Node worker, written from PROTOCOL.md, meets the same invariants."""
    assert_certified(certify("--", *JS_WORKER))


@needs_node
def test_a_mixed_run_of_both_workers_is_certified() -> None:
    """Both workers on one queue, the faults hitting either."""
    assert_certified(certify("--with", " ".join(JS_WORKER), "--", *PYTHON_WORKER))


@needs_node
def test_a_worker_that_ignores_cancellation_fails(tmp_path: Path) -> None:
    """A worker that keeps running a cancelled job until its lease runs out fails, and the
    line says so."""
    handlers = tmp_path / "ignoring.mjs"
    source = (ROOT / "workers" / "js" / "handlers.mjs").read_text()
    # A sleep that does not listen to the abort signal: the job is held until the lease ends.
    handlers.write_text(
        source.replace("await sleep(ms, signal);", "await sleep(ms, new AbortController().signal);")
    )
    broken = ROOT / "workers" / "js" / "worker.mjs"
    script = tmp_path / "worker.mjs"
    script.write_text(
        broken.read_text().replace(
            'if (answer.code === "job_cancelled") await report(held, "release", { token: held.token });',
            "",
        )
    )
    run = certify("--", "node", str(script), str(handlers))
    assert run.returncode == 1
    assert any(
        line.startswith("FAIL  the cancelled job was stopped by its worker")
        for line in run.stdout.splitlines()
    ), run.stdout
