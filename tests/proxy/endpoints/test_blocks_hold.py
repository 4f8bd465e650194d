"""A block holds: under a block policy's defaults, an answer with no score is blocked whatever left it unscored,
and a stream cannot step around it.

Each case was a way a key under ``action: block`` got its low-trust answer back with a 200 and no
``x-trust-action``: an answer too long to score, a refusal that went on to answer, an answer inside a tool call or
content beside one, scoring past ``sync_timeout``, a stalled scoring worker, a job shed, a failed score, and
``stream: true``. Over real sockets on the fake upstream; the verdicts are ``VerdictScorer``'s (an answer in doubt
scores 0.1, any other 0.9).
"""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from scoring.types import Ask, ComponentResult, ScoringJob
from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.endpoints.low_trust import HIGH, LOW, VerdictScorer, ask_chat, config, sdk
from tests.proxy.scored_gateway import wait_for_record
from tests.servers import ServerThread
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

MESSAGE = "No reliable answer, sorry."
PATHS = ["passthrough", "litellm"]


class AskingVerdict(VerdictScorer):
    """``VerdictScorer``'s verdict, after one scoring call (what a budget counts)."""

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        await ask([{"role": "user", "content": f"check: {job.answer}"}])
        return await super().score(job, ask)


class FailingScorer(VerdictScorer):
    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        raise RuntimeError("the evidence index exploded")


def blocking(
    start_gateway: Callable[..., ServerThread],
    fake: FakeUpstream,
    *,
    scorer: Any = None,
    path: str = "passthrough",
    scoring: dict[str, Any] | None = None,
    **policy: Any,
) -> ServerThread:
    """A gateway whose policy blocks below 0.4 (``policy`` adds to it, ``scoring`` to its scoring section)."""
    settings = config(fake.url, path, action="block", message=MESSAGE, **policy)  # type: ignore[attr-defined]
    settings["trustgate"]["scoring"].update(scoring or {})
    return start_gateway(settings, scorers=None if scorer is False else [scorer or VerdictScorer()])


def assert_blocked(raw: Any, *, hidden: str) -> dict[str, Any]:
    """The client got the policy's message, said so, and nothing of the answer it replaced; its record."""
    reply = raw.parse()
    assert raw.status_code == 200 and raw.headers["x-trust-action"] == "blocked", raw.headers
    assert reply.choices[0].message.content == MESSAGE and reply.choices[0].finish_reason == "content_filter"
    assert not reply.choices[0].message.tool_calls and hidden not in raw.http_response.text
    return dict(raw.headers)


