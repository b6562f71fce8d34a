"""Modules renamed for what they hold still answer to their old top-level names."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    ("old", "new"),
    [("leasehold.retry", "leasehold.http_retry"), ("leasehold.tokens", "leasehold.bearer_tokens")],
)
def test_old_name_reexports_the_public_names(old: str, new: str) -> None:
    old_module = importlib.import_module(old)
    new_module = importlib.import_module(new)
    assert old_module.__all__
    for name in old_module.__all__:
        assert getattr(old_module, name) is getattr(new_module, name)
    public = {n for n in vars(new_module) if not n.startswith("_")}
    public -= {"annotations", "log", "T"}  # imports and module internals, not the API
    public = {n for n in public if getattr(new_module, n).__class__.__name__ != "module"}
    public = {n for n in public if getattr(getattr(new_module, n), "__module__", new) == new}
    assert public <= set(old_module.__all__)


def test_core_schedule_still_names_the_schedule_rules() -> None:
    """``leasehold.core.schedule`` is a documented import path (CHANGELOG)."""
    old = importlib.import_module("leasehold.core.schedule")
    new = importlib.import_module("leasehold.core.fire_times")
    names = [
        "RESERVED_KEY_PREFIX",
        "CatchUp",
        "Firing",
        "Schedule",
        "ScheduleSpec",
        "check_cron",
        "first_fire",
        "idempotency_key",
        "latest_fire",
        "next_fire",
        "plan_fires",
        "schedule_idempotency_key",
        "zone",
    ]
    for name in names:
        assert getattr(old, name) is getattr(new, name)
