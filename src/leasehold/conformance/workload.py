"""The certification workload: which jobs, and what each must end as."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS = ("cert.echo", "cert.sleep", "cert.flaky")
# Long enough that it is still running when it is cancelled, and never finishes on its own
# within a run: a worker that ignores the cancellation holds it until its lease is lost.
CANCEL_MS = 600_000


@dataclass(frozen=True)
class Planned:
    kind: str
    payload: Any
    expected: Any  # the result it must complete with; None: it must end cancelled

    def enqueue_body(self, n: int) -> dict[str, Any]:
        return {"kind": self.kind, "payload": self.payload, "max_attempts": 20,
                "idempotency_key": f"cert-{n}"}  # fmt: skip


def workload(scale: int = 1) -> list[Planned]:
    """The cancel target first (so it is leased early), then a mix of quick, slow and
    flaky jobs."""
    jobs = [Planned("cert.sleep", {"ms": CANCEL_MS}, None)]
    for n in range(30 * scale):
        jobs.append(Planned("cert.echo", {"n": n}, {"echo": {"n": n}}))
    for n in range(30 * scale):
        ms = 400 + 100 * (n % 5)
        jobs.append(Planned("cert.sleep", {"ms": ms}, {"slept": ms}))
    for n in range(10 * scale):
        jobs.append(Planned("cert.flaky", {"fail_times": 1 + n % 2}, {"ok": True}))
    return jobs
