"""A real headless Chromium driven through its chromedriver (Selenium), for the tests that
lay out the HTML report and the viewer's pages. The viewport is set with the DevTools
protocol's device metrics, so a phone's 420 px is the page's real width; nothing on the
network is reachable (a page must need nothing from it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path("/usr/bin/chromedriver")
AVAILABLE = CHROMIUM.exists() and DRIVER.exists()

# How far the page scrolls sideways, measured by the page once laid out.
PAGE_WIDTH = "return [window.innerWidth, document.documentElement.scrollWidth];"


@contextmanager
def chromium(profile: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--proxy-server=127.0.0.1:9",  # nothing reachable (loopback bypasses the proxy)
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def show(driver: Any, url: str, width: int, height: int = 900) -> None:
    """Open `url` in a viewport `width` px wide (a phone's below 600 px)."""
    resize(driver, width, height)
    driver.get(url)


def resize(driver: Any, width: int, height: int) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )
