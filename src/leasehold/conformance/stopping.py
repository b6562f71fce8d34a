"""The end of a certification run: how the workers stop (PROTOCOL.md §10, item 6).

A forced stop: the worker holding a long job gets SIGTERM, then SIGTERM again. It must
release the job (not leave it to run out its lease) and exit with 128 + 15.

A stop with leases on their way: the proxy holds every answer while a few new jobs are
leased by the polls in flight, every worker gets SIGTERM, and the answers are let go.
Each job a poll brought back after its worker decided to stop must be released: not run,
and not left to expire. Then every worker must have exited 0.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from typing import Any

from leasehold.conformance.invariants import Check
from leasehold.conformance.lossy import LossyProxy
from leasehold.conformance.processes import Fleet, Worker
from leasehold.conformance.wire import Wire
from leasehold.conformance.workload import CANCEL_MS

# Between the two signals of a forced stop: a worker handles the first well within this,
# and two signals sent closer may arrive as one.
FORCE_AFTER_SECONDS = 0.5
# How long the held answers wait after SIGTERM: the workers have decided to stop by then.
LET_GO_AFTER_SECONDS = 0.2
SHUTDOWN_JOBS = 4
FORCED_EXIT = 128 + signal.SIGTERM


async def _poll(seconds: float, found: Any) -> Any:
    """``await found()`` every 50 ms until it is truthy or ``seconds`` passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        result = await found()
        if result or loop.time() >= deadline:
            return result
        await asyncio.sleep(0.05)


async def _outcome(wire: Wire, job_id: int, token: int) -> str | None:
    """How the lease ``token`` of the job ended (``released``, ``expired``, ...)."""
    attempts = (await wire.get(f"/jobs/{job_id}/attempts")).body["attempts"]
    return next((a["outcome"] for a in attempts if a["token"] == token), None)


async def forced_stop(wire: Wire, fleet: Fleet) -> tuple[Check, Worker | None]:
    """Force the stop of the worker that holds a long job; the check, and that worker."""
    name = "a forced stop releases the job and exits 143"
    body = {"kind": "cert.sleep", "payload": {"ms": CANCEL_MS}, "idempotency_key": "cert-forced"}
    job_id = int((await wire.post("/jobs", body)).expect(201, what="enqueue").body["id"])

    async def running() -> dict[str, Any] | None:
        job: dict[str, Any] = (await wire.get(f"/jobs/{job_id}")).body
        return job if job["status"] == "running" else None

    job = await _poll(30, running)
    holder = next((w for w in fleet.alive if job and w.worker_id == job["lease_owner"]), None)
    if job is None or holder is None:
        return Check(name, False, "no live worker leased the long job"), None
    fleet.signal(holder, signal.SIGTERM)
    await asyncio.sleep(FORCE_AFTER_SECONDS)
    fleet.signal(holder, signal.SIGTERM)
    try:
        holder.exit_code = await asyncio.to_thread(holder.proc.wait, 15)
    except subprocess.TimeoutExpired:
        holder.proc.kill()
        holder.exit_code = await asyncio.to_thread(holder.proc.wait)
    outcome = await _outcome(wire, job_id, int(job["lease_token"]))
    # The job is not part of the workload: cancelled, so that no worker holds it at the end.
    (await wire.post(f"/jobs/{job_id}/cancel")).expect(200, what="cancel")
    passed = holder.exit_code == FORCED_EXIT and outcome == "released"
    detail = f"{holder.worker_id}: exit {holder.exit_code}, its lease ended {outcome}"
    return Check(name, passed, detail), holder


async def stop_with_leases_on_the_way(wire: Wire, fleet: Fleet, proxy: LossyProxy) -> Check:
    """SIGTERM every worker while answers carrying new leases wait in the proxy; then
    check that each of those jobs was handed back."""
    name = "jobs a poll brings back after SIGTERM are released"
    proxy.hold()
    try:
        ids = []
        for n in range(SHUTDOWN_JOBS):
            body = {"kind": "cert.echo", "payload": {"n": n}, "idempotency_key": f"cert-stop-{n}"}
            ids.append(int((await wire.post("/jobs", body)).expect(201, what="enqueue").body["id"]))

        async def leased() -> dict[int, int]:
            jobs = [(await wire.get(f"/jobs/{i}")).body for i in ids]
            return {j["id"]: int(j["lease_token"]) for j in jobs if j["status"] == "running"}

        held = await _poll(2, leased)
        fleet.terminate_all()
        await asyncio.sleep(LET_GO_AFTER_SECONDS)
    finally:
        proxy.let_go()
    # In a thread: the proxy runs on this loop, and stopping workers release through it.
    await asyncio.to_thread(fleet.wait_all)
    if not held:
        return Check(name, True, "no poll was in flight at the stop: nothing to hand back")
    outcomes = {i: await _outcome(wire, i, token) for i, token in held.items()}
    wrong = {i: o for i, o in outcomes.items() if o != "released"}
    detail = f"leases ended {wrong}" if wrong else f"{len(held)} leased at the stop, all released"
    return Check(name, not wrong, detail)


def exit_codes(fleet: Fleet, left_out: set[str]) -> Check:
    """Every worker stopped by SIGTERM alone (not those in ``left_out``) exited 0."""
    codes = {w.worker_id: w.exit_code for w in fleet.workers if w.worker_id not in left_out}
    bad = {k: v for k, v in codes.items() if v != 0}
    passed = bool(codes) and not bad  # no worker left to stop is a failure too
    return Check("SIGTERM stops workers with exit 0", passed, f"exit codes {codes}")
