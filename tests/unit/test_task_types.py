"""mypy refuses a wrong argument to a typed task's enqueue, and to each step of a workflow,
at the call site (one mypy run checks both programs)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROGRAM = textwrap.dedent(
    """
    from leasehold import Client, SyncClient, task


    @task(kind="send-email")
    async def send_email(to: str, subject: str, copies: int = 1) -> str:
        return to


    def produce(sync: SyncClient) -> str:
        handle = send_email.enqueue(sync, to="ada@example.com", subject="hi")
        send_email.options(queue="urgent").enqueue(sync, "ada@example.com", "hi", copies=2)
        send_email.enqueue(sync, to="ada@example.com", subject=3)  # line 13: wrong type
        send_email.enqueue(sync, to="ada@example.com")  # line 14: missing argument
        send_email.enqueue(sync, to="a", subject="b", cc="c")  # line 15: unknown argument
        return handle.result(timeout=5)


    async def produce_async(client: Client) -> None:
        handle = await send_email.enqueue(client, "ada@example.com", "hi")
        count: int = await handle.result()  # line 21: the result is a str
    """
)

# Workflows: every step's arguments are its task's, the handle has the last step's type.
WORKFLOWS = textwrap.dedent(
    """
    from leasehold import Client, SyncClient, task
    from leasehold.tasks import group


    @task(kind="fetch")
    def fetch(url: str) -> int:
        return len(url)


    @task(kind="total")
    def total(label: str, scale: float = 1.0) -> str:
        return f"{label}: {sum(fetch.results()) * scale}"


    def produce(sync: SyncClient) -> str:
        handle = fetch.step("https://a").then(total.step("bytes")).enqueue(sync)
        fetch.step(url=1).then(total.step("t"))  # line 18: wrong type in the first step
        fetch.step("a").then(total.step())  # line 19: missing argument in the second
        group(fetch.step(u) for u in "ab").then(total.step("t", scale="x"))  # line 20
        wrong: int = handle.result()  # line 21: the last step's result is a str
        sizes: list[str] = [h.result() for h in group([fetch.step("a")]).enqueue(sync)]  # 22
        return handle.result(timeout=5)


    async def in_a_handler(client: Client) -> None:
        mine: list[str] = fetch.results()  # line 27: a fetch's results are ints
        await group([fetch.step("a")]).then(total.step("t")).spawn(key="pages")
        last = await fetch.step("b").then(total.step("u")).enqueue(client)
        also: int = await last.result()  # line 30: a str
    """
)


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, str]]:
    """Each program's mypy errors, by line."""
    folder = tmp_path_factory.mktemp("typed")
    (folder / "producer.py").write_text(PROGRAM)
    (folder / "workflows.py").write_text(WORKFLOWS)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(folder)],
        capture_output=True,
        text=True,
        cwd=REPO,  # the project's mypy cache: leasehold's own types are checked already
        timeout=120,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    errors: dict[str, dict[int, str]] = {"producer.py": {}, "workflows.py": {}}
    for line in run.stdout.splitlines():
        if "error:" in line:
            path, number = line.split(":")[:2]
            found = errors[Path(path).name]
            found[int(number)] = found.get(int(number), "") + line.split("error:", 1)[1]
    return errors


def test_mypy_refuses_wrong_arguments_at_the_call_site(
    refused: dict[str, dict[int, str]],
) -> None:
    errors = refused["producer.py"]
    assert sorted(errors) == [13, 14, 15, 21], errors
    # The overloads (sync and async client) both take the function's own parameters.
    assert 'matches argument types "SyncClient", "str", "int"' in errors[13]
    assert 'matches argument types "SyncClient", "str"' in errors[14]
    assert 'Unexpected keyword argument "cc"' in errors[15]
    assert 'expression has type "str", variable has type "int"' in errors[21]


def test_mypy_refuses_a_wrong_argument_to_any_step_of_a_workflow(
    refused: dict[str, dict[int, str]],
) -> None:
    errors = refused["workflows.py"]
    assert sorted(errors) == [18, 19, 20, 21, 22, 27, 30], errors
    assert 'Argument "url" to "step" of "Task" has incompatible type "int"' in errors[18]
    assert 'Missing positional argument "label" in call to "step"' in errors[19]
    assert 'Argument "scale" to "step" of "Task" has incompatible type "str"' in errors[20]
    assert 'expression has type "str", variable has type "int"' in errors[21]
    assert "List comprehension has incompatible type List[int]" in errors[22]
    assert 'expression has type "list[int]", variable has type "list[str]"' in errors[27]
    assert 'expression has type "str", variable has type "int"' in errors[30]
