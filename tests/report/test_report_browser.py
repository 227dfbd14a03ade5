"""The report of the damaged sample opened in headless Chromium as a colleague opens an
attachment: no request leaves the file, no console error, every section there in order,
the pictures drawn; a screenshot of its first screen is kept in
``build/test-artifacts/`` (skipped without Chromium, its driver and selenium)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from rmqlab.cli import main
from rmqlab.report import SECTIONS
from tests.notebooks.test_browser import _missing  # Chromium, its driver and selenium, as the lessons' browser test needs
from tests.support import SAMPLES

ARTIFACTS = Path(os.environ.get("RMQLAB_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "build" / "test-artifacts"))


@pytest.mark.skipif(bool(_missing()), reason=_missing() or "")
def test_report_opens_alone_in_a_browser(tmp_path):
    from selenium import webdriver

    page = tmp_path / "report.html"
    assert main(["report", str(SAMPLES / "damaged"), "-o", str(page)]) == 0
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        opts.add_argument(a)
    opts.binary_location = shutil.which("chromium")
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    os.environ.setdefault("SE_AVOID_STATS", "true")
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")))
    try:
        driver.get(page.as_uri())
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / "report-first-screen.png"))
        headings = [h.text for h in driver.find_elements("css selector", "section > h2")]
        assert headings == [h for _, h in SECTIONS]
        assert driver.find_element("css selector", ".verdict").text.startswith("Records lost: ")  # the consequence first
        # the pictures: the timeline's bars and the map's strip are drawn with a size
        svgs = driver.find_elements("css selector", "section svg")
        assert len(svgs) == 2 and all(s.size["width"] > 600 and s.size["height"] > 150 for s in svgs)
        assert len(driver.find_elements("css selector", "#timeline svg rect")) > 3
        requests = []
        for entry in driver.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            if msg["method"] == "Network.requestWillBeSent":
                requests.append(msg["params"]["request"]["url"])
        assert requests and all(u == page.as_uri() or u.startswith("data:") for u in requests), requests
        console = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert console == []
    finally:
        driver.quit()
    assert (ARTIFACTS / "report-first-screen.png").stat().st_size > 10_000
