"""Workflows of typed tasks (DESIGN.md §21, §22) in the test mode: a real coordinator in
the test's process, jobs run through the worker's own parts. A chain, a fan-in reading its
parents' results, children spawned by a handler (async and plain) that a job leased again
gets back rather than twice, results a lease left out for size, the async client, and
README's example."""

from __future__ import annotations

import importlib
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leasehold import Client, JobStatus, SyncClient, current_context, current_job
from leasehold.client import NewJob
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.tasks import Workflow, group, task
from leasehold.testing import AsyncTestCoordinator, TestCoordinator
from leasehold.worker import LeasedJob, Registry
from tests.integration.test_readme import README, blocks, console

registry = Registry()
# The children each run of wf-crawl was answered with, by attempt: (key, created).
spawned: dict[int, list[tuple[str | None, bool]]] = {}


@registry.register
@task(kind="wf-fetch")
def fetch(url: str) -> int:
    return len(url)


@registry.register
@task(kind="wf-total")
def total(label: str) -> str:
    return f"{label}: {fetch.results()}"


@registry.register
@task(kind="wf-double")
async def double(n: int) -> int:
    return 2 * n


@registry.register
@task(kind="wf-add")
async def add(k: int) -> int:
    return double.result() + k


@registry.register
@task(kind="wf-show")
def show(prefix: str) -> str:
    return f"{prefix}{add.result()}"


@registry.register
@task(kind="wf-crawl", max_attempts=3)
async def crawl(urls: list[str]) -> int:
    """Spawns a fetch per URL and a total after them; its first run fails after its spawn,
    as a crash would, and the second spawns the same keys again."""
    job = current_job()
    answered = await group(fetch.step(url) for url in urls).then(total.step("crawled")).spawn()
    spawned[job.attempt] = [(item.job.spawn_key, item.created) for item in answered]
    if job.attempt == 1:
        raise ConnectionError("lost the connection after spawning")
    return len(urls)


@registry.register
@task(kind="wf-crawl-sync")
def crawl_sync(urls: list[str]) -> int:
    """The same from a plain handler, with a key of its own."""
    flow = group(fetch.step(url) for url in urls).then(total.step("synced"))
    return len(flow.spawn_sync(key="pages"))


@registry.register
@task(kind="wf-cancelled-spawn")
async def cancelled_spawn() -> int:
    """Cancels its own job, then spawns: refused (409), the handler is stopped."""
    client: Client = current_context().state["client"]
    await client.cancel(current_job().id)
    await fetch.step("https://never.example").spawn()
    return 1


@registry.handler("wf-echo")
def echo(job: LeasedJob) -> object:
    return job.payload


@registry.handler("wf-parents")
def parents_of(job: LeasedJob) -> list[object]:
    return [[p.kind, str(p.status), p.result, p.result_omitted] for p in job.parents]


@pytest.fixture(scope="module")
def tc() -> Iterator[TestCoordinator]:
    with TestCoordinator(registry) as coordinator:
        yield coordinator


def test_a_chain_runs_in_order_and_each_step_reads_the_one_before(tc: TestCoordinator) -> None:
    """One request for three jobs; the second and third wait until the one before completes."""
    handle = double.step(20).then(add.step(2)).then(show.step("n = ")).enqueue(tc.client)
    first, second, last = tc.jobs("wf-double")[-1], tc.jobs("wf-add")[-1], handle.job
    assert (first.status, second.status, last.status) == ("queued", "waiting", "waiting")
    assert (second.id, last.id) == (first.id + 1, first.id + 2)
    tc.drain(check=True)
    assert handle.result(timeout=5) == "n = 42"


def test_a_fan_in_gets_its_group_s_results_in_order(tc: TestCoordinator) -> None:
    urls = ["https://a.example", "https://bb.example", "https://c.example/long"]
    handles = group(fetch.step(url) for url in urls).enqueue(tc.client)
    merged = group(fetch.step(url) for url in urls).then(total.step("sizes")).enqueue(tc.client)
    assert merged.job.status == "waiting" and merged.job.waiting_for == 3
    tc.drain(check=True)
    assert [h.result(timeout=5) for h in handles] == [len(url) for url in urls]
    assert merged.result(timeout=5) == f"sizes: {[len(url) for url in urls]}"


def test_a_group_of_none_then_a_step_runs_the_step_at_once(tc: TestCoordinator) -> None:
    handle = group([]).then(total.step("none")).enqueue(tc.client)
    assert handle.job.status == "queued"
    tc.drain(check=True)
    assert handle.result(timeout=5) == "none: []"


