"""What a test asks of the enqueued jobs: those of a task called with these arguments, or
of a kind with this payload, and the message when there are none (or some)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from leasehold.model import JSON, Job
from leasehold.tasks import Task


class _Any:
    def __repr__(self) -> str:
        return "any payload"


ANY: Final = _Any()
"""Matches every payload: ``enqueued("send-email")`` is every job of that kind."""

_SHOWN = 10  # jobs a failed assertion lists


def wanted(
    what: Task[Any, Any] | str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> tuple[str, JSON]:
    """The kind and the payload a query asks for. A task's arguments are bound and checked
    as its enqueue would (a call that does not fit its signature is a ``PayloadError``), so
    they match the payload its enqueue sends, defaults included."""
    if isinstance(what, Task):
        return what.kind, what.payload(*args, **kwargs)
    if not isinstance(what, str):
        raise TypeError(f"a task or a kind, not {what!r}")
    if kwargs or len(args) > 1:
        raise TypeError("a kind is matched with one payload: enqueued(kind, payload)")
    return what, args[0] if args else ANY


def matching(jobs: Sequence[Job], payload: JSON) -> list[Job]:
    return [job for job in jobs if payload is ANY or job.payload == payload]


def not_found(kind: str, payload: JSON, of_kind: Sequence[Job]) -> str:
    """Why ``assert_enqueued`` failed: what was asked, and what there is of that kind."""
    asked = f"no job of kind {kind!r}" + ("" if payload is ANY else f" with payload {payload!r}")
    if not of_kind:
        return f"{asked} was enqueued, nor any of that kind"
    return f"{asked} was enqueued; of that kind:\n" + _listed(of_kind)


def found(kind: str, payload: JSON, jobs: Sequence[Job]) -> str:
    """Why ``assert_not_enqueued`` failed."""
    asked = f"job of kind {kind!r}" + ("" if payload is ANY else f" with payload {payload!r}")
    return f"{len(jobs)} {asked} enqueued:\n" + _listed(jobs)


def _listed(jobs: Sequence[Job]) -> str:
    lines = [f"  job {j.id} ({j.status}, queue {j.queue!r}): {j.payload!r}" for j in jobs[:_SHOWN]]
    if len(jobs) > _SHOWN:
        lines.append(f"  ... and {len(jobs) - _SHOWN} more")
    return "\n".join(lines)
