"""The byte budget of an answer that carries jobs (DESIGN.md §10).

A batch lease of 1,000 jobs whose payloads are near the payload cap would be a 256 MB
answer, built in memory while the coordinator serves everyone else. A lease is therefore
sealed (``coordinator/service/answer.py``) with a budget as well: inside the lease's transaction, the jobs
are encoded in lease order and, if they pass the budget, the lease is rolled back and made
again for as many jobs as fitted. Jobs that are not in the answer are never leased. The
first job always fits: a single job is bounded by the payload and result caps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from leasehold.coordinator.service import answer
from leasehold.coordinator.store.contract import lease_order
from leasehold.errors import LeaseholdError
from leasehold.model import Job


class OverBudget(LeaseholdError):
    """The leased jobs would make the answer pass its budget; only ``fit`` of them fit.

    Raised inside the lease's transaction (rolling it back) and caught by the service,
    which leases again: never answered. A LeaseholdError, so that a store treats it as it
    treats any refused lease (one leased for a waiting poll then looks again itself)."""

    code = "over_budget"

    def __init__(self, fit: int) -> None:
        super().__init__(f"only {fit} jobs fit in the answer's budget")
        self.fit = fit


def budget_seal(max_bytes: int) -> Callable[[Sequence[Job]], None]:
    """A lease's seal: every job answerable (as ``answer.seal``), and all within budget."""

    def seal(jobs: Sequence[Job]) -> None:
        spent = 0
        for n, job in enumerate(sorted(jobs, key=lease_order)):
            spent += len(answer.keep(job))  # the answer reuses this encoding
            if job.parents:
                spent += len(answer.encode(job.parents))
            if spent > max_bytes and n > 0:
                raise OverBudget(n)

    return seal
