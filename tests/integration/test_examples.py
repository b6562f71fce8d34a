"""The framework examples, run: a coordinator, each example's worker, its app or command."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest
import uvicorn

from leasehold import Client
from tests.process import Coordinator, free_port, sqlite_coordinator, wait_until
from tests.workers import COORDINATOR_ARGS

pytestmark = pytest.mark.slow(12)  # started early: see tests/conftest.py

REPO = Path(__file__).resolve().parents[2]
WITHIN = 30.0


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("examples"), COORDINATOR_ARGS) as c:
        yield c


def env(url: str) -> dict[str, str]:
    return {**os.environ, "LEASEHOLD_URL": url, "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def worker(coordinator: Coordinator, tmp_path: Path) -> Iterator[Callable[[str], None]]:
    """Start ``leasehold worker APP`` from the repository root, as the examples say."""
    started: list[subprocess.Popen[bytes]] = []

    def start(app: str) -> None:
        log = (tmp_path / "worker.log").open("ab")
        command = [sys.executable, "-m", "leasehold", "worker", app]
        proc = subprocess.Popen(command, cwd=REPO, env=env(coordinator.url), stdout=log, stderr=log)
        log.close()
        started.append(proc)

    yield start
    for proc in started:
        proc.send_signal(signal.SIGTERM)
        wait_until(lambda p=proc: p.poll() is not None, 20, what="the worker to stop")
        assert proc.returncode == 0, (tmp_path / "worker.log").read_text()[-2000:]


async def test_fastapi_enqueues_from_a_request_and_waits_in_another(
    coordinator: Coordinator, worker: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    worker("examples.fastapi_app.tasks:registry")
    monkeypatch.setenv("LEASEHOLD_URL", coordinator.url)
    from examples.fastapi_app.app import app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_config=None, lifespan="on"))
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not serving.done()
            await asyncio.sleep(0.01)
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as session:
            body = {"customer": "ada", "months": 3}
            async with session.post(f"{base}/reports", json=body) as answer:
                assert answer.status == 202
                job_id = (await answer.json())["job_id"]
            async with session.get(f"{base}/reports/{job_id}?wait=25") as answer:
                assert answer.status == 200, await answer.text()
                assert await answer.json() == {"customer": "ada", "months": 3, "total_cents": 3750}
            async with session.post(f"{base}/reports", json={"customer": "x", "months": 0}) as bad:
                assert bad.status == 422
            # A job of another kind is no report, and neither is a job that does not exist.
            async with Client(coordinator.url) as client:
                other = await client.enqueue("example-not-a-report", {})
            for missing in (other.id, 10**9):
                async with session.get(f"{base}/reports/{missing}?wait=1") as answer:
                    assert answer.status == 404, await answer.text()
                    assert await answer.json() == {"detail": f"no report has id {missing}"}
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, WITHIN)


def test_django_command_and_view_enqueue(
    coordinator: Coordinator, worker: Callable[[str], None]
) -> None:
    worker("examples.django_app.tasks:registry")
    command = [sys.executable, "examples/django_app/manage.py", "enqueue_welcome", "ada@x.org"]
    run = subprocess.run(
        command, cwd=REPO, env=env(coordinator.url), capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("job ") and "welcome mail to ada@x.org (job " in run.stdout
    assert "Unclosed" not in run.stderr  # the client is closed when the process ends
    # The view, through Django's test client, in a process of its own (Django's settings
    # are global to a process).
    script = (
        "import django, os, json\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'examples.django_app.settings'\n"
        "django.setup()\n"
        "from django.test import Client\n"
        "from examples.django_app.producer import client\n"
        "ok = Client().post('/welcome?email=bob@x.org')\n"
        "bad = Client().post('/welcome')\n"
        "job = json.loads(ok.content)['job_id']\n"
        "print(ok.status_code, bad.status_code, client().result(job, timeout=25))\n"
        # A job of the task's kind made by another request already holds carol's key (keys
        # are per kind: another kind's job with that key would not be in the way).
        "client().enqueue('example-welcome', {}, idempotency_key='welcome:carol@x.org')\n"
        "taken = Client().post('/welcome?email=carol@x.org')\n"
        "print(taken.status_code, json.loads(taken.content)['error'])\n"
        "from django.core.management import CommandError, call_command\n"
        "try:\n"
        "    call_command('enqueue_welcome', 'carol@x.org')\n"
        "except CommandError as exc:\n"
        "    print('command:', exc)\n"
    )
    view = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env(coordinator.url),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert view.returncode == 0, view.stderr
    served, taken, refused = view.stdout.splitlines()
    assert served.startswith("202 422 welcome mail to bob@x.org (job ")
    assert taken == "409 conflict"  # not a 500
    assert refused.startswith("command: not enqueued: ")
    assert "Unclosed" not in view.stderr
