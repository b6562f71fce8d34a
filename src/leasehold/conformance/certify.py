"""``leasehold certify-worker``: a worker command against a scripted workload with faults.

The run: enqueue the workload; start the command (and any others, for a mixed run); cancel
the long job once it runs; SIGKILL the first worker once a sixth of the jobs are done (with
``--workflows``, the worker of the spawning job, once it has spawned its first child) and
start a replacement; SIGSTOP a worker that holds a job for longer than its lease (so
another takes the job over and its late reports are stale), losing a fifth of the
coordinator's answers to the workers meanwhile (the workers talk to it through a proxy),
then SIGCONT it; wait for every job to finish. Then check the invariants, and how the
workers stop (``stopping.py``): a forced stop of one, then SIGTERM to the others while
answers carrying new leases wait in the proxy.
"""

from __future__ import annotations

import asyncio
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

from leasehold.conformance.invariants import Check, invariants, workflow_invariants
from leasehold.conformance.lossy import LossyProxy
from leasehold.conformance.processes import LEASE_SECONDS, Fleet, Worker, start_coordinator
from leasehold.conformance.stopping import exit_codes, forced_stop, stop_with_leases_on_the_way
from leasehold.conformance.wire import Wire
from leasehold.conformance.workload import KINDS, WORKFLOW_KINDS, workload
from leasehold.model import FINISHED

RUN_SECONDS = 90.0
LOST_ANSWERS = 0.2  # the chance that an answer is lost, while answers are being lost


