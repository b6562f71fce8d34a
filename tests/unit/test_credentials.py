"""Where a command-line client takes its token from: the flag or environment, or a file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import typer

from leasehold.cli.credentials import MAX_TOKEN_FILE_BYTES, resolve_token


def private_file(path: Path, text: str) -> Path:
    """A token file as the help asks for it: readable by its owner alone."""
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_the_file_gives_its_first_line_stripped(tmp_path: Path) -> None:
    path = private_file(tmp_path / "token", "  s3cret-token \n# a comment\n")
    assert resolve_token(None, path) == "s3cret-token"


def test_without_a_file_the_flag_or_environment_value_is_used() -> None:
    assert resolve_token("from-env", None) == "from-env"
    assert resolve_token(None, None) is None


@pytest.mark.parametrize("problem", ["both", "empty", "missing"])
def test_an_unusable_token_file_is_a_usage_error(tmp_path: Path, problem: str) -> None:
    """Both sources at once, an empty file and a missing one are refused (exit 2)."""
    path = tmp_path / "token"
    if problem != "missing":
        private_file(path, "tok\n" if problem == "both" else "\n\n")
    with pytest.raises(typer.BadParameter):
        resolve_token("flag" if problem == "both" else None, path)


posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


@posix_only
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602, 0o660], ids=oct)
def test_a_file_others_may_read_or_change_is_refused(tmp_path: Path, mode: int) -> None:
    """The help says "readable by you alone": a token others can read is no secret."""
    path = private_file(tmp_path / "token", "s3cret\n")
    path.chmod(mode)
    with pytest.raises(typer.BadParameter, match=f"mode {mode:04o}.*chmod 600"):
        resolve_token(None, path)


@posix_only
@pytest.mark.parametrize("mode", [0o600, 0o400], ids=oct)
def test_a_file_of_yours_alone_is_read(tmp_path: Path, mode: int) -> None:
    path = private_file(tmp_path / "token", "s3cret\n")
    path.chmod(mode)
    assert resolve_token(None, path) == "s3cret"


@posix_only
def test_a_file_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = private_file(tmp_path / "token", "s3cret\n")
    if os.geteuid() == 0:
        os.chown(path, 54321, -1)  # root may give it away; root's own files are accepted
    else:
        monkeypatch.setattr(os, "geteuid", lambda: path.stat().st_uid + 1)
    with pytest.raises(typer.BadParameter, match="another user"):
        resolve_token(None, path)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused_unread() -> None:
    """/dev/zero was read until the process ran out of memory (a MemoryError traceback)."""
    with pytest.raises(typer.BadParameter, match="not a file"):
        resolve_token(None, Path("/dev/zero"))


def test_a_huge_file_is_read_no_further_than_the_cap(tmp_path: Path) -> None:
    path = private_file(tmp_path / "token", "x" * (4 * MAX_TOKEN_FILE_BYTES))
    with pytest.raises(typer.BadParameter, match="not a token file"):
        resolve_token(None, path)
    at_cap = private_file(tmp_path / "long", "y" * MAX_TOKEN_FILE_BYTES)
    assert resolve_token(None, at_cap) == "y" * MAX_TOKEN_FILE_BYTES


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd")
def test_a_pipe_is_read(tmp_path: Path) -> None:
    """``--token-file <(pass show leasehold)``: the shell hands over a pipe, its own alone."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"from-a-pipe\n")
        os.close(write_end)
        assert resolve_token(None, Path(f"/dev/fd/{read_end}")) == "from-a-pipe"
    finally:
        os.close(read_end)
