"""Where the command-line clients (worker, admin commands) take their bearer token from.

A command line is visible to every user of the machine (``ps``), so a token belongs in the
environment (``LEASEHOLD_TOKEN``) or in a file only its owner can read (``--token-file``);
``--token`` still works, with a warning.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final, NoReturn

import typer

TOKEN_HELP = (
    "Bearer token. Prefer LEASEHOLD_TOKEN or --token-file: a command line is visible to"
    " every user of the machine (a warning says so)."
)
TOKEN_FILE_HELP = "A file holding the bearer token (its first line), readable by you alone."

MAX_TOKEN_FILE_BYTES: Final = 64 * 1024
"""A token file is read up to this much: the coordinator's cap on request headers is the
same, so no longer token could be sent."""

# Permission bits for the group and others: a token file with any of them set is refused,
# as ssh refuses such a key (it says "readable by you alone").
_SHARED_BITS: Final = 0o077


def warn_if_on_command_line(ctx: typer.Context, value: str | None) -> str | None:
    """Option callback for ``--token``: a token typed as a flag gets a warning on stderr."""
    source = ctx.get_parameter_source("token")
    if value is not None and source is not None and source.name == "COMMANDLINE":
        typer.echo(
            "leasehold: warning: --token shows the token to every user of this machine"
            " (ps); use LEASEHOLD_TOKEN or --token-file instead",
            err=True,
        )
    return value


def resolve_token(token: str | None, token_file: Path | None) -> str | None:
    """The token given by ``--token``/``LEASEHOLD_TOKEN`` or by ``--token-file`` (not both)."""
    if token_file is None:
        return token
    if token is not None:
        raise typer.BadParameter(
            "give the token once: --token (or LEASEHOLD_TOKEN) or --token-file, not both",
            param_hint="--token-file",
        )
    text = _read_token_file(token_file)
    lines = text.strip().splitlines()
    if not lines or not lines[0].strip():
        raise typer.BadParameter(f"{token_file} is empty", param_hint="--token-file")
    return lines[0].strip()


def _read_token_file(path: Path) -> str:
    """The text of a token file that only its owner can read, read from one open file (so
    the file checked is the file read), and no more than ``MAX_TOKEN_FILE_BYTES``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        _refuse(f"cannot read {path}: {exc.__class__.__name__}")
    try:
        found = os.fstat(fd)
        # A file, or a pipe (``--token-file <(pass show leasehold)``); not a device such as
        # /dev/zero, which would be read for ever, nor a folder.
        if not (stat.S_ISREG(found.st_mode) or stat.S_ISFIFO(found.st_mode)):
            _refuse(f"{path} is not a file")
        if os.name == "posix":
            _check_private(path, found)
        data = _read_at_most(fd, MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        _refuse(f"cannot read {path}: {exc.__class__.__name__}")
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_FILE_BYTES:
        _refuse(f"{path} is over {MAX_TOKEN_FILE_BYTES // 1024} KiB: not a token file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        _refuse(f"cannot read {path}: UnicodeDecodeError")


def _check_private(path: Path, found: os.stat_result) -> None:
    mode = stat.S_IMODE(found.st_mode)
    if mode & _SHARED_BITS:
        _refuse(
            f"{path} may be read or changed by other users (mode {mode:04o}): make it"
            f" readable by you alone (chmod 600 {path}), or give the token in LEASEHOLD_TOKEN"
        )
    # Root's own file can only be read by root; anyone else's is theirs to read too.
    if found.st_uid not in (os.geteuid(), 0):
        _refuse(f"{path} belongs to another user: use a token file of your own")


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = os.read(fd, min(65_536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _refuse(message: str) -> NoReturn:
    raise typer.BadParameter(message, param_hint="--token-file")
