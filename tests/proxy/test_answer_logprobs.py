"""The ``lp`` component through the gateway: log-probabilities asked on the user's call, hidden from a client
that did not ask (streamed and not), exported as ``x-trust-lp``; an answer without them has no ``lp``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from scoring.logprob import LogprobScorer
from tests.fake_upstream import FakeUpstream
from tests.proxy.test_live_scoring import AUTH, AskingScorer, chat, scoring_config
from tests.servers import ServerThread


@pytest.fixture
def lp_gateway(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    return start_gateway(scoring_config(fake_upstream.url),  # type: ignore[attr-defined]
                         scorers=[AskingScorer("bc", 0.9), LogprobScorer()])


def stream_events(server: ServerThread, **extra: Any) -> tuple[httpx.Headers, list[dict[str, Any]]]:
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", headers={**AUTH, "x-trustgate-mode": "sync"},
                      timeout=20, json={"model": "fake", "stream": True,
                                        "messages": [{"role": "user", "content": "Who built it?"}], **extra}) as r:
        body = r.read().decode()
        headers = r.headers
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
    return headers, events


def test_logprobs_asked_upstream_never_reach_a_client_that_did_not_ask(lp_gateway: ServerThread,
                                                                     fake_upstream: FakeUpstream) -> None:
    response = chat(lp_gateway, headers={"x-trustgate-mode": "sync"})
    assert fake_upstream.requests[0]["logprobs"] is True  # asked on the user's own call ...
    assert all(choice["logprobs"] is None for choice in response.json()["choices"])  # ... and hidden again
    assert 0.0 < float(response.headers["x-trust-lp"]) <= 1.0
    record = httpx.get(f"{lp_gateway.url}/v1/trust/{response.headers['x-trust-id']}", headers=AUTH).json()
    assert record["components"]["lp"]["details"]["tokens"] > 0
    assert len(fake_upstream.requests) == 2  # the user's call and the bc scorer's re-ask: lp costs none


def test_streamed_logprobs_asked_upstream_never_reach_a_client_that_did_not_ask(lp_gateway: ServerThread,
                                                                              fake_upstream: FakeUpstream) -> None:
    _, events = stream_events(lp_gateway)
    assert fake_upstream.requests[0]["logprobs"] is True
    choices = [choice for event in events for choice in event.get("choices", [])]
    assert choices and all(choice.get("logprobs") is None for choice in choices)
    assert events[-1]["trust"]["components"]["lp"] is not None  # the tap read them before they were stripped


def test_a_client_that_asked_for_logprobs_gets_them(lp_gateway: ServerThread) -> None:
    response = chat(lp_gateway, headers={"x-trustgate-mode": "sync"}, logprobs=True, top_logprobs=2)
    assert response.json()["choices"][0]["logprobs"]["content"]
    _, events = stream_events(lp_gateway, logprobs=True)
    assert any((choice.get("logprobs") or {}).get("content") for e in events for choice in e.get("choices", []))


def test_an_answer_without_logprobs_has_no_lp_component(fake_upstream: FakeUpstream,
                                                        start_gateway: Callable[..., ServerThread]) -> None:
    fake_upstream.without_logprobs = True
    gateway = start_gateway(scoring_config(fake_upstream.url),  # type: ignore[attr-defined]
                            scorers=[AskingScorer("bc", 0.9), LogprobScorer()])
    response = chat(gateway, headers={"x-trustgate-mode": "sync"})
    assert "x-trust-lp" not in response.headers and response.headers["x-trust-bc"] == "0.9000"
    record = httpx.get(f"{gateway.url}/v1/trust/{response.headers['x-trust-id']}", headers=AUTH).json()
    assert "lp" not in record["components"]  # absent, not zero


def test_unscored_requests_are_forwarded_as_sent(lp_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    chat(lp_gateway, headers={"x-trustgate-mode": "off"})
    assert "logprobs" not in fake_upstream.requests[0]


def test_a_deployment_behind_litellm_is_not_asked_for_logprobs(fake_upstream: FakeUpstream,
                                                               start_gateway: Callable[..., ServerThread]) -> None:
    config = scoring_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"]["passthrough"] = False  # every group through litellm, whose providers may refuse it
    gateway = start_gateway(config, scorers=[AskingScorer("bc", 0.9), LogprobScorer()])
    response = chat(gateway, headers={"x-trustgate-mode": "sync"})
    assert response.status_code == 200 and not fake_upstream.requests[0].get("logprobs")
    assert "x-trust-lp" not in response.headers
