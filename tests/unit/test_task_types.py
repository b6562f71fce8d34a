"""mypy refuses a wrong argument to a typed task's enqueue, at the call site."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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


def test_mypy_refuses_wrong_arguments_at_the_call_site(tmp_path: Path) -> None:
    source = tmp_path / "producer.py"
    source.write_text(PROGRAM)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(source)],
        capture_output=True,
        text=True,
        cwd=REPO,  # the project's mypy cache: leasehold's own types are checked already
        timeout=120,
    )
    errors: dict[int, str] = {}
    for line in run.stdout.splitlines():
        if "error:" in line:
            number = int(line.split(":")[1])
            errors[number] = errors.get(number, "") + line.split("error:", 1)[1]
    assert run.returncode == 1, run.stdout + run.stderr
    assert sorted(errors) == [13, 14, 15, 21], run.stdout
    # The overloads (sync and async client) both take the function's own parameters.
    assert 'matches argument types "SyncClient", "str", "int"' in errors[13]
    assert 'matches argument types "SyncClient", "str"' in errors[14]
    assert 'Unexpected keyword argument "cc"' in errors[15]
    assert 'expression has type "str", variable has type "int"' in errors[21]
