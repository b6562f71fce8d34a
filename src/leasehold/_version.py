"""leasehold's version and build: one home each.

The version is the installed distribution's (``pyproject.toml``): written by hand, bumped
in the commit that releases it (CONTRIBUTING.md, "Versions"). The build is the commit the
code was built from, so that two builds of one version can be told apart: a wheel records
it when it is built (``setup.py`` writes ``_build.txt`` beside this module); a source
checkout (an editable install) asks git. The app's OpenAPI document, ``/health``,
``leasehold --version``, the coordinator's start-up lines, the client's User-Agent and the
worker's heartbeat read them from here.
"""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Final

# The name on the package index ("leasehold" there is another project); the import name
# and the command stay ``leasehold``.
DISTRIBUTION = "leasehold-queue"

try:
    __version__ = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

BUILD_FILE: Final = "_build.txt"
UNKNOWN_BUILD: Final = "unknown"
_GIT_SECONDS: Final = 2.0


@functools.cache
def build() -> str:
    """The commit this code was built from (12 hex digits), or ``unknown`` (a build
    from an archive without git). Asked once per process, when first needed."""
    here = Path(__file__).parent
    try:
        recorded = (here / BUILD_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        recorded = ""
    return recorded or _git_commit(here) or UNKNOWN_BUILD


def _git_commit(where: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=_GIT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):  # no git, or it hung
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def describe() -> str:
    """``0.2.0 (build 1a2b3c4d5e6f)``: what ``leasehold --version`` prints after the name."""
    return f"{__version__} (build {build()})"
