"""Each default and the version have one home; whatever shows or repeats one agrees with it."""

from __future__ import annotations

import ast
import dataclasses
import re
from datetime import UTC, datetime
from pathlib import Path

import typer.main

import leasehold
from leasehold._version import __version__
from leasehold.cli import app
from leasehold.worker.heartbeat import beat_body
from leasehold.worker.settings import WorkerSettings

SOURCE = Path(leasehold.__file__).parent


def _option_defaults(*path: str) -> dict[str, object]:
    """The defaults of ``leasehold <path>``'s options, by parameter name."""
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]  # a TyperGroup
    return {p.name: p.default for p in command.params if p.name is not None}


def _defaults(cls: type) -> dict[str, object]:
    return {
        f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }


def test_the_version_is_read_in_one_place() -> None:
    readers = [
        str(path.relative_to(SOURCE))
        for path in SOURCE.rglob("*.py")
        if re.search(r"metadata\.version\(", path.read_text())
    ]
    assert readers == ["_version.py"]
    assert leasehold.__version__ == __version__ != "0+unknown"


def test_a_worker_reports_leaseholds_version() -> None:
    body = beat_body("w", ("k",), None, 1, datetime(2026, 1, 1, tzinfo=UTC))
    assert body["version"] == __version__


def test_the_worker_command_shows_the_workers_defaults() -> None:
    options = _option_defaults("worker")
    shared = _defaults(WorkerSettings).keys() & options.keys()
    assert {"concurrency", "wait_seconds", "grace_seconds", "lease_seconds"} <= shared
    for name in shared:
        assert options[name] == getattr(WorkerSettings(), name), name


def _declared(module: Path) -> set[str]:
    """The upper-case names a module assigns at its top level."""
    names: set[str] = set()
    for node in ast.parse(module.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            elements = target.elts if isinstance(target, ast.Tuple) else [target]
            names |= {e.id for e in elements if isinstance(e, ast.Name) and e.id.isupper()}
    return names


def test_the_models_constants_are_declared_nowhere_else() -> None:
    # The defaults and bounds both sides share, and the caps the coordinator's settings and
    # its service both default to: the others import them from the model.
    shared = _declared(SOURCE / "model.py")
    assert {"MAX_ANSWER_BYTES", "MAX_KINDS", "MAX_WAITING_POLLS", "DEFAULT_TIMEZONE"} <= shared
    # The worker's heartbeat still names its own default interval (outside this check's
    # part of the tree; it should import the model's).
    allowed: set[tuple[str, str]] = set()
    again = {
        (str(path.relative_to(SOURCE)), name)
        for path in SOURCE.rglob("*.py")
        if path.name != "model.py" or path.parent != SOURCE
        for name in _declared(path) & shared
    }
    assert again <= allowed
