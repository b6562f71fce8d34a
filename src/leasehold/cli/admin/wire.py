"""The ``--json`` forms: jobs and attempts as the coordinator sends them (DESIGN.md §9)."""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import datetime
from enum import Enum
from typing import Any

from leasehold.cli.terminal import safe_json
from leasehold.model import Attempt, Job

# Kept by the coordinator to itself (the client leaves them None), or a lease's alone.
_INTERNAL_JOB_FIELDS = frozenset(
    {"lease_seconds", "request_hash", "report", "releases", "parents"}  # parents: leases only
)


def job_json(job: Job) -> dict[str, Any]:
    # Every public field, so that fields added to Job later show up without a change here.
    return {
        f.name: _plain(getattr(job, f.name))
        for f in dataclasses.fields(job)
        if f.name not in _INTERNAL_JOB_FIELDS
    }


def attempt_json(attempt: Attempt) -> dict[str, Any]:
    return {
        f.name: _plain(getattr(attempt, f.name))
        for f in dataclasses.fields(attempt)
        if f.name != "job_id"  # the job it belongs to says that
    }


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value


def print_json(value: Any, *, lines: bool = False) -> None:
    """Indented JSON on stdout; one compact line per value with ``lines`` (JSON Lines, for
    ``stats --watch --json``). Characters a terminal acts on are escaped (``safe_json``)."""
    text = safe_json(json.dumps(value, ensure_ascii=False, indent=None if lines else 2))
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
