"""A mistyped option or command is one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CASES = [
    (["serve", "--log-level", "verbose"], "'verbose' is not one of 'debug'"),
    (["serve", "--log-format", "pretty"], "'pretty' is not one of"),
    (["serve", "--sqlite-synchronous", "fast"], "'fast' is not one of 'full', 'normal'"),
    (["serve", "--public-origin", "https://x/ui/"], "'https://x/ui/' is not an origin"),
    (["worker", "--concurrency", "0"], "greater than or equal to 1"),
    (["nosuch"], "No such command 'nosuch'"),
    # A URL without its scheme was taken for an outage: exit 3, and a worker retrying forever.
    (["worker", "--url", "127.0.0.1:8080", "m:r"], "write http://127.0.0.1:8080"),
    (["stats", "--url", "http://a:8080,,http://b:8080"], "empty coordinator URL"),
]


@pytest.mark.parametrize(("args", "said"), CASES)
def test_a_usage_error_is_one_line_and_exit_2(args: list[str], said: str) -> None:
    """Each bad invocation prints exactly one line naming the problem and where help is."""
    done = subprocess.run(
        [sys.executable, "-m", "leasehold", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("leasehold: error: ")
    assert said in lines[0]
    assert "--help" in lines[0]
    assert "Traceback" not in done.stderr


def test_a_bare_command_still_shows_the_help() -> None:
    """`leasehold` alone lists the commands, as before."""
    done = subprocess.run(
        [sys.executable, "-m", "leasehold"], capture_output=True, text=True, timeout=60, check=False
    )
    assert "Usage: " in done.stdout + done.stderr
    assert "serve" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_an_error_importing_the_worker_app_names_its_file_and_line(tmp_path: Path) -> None:
    """A bug in APP's module: its traceback through the module's own lines (importlib's left
    out), then one line naming the file and line, and exit 2."""
    (tmp_path / "broken_jobs.py").write_text(
        "import os\n\nsettings = {'url': os.environ['NO_SUCH_SETTING']}\n"
    )
    broken = subprocess.run(
        [sys.executable, "-m", "leasehold", "worker", "broken_jobs:registry"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "LEASEHOLD_URL": "http://127.0.0.1:9"},
    )
    assert broken.returncode == 2
    *traceback, last = broken.stderr.splitlines()
    assert traceback[0] == "Traceback (most recent call last):"
    assert f'File "{tmp_path / "broken_jobs.py"}", line 3, in <module>' in broken.stderr
    assert "importlib" not in broken.stderr
    assert last.startswith("leasehold: error: ")
    assert "could not import 'broken_jobs' (broken_jobs.py, line 3): KeyError" in last
