"""The HTTP client for leasehold coordinators: ``Client`` (async) and ``SyncClient``.

Every call is written once, as a flow of the requests it needs (``_calls.py``), with one
retry and failover policy (``_exchange.py``); ``Client`` awaits the flows on aiohttp, and
``SyncClient`` runs them on plain keep-alive sockets, with no event loop and no thread
(DESIGN.md §14 says why each transport). The worker and the CLI use these clients;
nothing else in leasehold speaks HTTP to the coordinator.

Several coordinators: a client takes one URL or several (``"http://a:8080,http://b:8080"``)
of coordinators on one database, asks the one that answered last, and moves a call on to
the next on a connection error, a timeout, or a 502, 503 or 504.

Errors come back as the types in ``leasehold.errors``, told apart by the ``error`` code in
the JSON body (``StaleToken``, ``LeaseExpired``, ``JobNotFound``, ...), or by the status
when a body carries no known code. ``Unavailable`` stands for every answer that is not one:
a network error, a timeout or a 5xx.

Retries: calls that fail with ``Unavailable`` are tried again with exponential backoff and
jitter (``RetryPolicy``); 4xx answers never are. That is safe because every call is
idempotent: a worker's renew / complete / fail / release repeats under the same token are
answered as the first was, a lease repeats its request id, reads change nothing, and an
enqueue always carries an idempotency key (see ``Client.enqueue``).

An enqueue of a job that no live worker serves (its kind misspelt, or no worker started)
succeeds and warns (``UnservedWarning``), when the coordinator says so.

Workflows (DESIGN.md §22): jobs enqueued together may depend on each other by ``ref``
(``NewJob(..., ref=, after=)``, ``enqueue_graph``), a running job spawns children under
its lease's token (``spawn``), and a lease of a job with parents carries their results
(``Job.parents``).

Batches (``enqueue_many``, ``lease(..., max_jobs=N)``, ``renew_many``, ``complete_many``,
``fail_many``) send up to 1,000 items in one request; reports are answered item by item
(``ItemResult``), so one stale token never fails the others.

The names are imported on first use (``leasehold._lazy``): the command line and the
coordinator import ``DEFAULT_URL`` without aiohttp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from leasehold._lazy import exports

if TYPE_CHECKING:
    from leasehold.client._batch_items import (
        CompleteItem,
        FailItem,
        ItemOutcome,
        ItemResult,
        ItemVerdict,
        RenewItem,
    )
    from leasehold.client._client import Client
    from leasehold.client._new_job import MAX_BATCH, NewJob, ParentRef
    from leasehold.client._parse import (
        DEFAULT_URL,
        Enqueued,
        JobPage,
        Lease,
        error_from_answer,
        parse_job,
    )
    from leasehold.client._retry import NO_RETRY, RetryPolicy
    from leasehold.client._sync import SyncClient
    from leasehold.client._unserved import UnservedWarning

__all__ = [
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
]

_HOMES: dict[str, str] = {
    "CompleteItem": "leasehold.client._batch_items",
    "FailItem": "leasehold.client._batch_items",
    "ItemOutcome": "leasehold.client._batch_items",
    "ItemResult": "leasehold.client._batch_items",
    "ItemVerdict": "leasehold.client._batch_items",
    "RenewItem": "leasehold.client._batch_items",
    "Client": "leasehold.client._client",
    "MAX_BATCH": "leasehold.client._new_job",
    "NewJob": "leasehold.client._new_job",
    "ParentRef": "leasehold.client._new_job",
    "DEFAULT_URL": "leasehold.client._parse",
    "Enqueued": "leasehold.client._parse",
    "JobPage": "leasehold.client._parse",
    "Lease": "leasehold.client._parse",
    "error_from_answer": "leasehold.client._parse",
    "parse_job": "leasehold.client._parse",
    "SyncClient": "leasehold.client._sync",
    "UnservedWarning": "leasehold.client._unserved",
    "NO_RETRY": "leasehold.client._retry",
    "RetryPolicy": "leasehold.client._retry",
}
__getattr__, __dir__ = exports(__name__, _HOMES)
