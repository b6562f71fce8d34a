"""The chaos run: kill, pause and cut things on purpose, then check that nothing was lost
and nothing was done twice.

    python scripts/chaos.py [--seconds 60] [--jobs 3000] [--graph-jobs 1000]
                            [--flow-jobs 1000] [--workers 4] [--concurrency 4]
                            [--lease-seconds 1.5] [--seed 1] [--faults all|none|a,b,...]
                            [--database sqlite|postgres]

It starts a coordinator on a temporary SQLite database (or a throwaway PostgreSQL server),
a small TCP proxy between the workers and the coordinator, several worker processes whose
handler writes its side effect into a fenced store, and a continuation worker that leases
the workflows' fan-in steps over the protocol itself (chaoslib/joiner.py). The jobs:

  plain       --jobs jobs, each enqueued on its own, paced over the run
  workflows   a parent spawning --graph-jobs children and their continuation through
              POST /jobs/{id}/children (its first attempt SIGKILLs its worker halfway
              through the spawn), and a graph of --graph-jobs jobs in one POST /jobs/batch:
              a fan-out and fan-in, and a step failing for good whose dependents must be
              cancelled (chaoslib/workflows.py)
  flow        --flow-jobs jobs of one kind with a limit per group, groups taking turns and
              a rate limit (chaoslib/flow.py)

While the workers drain the queue it injects faults:

  kill-worker      SIGKILL a random worker and start a new one
  kill-coordinator SIGKILL the coordinator and start it again on the same database
  pause-worker     SIGSTOP a worker past its lease, then SIGCONT it
  cut              the proxy drops every open connection
  delay            the proxy holds back traffic for a few seconds
  blackout         the proxy refuses connections for a few seconds

Then it waits for the queue to drain and checks the invariants (see scripts/chaoslib/checks.py),
prints the counts, and exits 1 if any invariant broke.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from chaoslib import fenced  # noqa: E402
from chaoslib import flow as flow_jobs  # noqa: E402
from chaoslib.checks import (  # noqa: E402
    Report,
    check_fenced_store,
    check_jobs,
    check_lease_overlap,
    check_stats,
)
from chaoslib.flow import Flow, check_flow, group_running  # noqa: E402
from chaoslib.processes import Workers, keep_alive  # noqa: E402
from chaoslib.proxy import FaultyProxy  # noqa: E402
from chaoslib.workflows import (  # noqa: E402
    Graphs,
    check_workflows,
    expected_ends,
    workflow_ids,
)
from chaoslib.workflows import produce as produce_workflows  # noqa: E402

from leasehold.cli.logs import configure_logging  # noqa: E402
from leasehold.client import Client  # noqa: E402
from leasehold.model import Attempt, Job  # noqa: E402
from tests.process import Coordinator  # noqa: E402

FAULTS = ("kill-worker", "kill-coordinator", "pause-worker", "cut", "delay", "blackout")


async def produce(
    client: Client, n_jobs: int, seconds: float, acked: set[int], rng: random.Random
) -> None:
    """Enqueue every job with its own key, paced over most of the run so that the queue
    stays short and a job taken over is soon run again (while its old holder is paused).
    A job counts once its enqueue is acknowledged."""
    started = time.monotonic()
    pace = max(seconds * 0.8, 1.0) / n_jobs
    for i in range(n_jobs):
        while True:
            try:
                job = await client.enqueue(
                    "chaos", {"n": i}, max_attempts=1000, idempotency_key=f"chaos-{i}"
                )
                acked.add(job.id)
                break
            except Exception:  # the coordinator may be down right now: try again
                await asyncio.sleep(0.05)
        ahead = started + (i + 1) * pace - time.monotonic()
        if ahead > 0:
            await asyncio.sleep(ahead * rng.uniform(0.5, 1.5))


def fault_order(enabled: tuple[str, ...], rng: random.Random) -> Iterator[str]:
    """Rounds in which every enabled fault comes once, in a shuffled order, so that even a
    short run sees each kind. Pauses are what exercise fencing (a holder waking up after a
    takeover): they come twice a round."""
    while enabled:
        round_ = [*enabled, *(f for f in enabled if f == "pause-worker")]
        rng.shuffle(round_)
        yield from round_


async def inject(
    args: argparse.Namespace,
    rng: random.Random,
    coordinator: Coordinator,
    proxy: FaultyProxy,
    workers: Workers,
    injected: Counter[str],
) -> None:
    enabled = FAULTS if args.faults == "all" else tuple(f for f in args.faults.split(",") if f)
    if args.faults == "none":
        enabled = ()
    deadline = time.monotonic() + args.seconds
    order = fault_order(enabled, rng)
    # Until the deadline, and at least until every enabled fault has come once: a short run
    # still sees each kind, however long its faults happened to take (within a minute more).
    while time.monotonic() < deadline or (
        any(injected[f] == 0 for f in enabled) and time.monotonic() < deadline + 60
    ):
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        if not enabled:
            continue
        fault = next(order)
        injected[fault] += 1
        if fault == "kill-worker" and workers.running():
            workers.kill(rng.choice(workers.running()))
        elif fault == "kill-coordinator":
            await asyncio.to_thread(coordinator.restart, kill=True)
        elif fault == "pause-worker" and len(workers.running()) > 1:
            victim = rng.choice(workers.running())
            workers.procs[victim].send_signal(signal.SIGSTOP)
            workers.paused.add(victim)
            await asyncio.sleep(args.lease_seconds * rng.uniform(1.5, 3))
            workers.procs[victim].send_signal(signal.SIGCONT)
            workers.paused.discard(victim)
        elif fault == "cut":
            proxy.cut_all()
        elif fault == "delay":
            proxy.faults.delay_probability, proxy.faults.max_delay_seconds = 0.3, 0.3
            await asyncio.sleep(rng.uniform(1, 3))
            proxy.faults.delay_probability, proxy.faults.max_delay_seconds = 0.0, 0.0
        elif fault == "blackout":
            proxy.faults.down = True
            proxy.cut_all()
            await asyncio.sleep(rng.uniform(0.5, args.lease_seconds * 1.5))
            proxy.faults.down = False
        else:
            injected[fault] -= 1


async def collect(client: Client) -> tuple[dict[int, Job], dict[int, list[Attempt]]]:
    jobs: dict[int, Job] = {}
    cursor = None
    while True:
        page = await client.list(cursor=cursor, limit=1000)
        jobs.update((j.id, j) for j in page.jobs)
        cursor = page.next_cursor
        if cursor is None:
            break
    attempts: dict[int, list[Attempt]] = {}
    ids = list(jobs)
    for start in range(0, len(ids), 50):
        chunk = ids[start : start + 50]
        histories = await asyncio.gather(*(client.attempts(i) for i in chunk))
        attempts.update(zip(chunk, histories, strict=True))
    return jobs, attempts


async def wait_for_drain(client: Client, expected: Callable[[], int], within: float) -> bool:
    """Until every job there is to be has ended: none waiting, queued or running, and as
    many as the producers acknowledged and the parent spawns."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            by_status = (await client.stats())["by_status"]
            if sum(by_status.values()) >= expected() and not any(
                by_status[s] for s in ("waiting", "queued", "running")
            ):
                return True
        except Exception:
            pass
        await asyncio.sleep(0.5)
    return False


