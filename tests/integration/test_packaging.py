"""The command line's version, and PostgreSQL as an extra."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

import leasehold
from leasehold._version import DISTRIBUTION
from leasehold.coordinator.store.open import MISSING_POSTGRES, open_store


def test_version_has_one_home() -> None:
    assert leasehold.__version__ == metadata.version(DISTRIBUTION) != "0+unknown"
    run = subprocess.run(
        [sys.executable, "-m", "leasehold", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (run.returncode, run.stdout) == (0, f"leasehold {leasehold.__version__}\n")


def test_the_distribution_keeps_the_import_name_and_the_command() -> None:
    dist = metadata.distribution(DISTRIBUTION)
    assert [e.value for e in dist.entry_points if e.name == "leasehold"] == ["leasehold.cli:main"]
    assert dist.metadata["Provides-Extra"] is not None
    assert {"postgres", "otel"} <= set(dist.metadata.get_all("Provides-Extra") or [])
    assert not any(r.startswith("asyncpg") for r in dist.requires or [] if "extra" not in r)


def test_a_postgres_url_without_asyncpg_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)  # what an import of a missing one does
    with pytest.raises(ValueError, match="needs the postgres extra") as refused:
        open_store("postgresql://u:p@localhost/db")
    assert str(refused.value) == MISSING_POSTGRES
    assert "\n" not in MISSING_POSTGRES