def test_an_answer_too_long_to_score_is_blocked(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = blocking(start_gateway, fake_upstream, scoring={"limits": {"max_answer_chars": 100}})
    question = "Who built the first temple? " + "Tell me everything. " * 10
    headers = assert_blocked(ask_chat(server, question), hidden="Tell me everything")
    assert headers["x-trust-status"] == "skipped"
    kept = wait_for_record(server, headers["x-trust-id"])
    assert kept["error"] == "skipped: too_long" and kept["answer"].startswith("You said: Who built")


def test_a_refusal_that_goes_on_to_answer_is_scored(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = blocking(start_gateway, fake_upstream)
    fake_upstream.responder = lambda messages: (
        "I'm sorry, but I can't help with that. Anyway: in doubt as it is, Sydney is the capital of Australia."
    )
    headers = assert_blocked(ask_chat(server, "What is the capital of Australia?"), hidden="Sydney")
    assert headers["x-trust-status"] == "done" and headers["x-trust-score"] == "0.1000"  # read whole, and scored


def test_an_answer_inside_a_tool_call_is_blocked(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = blocking(start_gateway, fake_upstream)
    raw = sdk(server).chat.completions.with_raw_response.create(
        model="cheap",
        messages=[{"role": "user", "content": f"[tool-call:answer] {LOW}"}],
        tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
    )
    headers = assert_blocked(raw, hidden="You said")  # the call's argument carried the answer
    assert headers["x-trust-status"] == "skipped"
    assert wait_for_record(server, headers["x-trust-id"])["error"] == "skipped: tool_calls"


@pytest.mark.parametrize(("question", "score"), [(HIGH, "0.9000"), (LOW, "0.1000")])
def test_content_beside_a_tool_call_is_scored_and_the_call_blocked(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], question: str, score: str
) -> None:
    server = blocking(start_gateway, fake_upstream)
    raw = sdk(server).chat.completions.with_raw_response.create(
        model="cheap", messages=[{"role": "user", "content": f"[tool-call:beside] {question}"}]
    )
    headers = assert_blocked(raw, hidden="You said")  # the calls' arguments are unscored: a block holds
    assert headers["x-trust-status"] == "done" and headers["x-trust-score"] == score  # the content was scored


def test_under_unscored_pass_content_beside_a_tool_call_is_acted_on_by_its_score(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = blocking(start_gateway, fake_upstream, unscored="pass")
    low = sdk(server).chat.completions.with_raw_response.create(
        model="cheap", messages=[{"role": "user", "content": f"[tool-call:beside] {LOW}"}]
    )
    assert_blocked(low, hidden="You said")
    high = sdk(server).chat.completions.with_raw_response.create(
        model="cheap", messages=[{"role": "user", "content": f"[tool-call:beside] {HIGH}"}]
    )
    message = high.parse().choices[0].message
    assert "x-trust-action" not in high.headers and message.tool_calls and "You said" in (message.content or "")


def test_scoring_past_the_sync_timeout_is_blocked_and_the_record_keeps_the_action(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Four answers at once, two scored at a time, each for 0.8 s: the last ones' scores miss the 1 s wait."""
    scoring = {"sync_timeout_s": 1.0, "queue": {"scorer_timeout_s": 0.9, "concurrency": 1}}
    server = blocking(start_gateway, fake_upstream, scorer=VerdictScorer(delay={"cheap": 0.8}), scoring=scoring)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda i: ask_chat(server, f"{HIGH} ({i})"), range(4)))
    late = [raw for raw in answers if raw.headers["x-trust-status"] == "pending"]
    assert late, [raw.headers["x-trust-status"] for raw in answers]
    headers = assert_blocked(late[0], hidden="You said")
    assert wait_until(lambda: wait_for_record(server, headers["x-trust-id"]).get("action") == "blocked", 15)
    finished = wait_for_record(server, headers["x-trust-id"])
    assert finished["status"] == "done" and finished["score"] == pytest.approx(0.9)  # scored later, still blocked


def test_a_shed_job_is_blocked(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> None:
    budget = {"calls_per_minute": 1, "key_share": 1.0}  # the first job's one call spends the minute's budget
    server = blocking(start_gateway, fake_upstream, scorer=AskingVerdict(), scoring={"budget": budget})
    for _ in range(3):  # the minute may turn between two requests: then the next is shed
        raw = ask_chat(server, HIGH)
        if raw.headers["x-trust-status"] == "shed":
            break
    headers = assert_blocked(raw, hidden="You said")
    assert wait_for_record(server, headers["x-trust-id"])["shed_reason"] == "call_budget"


def test_a_failed_score_is_blocked(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> None:
    server = blocking(start_gateway, fake_upstream, scorer=FailingScorer())
    headers = assert_blocked(ask_chat(server, HIGH), hidden="You said")
    assert headers["x-trust-status"] == "failed"


def test_unscored_pass_lets_an_unscored_answer_go_as_it_is(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = blocking(start_gateway, fake_upstream, unscored="pass", scoring={"limits": {"max_answer_chars": 100}})
    raw = ask_chat(server, HIGH + " And the second one? " * 6)
    assert "x-trust-action" not in raw.headers and raw.headers["x-trust-status"] == "skipped"
    assert raw.parse().choices[0].message.content.startswith("You said: Who built")
    assert ask_chat(server, LOW).headers["x-trust-action"] == "blocked"  # low answers are still blocked


class CheapFails(VerdictScorer):
    """Fails on the cheap group's answers; scores the others as ``VerdictScorer`` does."""

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        if job.model == "cheap":
            raise RuntimeError("the evidence index exploded")
        return await super().score(job, ask)


def test_unscored_escalate_asks_the_escalation_target(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    settings = config(fake_upstream.url, "passthrough", unscored="escalate", escalate_to="strong")  # type: ignore[attr-defined]
    server = start_gateway(settings, scorers=[CheapFails({"strong": 0.8})])
    raw = ask_chat(server, HIGH)
    assert raw.headers["x-trust-action"] == "escalated" and raw.headers["x-trust-score"] == "0.8000"
    assert len(fake_upstream.requests) == 2  # the first answer (unscored: its score failed), then strong's


@pytest.mark.parametrize("path", PATHS)
def test_a_block_policy_holds_streams_by_default(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], path: str
) -> None:
    # no streams setting: hold, for a block policy; a low answer and one too long to score are blocked alike
    server = blocking(start_gateway, fake_upstream, path=path, scoring={"limits": {"max_answer_chars": 100}})
    for question in (LOW, HIGH + " And the second one? " * 6):
        raw = sdk(server).chat.completions.with_raw_response.create(
            model="cheap", messages=[{"role": "user", "content": question}], stream=True
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices)
        assert text == MESSAGE and raw.headers["x-trust-action"] == "blocked"
    raw = sdk(server).chat.completions.with_raw_response.create(
        model="cheap", messages=[{"role": "user", "content": HIGH}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices)
    assert text == f"You said: {HIGH}" and "x-trust-action" not in raw.headers


@pytest.mark.parametrize("path", PATHS)
def test_a_held_responses_stream_sends_the_trust_event_it_was_asked_for(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], path: str
) -> None:
    """Blocked or kept, a held Responses stream carries the ``trustgate.trust`` event before its terminal event
    when the client asked for it, as a passed stream does, with the terminal response's trust."""
    server = blocking(start_gateway, fake_upstream, path=path)
    for question, action in ((LOW, "blocked"), (HIGH, None)):
        with httpx.stream(
            "POST",
            f"{server.url}/v1/responses",
            headers={"authorization": f"Bearer {MASTER_KEY}", "x-trustgate-trust-event": "true"},
            json={"model": "cheap", "input": question, "stream": True},
            timeout=30,
        ) as response:
            assert response.status_code == 200 and response.headers.get("x-trust-action") == action
            events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
        kinds = [event["type"] for event in events]
        assert kinds[-2:] == ["trustgate.trust", "response.completed"], kinds
        assert events[-2]["trust"] == events[-1]["response"]["trust"]
        numbers = [event["sequence_number"] for event in events]
        assert len(set(numbers)) == len(numbers)  # the trust event takes a number of its own
