"""A real nginx for the tests: loopback ports, a folder of its own, an unprivileged user.

``start_nginx(servers, ports)`` writes an ``nginx.conf`` whose ``http`` block holds
``servers`` (the ``server`` and ``upstream`` blocks a test wants, README's among them),
with every path nginx writes (logs, pid, temporary files) inside a fresh folder under the
system's temporary directory, and starts ``nginx -g 'daemon off;'`` in the foreground.
Run as root, nginx runs as ``nobody`` (its master too, not only its workers): nothing it
does needs more, and a test has no business starting a root server. It is ready when
every one of ``ports`` accepts a connection. ``scripts/ensure-debian-package.sh nginx``
installs it (``make test`` does).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.process import terminate

START_SECONDS = 10.0
UNPRIVILEGED = "nobody"


def find_nginx() -> str | None:
    """The nginx binary: on the PATH, or where Debian puts it."""
    found = shutil.which("nginx")
    if found is None and os.access("/usr/sbin/nginx", os.X_OK):
        found = "/usr/sbin/nginx"
    return found


def _as_unprivileged(folder: Path) -> dict[str, Any]:
    """Popen's arguments that run nginx as ``nobody`` when we are root (the folder handed
    to that user), or nothing when we are not."""
    if os.geteuid() != 0:
        return {}
    account = pwd.getpwnam(UNPRIVILEGED)
    for path in (folder, *folder.rglob("*")):
        os.chown(path, account.pw_uid, account.pw_gid)
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


def _config(folder: Path, servers: str) -> str:
    temp = " ".join(
        f"{kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi")
    )
    return f"""
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} info;
events {{ worker_connections 256; }}
http {{
    access_log {folder / "access.log"};
    {temp} uwsgi_temp_path {folder / "uwsgi"}; scgi_temp_path {folder / "scgi"};
{servers}
}}
"""


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Nginx:
    """A running nginx; ``folder``: its configuration, logs and temporary files."""

    process: subprocess.Popen[bytes]
    folder: Path

    def error_log(self) -> str:
        path = self.folder / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """A fast shutdown (SIGTERM), then the folder is removed."""
        terminate(self.process, 10)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_nginx(binary: str, servers: str, ports: Sequence[int], files: dict[str, bytes]) -> Nginx:
    """Start nginx with ``servers`` in its ``http`` block, once ``files`` (name -> bytes,
    e.g. a certificate) are written in its folder (``{folder}`` in ``servers`` names it);
    ready when each of ``ports`` accepts connections."""
    # Under the system's temporary folder, not pytest's: that one is root's alone.
    folder = Path(tempfile.mkdtemp(prefix="leasehold-nginx-"))
    for name, data in files.items():
        (folder / name).write_bytes(data)
    conf = folder / "nginx.conf"
    conf.write_text(_config(folder, servers.replace("{folder}", str(folder))))
    command = [binary, "-p", str(folder), "-c", str(conf), "-e", str(folder / "error.log")]
    process = subprocess.Popen(
        [*command, "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **_as_unprivileged(folder),
    )
    started = Nginx(process, folder)
    deadline = time.monotonic() + START_SECONDS
    while not all(_accepts(port) for port in ports):
        if process.poll() is not None or time.monotonic() > deadline:
            log = started.error_log()
            started.stop()
            raise RuntimeError(f"nginx did not start:\n{log[-4000:]}")
        time.sleep(0.02)
    return started
