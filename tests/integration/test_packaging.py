"""The command line's version, and PostgreSQL as an extra."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

import leasehold
from leasehold._version import DISTRIBUTION, build, describe
from leasehold.coordinator.store.open import MISSING_POSTGRES, open_store


def test_version_has_one_home() -> None:
    """The version is the distribution's; the build, in a checkout, the commit."""
    assert leasehold.__version__ == metadata.version(DISTRIBUTION) != "0+unknown"
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=False
    )
    if head.returncode == 0:  # a git checkout (an archive's build is "unknown")
        assert build() == head.stdout.strip()
    run = subprocess.run(
        [sys.executable, "-m", "leasehold", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (run.returncode, run.stdout) == (0, f"leasehold {describe()}\n")
    assert describe() == f"{leasehold.__version__} (build {build()})"


def test_the_distribution_keeps_the_import_name_and_the_command() -> None:
    dist = metadata.distribution(DISTRIBUTION)
    named = {(e.group, e.value) for e in dist.entry_points if e.name == "leasehold"}
    # The command, and the test mode's pytest plugin (its fixtures for every project).
    assert named == {
        ("console_scripts", "leasehold.cli:main"),
        ("pytest11", "leasehold.testing.plugin"),
    }
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


def test_pytest_finds_the_test_modes_plugin_by_its_entry_point(pytestconfig: pytest.Config) -> None:
    """This session loaded it as any project's would, with nothing in its configuration."""
    plugin = pytestconfig.pluginmanager.get_plugin("leasehold")
    assert plugin is not None and plugin.__name__ == "leasehold.testing.plugin"
