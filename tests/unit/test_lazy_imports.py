"""Public names imported on first use (``leasehold._lazy``): every one still imports, and the
coordinator's and the command line's start import no HTTP client."""

from __future__ import annotations

import subprocess
import sys

import pytest

import leasehold
import leasehold.client
import leasehold.conformance


@pytest.mark.parametrize("package", [leasehold, leasehold.client, leasehold.conformance])
def test_every_public_name_imports(package: object) -> None:
    names = package.__all__  # type: ignore[attr-defined]
    assert names and sorted(names) == sorted(dir(package))
    for name in names:
        assert getattr(package, name) is not None


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = leasehold.client.Nothing


def test_the_command_line_and_the_coordinator_do_not_import_aiohttp() -> None:
    """A fresh interpreter: this one has imported the client already."""
    code = (
        "import sys, leasehold, leasehold.cli, leasehold.coordinator.app, leasehold.coordinator.server.run;"
        "print(sorted(m for m in sys.modules if m == 'aiohttp' or m.startswith('aiohttp.')))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
