"""The console in a real headless Chromium, against a real gateway whose records come from real scoring.

The gateway runs its configured scorers (built knowledge graph, vectors and
evidence index) over the fake upstream, which plays the answering model: for
one question it keeps picking its own answer and the judge finds support; for
the other it picks a distractor and the judge contradicts. A person logs in
with a key, filters to `untrusted`, opens the record and reads every
consistency check and the evidence; another key sees none of it.

The screenshots in the README and the docs are taken by test_readable.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import console
from tests.conftest import MASTER_KEY, gateway_config
from tests.console.browser import chromium, log_in, missing_browser, phone, wait_for
from tests.console.scripted_model import (
    ANSWER,
    DATA_DIR,
    TRUSTED_QUESTION,
    UNTRUSTED_QUESTION,
    ask,
    assets_missing,
    model_behaviour,
)
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

KEYS = [{"key": "sk-alice", "name": "alice"}, {"key": "sk-bob", "name": "bob"}, {"key": "sk-carol", "name": "carol"}]
TOOL_QUESTION = "Look up the capital of France. [tool-call]"  # the fake upstream answers with a tool call

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser())),
    pytest.mark.skipif(assets_missing(), reason="scoring assets not built: `make install` builds them"),
]


@pytest.fixture
def scored_console(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    fake_upstream.responder = model_behaviour
    config = gateway_config(
        fake_upstream.url,
        trustgate={  # type: ignore[attr-defined]
            "keys": KEYS,
            "scoring": {
                "data_dir": str(DATA_DIR),
                "mode": "sync",
                "combine": "paper",
                "consistency": {"max_checks": 4, "seed": 7},
            },
        },
    )
    server = start_gateway(config, scorers=None, mounts=[console.mount])
    for key, question in (
        ("sk-alice", TRUSTED_QUESTION),
        ("sk-alice", UNTRUSTED_QUESTION),
        ("sk-bob", TRUSTED_QUESTION),
    ):
        assert ask(server, key, question) == "done"
    assert ask(server, "sk-carol", TOOL_QUESTION) == "skipped"
    return server


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chromium(tmp_path / "profile", 1280, 1000) as driver:
        yield driver


def records_of(server: ServerThread, key: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = httpx.get(
        f"{server.url}/v1/trust", headers={"authorization": f"Bearer {key}"}
    ).json()["data"]
    return records


def test_a_person_finds_an_untrusted_answer_and_reads_why(scored_console: ServerThread, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    untrusted = [r for r in records_of(scored_console, MASTER_KEY) if r["label"] == "untrusted"]
    assert len(untrusted) == 1 and untrusted[0]["owner"] == "alice"
    record = untrusted[0]
    checks = record["components"]["bc"]["details"]["checks"]
    evidence = record["components"]["fc"]["details"]["evidence"]
    assert checks and evidence

    log_in(browser, scored_console, "sk-alice")
    assert "sk-alice" not in browser.current_url and "sk-alice" not in browser.page_source
    assert browser.find_element(By.CSS_SELECTOR, ".counts").text.count("\n") >= 3

    browser.find_element(By.CSS_SELECTOR, "nav a[data-view=records]").click()
    rows = wait_for(browser, "table.records tbody tr")
    assert len(rows) == 2  # alice's two answers, not bob's
    Select(browser.find_element(By.ID, "f-label")).select_by_value("untrusted")
    browser.find_element(By.CSS_SELECTOR, "form[data-filter] button[type=submit]").click()
    wait_for(browser, "select#f-label option[value=untrusted][selected]")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.records tbody tr")
    assert [row.get_attribute("data-record") for row in rows] == [record["id"]]
    assert "label=untrusted" in browser.current_url and "untrusted" in rows[0].text

    rows[0].find_element(By.CSS_SELECTOR, "a").click()
    shown = wait_for(browser, "ol.checks > li.check")
    assert len(shown) == len(checks)
    for row, check in zip(shown, checks, strict=True):
        options = row.find_elements(By.CSS_SELECTOR, "ul.options li")
        assert [
            o.text.split(") ", 1)[1].split("\n")[0].replace(" original answer", "").replace(" chosen", "")
            for o in options
        ] == check["options"]
        marked = row.find_element(By.CSS_SELECTOR, "ul.options li.original")
        assert ANSWER in marked.text and "original answer" in marked.text
        assert row.find_element(By.CSS_SELECTOR, ".check-head .letter").text == check["chosen"]
        assert row.find_element(By.CSS_SELECTOR, ".verdict").text == "inconsistent"
    table = browser.find_element(By.CSS_SELECTOR, "table.evidence").text
    for passage in evidence:
        assert passage["title"] in table and f"{passage['score']:.2f}" in table
    assert "contradict" in browser.find_element(By.ID, "fc-title").text
    bc_details = record["components"]["bc"]["details"]  # the debiased procedure's fields, as the record carries them
    procedure = browser.find_element(By.CSS_SELECTOR, ".bc-procedure").text
    assert f"Procedure {bc_details['procedure']}" in procedure
    assert browser.find_element(By.CSS_SELECTOR, ".bc-procedure .kappa").text == f"{bc_details['kappa']:.3f}"
    assert browser.find_element(By.CSS_SELECTOR, ".bc-procedure .debiased").text == f"{bc_details['debiased']:.3f}"
    prior = browser.find_element(By.CSS_SELECTOR, ".letter-prior").text
    assert all(f"{letter} {p:.2f}" in prior for letter, p in bc_details["letter_prior"].items())
    lp = record["components"]["lp"]
    assert f"{lp['details']['mean_probability']:.3f}" in browser.find_element(By.CSS_SELECTOR, ".lp-figures").text
    assert "of bc + fc" in browser.find_element(By.CSS_SELECTOR, ".ov-sources").text
    assert UNTRUSTED_QUESTION in browser.find_element(By.ID, "qa-title").find_element(By.XPATH, "..").text
    facts = browser.find_element(By.CSS_SELECTOR, "dl.facts").text
    assert "Waited in the queue" in facts and "Scoring took" in facts
    assert not re.search(r"\b[a-z]+_[a-z_]+\b", facts), f"a raw field name among the facts: {facts}"

    light = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    assert browser.execute_script("return getComputedStyle(document.body).backgroundColor") != light


def test_a_skipped_record_reads_as_not_scored_not_as_an_error(scored_console: ServerThread, browser: Any) -> None:
    """A tool call has no text to score: the console says so, in the muted colour, without an error flag."""
    from selenium.webdriver.common.by import By

    (record,) = records_of(scored_console, "sk-carol")
    assert record["status"] == "skipped"
    log_in(browser, scored_console, "sk-carol")
    browser.find_element(By.CSS_SELECTOR, "nav a[data-view=records]").click()
    (row,) = wait_for(browser, "table.records tbody tr")
    status = row.find_elements(By.CSS_SELECTOR, "td")[4]
    assert status.text == "skipped Not scored: the answer calls tools (no text to score)"
    assert not status.find_elements(By.CSS_SELECTOR, ".flag") and "error" not in status.text
    reason = status.find_element(By.CSS_SELECTOR, ".reason")
    probe = (
        "const probe = document.createElement('span'); probe.style.color = arguments[0];"
        " document.body.append(probe); const colour = getComputedStyle(probe).color; probe.remove();"
        " return colour;"
    )
    shown = browser.execute_script("return getComputedStyle(arguments[0]).color", reason)
    assert shown == browser.execute_script(probe, "var(--muted)") != browser.execute_script(probe, "var(--untrusted)")
    row.find_element(By.CSS_SELECTOR, "a").click()
    note = wait_for(browser, ".skip-reason")[0]
    assert note.text == "Not scored: the answer calls tools (no text to score)"
    assert not browser.find_elements(By.CSS_SELECTOR, "#content [role=alert]")
    assert "tool_calls" not in browser.find_element(By.ID, "content").text


def test_another_key_sees_none_of_it(scored_console: ServerThread, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    alices = {r["id"] for r in records_of(scored_console, "sk-alice")}
    log_in(browser, scored_console, "sk-bob")
    browser.find_element(By.CSS_SELECTOR, "nav a[data-view=records]").click()
    rows = wait_for(browser, "table.records tbody tr")
    shown = {row.get_attribute("data-record") for row in rows}
    assert len(shown) == 1 and not shown & alices
    browser.get(f"{scored_console.url}/ui/records/{next(iter(alices))}")
    alert = wait_for(browser, "#content [role=alert]")[0]
    assert "No trust record" in alert.text and ANSWER not in browser.page_source


def test_the_records_view_fits_a_phone(scored_console: ServerThread, tmp_path: Path) -> None:
    with phone(tmp_path / "phone") as driver:
        log_in(driver, scored_console, "sk-alice")
        driver.get(f"{scored_console.url}/ui/records")
        wait_for(driver, "table.records tbody tr")
        assert driver.execute_script("return window.innerWidth") == 390
        assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
