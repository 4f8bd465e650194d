"""Headless Chromium through Selenium: the system's Debian ``chromium`` and ``chromium-driver``, no download."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.servers import ServerThread

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
