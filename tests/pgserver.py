"""Start a real, throwaway PostgreSQL server for the tests.

The server is tuned for speed, not durability (``fsync``, ``synchronous_commit``
and ``full_page_writes`` are off), listens on a free TCP port on 127.0.0.1 only,
trusts every connection (no passwords), and lives entirely inside a temporary
folder that :meth:`PgServer.stop` removes again.

Typical use from a (synchronous) pytest fixture::

    @pytest.fixture(scope="session")
    def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServer]:
        bin_dir = find_pg_bin()
        if bin_dir is None:
            pytest.skip("PostgreSQL server binaries not found (scripts/ensure-postgres.sh)")
        server = start_pg_server(tmp_path_factory.getbasetemp(), bin_dir=bin_dir)
        yield server
        server.stop()

    @pytest.fixture
    def pg_dsn(pg_server: PgServer) -> str:
        return pg_server.create_database(f"t_{uuid.uuid4().hex}")

PostgreSQL refuses to run as root.  When this process is root, ``initdb`` and
``postgres`` run as the unprivileged system user ``leasehold-pg`` (created on
first use with ``useradd``), the temporary folder is handed to that user, and
any folder above it that the user could not traverse gets the ``o+x`` bit
(traverse only, not list), so that a root-only ``/tmp`` or pytest base
directory still works.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import errno
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "PG_USER",
    "PgServer",
    "PgServerError",
    "find_pg_bin",
    "start_pg_server",
]

#: The unprivileged system user that runs PostgreSQL when the tests run as root.
PG_USER = "leasehold-pg"

#: The database superuser that ``initdb`` creates; every DSN connects as it.
DB_SUPERUSER = "postgres"

_REQUIRED_BINARIES = ("initdb", "pg_ctl", "postgres")

# A Unix-domain socket path must fit into sockaddr_un.sun_path (108 bytes with
# the terminating NUL on Linux); ``.s.PGSQL.65535.lock`` is the longest name.
_MAX_SOCKET_DIR_LEN = 107 - len("/.s.PGSQL.65535.lock")

_PORT_ATTEMPTS = 5

# Settings for a disposable test server: speed over durability.
_SERVER_SETTINGS: Mapping[str, str] = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_connections": "200",
    "jit": "off",
    "logging_collector": "off",
}

# What ``durable=True`` changes: every commit on disk, as a production server (benchmarks).
_DURABLE_SETTINGS: Mapping[str, str] = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
}

_T = TypeVar("_T")


class PgServerError(RuntimeError):
    """The throwaway PostgreSQL server could not be set up, started or used."""


# --------------------------------------------------------------------------
# Finding the binaries
# --------------------------------------------------------------------------


def _has_binaries(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in _REQUIRED_BINARIES)


def _version_key(path: Path) -> tuple[int, ...]:
    """Sort key for ``/usr/lib/postgresql/<version>/bin`` (``16`` > ``9.6``)."""
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.name))


def find_pg_bin() -> Path | None:
    """Return the directory that holds ``initdb``, ``pg_ctl`` and ``postgres``.

    ``initdb`` on ``PATH`` comes first (its own directory, then the directory
    its symlink resolves to), then the newest ``/usr/lib/postgresql/*/bin``
    (Debian's layout, which is not on ``PATH``).  Returns ``None`` when no
    directory holds all three programs.
    """
    on_path = shutil.which("initdb")
    if on_path is not None:
        initdb = Path(on_path)
        for candidate in (initdb.parent, initdb.resolve().parent):
            if _has_binaries(candidate):
                return candidate
    debian_dirs = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key)
    for candidate in reversed(debian_dirs):
        if _has_binaries(candidate):
            return candidate
    return None


# --------------------------------------------------------------------------
# Running as an unprivileged user when we are root
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _RunAs:
    """Whom to run the PostgreSQL programs as (``None`` uid: this process)."""

    uid: int | None = None
    gid: int | None = None
    groups: tuple[int, ...] = ()

    def popen_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :mod:`subprocess` that switch to this user."""
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def _ensure_pg_user() -> pwd.struct_passwd:
    """Return the ``leasehold-pg`` account, creating it on first use.

    Falls back to an existing ``postgres`` account when it cannot be created.
    """
    with contextlib.suppress(KeyError):
        return pwd.getpwnam(PG_USER)
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    command = [
        useradd,
        "--system",
        "--user-group",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        "--comment",
        "leasehold test PostgreSQL",
        PG_USER,
    ]
    output = ""
    # Another test process may run useradd at the same time: it then holds the
    # lock on /etc/passwd or has just created the user, so look again.
    for _attempt in range(10):
        try:
            result = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as exc:
            output = str(exc)
        else:
            output = result.stdout + result.stderr
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(PG_USER)
        time.sleep(0.2)
    # No useradd (or it keeps failing): Debian's own postgres account will do.
    with contextlib.suppress(KeyError):
        return pwd.getpwnam("postgres")
    raise PgServerError(
        f"running as root, PostgreSQL needs an unprivileged user, and creating "
        f"{PG_USER!r} failed: {output.strip()}"
    )


def _current_run_as() -> _RunAs:
    if os.geteuid() != 0:
        return _RunAs()
    account = _ensure_pg_user()
    groups = tuple(os.getgrouplist(account.pw_name, account.pw_gid))
    return _RunAs(uid=account.pw_uid, gid=account.pw_gid, groups=groups)


def _can_traverse(directory: Path, run_as: _RunAs) -> bool:
    info = directory.stat()
    if info.st_uid == run_as.uid:
        return bool(info.st_mode & stat.S_IXUSR)
    if info.st_gid in run_as.groups:
        return bool(info.st_mode & stat.S_IXGRP)
    return bool(info.st_mode & stat.S_IXOTH)


def _make_traversable(directory: Path, run_as: _RunAs) -> None:
    """Give ``o+x`` to every folder above ``directory`` the user cannot enter."""
    for ancestor in reversed(directory.parents):
        if not _can_traverse(ancestor, run_as):
            ancestor.chmod(stat.S_IMODE(ancestor.stat().st_mode) | stat.S_IXOTH)


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (it may be taken later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _run_coroutine(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion, also when this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from async code (e.g. an async fixture): asyncio.run() would
    # refuse, so use a loop of its own in a helper thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _read_log(path: Path, limit: int = 20_000) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<cannot read {path}: {exc}>"
    return text[-limit:]


@dataclass(eq=False)
class PgServer:
    """A running throwaway PostgreSQL server; :func:`start_pg_server` makes one.

    Attributes:
        dsn: ``postgresql://postgres@127.0.0.1:PORT/postgres``, for asyncpg and libpq.
        port: the TCP port on 127.0.0.1.
        datadir: the cluster's data directory.
        basedir: the temporary folder holding ``datadir``, the socket and the log.
        log_path: the server's log file.
        bin_dir: where ``initdb`` and ``postgres`` came from.
    """

    dsn: str
    port: int
    datadir: Path
    basedir: Path
    log_path: Path
    bin_dir: Path
    _process: subprocess.Popen[bytes] = field(repr=False)

    def __post_init__(self) -> None:
        # A safety net for a test run that never reaches its fixture teardown.
        atexit.register(self.stop)

    @property
    def pid(self) -> int:
        """The postmaster's process id."""
        return self._process.pid

    @property
    def running(self) -> bool:
        """Whether the postmaster is still alive."""
        return self._process.poll() is None

    def dsn_for(self, database: str) -> str:
        """The DSN of another database on this server."""
        path = urllib.parse.quote(database, safe="")
        return f"postgresql://{DB_SUPERUSER}@127.0.0.1:{self.port}/{path}"

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create a database called ``name`` and return its DSN: empty, or a copy of the
        database ``template`` (which nobody may be connected to).

        Synchronous, so that it works from plain pytest fixtures; from inside a
        running event loop it does its work in a helper thread.
        """
        if not name or len(name.encode()) > 63 or "\x00" in name:
            raise ValueError(f"not a usable PostgreSQL database name: {name!r}")
        if not self.running:
            raise PgServerError(f"the PostgreSQL server on port {self.port} is not running")

        async def create() -> None:
            import asyncpg

            conn = await asyncpg.connect(self.dsn)
            try:
                copied = f" TEMPLATE {_quote_ident(template)}" if template else ""
                await conn.execute(f"CREATE DATABASE {_quote_ident(name)}{copied}")
            finally:
                await conn.close()

        _run_coroutine(create())
        return self.dsn_for(name)

    def drop_database(self, name: str) -> None:
        """Drop the database ``name`` if it exists, cutting off any session still on it.

        Synchronous, like :meth:`create_database`.
        """

        async def drop() -> None:
            import asyncpg

            conn = await asyncpg.connect(self.dsn)
            try:
                await conn.execute(f"DROP DATABASE IF EXISTS {_quote_ident(name)} WITH (FORCE)")
            finally:
                await conn.close()

        if self.running:
            _run_coroutine(drop())

    def stop(self) -> None:
        """Stop the server at once (immediate shutdown) and delete its files.

        Safe to call more than once.
        """
        atexit.unregister(self.stop)
        if self._process.poll() is None:
            # SIGQUIT is PostgreSQL's immediate shutdown (pg_ctl stop -m immediate):
            # no checkpoint, which is fine for a server whose files are deleted.
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signal.SIGQUIT)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self.basedir, ignore_errors=True)


def _initdb(bin_dir: Path, datadir: Path, run_as: _RunAs, cwd: Path) -> None:
    env = dict(os.environ)
    # A set TZ spares initdb its search of the zoneinfo files for the system's
    # zone, and the server then reports times in UTC.
    env["TZ"] = "UTC"
    command = [
        str(bin_dir / "initdb"),
        "--pgdata",
        str(datadir),
        "--username",
        DB_SUPERUSER,
        "--auth",
        "trust",
        "--encoding",
        "UTF8",
        "--locale",
        "C",
        "--no-sync",
        "--no-instructions",
    ]
    result = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
        **run_as.popen_kwargs(),
    )
    if result.returncode != 0:
        raise PgServerError(
            f"initdb failed (exit {result.returncode}):\n{result.stdout}{result.stderr}"
        )


def _postmaster_status(datadir: Path) -> str | None:
    """The status line of ``postmaster.pid`` (``ready`` once connections work)."""
    try:
        lines = (datadir / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    return lines[7].strip() if len(lines) > 7 else None


def _start_postmaster(
    bin_dir: Path,
    datadir: Path,
    basedir: Path,
    log_path: Path,
    port: int,
    run_as: _RunAs,
    timeout: float,
    durable: bool = False,
) -> subprocess.Popen[bytes]:
    """Start ``postgres`` and wait until it accepts connections.

    Returns the process, or raises :class:`PgServerError`; an
    :class:`OSError` with ``EADDRINUSE`` means the port was taken.
    """
    settings = {**_SERVER_SETTINGS, **(_DURABLE_SETTINGS if durable else {})}
    settings["port"] = str(port)
    # Paths too long for a Unix socket would stop the server: TCP only then.
    socket_dir = str(basedir)
    settings["unix_socket_directories"] = (
        socket_dir if len(socket_dir.encode()) <= _MAX_SOCKET_DIR_LEN else ""
    )
    command = [str(bin_dir / "postgres"), "-D", str(datadir)]
    for key, value in settings.items():
        command += ["-c", f"{key}={value}"]

    log_offset = log_path.stat().st_size if log_path.exists() else 0
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=datadir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Not in the test run's process group: a Ctrl-C in the terminal
            # must not shut the server down before the tests' teardown.
            start_new_session=True,
            **run_as.popen_kwargs(),
        )
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        if process.poll() is not None:
            output = log_path.read_bytes()[log_offset:].decode(errors="replace")
            if (
                "Address already in use" in output
                or "could not create any TCP/IP sockets" in output
            ):
                raise OSError(errno.EADDRINUSE, f"port {port} is in use")
            raise PgServerError(
                f"postgres exited with code {process.returncode} during start-up; "
                f"server log:\n{output}"
            )
        if _postmaster_status(datadir) == "ready":
            return process
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise PgServerError(
                f"postgres was not ready after {timeout:.0f} s; server log:\n{_read_log(log_path)}"
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 0.05)


def start_pg_server(
    base_dir: Path,
    *,
    bin_dir: Path | None = None,
    timeout: float = 60.0,
    durable: bool = False,
) -> PgServer:
    """Initialise and start a throwaway PostgreSQL server below ``base_dir``.

    The cluster lives in a new temporary folder inside ``base_dir`` (created if
    missing); the server listens on a free port on 127.0.0.1 with trust
    authentication, and its Unix socket (if the path is short enough) is in
    that folder too.  Call :meth:`PgServer.stop` to shut it down and delete the
    folder.

    Args:
        base_dir: where to put the temporary folder.
        bin_dir: the PostgreSQL binaries; :func:`find_pg_bin` when ``None``.
        timeout: how long to wait for the server to accept connections.
        durable: fsync every commit as a production server does (the benchmarks),
            instead of the tests' speed over durability.

    Raises:
        PgServerError: no binaries, initdb failed, or the server did not start
            (the message holds the server's log).
    """
    if bin_dir is None:
        bin_dir = find_pg_bin()
        if bin_dir is None:
            raise PgServerError(
                "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH "
                "nor in /usr/lib/postgresql/*/bin; run scripts/ensure-postgres.sh"
            )
    run_as = _current_run_as()
    base_dir.mkdir(parents=True, exist_ok=True)
    basedir = Path(tempfile.mkdtemp(prefix="pg-", dir=base_dir)).resolve()
    try:
        if run_as.uid is not None:
            assert run_as.gid is not None
            _make_traversable(basedir, run_as)
            os.chown(basedir, run_as.uid, run_as.gid)
        datadir = basedir / "data"
        log_path = basedir / "postgres.log"
        _initdb(bin_dir, datadir, run_as, cwd=basedir)

        deadline = time.monotonic() + timeout
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            port = _free_port()
            try:
                process = _start_postmaster(
                    bin_dir,
                    datadir,
                    basedir,
                    log_path,
                    port,
                    run_as,
                    timeout=max(1.0, deadline - time.monotonic()),
                    durable=durable,
                )
            except OSError as exc:
                # Another process took the port between _free_port() and the
                # server's bind(): try another one.
                if exc.errno == errno.EADDRINUSE and attempt < _PORT_ATTEMPTS:
                    continue
                raise PgServerError(
                    f"could not start postgres: {exc}; server log:\n{_read_log(log_path)}"
                ) from exc
            return PgServer(
                dsn=f"postgresql://{DB_SUPERUSER}@127.0.0.1:{port}/postgres",
                port=port,
                datadir=datadir,
                basedir=basedir,
                log_path=log_path,
                bin_dir=bin_dir,
                _process=process,
            )
        raise AssertionError("unreachable")  # pragma: no cover
    except BaseException:
        shutil.rmtree(basedir, ignore_errors=True)
        raise
