"""A long answer's claims in a real headless Chromium: a person opens the record of an answer a real gateway scored
claim by claim, sees each claim marked in the answer by its verdict, and opens the false one's evidence with one
click on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import console
from tests.claim_checkers import ANSWER, FALSE_CLAIM, QUESTION, claim_checkers, claims_model
from tests.conftest import MASTER_KEY, gateway_config
from tests.console.browser import chromium, log_in, missing_browser, wait_for
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser())),
]


@pytest.fixture
def scored_record(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> tuple[ServerThread, str]:
    """A gateway with the console, and the id of the record of one answer it scored claim by claim."""
    fake_upstream.responder = claims_model
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"scoring": {"mode": "sync", "queue": {"scorer_timeout_s": 5.0}}}
    server = start_gateway(config, scorers=claim_checkers(), mounts=[console.mount])
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={"model": "fake", "messages": [{"role": "user", "content": QUESTION}]},
        timeout=30,
    )
    assert response.headers["x-trust-status"] == "done"
    return server, response.headers["x-trust-id"]


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chromium(tmp_path / "profile", 1280, 1000) as driver:
        yield driver


def test_each_claim_is_marked_by_its_verdict_and_opens_its_evidence(
    scored_record: tuple[ServerThread, str], browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    server, record_id = scored_record
    log_in(browser, server, MASTER_KEY)
    browser.get(f"{server.url}/ui/records/{record_id}")
    marks = wait_for(browser, "blockquote.answer-claims mark.claim")
    assert [m.text for m in marks] == ["Paris is the capital of France.", FALSE_CLAIM, "It is home to the Louvre."]
    answer = browser.find_element(By.CSS_SELECTOR, "blockquote.answer-claims").text
    assert answer == ANSWER  # the answer whole, its claims marked in place
    assert "claim-untrusted" in (marks[1].get_attribute("class") or "")
    assert "claim-untrusted" not in (marks[0].get_attribute("class") or "")
    detail = browser.find_element(By.ID, "claim-2")
    assert detail.get_attribute("open") is None
    assert not detail.find_element(By.CSS_SELECTOR, ".agreement-statements").is_displayed()

    marks[1].click()
    WebDriverWait(browser, 5).until(lambda d: d.find_element(By.ID, "claim-2").get_attribute("open") is not None)
    statements = detail.find_element(By.CSS_SELECTOR, ".agreement-statements")
    assert statements.is_displayed() and "names Seine" in statements.text
    passages = detail.find_element(By.CSS_SELECTOR, "table.claim-evidence")
    assert passages.is_displayed() and "It lies on the river Seine." in passages.text
    assert "contradict" in detail.text and "Paris lies on the Thames." in detail.text  # the statement checked
    assert browser.find_element(By.ID, "claim-1").get_attribute("open") is None  # only the one clicked

    detail.find_element(By.TAG_NAME, "summary").click()  # closed again, then reached from the answer's Trust_FC
    WebDriverWait(browser, 5).until(lambda d: d.find_element(By.ID, "claim-2").get_attribute("open") is None)
    link = browser.find_element(By.CSS_SELECTOR, "p.by-claim a[data-claim]")
    assert link.text == "claim 2"
    link.click()
    WebDriverWait(browser, 5).until(lambda d: d.find_element(By.ID, "claim-2").get_attribute("open") is not None)
    assert browser.current_url == f"{server.url}/ui/records/{record_id}"  # no history moved: the view stays
