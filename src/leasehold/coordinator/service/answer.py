"""A job's answer, built inside the transaction that leased or changed the job.

An answer that fails after its transaction committed leaves a lease nobody received (the
job then loses an attempt when the lease runs out) or a change the client believes was
not made. So every route that answers with jobs has them encoded here while the store's
transaction is still open: ``seal`` runs in the store (for leases, ``LeaseRequest.seal``)
or inside the rule (``sealed``), and if a job cannot be encoded the transaction is rolled
back and the request fails whole (``Unanswerable``, answered 500) with nothing changed.

Each job is encoded on its own (``job_json``) and embedded in its envelope as an
``orjson.Fragment``, so an envelope adds no depth to what was checked. The encoding a
seal made is kept for the answer (``_Sealed``), so the check costs no second encoding.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Final

import orjson
import structlog

from leasehold import job_fields
from leasehold.coordinator.rules.transitions import Outcome, summary_line
from leasehold.errors import Unanswerable
from leasehold.model import Job

log = structlog.get_logger("leasehold")


job_wire: Final = job_fields.wire_encoder(
    {"error_summary": ("last_error", summary_line)}, name="job_wire"
)
"""``schemas.JobOut`` of a job, as a dict orjson serialises (generated from
``job_fields``: it runs for every job answered)."""


def encode(data: Any) -> bytes:
    """The one JSON serialiser of answers."""
    return orjson.dumps(data)


def job_json(job: Job) -> orjson.Fragment:
    """The job's ``JobOut`` as JSON, ready to embed in any envelope: the encoding its seal
    made inside the transaction when there was one, so a job is encoded once."""
    encoded = _SEALED.take(job)
    return orjson.Fragment(encoded if encoded is not None else job_bytes(job))


def job_bytes(job: Job) -> bytes:
    """The job's ``JobOut`` encoded; ``Unanswerable`` when it cannot be."""
    return _encoded(job_wire(job), job_id=job.id)


def _encoded(value: Any, **context: object) -> bytes:
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:  # orjson.JSONEncodeError is a TypeError
        log.error("answer.unbuildable", **context, error=str(exc))
        raise Unanswerable() from exc


class _Sealed:
    """The encodings seals made, by job object, until the answer takes them (``job_json``).

    Each is held with its job, so an id is never mistaken for a later object's. Bounded in
    bytes, because an answer may never be built (a lease rolled back over its budget, a
    client gone): a job whose encoding was dropped is only encoded again, which its seal
    proved it can be. Seals run in the store's writer thread, answers on the event loop.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._kept: dict[int, tuple[Job, bytes]] = {}
        self._lock = threading.Lock()

    def put(self, job: Job, encoded: bytes) -> None:
        with self._lock:
            if self._bytes + len(encoded) > self._max_bytes:
                self._kept.clear()
                self._bytes = 0
            old = self._kept.get(id(job))
            self._bytes += len(encoded) - (len(old[1]) if old is not None else 0)
            self._kept[id(job)] = (job, encoded)

    def take(self, job: Job) -> bytes | None:
        with self._lock:
            kept = self._kept.get(id(job))
            if kept is None or kept[0] is not job:
                return None
            del self._kept[id(job)]
            self._bytes -= len(kept[1])
            return kept[1]


_SEALED = _Sealed(max_bytes=32 * 1024 * 1024)


def keep(job: Job) -> bytes:
    """Encode the job for its answer now (``Unanswerable`` if it cannot be) and keep the
    encoding for ``job_json``; the encoded bytes."""
    encoded = job_bytes(job)
    _SEALED.put(job, encoded)
    return encoded


def seal(jobs: Iterable[Job]) -> None:
    """Raise ``Unanswerable`` unless every job can be answered; the store calls this
    before it commits, so that a job that cannot be answered is never leased."""
    for job in jobs:
        keep(job)


def sealed(outcome: Outcome) -> Outcome:
    """The outcome of a rule whose job is answered: checked inside the transaction."""
    keep(outcome.job)
    return outcome


def payload_bytes(payload: Any) -> int:
    """The size of a payload about to be inserted, as stored (compact JSON);
    ``Unanswerable`` when it cannot be encoded. A job's other fields are numbers, times and
    checked strings, so a payload that encodes makes an answer that does: an enqueue
    cannot fail after its commit."""
    return len(_encoded(payload))
