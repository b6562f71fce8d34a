"""The certification workload: which jobs, and what each must end as."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS = ("cert.echo", "cert.sleep", "cert.flaky")
# The kinds of a worker that claims workflows (``certify-worker --workflows``).
WORKFLOW_KINDS = ("cert.spawn", "cert.join")
# Long enough that it is still running when it is cancelled, and never finishes on its own
# within a run: a worker that ignores the cancellation holds it until its lease is lost.
CANCEL_MS = 600_000
# How long the spawning job's first attempt waits after its first child: it is killed
# meanwhile, so a later attempt spawns every key again.
SPAWN_PAUSE_MS = 600_000
CHILDREN = 3


@dataclass(frozen=True)
class Planned:
    kind: str
    payload: Any
    expected: Any  # the result it must complete with; None: it must end cancelled
    parents: tuple[int, ...] = ()  # places in the plan of the jobs it depends on

    def enqueue_body(self, n: int, ids: list[int]) -> dict[str, Any]:
        body = {"kind": self.kind, "payload": self.payload, "max_attempts": 20,
                "idempotency_key": f"cert-{n}"}  # fmt: skip
        if self.parents:
            body["depends_on"] = [ids[p] for p in self.parents]
        return body


def workload(scale: int = 1, workflows: bool = False) -> list[Planned]:
    """The cancel target first (so it is leased early), then a mix of quick, slow and
    flaky jobs. With ``workflows``, also a job that spawns children and a continuation
    (second, so it is leased early too), and a job that joins two echoes' results."""
    jobs = [Planned("cert.sleep", {"ms": CANCEL_MS}, None)]
    if workflows:
        payload = {"children": CHILDREN, "pause_ms": SPAWN_PAUSE_MS}
        jobs.append(Planned("cert.spawn", payload, {"spawned": CHILDREN}))
    first_echo = len(jobs)
    for n in range(30 * scale):
        jobs.append(Planned("cert.echo", {"n": n}, {"echo": {"n": n}}))
    for n in range(30 * scale):
        ms = 400 + 100 * (n % 5)
        jobs.append(Planned("cert.sleep", {"ms": ms}, {"slept": ms}))
    for n in range(10 * scale):
        jobs.append(Planned("cert.flaky", {"fail_times": 1 + n % 2}, {"ok": True}))
    if workflows:
        joined = {"joined": [{"echo": {"n": 0}}, {"echo": {"n": 1}}]}
        jobs.append(Planned("cert.join", None, joined, (first_echo, first_echo + 1)))
    return jobs
