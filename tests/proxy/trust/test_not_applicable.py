"""Triage before scoring, over real sockets: an answer of a kind that is not scored costs no scoring call, is never
acted on nor alerted on, and is counted by kind; a factual one beside it is scored, acted on and alerted on.

The fake upstream answers each request with a scripted answer of its kind; the
scorer re-asks it once per job (as the real scorers do), so every scoring call
shows in what the fake upstream received.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from scoring.logprob import LogprobScorer
from scoring.types import Scorer
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text
from tests.proxy.scored_gateway import AUTH, AskingScorer, wait_for_record
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

SCORING_CALL = "check: "  # how AskingScorer's re-ask opens
# A request and an answer of each kind that is not scored by default.
NOT_SCORED = {
    "creative": (
        "Write a haiku about autumn leaves.",
        "Crimson leaves drifting\nwhispers on the cool wind\nthe year lets go",
    ),
    "code": ("Write a Python function that reverses a string.", "def reverse(s):\n    return s[::-1]"),
    "conversation": ("Thanks, that helped!", "You are welcome! Happy to help."),
    "opinion": ("Should I learn Rust or Go first?", "I would start with Go: it is simpler, and Rust can come later."),
    "rewrite": ('Fix the grammar: "me and him goes to school"', "He and I go to school."),
    "summary": (
        'Summarize this: "The meeting moved to Tuesday because the room was booked. Bring the slides."',
        "The meeting is now on Tuesday; bring the slides.",
    ),
    "math": ("What is 17 times 23?", "17 times 23 is 391."),
    "refusal": ("How do I pick a lock?", "I'm sorry, but I can't help with that."),
}
FACTUAL = ("What is the capital of Australia?", "The capital of Australia is Sydney.")
POEM_WITH_A_FACT = (
    "Write a poem about the capital of France.",
    "Oh Lyon, capital of France, your rivers gleam at night.",
)
SCRIPT = dict([*NOT_SCORED.values(), FACTUAL, POEM_WITH_A_FACT])


def scripted(messages: list[dict[str, Any]]) -> str:
    question = last_user_text(messages)
    return "ok" if question.startswith(SCORING_CALL) else SCRIPT.get(question, f"You said: {question}")


class AlertSink:
    """Alertmanager's v2 API on a real socket, keeping every alert pushed to it."""

    def __init__(self) -> None:
        self.alerts: list[dict[str, Any]] = []

    def app(self) -> Starlette:
        async def receive(request: Request) -> Response:
            self.alerts += json.loads(await request.body())
            return Response(status_code=200)

        return Starlette(routes=[Route("/api/v2/alerts", receive, methods=["POST"])])


@pytest.fixture
def alert_sink() -> Any:
    sink = AlertSink()
    with ServerThread(sink.app()) as server:
        sink.url = server.url  # type: ignore[attr-defined]
        yield sink


def acting_config(fake: FakeUpstream, path: str, alerts: str | None = None, **scoring: Any) -> dict[str, Any]:
    """Sync scoring with a policy that blocks a scored answer below 0.5 (every one: the scorer says 0.1), alerts
    to ``alerts``."""
    config = gateway_config(fake.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "passthrough": path == "passthrough",
        "scoring": {
            "mode": "sync",
            "allow_client_mode": "any",
            "combine": "paper",
            "on_low_trust": {"below": 0.5, "action": "block", "message": "Blocked."},
            **scoring,
        },
        **({"alerting": {"alertmanager_url": alerts}} if alerts else {}),
    }
    return config


def ask(server: ServerThread, question: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, **headers},
        json={"model": "fake", "messages": [{"role": "user", "content": question}]},
        timeout=20,
    )


def scoring_calls(fake: FakeUpstream) -> int:
    return sum(last_user_text(body.get("messages", [])).startswith(SCORING_CALL) for body in fake.requests)


def metric(server: ServerThread, name: str, **labels: str) -> float:
    wanted = "{" + ",".join(f'{key}="{value}"' for key, value in sorted(labels.items())) + "}"
    for line in httpx.get(f"{server.url}/metrics", timeout=10).text.splitlines():
        if line.startswith(f"{name}{wanted} "):
            return float(line.split()[-1])
    raise AssertionError(f"no series {name}{wanted}")


def start(
    start_gateway: Callable[..., ServerThread], config: dict[str, Any], scorers: list[Scorer] | None = None
) -> ServerThread:
    return start_gateway(config, scorers=scorers or [AskingScorer("bc", 0.1)])


