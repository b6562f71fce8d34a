"""Reading the admin commands' option values. A mistake ends the command with one line and
exit code 2 before anything is sent (not click's boxed usage error: one line is easier to
read in a script's log)."""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from leasehold.cli.admin.connect import EXIT_USAGE, fail
from leasehold.model import JSON, JobStatus

_DURATION = re.compile(r"^\+?(\d+(?:\.\d+)?)(s|m|h|d)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def payload(text: str | None) -> JSON:
    """JSON text, ``@FILE`` for a file's contents, or ``-`` for stdin (None: null).

    No JSON text starts with ``@``, so the two forms cannot be confused.
    """
    if text is None:
        return None
    source = "--payload"
    if text == "-":
        text, source = sys.stdin.read(), "--payload (stdin)"
    elif text.startswith("@"):
        try:
            text, source = Path(text[1:]).read_text(), f"--payload {text}"
        except OSError as exc:
            fail(f"--payload: cannot read {text[1:]}: {exc.strerror}", EXIT_USAGE)
    try:
        # Strict JSON, as the coordinator requires: NaN and Infinity are refused here.
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        fail(f"{source} is not valid JSON: {exc}", EXIT_USAGE)


def _no_constant(name: str) -> JSON:
    raise ValueError(f"{name} is not allowed in JSON")


def run_after(text: str | None, now: datetime | None = None) -> datetime | None:
    """An RFC 3339 time with an offset, or a delay from now: 90s, 15m, 2h, 1.5d."""
    if text is None:
        return None
    match = _DURATION.match(text.strip())
    if match:
        seconds = float(match[1]) * _UNIT_SECONDS[match[2]]
        return (now or datetime.now(UTC)) + timedelta(seconds=seconds)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        fail(
            f"--run-after: {text!r} is neither a time (2030-01-01T09:00:00+00:00) nor a delay"
            " (90s, 15m, 2h)",
            EXIT_USAGE,
        )
    if moment.tzinfo is None:
        # Guessing a zone would be wrong for someone; say which one instead.
        fail(f"--run-after: {text!r} has no UTC offset; add one, e.g. +00:00 or Z", EXIT_USAGE)
    return moment


def before(text: str | None, now: datetime | None = None) -> datetime | None:
    """An RFC 3339 time with an offset, or an age: 90s, 15m, 2h, 7d ago."""
    if text is None:
        return None
    match = _DURATION.match(text.strip())
    if match:
        seconds = float(match[1]) * _UNIT_SECONDS[match[2]]
        return (now or datetime.now(UTC)) - timedelta(seconds=seconds)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        fail(f"--finished-before: {text!r} is neither a time nor an age (2h, 7d)", EXIT_USAGE)
    if moment.tzinfo is None:
        fail(f"--finished-before: {text!r} has no UTC offset; add one, e.g. Z", EXIT_USAGE)
    return moment


_RATE = re.compile(r"^(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*(s|m|h|d)?$")


def rate(text: str | None) -> tuple[int, float] | None:
    """``LIMIT/PERIOD``: units and the window's length, as 100/1s, 600/1m, 5/s, 10/2.5
    (seconds when the unit is left out, one of the unit when the number is)."""
    if text is None:
        return None
    match = _RATE.match(text.strip())
    if match is None or (match[2] is None and match[3] is None):
        fail(f"--rate: {text!r} is not LIMIT/PERIOD (100/1s, 600/1m, 5/s)", EXIT_USAGE)
    period = float(match[2] or 1) * _UNIT_SECONDS[match[3] or "s"]
    if int(match[1]) < 1 or period <= 0:
        fail(f"--rate: {text!r}: the limit and the period must be above zero", EXIT_USAGE)
    return int(match[1]), period


def status(text: str | None) -> JobStatus | None:
    if text is None:
        return None
    try:
        return JobStatus(text)
    except ValueError:
        names = ", ".join(s.value for s in JobStatus)
        fail(f"--status: {text!r} is not a status ({names})", EXIT_USAGE)
