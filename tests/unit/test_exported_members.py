"""The public Python surface is what these packages export, and nothing else: the only
compatibility promise for imports (internal modules move freely). The pytest fixtures of
``leasehold.testing.plugin`` (``leasehold_coordinator``, ``leasehold_registry``) are
public by their names too."""

from __future__ import annotations

import importlib
import inspect

import pytest

PUBLIC = {
    "leasehold": [
        "AsyncHandle",
        "Client",
        "Conflict",
        "Handle",
        "IdempotencyConflict",
        "InvalidRequest",
        "Job",
        "JobCancelled",
        "JobFailed",
        "JobNotFound",
        "JobStatus",
        "LeaseExpired",
        "LeaseholdError",
        "PayloadError",
        "ReportConflict",
        "ResultTimeout",
        "StaleToken",
        "SyncClient",
        "Task",
        "TaskOptions",
        "TaskTimeout",
        "UnservedWarning",
        "WorkerContext",
        "__version__",
        "current_context",
        "current_job",
        "task",
    ],
    "leasehold.client": [
        "DEFAULT_URL",
        "MAX_BATCH",
        "NO_RETRY",
        "Client",
        "CompleteItem",
        "Enqueued",
        "FailItem",
        "ItemOutcome",
        "ItemResult",
        "ItemVerdict",
        "JobPage",
        "Lease",
        "NewJob",
        "ParentRef",
        "RenewItem",
        "RetryPolicy",
        "SyncClient",
        "UnservedWarning",
        "error_from_answer",
        "parse_job",
    ],
    "leasehold.worker": [
        "AppLoadError",
        "Handler",
        "LeasedJob",
        "Parent",
        "PermanentFailure",
        "Registry",
        "Retry",
        "Worker",
        "WorkerContext",
        "WorkerSettings",
        "current_context",
        "current_job",
        "exponential",
        "fixed",
        "run_worker",
    ],
    "leasehold.tasks": [
        "Group",
        "Task",
        "TaskOptions",
        "TaskTimeout",
        "Workflow",
        "exponential",
        "fixed",
        "group",
        "task",
    ],
    "leasehold.conformance": ["Result", "run_vectors"],
    # The test mode: an in-process coordinator on a fake clock, and its pytest fixture
    # (leasehold.testing.plugin, loaded by the pytest11 entry point, exports no names).
    "leasehold.testing": ["AsyncTestCoordinator", "Drained", "TestCoordinator"],
    "leasehold.transactional": ["Options", "enqueue", "enqueue_many", "enqueue_one"],
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_the_package_exports_exactly_its_public_names(name: str) -> None:
    """``__all__`` is the pinned list, and every name in it can be imported."""
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(PUBLIC[name])
    for member in module.__all__:
        assert getattr(module, member) is not None, member


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_public_members_live_inside_leasehold(name: str) -> None:
    """Each exported class and function is leasehold's own, not a re-export of a library's."""
    module = importlib.import_module(name)
    for member in module.__all__:
        value = getattr(module, member)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.split(".")[0] == "leasehold", (member, value.__module__)
