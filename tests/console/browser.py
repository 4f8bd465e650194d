"""Headless Chromium through Selenium: the system's Debian ``chromium`` and ``chromium-driver``, no download;
and what the console's browser tests do with it (sign in, wait for a view, take a screenshot)."""

from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.servers import ServerThread

PHONE = (390, 844)  # a phone's viewport in CSS px (a desktop window does not shrink under 500 px)
# Where the screenshots in the README and the docs come from: set to docs/console to refresh them.
SCREENSHOTS_DIR = "CONSOLE_SCREENSHOTS_DIR"

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the `test` extra installs it)"
    for binary in ("chromium", "chromedriver"):
        if shutil.which(binary) is None:
            return f"{binary} is not installed (`make install` installs Debian's chromium and chromium-driver)"
    return None


@contextmanager
def chromium(profile: Path, width: int = 1280, height: int = 900) -> Iterator[object]:
    """A fresh browser on an empty profile directory, closed afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(shutil.which("chromium"))
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(shutil.which("chromedriver"))))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@contextmanager
def phone(profile: Path) -> Iterator[Any]:
    """A browser with a phone's viewport, touch-sized: 390 CSS px wide."""
    width, height = PHONE
    with chromium(profile, width, height) as driver:
        driver.execute_cdp_cmd(  # type: ignore[attr-defined]
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True},
        )
        yield driver


def wait_for(driver: Any, css: str) -> list[Any]:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    found: list[Any] = WebDriverWait(driver, 15).until(lambda d: d.find_elements(By.CSS_SELECTOR, css))
    return found


def log_in(driver: Any, server: ServerThread, key: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{server.url}/ui")
    field = wait_for(driver, "#key")[0]
    field.send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "#login button[type=submit]").click()
    wait_for(driver, "#overview-title")


def screenshot(driver: Any, tmp_path: Path, name: str) -> Path:
    """The page from its top, as long as it is up to 3000 CSS px (beyond the window: Chromium lays the whole page
    out), at the window's width; copied to ``$CONSOLE_SCREENSHOTS_DIR`` when set."""
    width, height = driver.execute_script(
        "return [window.innerWidth, Math.min(document.documentElement.scrollHeight, 3000)]"
    )
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        },
    )
    path = tmp_path / f"{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    target = os.environ.get(SCREENSHOTS_DIR)
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / path.name)
    return path
