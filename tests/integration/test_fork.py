"""Clients made before a fork work in the child (gunicorn --preload, prefork workers)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator

import pytest

from leasehold import Client, SyncClient
from tests.process import Coordinator, sqlite_coordinator
from tests.workers import COORDINATOR_ARGS

# Python 3.12 warns that forking a process with threads may deadlock; the point here is
# that the client's own thread does not make it so.
pytestmark = pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")
WITHIN = 20.0


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("fork"), COORDINATOR_ARGS) as c:
        yield c


def in_child(work: Callable[[], int]) -> int:
    """Fork; the child runs ``work`` and sends back the job id it answers. The child exits
    with os._exit, so that nothing of the test process (pytest's teardown) runs twice."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.close(read)
            os.write(write, str(work()).encode())
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(write)
    deadline = time.monotonic() + WITHIN
    while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the child hung: its client never answered")
        time.sleep(0.01)
    with os.fdopen(read) as answer:
        sent = answer.read()
    assert os.waitstatus_to_exitcode(done[1]) == 0
    return int(sent)


def test_a_sync_client_made_before_a_fork_works_in_the_child(coordinator: Coordinator) -> None:
    with SyncClient(coordinator.url) as client:
        before = client.enqueue("fork-sync", "parent")  # the pool holds a connection now
        child_job = in_child(lambda: client.enqueue("fork-sync", "child").id)
        assert client.get(child_job).payload == "child"
        after = client.enqueue("fork-sync", "parent again")  # the parent's client still works
        assert after.id > child_job > before.id


def test_an_async_client_made_before_a_fork_works_in_the_child(coordinator: Coordinator) -> None:
    client = Client(coordinator.url)

    async def enqueue(payload: str) -> int:
        return (await client.enqueue("fork-async", payload)).id

    # The parent uses it from a loop of its own (its session is bound to that loop) ...
    runner = asyncio.Runner()
    first = runner.run(enqueue("parent"))
    # ... and a child that forked meanwhile runs its own loop with the same client object.
    second = in_child(lambda: asyncio.run(enqueue("child")))
    assert runner.run(client.get(second)).payload == "child" and second > first
    runner.run(client.close())
    runner.close()
