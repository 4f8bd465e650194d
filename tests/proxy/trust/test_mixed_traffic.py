"""A day's mixed traffic through a gateway: the held-out triage set's requests, each answered by a scripted upstream
with its labelled answer. At least 90% of them must be handled right (a factual answer scored, any other kind
left unscored), and not one left unscored may cost a scoring call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from evaluation.triage_eval import load_triage_cases, packaged_set
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text
from tests.proxy.scored_gateway import AskingScorer
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

SCORING_CALL = "check: "  # how AskingScorer's re-ask opens


def _key(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, sort_keys=True)


def test_the_held_out_set_is_handled_right_and_the_skipped_cost_no_scoring_call(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    cases = load_triage_cases(packaged_set("triage-holdout"))
    answers = {_key(case.messages): case.answer for case in cases}
    tools = {_key(case.messages) for case in cases if case.has_tool_calls}
    assert len(answers) == len(cases)  # one scripted answer per request
    fake_upstream.responder = lambda messages: (
        "ok" if last_user_text(messages).startswith(SCORING_CALL) else answers[_key(messages)]
    )
    fake_upstream.calls_tools = lambda messages: _key(messages) in tools
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"scoring": {"mode": "sync", "combine": "paper"}}
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.7)])

    right, costly = [], []
    for case in cases:
        before = len(fake_upstream.requests)
        response = httpx.post(
            f"{server.url}/v1/chat/completions",
            headers={"authorization": f"Bearer {MASTER_KEY}"},
            json={"model": "fake", "messages": case.messages},
            timeout=20,
        )
        assert response.status_code == 200, response.text
        status = response.headers["x-trust-status"]
        assert status in ("done", "not_applicable", "skipped"), (case.id, status)
        calls = sum(last_user_text(b["messages"]).startswith(SCORING_CALL) for b in fake_upstream.requests[before:])
        if status == "done":
            assert calls == 1, case.id
        elif calls:
            costly.append(case.id)
        right.append((status == "done") == case.checkable)
    assert costly == []
    assert sum(right) / len(cases) >= 0.9, f"{sum(right)} of {len(cases)} handled right"