def test_spawned_children_are_keyed_so_a_second_run_gets_them_back(tc: TestCoordinator) -> None:
    """The first run spawns and then fails; the run that follows spawns the same keys and
    is answered with the children made the first time, none made twice."""
    handle = crawl.enqueue(tc.client, ["https://a.example", "https://bb.example"])
    tc.drain(advance=True)
    assert handle.result(timeout=5) == 2
    assert spawned[1] == [("0.0", True), ("0.1", True), ("0.2", True)]
    assert spawned[2] == [("0.0", False), ("0.1", False), ("0.2", False)]
    children = [j for j in tc.jobs() if j.spawned_by == handle.id]
    assert [(j.kind, j.status) for j in children] == [
        ("wf-fetch", JobStatus.COMPLETED),
        ("wf-fetch", JobStatus.COMPLETED),
        ("wf-total", JobStatus.COMPLETED),
    ]
    assert children[-1].result == "crawled: [17, 18]"


def test_a_plain_handler_spawns_with_a_key_of_its_own(tc: TestCoordinator) -> None:
    handle = crawl_sync.enqueue(tc.client, ["https://a.example"])
    tc.drain(check=True)
    assert handle.result(timeout=5) == 2
    children = [j for j in tc.jobs() if j.spawned_by == handle.id]
    assert [(j.spawn_key, j.result) for j in children] == [
        ("pages.0", 17),
        ("pages.1", "synced: [17]"),
    ]


def test_a_spawn_refused_for_a_cancelled_job_spawns_nothing_and_stops_it(
    tc: TestCoordinator,
) -> None:
    """The 409 loses the lease as a refused renewal does: the handler is stopped, the job
    handed back ends cancelled, and no child was made."""
    tc.context.state["client"] = tc.async_client
    handle = cancelled_spawn.enqueue(tc.client)
    (run,) = tc.drain().runs
    assert (run.id, run.status) == (handle.id, JobStatus.CANCELLED)
    assert [j for j in tc.jobs() if j.spawned_by == handle.id] == []
    assert tc.jobs(fetch, status="waiting") == [] and not tc.enqueued(
        fetch, "https://never.example"
    )


def test_results_a_lease_left_out_are_fetched_before_the_handler_runs() -> None:
    """Past half the lease answer's budget the coordinator leaves parents' results out; the
    worker reads them, so the handler gets every one."""
    settings = CoordinatorSettings(max_answer_bytes=6000)
    with TestCoordinator(registry, settings=settings) as small:
        texts = [str(n) * 1000 for n in range(5)]
        parents = [Workflow(NewJob("wf-echo", text)) for text in texts]
        handle = group(parents).then(Workflow(NewJob("wf-parents"))).enqueue(small.client)
        small.drain(kinds=["wf-echo"], check=True)
        lease = small.client.lease("a-look", kinds=["wf-parents"])
        assert lease is not None and lease.job.parents is not None
        omitted = [p.result_omitted for p in lease.job.parents]
        assert omitted[0] is False and omitted[-1] is True  # the lease left some out
        small.client.release(handle.id, lease.token)
        small.drain(check=True)
        assert handle.result(timeout=5) == [["wf-echo", "completed", t, False] for t in texts]


async def test_the_async_client_enqueues_a_workflow_and_awaits_its_result() -> None:
    async with AsyncTestCoordinator(registry) as atc:
        handle = await double.step(1).then(add.step(1)).enqueue(atc.client)
        await atc.drain(check=True)
        assert await handle.result(timeout=5) == 3


def test_readme_s_python_workflows_print_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pipeline.py and run_pipeline.py as README prints them, the test mode standing in
    for the coordinator and `leasehold worker pipeline:registry` (inline: each job runs as
    it is enqueued, through the worker's own parts): the script prints what README shows."""
    found = blocks()
    for name in ("pipeline.py", "run_pipeline.py"):
        (tmp_path / name).write_text(found[name])
    (step,) = console(found["pipeline-run"])
    assert step.command == "python run_pipeline.py"
    assert "(`leasehold worker pipeline:registry`)" in README.read_text()
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        pipeline = importlib.import_module("pipeline")
        printed: list[str] = []
        with TestCoordinator(pipeline.registry, inline=True) as inline:

            def from_env(cls: type[SyncClient], /, **options: Any) -> SyncClient:
                return inline.client

            monkeypatch.setattr(SyncClient, "from_env", classmethod(from_env))
            # The script's own prints (the worker's logs go to stdout too, in tests).
            shown = {"print": lambda *args: printed.append(" ".join(map(str, args)))}
            runpy.run_path(str(tmp_path / "run_pipeline.py"), shown, run_name="__main__")
            crawled = inline.jobs("total-size")[-1]
            assert crawled.spawned_by is not None and crawled.status == "completed"
    finally:
        sys.modules.pop("pipeline", None)
    assert printed == step.output
