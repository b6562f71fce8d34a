"""What the client sends in a batch (and an enqueue) is what the coordinator's models take."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

import leasehold.client
from leasehold import batch_items
from leasehold.client import NewJob
from leasehold.coordinator.api.schemas import jobs as schemas
from leasehold.coordinator.api.schemas import leases
from leasehold.model import Dependency, Unique

# Every field given, so that each wire key is sent.
ITEMS: list[tuple[Any, type[BaseModel]]] = [
    (batch_items.RenewItem(7, 3, lease_seconds=12.5), leases.RenewItem),
    (batch_items.CompleteItem(7, 3, result={"n": [1, None]}), leases.CompleteItem),
    (
        batch_items.FailItem(7, 3, "boom", retryable=False, retry_after_seconds=2.0),
        leases.FailItem,
    ),
]


@pytest.mark.parametrize(("item", "model"), ITEMS)
def test_an_items_wire_keys_are_its_models_fields(item: Any, model: type[BaseModel]) -> None:
    wire = item.wire()
    assert sorted(wire) == sorted(model.model_fields)
    assert model.model_validate(wire).model_dump() == wire


def test_the_client_and_the_coordinator_share_the_items_and_their_answers() -> None:
    for name in ("RenewItem", "CompleteItem", "FailItem", "ItemOutcome", "ItemVerdict"):
        assert getattr(leasehold.client, name) is getattr(batch_items, name)
    assert leases.ItemResultOut.model_fields["outcome"].annotation is batch_items.ItemOutcome
    assert leases.ItemResultOut.model_fields["verdict"].annotation is batch_items.ItemVerdict
    assert leasehold.client.MAX_BATCH == batch_items.MAX_BATCH
    batch = leases.BatchRenewRequest.model_fields["items"].metadata
    assert any(getattr(m, "max_length", None) == batch_items.MAX_BATCH for m in batch)


def test_an_enqueue_sends_only_what_the_coordinator_takes() -> None:
    new = NewJob(
        "k",
        {"a": 1},
        max_attempts=3,
        run_after=datetime(2026, 1, 1, tzinfo=UTC),
        idempotency_key="key",
        priority=2,
        queue="q",
        headers={"x": "y"},
        timeout_seconds=5.0,
        depends_on=(Dependency(3),),
        group_key="g",
        weight=2,
        start_by=datetime(2026, 1, 2, tzinfo=UTC),
        unique=Unique(key="u"),
    )
    body = new.body()
    assert sorted(body) == sorted(schemas.EnqueueRequest.model_fields)
    assert schemas.EnqueueRequest.model_validate_json(orjson.dumps(body)).queue == "q"
