"""Records the commit a wheel is built from, as ``leasehold/_build.txt``, which
``leasehold._version.build`` reads (``leasehold --version``, ``/health``). Everything else
about the package is declared in ``pyproject.toml``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


def _commit() -> str | None:
    """The checkout's commit, or None when built from an archive without git."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


class BuildWithCommit(build_py):
    """build_py, then the commit beside the package's modules. An editable install reads
    the checkout itself, through git, so it gets no file."""

    def run(self) -> None:
        super().run()
        commit = _commit()
        if commit is not None and not getattr(self, "editable_mode", False):
            Path(self.build_lib, "leasehold", "_build.txt").write_text(commit + "\n")


setup(cmdclass={"build_py": BuildWithCommit})
