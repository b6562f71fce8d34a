"""The short chaos run (scripts/chaos.py) holds every invariant."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow(40)
@pytest.mark.timeout(400)
def test_short_chaos_run_holds_every_invariant() -> None:
    # 600 jobs paced over the 20 s of faults keep about half of the 16 worker slots busy
    # (a mean job takes about 0.2 s), so every fault still strikes jobs in flight, and
    # the invariants are checked on every job; twice as many only doubled the CPU (about
    # 11 s more) with the queue near its capacity.
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "chaos.py"), "--seconds", "20", "--jobs", "600"],
        capture_output=True,
        text=True,
        timeout=380,
        check=False,
    )
    print(run.stdout)
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-5000:]
    assert "all invariants hold" in run.stdout
    for fault in ("kill-worker", "kill-coordinator", "pause-worker", "cut", "delay", "blackout"):
        assert f"fault: {fault}" in run.stdout  # each round of faults holds every kind