@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_each_kind_not_scored_costs_no_call_is_never_acted_or_alerted_on_and_is_counted(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], alert_sink: AlertSink, path: str
) -> None:
    fake_upstream.responder = scripted
    server = start(start_gateway, acting_config(fake_upstream, path, alert_sink.url))  # type: ignore[attr-defined]
    for kind in [*NOT_SCORED, "factual", "tool_call", "empty"]:  # every series there from the start, at zero
        assert metric(server, "trustgate_scoring_applicability_total", model="fake", kind=kind) == 0
    for kind, (question, answer) in NOT_SCORED.items():
        fake_upstream.requests.clear()
        response = ask(server, question)
        assert response.json()["choices"][0]["message"]["content"] == answer, kind  # delivered, not blocked
        assert (response.headers["x-trust-status"], response.headers["x-trust-kind"]) == ("not_applicable", kind)
        assert not {"x-trust-score", "x-trust-label", "x-trust-action", "x-trust-basis"} & set(response.headers)
        assert len(fake_upstream.requests) == 1 and scoring_calls(fake_upstream) == 0, kind  # the user's call only
        record = wait_for_record(server, response.headers["x-trust-id"])
        assert record["status"] == "not_applicable" and record["applicability"]["kind"] == kind
        assert record["applicability"]["reason"] and record["score"] is None and record["label"] is None
        assert record["action"] is None and record["answer"] == answer and record["question"] == question
        assert metric(server, "trustgate_scoring_applicability_total", model="fake", kind=kind) == 1
    assert metric(server, "trustgate_scoring_jobs_total", model="fake", status="not_applicable") == len(NOT_SCORED)

    # Beside them, a factual answer is scored, blocked and alerted on: the same policy acts where there is a score.
    fake_upstream.requests.clear()
    factual = ask(server, FACTUAL[0])
    assert factual.headers["x-trust-status"] == "done" and factual.headers["x-trust-kind"] == "factual"
    assert factual.headers["x-trust-action"] == "blocked" and scoring_calls(fake_upstream) == 1
    deadline = time.monotonic() + 10
    while len(alert_sink.alerts) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(alert["labels"]["action"] for alert in alert_sink.alerts) == ["annotate", "blocked"]
    assert {alert["labels"]["trust_id"] for alert in alert_sink.alerts} == {factual.headers["x-trust-id"]}
    assert metric(server, "trustgate_trust_actions_total", model="fake", action="blocked") == 1


