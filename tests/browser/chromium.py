"""Debian's chromium driven by Selenium through Debian's chromedriver: nothing is downloaded.

Selenium Manager (which would fetch a driver or a browser) is never asked: the driver's path
is given explicitly, and SE_OFFLINE forbids it anyway.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

DRIVER = Path("/usr/bin/chromedriver")
# The real binary rather than the /usr/bin/chromium launcher script, which sources
# /etc/chromium.d (extensions, a /dev/shm check) on every start.
BROWSERS = (Path("/usr/lib/chromium/chromium"), Path("/usr/bin/chromium"))
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # CI runs as root, where chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--mute-audio",
    "--force-color-profile=srgb",  # the same colours in every screenshot
    "--hide-scrollbars",
)


def find_browser() -> Path | None:
    """The chromium binary, or None when chromium or its driver is missing."""
    if not DRIVER.exists():
        return None
    return next((p for p in BROWSERS if p.exists()), None)


@dataclass
class Browser:
    driver: webdriver.Chrome
    profile: Path

    def quit(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)


def start_browser(binary: Path, width: int = 1280, height: int = 800) -> Browser:
    """A fresh headless chromium with its own throwaway profile."""
    os.environ["SE_OFFLINE"] = "true"
    profile = Path(tempfile.mkdtemp(prefix="leasehold-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = str(binary)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height + 200}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=str(DRIVER)))
    except Exception:
        shutil.rmtree(profile, ignore_errors=True)
        raise
    # --window-size includes the (invisible) window frame: pin the page's viewport instead, so
    # layouts and screenshots are exactly width x height.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    return Browser(driver, profile)