@contextlib.contextmanager
def database(args: argparse.Namespace, work: Path) -> Iterator[str]:
    """The coordinator's database: a SQLite file in ``work``, or a database on a throwaway
    PostgreSQL server (scripts/ensure-postgres.sh installs it)."""
    if args.database == "sqlite":
        yield f"sqlite:///{work / 'leasehold.db'}"
        return
    from tests.pgserver import start_pg_server

    server = start_pg_server(work)
    try:
        yield server.create_database("chaos")
    finally:
        server.stop()


async def run(args: argparse.Namespace, work: Path, database_url: str) -> Report:
    rng = random.Random(args.seed)
    fenced_db = work / "fenced.db"
    fenced.create(fenced_db)
    coordinator = Coordinator(
        database_url,
        work,
        [
            "--reap-interval-seconds",
            "0.2",
            "--retry-base-seconds",
            "0.05",
            "--retry-max-seconds",
            "1",
            "--log-level",
            "warning",
        ],
    ).start()
    proxy = await FaultyProxy(coordinator.port, rng).start()
    workers = Workers(args, f"http://127.0.0.1:{proxy.port}", fenced_db, work)
    for _ in range(args.workers):
        workers.start()
    workers.start(joiner=True)
    injected: Counter[str] = Counter()
    acked: set[int] = set()
    graphs, flow = Graphs(args.graph_jobs), Flow(args.flow_jobs)
    started = time.monotonic()
    report = Report()
    guard = asyncio.create_task(keep_alive(workers, injected))
    try:
        async with Client(coordinator.url) as client:
            producers = asyncio.gather(
                produce(client, args.jobs, args.seconds, acked, rng),
                produce_workflows(coordinator.url, graphs, args.spawn_chunk),
                flow_jobs.produce(coordinator.url, flow),
            )
            # The faults get a generator of their own: the producer and the proxy draw from
            # ``rng`` at moments that depend on scheduling, so sharing it would change the
            # faults from one run of the same seed to the next.
            faults_rng = random.Random(f"{args.seed}-faults")
            await inject(args, faults_rng, coordinator, proxy, workers, injected)
            await producers
            proxy.faults.down = False
            draining = time.monotonic()
            expected = lambda: len(acked) + graphs.expected_jobs + len(flow.acked)  # noqa: E731
            drained = await wait_for_drain(client, expected, args.drain_seconds)
            report.check(drained, f"the queue did not drain within {args.drain_seconds}s")
            report.counts["seconds to drain after the faults"] = round(time.monotonic() - draining)
            guard.cancel()
            workers.stop_all()
            jobs, attempts = await collect(client)
            stats, limits = await client.stats(), await client.limits()
        running = await group_running(database_url) if flow.jobs else {}
        conn = fenced.connect(fenced_db)
        ends = expected_ends(graphs) if graphs.refs else {}
        known = acked | flow.acked | workflow_ids(graphs, jobs)
        check_jobs(report, known, jobs, attempts, ends)
        check_fenced_store(report, conn, jobs)
        check_lease_overlap(report, conn, attempts)
        check_stats(report, stats, jobs)
        check_workflows(report, graphs, jobs, attempts, conn)
        expired = flow_jobs.expiries(coordinator.logs())
        check_flow(report, flow, jobs, attempts, running, limits, expired)
        conn.close()
    finally:
        guard.cancel()
        workers.stop_all()
        await proxy.stop()
        coordinator.stop()
    report.counts["acknowledged enqueues"] = len(acked)
    report.counts["worker processes started"] = workers.started
    report.counts["proxy connections"] = proxy.stats.connections
    report.counts["proxy connections cut"] = proxy.stats.cut
    report.counts["proxy connections refused"] = proxy.stats.refused
    for fault, n in sorted(injected.items()):
        report.counts[f"fault: {fault}" if fault in FAULTS else fault] = n
    report.counts["seconds"] = round(time.monotonic() - started)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long to inject faults")
    parser.add_argument("--minutes", type=float, default=None, help="same, in minutes")
    parser.add_argument("--jobs", type=int, default=3000, help="plain jobs")
    parser.add_argument(
        "--graph-jobs", type=int, default=1000, help="children spawned, and jobs in the graph"
    )
    parser.add_argument("--spawn-chunk", type=int, default=100, help="children a request")
    parser.add_argument("--flow-jobs", type=int, default=1000, help="flow-controlled jobs")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--lease-seconds", type=float, default=1.5)
    parser.add_argument("--drain-seconds", type=float, default=180)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", default="all", help=f"all, none, or some of {','.join(FAULTS)}")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    if args.minutes is not None:
        args.seconds = args.minutes * 60
    configure_logging("console", "error")  # the client's retry warnings are expected here
    work = Path(tempfile.mkdtemp(prefix="leasehold-chaos-"))
    with database(args, work) as database_url:
        report = asyncio.run(run(args, work, database_url))
    width = max(len(k) for k in report.counts)
    print("chaos run summary")
    for key, value in report.counts.items():
        print(f"  {key:<{width}}  {value}")
    if report.failures:
        print(f"\nINVARIANTS BROKEN ({len(report.failures)}):")
        for failure in report.failures[:50]:
            print(f"  - {failure}")
        print(f"work folder kept: {work}")
        return 1
    print("\nall invariants hold")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
