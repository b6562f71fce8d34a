"""Where a command-line client takes its token from: the flag or environment, or a file."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from leasehold.cli.credentials import resolve_token


def test_the_file_gives_its_first_line_stripped(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("  s3cret-token \n# a comment\n")
    assert resolve_token(None, path) == "s3cret-token"


def test_without_a_file_the_flag_or_environment_value_is_used() -> None:
    assert resolve_token("from-env", None) == "from-env"
    assert resolve_token(None, None) is None


@pytest.mark.parametrize("problem", ["both", "empty", "missing"])
def test_an_unusable_token_file_is_a_usage_error(tmp_path: Path, problem: str) -> None:
    """Both sources at once, an empty file and a missing one are refused (exit 2)."""
    path = tmp_path / "token"
    if problem != "missing":
        path.write_text("tok\n" if problem == "both" else "\n\n")
    with pytest.raises(typer.BadParameter):
        resolve_token("flag" if problem == "both" else None, path)
