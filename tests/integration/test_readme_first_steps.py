"""The README's first steps, run as printed: make's targets, the typed-task example."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process import Coordinator, sqlite_coordinator, wait_until

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
BIN = Path(sys.executable).parent  # what `. .venv/bin/activate` puts on PATH


def block(first_line: str) -> str:
    """The fenced block of the README whose first line is ``first_line``."""
    found = re.search(r"```\w*\n(" + re.escape(first_line) + r"\n.*?)```", README, re.S)
    assert found, f"no block starting {first_line!r} in the README"
    return found.group(1)


def console(command: str) -> str:
    """The output printed under ``$ command`` in the README."""
    found = re.search(r"\$ " + re.escape(command) + r"\n(.*?)```", README, re.S)
    assert found, f"no '$ {command}' in the README"
    return found.group(1)


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path) as c:
        yield c


def activated(url: str) -> dict[str, str]:
    """The environment after ``. .venv/bin/activate``, pointed at the test's coordinator."""
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "LEASEHOLD_URL": url, "PYTHONUNBUFFERED": "1"}


def test_the_typed_task_example_runs_as_printed(coordinator: Coordinator, tmp_path: Path) -> None:
    work = tmp_path / "app"
    work.mkdir()
    (work / "tasks.py").write_text(block("# tasks.py"))
    (work / "produce.py").write_text(block("# produce.py"))
    env = activated(coordinator.url)
    assert "$ leasehold worker tasks:registry\n" in README
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(
        ["leasehold", "worker", "tasks:registry"], cwd=work, env=env, stdout=log, stderr=log
    )
    try:
        run = subprocess.run(
            ["python", "produce.py"], cwd=work, env=env, capture_output=True, text=True, timeout=60
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout == console("python produce.py")
    finally:
        worker.send_signal(signal.SIGTERM)
        wait_until(lambda: worker.poll() is not None, 20, what="the worker to stop")
        log.close()
    assert worker.returncode == 0


def test_the_test_mode_examples_pass_as_printed(tmp_path: Path) -> None:
    """The typed-task example and billing.py, tested in the test mode as README prints it:
    pytest with leasehold's plugin, no coordinator running anywhere."""
    for name in ("tasks.py", "billing.py", "test_tasks.py", "test_billing.py"):
        (tmp_path / name).write_text(block(f"# {name}"))
    command = "python -m pytest -q -p no:cacheprovider test_tasks.py test_billing.py"
    assert f"$ {command}\n" in README
    run = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        # Nothing listens at that URL: nothing is needed. Only leasehold's plugin is loaded
        # (the test tools' own take seconds to import); test_packaging.py checks that pytest
        # finds it by its entry point.
        env={
            **activated("http://127.0.0.1:9"),
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYTEST_PLUGINS": "leasehold.testing.plugin",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    dots, summary = console(command).splitlines()
    lines = run.stdout.splitlines()
    assert lines[0] == dots, run.stdout
    assert re.fullmatch(r"3 passed in [\d.]+s", lines[-1]), run.stdout
    assert re.fullmatch(r"3 passed in [\d.]+s", summary)


def test_the_set_up_commands_are_what_make_runs() -> None:
    assert "make run     # creates .venv" in README and "make run PORT=8081" in README
    dry = subprocess.run(
        ["make", "-n", "run", "PORT=8081"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert ".venv/bin/leasehold serve --port 8081" in dry.stdout
    # Running needs only the runtime dependencies; the test tools come with `make test`.
    install = subprocess.run(
        ["make", "-n", "-B", "install"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert "pip install --quiet -e '.'" in install.stdout and "[test]" not in install.stdout
    test = subprocess.run(
        ["make", "-n", "-B", "test"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert "pip install --quiet -e '.[test]'" in test.stdout


def test_version_as_printed() -> None:
    assert "leasehold --version" in README
    run = subprocess.run(
        ["leasehold", "--version"], env=activated(""), capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0 and run.stdout.startswith("leasehold ")


def test_an_extra_asked_for_later_is_installed_into_an_existing_venv(tmp_path: Path) -> None:
    """`make install EXTRAS=postgres` (what a postgresql:// URL without the extra says to
    run) installs it into a .venv that `make install` made, rather than finding it up to
    date; the plain install is up to date."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    made = (REPO / "pyproject.toml").stat().st_mtime + 1
    for stamp in (venv / "bin" / "python", venv / ".installed"):
        stamp.touch()
        os.utime(stamp, (made, made))

    def dry(*args: str) -> str:
        done = subprocess.run(
            ["make", "-n", "install", f"VENV={venv}", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout

    assert "pip install" not in dry()
    assert "pip install --quiet -e '.[postgres]'" in dry("EXTRAS=postgres")
    assert "pip install --quiet -e '.[postgres,otel]'" in dry("EXTRAS=postgres,otel")
