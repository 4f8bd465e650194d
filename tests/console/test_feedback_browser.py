"""Labelling an answer in a real headless Chromium: a person opens a record, marks it incorrect with a comment,
sees the label, and finds the record under "labelled"; the label is the one the API keeps."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import console
from scoring.types import TrustRecord
from tests.conftest import gateway_config
from tests.console.browser import chromium, log_in, missing_browser, wait_for
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread
from tests.stored_records import KEYS, stored

pytestmark = [pytest.mark.browser, pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))]


@pytest.fixture
def labelling_console(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> ServerThread:
    now = time.time()
    path = tmp_path / "console.sqlite3"
    stored(
        path,
        [
            TrustRecord(
                id=f"trust-{n}",
                status="done",
                model="fake",
                owner="alice",
                score=0.8,
                label="trusted",
                created_at=now - n,
                question=f"Question {n}?",
                answer=f"Answer {n}.",
            )
            for n in (1, 2)
        ],
    )
    config = gateway_config(
        fake_upstream.url,  # type: ignore[attr-defined]
        trustgate={"keys": KEYS, "store": {"path": str(path)}},
    )
    return start_gateway(config, mounts=[console.mount])


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chromium(tmp_path / "profile", 1280, 1000) as driver:
        yield driver


def test_a_person_labels_an_answer_and_filters_by_label(labelling_console: ServerThread, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    log_in(browser, labelling_console, "sk-alice")
    browser.get(f"{labelling_console.url}/ui/records/trust-2")
    wait_for(browser, "form[data-feedback]")
    assert "Not labelled yet." in browser.find_element(By.CSS_SELECTOR, ".feedback-label").text
    browser.find_element(By.CSS_SELECTOR, "input[name=correct][value=false]").click()
    browser.find_element(By.ID, "feedback-comment").send_keys("It was 3.")
    browser.find_element(By.CSS_SELECTOR, "form[data-feedback] button[type=submit]").click()
    label = wait_for(browser, ".feedback-label .feedback-incorrect")[0]
    assert label.text == "incorrect" and "It was 3." in browser.find_element(By.CSS_SELECTOR, ".feedback").text

    kept = httpx.get(
        f"{labelling_console.url}/v1/trust/trust-2", headers={"authorization": "Bearer sk-alice"}, timeout=10
    ).json()["feedback"]
    assert kept["correct"] is False and kept["comment"] == "It was 3." and kept["score"] is None

    browser.get(f"{labelling_console.url}/ui/records")
    wait_for(browser, "select#f-labelled")
    Select(browser.find_element(By.ID, "f-labelled")).select_by_value("true")
    browser.find_element(By.CSS_SELECTOR, "form[data-filter] button[type=submit]").click()
    wait_for(browser, "select#f-labelled option[value=true][selected]")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.records tbody tr")
    assert [row.get_attribute("data-record") for row in rows] == ["trust-2"]
    assert "incorrect" in rows[0].text and "labelled=true" in browser.current_url
