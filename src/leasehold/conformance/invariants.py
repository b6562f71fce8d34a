"""What a certification run checks once every job has finished."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leasehold.conformance.wire import Wire
from leasehold.conformance.workload import CHILDREN, Planned


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


def expected_of(plan: list[Planned], ids: list[int]) -> dict[int, Planned]:
    return dict(zip(ids, plan, strict=True))


async def invariants(
    wire: Wire,
    plan: list[Planned],
    ids: list[int],
    events: list[str],
    fault_error: str,
) -> list[Check]:
    planned = expected_of(plan, ids)
    jobs = {i: (await wire.get(f"/jobs/{i}")).body for i in ids}
    history = {i: (await wire.get(f"/jobs/{i}/attempts")).body["attempts"] for i in ids}
    stats = (await wire.get("/stats")).body
    stale = stats.get("stale_token_rejections", 0)
    injected = "; ".join([*events, f"{stale} stale reports refused"])
    return [
        Check("faults injected", not fault_error, fault_error or injected),
        _none_lost(jobs, planned),
        _results(jobs, planned),
        _one_outcome(jobs, history),
        _cancelled(jobs, planned),
    ]


def _none_lost(jobs: dict[int, Any], planned: dict[int, Planned]) -> Check:
    wrong = [
        f"{i}:{j['status']}"
        for i, j in jobs.items()
        if j["status"] != ("completed" if planned[i].expected is not None else "cancelled")
    ]
    return Check("no job lost", not wrong, f"not finished as planned: {wrong[:5]}" if wrong else
                 f"{len(jobs)} jobs finished")  # fmt: skip


def _results(jobs: dict[int, Any], planned: dict[int, Planned]) -> Check:
    wrong = [
        i
        for i, j in jobs.items()
        if planned[i].expected is not None and j["result"] != planned[i].expected
    ]
    return Check("results as the handlers return them", not wrong, f"wrong results: {wrong[:5]}")


def _one_outcome(jobs: dict[int, Any], history: dict[int, list[Any]]) -> Check:
    """One completed attempt per completed job, under the job's current token: a report
    from a superseded lease was never recorded."""
    bad = []
    for i, job in jobs.items():
        completed = [a for a in history[i] if a["outcome"] == "completed"]
        want = 1 if job["status"] == "completed" else 0
        if len(completed) != want or any(a["token"] != job["lease_token"] for a in completed):
            bad.append(i)
    detail = f"jobs with a wrong outcome record: {bad[:5]}" if bad else "one per job"
    return Check("one accepted outcome per job, no stale write", not bad, detail)


def _cancelled(jobs: dict[int, Any], planned: dict[int, Planned]) -> Check:
    """The worker heard of the cancellation and reported (released), rather than holding
    the job until its lease ran out."""
    target = next(i for i, p in planned.items() if p.expected is None)
    job = jobs[target]
    by_worker = job["status"] == "cancelled" and "lease expired" not in (job["last_error"] or "")
    detail = f"status {job['status']}: {job['last_error']}"
    return Check("the cancelled job was stopped by its worker", by_worker, detail)


async def workflow_invariants(wire: Wire, spawner: int) -> list[Check]:
    """What a worker that claims workflows must have done: handed each continuation its
    parents' results, and spawned each child once across a kill between its spawns."""
    everything = (await wire.get("/jobs?limit=1000")).body["jobs"]
    return [await _parents_handed(wire, everything), _spawned_once(everything, spawner)]


async def _parents_handed(wire: Wire, everything: list[dict[str, Any]]) -> Check:
    """Each cert.join answered its parents' results, in id order, as the lease gave them."""
    joins = [j for j in everything if j["kind"] == "cert.join"]
    wrong = []
    for join in joins:
        edges = (await wire.get(f"/jobs/{join['id']}/parents")).body["jobs"]
        results = [(await wire.get(f"/jobs/{p['id']}")).body["result"] for p in edges]
        if join["status"] != "completed" or join["result"] != {"joined": results}:
            wrong.append(f"{join['id']}: {join['status']} {join['result']}, parents {results}")
    detail = f"wrong: {wrong[:3]}" if wrong else f"{len(joins)} continuations"
    return Check("parents' results handed to the handler", bool(joins) and not wrong, detail)


def _spawned_once(everything: list[dict[str, Any]], spawner: int) -> Check:
    """The spawning job's children by key, each once and completed, though its worker was
    killed between its spawns (it spawned every key again when leased again)."""
    parent = next(j for j in everything if j["id"] == spawner)
    made = sorted((j["spawn_key"], j["status"]) for j in everything if j["spawned_by"] == spawner)
    keys = [*(f"child-{n}" for n in range(CHILDREN)), "join"]
    passed = made == [(k, "completed") for k in sorted(keys)] and parent["attempts"] >= 2
    detail = f"children {made}; the spawning job took {parent['attempts']} attempts"
    return Check("children spawned once across a kill mid-spawn", passed, detail)
