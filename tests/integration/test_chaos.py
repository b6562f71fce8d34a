"""The short chaos run (scripts/chaos.py) holds every invariant, workflows and flow control
included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow(45)
@pytest.mark.timeout(400)
def test_short_chaos_run_holds_every_invariant() -> None:
    # About 700 jobs over the 20 s of faults keep about half of the 16 worker slots busy
    # (a mean job takes about 0.2 s), so every fault still strikes jobs in flight: 250
    # plain ones, paced; a parent spawning 150 children and their continuation, and a
    # graph of 150 in one batch (fan-out, fan-in, a failure cancelling its dependents);
    # 150 under a limit per group and a rate. Twice as many only doubled the CPU.
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "chaos.py"),
            *("--seconds", "20", "--jobs", "250", "--graph-jobs", "150"),
            *("--spawn-chunk", "25", "--flow-jobs", "150"),
        ],
        capture_output=True,
        text=True,
        timeout=380,
        check=False,
    )
    print(run.stdout)
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-5000:]
    assert "all invariants hold" in run.stdout
    counts = dict(
        line.strip().rsplit(None, 1) for line in run.stdout.splitlines() if line.startswith("  ")
    )
    for fault in ("kill-worker", "kill-coordinator", "pause-worker", "cut", "delay", "blackout"):
        assert int(counts[f"fault: {fault}"]) >= 1  # each round of faults holds every kind
    # The workflows' own kills happened: a parent leased again mid-spawn got its children
    # back, and each continuation, killed before its report, ran again.
    assert int(counts["children answered again (parent leased again)"]) > 0
    assert int(counts["continuations leased again"]) == 2
    assert int(counts["flow: groups counted"]) == 10