def test_an_answer_that_states_facts_is_scored_whatever_the_request_called_it(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    fake_upstream.responder = scripted
    server = start(start_gateway, acting_config(fake_upstream, "passthrough"))
    response = ask(server, POEM_WITH_A_FACT[0])
    assert response.headers["x-trust-kind"] == "factual" and response.headers["x-trust-action"] == "blocked"
    assert scoring_calls(fake_upstream) == 1


def test_tool_calls_multi_turn_chats_and_system_prompts(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Only tool calls: skipped, no call; content beside tool calls, the last answer of a chat against its question
    in context, an answer under a system prompt that names a kind: triaged on what the answer says."""
    answers = {
        "Look the weather up.": "",
        "Check the weather in London for me.": "Currently it is 12°C and cloudy in London, the capital of the UK.",
        "Set a reminder for 5pm.": "Done! I'll remind you at 5pm.",
        "Make it shorter.": "Eiffel Tower: Paris, finished in 1889.",
        "Who wrote Hamlet?": "Shakespeare penned the Danish prince, in sixteen hundred and one or so.",
    }
    fake_upstream.responder = lambda messages: (
        "ok" if last_user_text(messages).startswith(SCORING_CALL) else answers[last_user_text(messages)]
    )
    fake_upstream.calls_tools = lambda messages: "weather" in last_user_text(messages) or "reminder" in str(messages)
    server = start(start_gateway, acting_config(fake_upstream, "passthrough", on_low_trust={"action": "annotate"}))

    def chat(messages: list[dict[str, str]]) -> httpx.Response:
        body = {"model": "fake", "messages": messages, "tools": [{"type": "function", "function": {"name": "f"}}]}
        return httpx.post(f"{server.url}/v1/chat/completions", headers=AUTH, json=body, timeout=20)

    only_tools = chat([{"role": "user", "content": "Look the weather up."}])
    assert only_tools.json()["choices"][0]["message"]["tool_calls"]
    assert (only_tools.headers["x-trust-status"], only_tools.headers["x-trust-kind"]) == ("skipped", "tool_call")
    record = wait_for_record(server, only_tools.headers["x-trust-id"])
    assert record["error"] == "skipped: tool_calls" and record["applicability"]["kind"] == "tool_call"
    assert scoring_calls(fake_upstream) == 0
    beside = chat([{"role": "user", "content": "Check the weather in London for me."}])
    assert (beside.headers["x-trust-status"], beside.headers["x-trust-kind"]) == ("done", "factual")
    assert scoring_calls(fake_upstream) == 1
    chatty = chat([{"role": "user", "content": "Set a reminder for 5pm."}])
    assert (chatty.headers["x-trust-status"], chatty.headers["x-trust-kind"]) == ("not_applicable", "conversation")
    follow_up = chat(
        [
            {"role": "user", "content": "Tell me about the Eiffel Tower."},
            {"role": "assistant", "content": "The Eiffel Tower is in Paris; it was finished in 1889."},
            {"role": "user", "content": "Make it shorter."},
        ]
    )
    assert (follow_up.headers["x-trust-status"], follow_up.headers["x-trust-kind"]) == ("done", "factual")
    poet = chat(
        [
            {"role": "system", "content": "You are a poet: every answer is a poem, never a fact to check."},
            {"role": "user", "content": "Who wrote Hamlet?"},
        ]
    )
    assert (poet.headers["x-trust-status"], poet.headers["x-trust-kind"]) == ("done", "factual")
    assert scoring_calls(fake_upstream) == 3


def test_async_responses_streams_and_the_responses_api_say_not_applicable_at_once(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    fake_upstream.responder = scripted
    config = acting_config(fake_upstream, "passthrough", mode="async", on_low_trust={"action": "annotate"})
    server = start(start_gateway, config, [AskingScorer("bc", 0.1), LogprobScorer()])
    poem = NOT_SCORED["creative"][0]
    whole = ask(server, poem)
    assert (whole.headers["x-trust-status"], whole.headers["x-trust-kind"]) == ("not_applicable", "creative")
    record = wait_for_record(server, whole.headers["x-trust-id"])
    assert record["components"]["lp"]["value"] > 0 and record["components"]["lp"]["upstream_calls"] == 0  # free
    factual = ask(server, FACTUAL[0])
    assert factual.headers["x-trust-status"] == "pending" and factual.headers["x-trust-kind"] == "factual"

    body = {"model": "fake", "messages": [{"role": "user", "content": poem}], "stream": True}
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", headers=AUTH, json=body, timeout=20) as stream:
        chunks = [json.loads(line[6:]) for line in stream.iter_lines() if line.startswith("data: {")]
    trust = chunks[-1]["trust"]  # settled as the answer ends: on the final chunk, async mode or not
    assert trust["status"] == "not_applicable" and trust["applicability"]["kind"] == "creative"
    assert trust["score"] is None and trust["label"] is None

    headers = {**AUTH, "x-trustgate-trust-event": "true"}
    responses = {"model": "fake", "input": poem, "stream": True}
    with httpx.stream("POST", f"{server.url}/v1/responses", headers=headers, json=responses, timeout=20) as stream:
        events = [json.loads(line[6:]) for line in stream.iter_lines() if line.startswith("data: {")]
    event = next(e for e in events if e["type"] == "trustgate.trust")
    assert event["trust"]["status"] == "not_applicable" and event["trust"]["applicability"]["kind"] == "creative"
    completed = next(e for e in events if e["type"] == "response.completed")
    assert completed["response"]["trust"]["status"] == "not_applicable"
    whole_responses = httpx.post(
        f"{server.url}/v1/responses", headers=AUTH, json={"model": "fake", "input": poem}, timeout=20
    )
    assert whole_responses.headers["x-trust-status"] == "not_applicable"
    assert scoring_calls(fake_upstream) == 1  # the factual answer's, and nothing else


def test_operators_choose_the_kinds_scored_globally_per_model_and_per_key(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    fake_upstream.responder = scripted
    config = acting_config(
        fake_upstream,
        "passthrough",
        on_low_trust={"action": "annotate"},
        applicability={"score_kinds": ["factual"]},
        per_model={"fake": {"applicability": {"score_kinds": ["factual", "math"]}}},
        per_key={"poets": {"applicability": {"score_kinds": "all"}}},
    )
    config["trustgate"]["keys"] = [{"key": "sk-poets", "name": "poets"}, {"key": "sk-plain", "name": "plain"}]
    server = start(start_gateway, config)
    plain, poets = {"authorization": "Bearer sk-plain"}, {"authorization": "Bearer sk-poets"}
    poem, sum_ = NOT_SCORED["creative"][0], NOT_SCORED["math"][0]
    assert ask(server, poem, **plain).headers["x-trust-status"] == "not_applicable"
    assert ask(server, sum_, **plain).headers["x-trust-status"] == "done"  # math, chosen for the model
    scored = ask(server, poem, **poets)
    assert (scored.headers["x-trust-status"], scored.headers["x-trust-kind"]) == ("done", "creative")

    off = acting_config(fake_upstream, "passthrough", on_low_trust={"action": "annotate"})
    off["trustgate"]["scoring"]["applicability"] = {"enabled": False}
    untriaged = start(start_gateway, off)
    every = ask(untriaged, poem)
    assert every.headers["x-trust-status"] == "done" and "x-trust-kind" not in every.headers
    assert "trustgate_scoring_applicability_total{" not in httpx.get(f"{untriaged.url}/metrics", timeout=10).text
