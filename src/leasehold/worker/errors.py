"""Exceptions a handler raises to say how its job failed.

Any other exception fails the job too, and it is retried while attempts remain.
"""

from __future__ import annotations


class Retry(Exception):
    """Fail this attempt and try again after ``delay`` seconds (None: the coordinator's
    backoff). The coordinator caps the delay; with no attempts left the job is dead."""

    def __init__(
        self, message: str = "the handler asked for a retry", *, delay: float | None = None
    ):
        super().__init__(message)
        self.delay = delay


class PermanentFailure(Exception):
    """Fail the job for good: no retry, whatever attempts remain. For input that can never
    succeed, such as a payload that does not validate."""


class AppLoadError(Exception):
    """The APP given to ``leasehold worker`` could not be loaded. ``traceback``: for an
    exception raised while importing APP's module, its traceback through the module's own
    frames (the import machinery left out), as Python prints one; else None."""

    def __init__(self, message: str, *, traceback: str | None = None) -> None:
        super().__init__(message)
        self.traceback = traceback