async def _until(what: str, predicate: Callable[[], Awaitable[bool]], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not await predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def _jobs(wire: Wire, status: str | None = None) -> list[dict[str, Any]]:
    query = f"?limit=1000&status={status}" if status else "?limit=1000"
    found: list[dict[str, Any]] = (await wire.get("/jobs" + query)).body["jobs"]
    return found


class Run:
    """One certification run against one coordinator."""

    def __init__(
        self,
        wire: Wire,
        fleet: Fleet,
        commands: list[list[str]],
        proxy: LossyProxy,
        workflows: bool = False,
    ) -> None:
        self.wire, self.fleet, self.commands, self.proxy = wire, fleet, commands, proxy
        self.workflows = workflows
        self.plan = workload(workflows=workflows)
        self.ids: list[int] = []
        self.events: list[str] = []
        self.killed = ""

    async def enqueue(self) -> None:
        for n, planned in enumerate(self.plan):
            answer = await self.wire.post("/jobs", planned.enqueue_body(n, self.ids))
            self.ids.append(int(answer.expect(201, what="enqueue").body["id"]))

    async def faults(self) -> None:
        first = self.fleet.workers[0]
        target = self.ids[0]

        async def target_running() -> bool:
            return bool((await self.wire.get(f"/jobs/{target}")).body["status"] == "running")

        await _until("the long job to run", target_running, 30)
        (await self.wire.post(f"/jobs/{target}/cancel")).expect(200, what="cancel")
        self.events.append("cancelled the running long job")

        async def target_ended() -> bool:
            return bool((await self.wire.get(f"/jobs/{target}")).body["status"] == "cancelled")

        await _until("the cancelled job to end", target_ended, LEASE_SECONDS * 3)

        async def some_done() -> bool:
            return len(await _jobs(self.wire, "completed")) >= len(self.plan) // 6

        await _until("a sixth of the jobs to complete", some_done, 30)
        victim = await self.mid_spawn() if self.workflows else first
        self.fleet.signal(victim, signal.SIGKILL)
        await asyncio.to_thread(victim.proc.wait)  # not "alive" when a holder is picked
        self.killed = victim.worker_id
        how = " mid-spawn" if self.workflows else ""
        self.events.append(f"SIGKILL {victim.worker_id}{how}")
        self.fleet.start(victim.command)
        await self.pause_a_holder()

    async def mid_spawn(self) -> Worker:
        """The worker of the spawning job, once it has spawned its first child (its first
        attempt then waits, so the kill lands between its spawns)."""
        spawner = self.ids[1]
        holder: list[Worker] = []

        async def spawned_one() -> bool:
            job = (await self.wire.get(f"/jobs/{spawner}")).body
            made = [j for j in await _jobs(self.wire) if j["spawned_by"] == spawner]
            owner = job["lease_owner"] if job["status"] == "running" else None
            holder[:] = [w for w in self.fleet.workers if w.alive and w.worker_id == owner]
            return bool(made and holder and job["attempts"] == 1)

        await _until("the spawning job to spawn its first child", spawned_one, 30)
        return holder[0]

    async def pause_a_holder(self) -> None:
        """SIGSTOP a live worker that holds a job, past its lease; start another of its
        command to take the job over, then SIGCONT it (its late reports are stale)."""
        paused: list[Worker] = []

        async def holding() -> bool:
            running = await _jobs(self.wire, "running")
            owners = {j["lease_owner"] for j in running if j["id"] != self.ids[0]}
            paused[:] = [w for w in self.fleet.workers if w.alive and w.worker_id in owners]
            return bool(paused)

        await _until("a worker to hold a job", holding, 30)
        victim = paused[-1]
        self.fleet.signal(victim, signal.SIGSTOP)
        self.events.append(f"SIGSTOP {victim.worker_id} for {LEASE_SECONDS * 2:g} s")
        self.fleet.start(victim.command)  # takes over what the paused one held
        # Meanwhile a fifth of the coordinator's answers to the others are lost.
        self.proxy.drop = LOST_ANSWERS
        await asyncio.sleep(LEASE_SECONDS * 2)  # the fault itself: a pause past the lease
        self.proxy.drop = 0.0
        self.fleet.signal(victim, signal.SIGCONT)
        self.events.append(f"SIGCONT {victim.worker_id}")
        self.events.append(f"{self.proxy.lost} answers lost meanwhile")

    async def finished(self) -> bool:
        """Every job is: those planned, and those the workers spawned."""
        states = {j["id"]: j["status"] for j in await _jobs(self.wire)}
        done = all(states.get(i) in FINISHED for i in self.ids)
        return done and all(status in FINISHED for status in states.values())


async def certify(commands: list[list[str]], folder: Path, workflows: bool = False) -> list[Check]:
    """Run the workload against the commands (the faults hit the first one's processes).
    The workers reach the coordinator through a proxy that loses answers on cue. With
    ``workflows`` the workers claim to hand parents to handlers and to spawn children."""
    coordinator, url = start_coordinator(folder)
    proxy = await LossyProxy(int(url.rsplit(":", 1)[1])).start()
    kinds = KINDS + WORKFLOW_KINDS if workflows else KINDS
    fleet = Fleet(f"http://127.0.0.1:{proxy.port}", folder, kinds)
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            run = Run(Wire(url, None, session), fleet, commands, proxy, workflows)
            await run.enqueue()
            for command in commands:
                fleet.start(command)
            fault_error = ""
            try:
                await run.faults()
                await _until("every job to finish", run.finished, RUN_SECONDS)
            except TimeoutError as exc:
                fault_error = str(exc)
            checks = await verify(run, fault_error)
            forced, holder = await forced_stop(run.wire, fleet)
            handed_back = await stop_with_leases_on_the_way(run.wire, fleet, proxy)
            # The worker killed by the faults, and the one stopped by force, exit otherwise.
            left_out = {run.killed, *([holder.worker_id] if holder else [])}
            return [*checks, forced, handed_back, exit_codes(fleet, left_out)]
    finally:
        await asyncio.to_thread(fleet.stop_all, 1)
        await proxy.stop()
        coordinator.terminate()
        coordinator.wait(10)


async def verify(run: Run, fault_error: str) -> list[Check]:
    checks = await invariants(run.wire, run.plan, run.ids, run.events, fault_error)
    if run.workflows:
        checks += await workflow_invariants(run.wire, run.ids[1])
    return checks


def certify_in_temp(
    commands: list[list[str]], keep: Path | None = None, workflows: bool = False
) -> list[Check]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        return asyncio.run(certify(commands, keep, workflows))
    with tempfile.TemporaryDirectory(prefix="leasehold-certify-") as folder:
        return asyncio.run(certify(commands, Path(folder), workflows))
