"""The warning for a job that no live worker will take: ``UnservedWarning``.

A coordinator of protocol 1.2 names, on an enqueue's answer (``Leasehold-Unserved``), the
(queue, kind) pairs of the jobs due now that no live worker serves. The job is stored all
the same; it waits until a worker for it starts. Most often the kind is misspelt, or no
worker runs yet: a warning, not an error. Python shows a warning once per place and text
by default; ``warnings.simplefilter("ignore", UnservedWarning)`` silences it.
"""

from __future__ import annotations

import json
import warnings

from leasehold.model import UNSERVED_HEADER

__all__ = ["UNSERVED_HEADER", "UnservedWarning", "warn_unserved"]


class UnservedWarning(UserWarning):
    """An enqueued job of a kind (in a queue) that no live worker serves: it waits."""


def warn_unserved(header: str | None) -> None:
    """Warn once per pair the header names (a header that does not parse is ignored: a
    warning is not worth failing a call that succeeded)."""
    if not header:
        return
    try:
        pairs = [(str(p["queue"]), str(p["kind"])) for p in json.loads(header)]
    except (ValueError, TypeError, KeyError):
        return
    for queue, kind in pairs:
        warnings.warn(
            f"no live worker serves kind {kind!r} in queue {queue!r}: the job waits until"
            " one starts (is the kind spelt as the worker's registry spells it?)",
            UnservedWarning,
            stacklevel=2,
        )
