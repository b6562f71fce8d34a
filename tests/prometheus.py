"""A real Prometheus for the tests: loopback only, quick intervals, a folder of its own.

``start_prometheus(config)`` writes ``prometheus.yml`` (the test's scrape configuration and
rules, with ``global`` intervals short enough for a test: a scrape and a rule evaluation
every ``INTERVAL``), starts ``prometheus`` with its storage in a fresh temporary folder and
its web server on a free port of 127.0.0.1, and returns once ``/-/ready`` answers.
``scripts/ensure-debian-package.sh prometheus prometheus promtool`` installs Debian's
package (``make test`` does): the test starts its own server, not the package's service.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.process import free_port, terminate

INTERVAL = "250ms"
START_SECONDS = 30.0


def find_program(name: str) -> str | None:
    return shutil.which(name)


@dataclass
class Prometheus:
    process: subprocess.Popen[bytes]
    folder: Path
    url: str

    def log(self) -> str:
        return (self.folder / "prometheus.log").read_text(errors="replace")

    def stop(self) -> None:
        terminate(self.process, 10)
        shutil.rmtree(self.folder, ignore_errors=True)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/-/ready", timeout=1) as answer:
            return bool(answer.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_prometheus(binary: str, config: str) -> Prometheus:
    """Prometheus with ``config`` (its ``rule_files`` and ``scrape_configs``) under quick
    ``global`` intervals."""
    folder = Path(tempfile.mkdtemp(prefix="leasehold-prometheus-"))
    quick = (
        f"global:\n  scrape_interval: {INTERVAL}\n  scrape_timeout: {INTERVAL}\n"
        f"  evaluation_interval: {INTERVAL}\n"
    )
    (folder / "prometheus.yml").write_text(quick + config)
    url = f"http://127.0.0.1:{free_port()}"
    with (folder / "prometheus.log").open("wb") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address={url.removeprefix('http://')}",
                "--storage.tsdb.retention.time=1h",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    started = Prometheus(process, folder, url)
    deadline = time.monotonic() + START_SECONDS
    while not _ready(url):
        if process.poll() is not None or time.monotonic() > deadline:
            log_text = started.log()
            started.stop()
            raise RuntimeError(f"prometheus did not start:\n{log_text[-4000:]}")
        time.sleep(0.05)
    return started
