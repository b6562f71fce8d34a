"""The version changes with each release: pyproject.toml and CHANGELOG.md agree on it
(CONTRIBUTING.md, "Versions")."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:\.dev(\d+))?")
SECTION = re.compile(r"^## \[([^\]]+)\]", re.M)


def parts(version: str) -> tuple[tuple[int, int, int], bool]:
    """The release it is or leads to, and whether it is a development version."""
    found = VERSION.fullmatch(version)
    assert found, f"{version!r} is not MAJOR.MINOR.PATCH[.devN]"
    major, minor, patch, dev = found.groups()
    return (int(major), int(minor), int(patch)), dev is not None


def test_the_version_follows_the_changelog() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    release, dev = parts(version)
    sections = SECTION.findall((ROOT / "CHANGELOG.md").read_text())
    released = [parts(s)[0] for s in sections if s != "Unreleased"]
    assert released == sorted(released, reverse=True), "released sections newest first"
    if sections[0] == "Unreleased":
        # Between releases: the next version, as a development version above the last.
        assert dev and release > released[0], (version, released[0])
    else:
        assert (release, dev) == (parts(sections[0])[0], False), (version, sections[0])
