"""A long answer's claims, as a real gateway gives them: in its record, on a sync stream's last chunk, and in a
Responses stream's trust event and terminal response, over real sockets in front of the fake upstream.

The scripted claim checkers (``tests/claim_checkers.py``) find the answer's second sentence false: the record
carries each claim's span, verdict and checks with their evidence; the in-band trust object carries the same
claims compactly (span, score, label and each check's value, no details).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.claim_checkers import ANSWER, FALSE_CLAIM, QUESTION, claim_checkers, claims_model
from tests.conftest import MASTER_KEY, gateway_config, sdk_client
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}
SYNC = {"x-trustgate-mode": "sync"}
MESSAGES = [{"role": "user", "content": QUESTION}]


@pytest.fixture(params=["passthrough", "litellm"])
def gateway(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> ServerThread:
    fake_upstream.responder = claims_model
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "passthrough": request.param == "passthrough",
        "scoring": {"allow_client_mode": "any", "queue": {"scorer_timeout_s": 5.0}},
    }
    return start_gateway(config, scorers=claim_checkers())


def record_of(server: ServerThread, record_id: str) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/v1/trust/{record_id}", headers=AUTH, timeout=10)
    response.raise_for_status()
    record: dict[str, Any] = response.json()
    return record


def compact(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record's claims as the in-band trust object should carry them."""
    return [
        {
            "text": claim["text"],
            "start": claim["start"],
            "end": claim["end"],
            "score": claim["score"],
            "label": claim["label"],
            "components": {name: result["value"] for name, result in claim["components"].items()},
        }
        for claim in record["claims"]
    ]


def test_the_record_carries_each_claim_with_its_span_verdict_and_evidence(gateway: ServerThread) -> None:
    raw = sdk_client(gateway, **SYNC).chat.completions.with_raw_response.create(model="fake", messages=MESSAGES)
    assert raw.parse().choices[0].message.content == ANSWER
    record = record_of(gateway, raw.headers["x-trust-id"])
    claims = record["claims"]
    assert [ANSWER[c["start"] : c["end"]] for c in claims] == [c["text"] for c in claims]
    assert [c["text"] for c in claims] == [
        "Paris is the capital of France.",
        FALSE_CLAIM,
        "It is home to the Louvre.",
    ]
    lowest = min(claims, key=lambda c: c["score"])
    assert lowest["text"] == FALSE_CLAIM and lowest["label"] == "untrusted" and record["label"] == "untrusted"
    assert lowest["components"]["fc"]["details"]["evidence"][0]["id"] == "wikipedia:Paris"
    assert lowest["components"]["ev"]["details"]["statements"][0]["filler"] == "Seine"
    assert [c["components"]["ev"]["label"] for c in claims] == ["agree", "contradict", "abstain"]
    assert record["components"]["ev"]["details"]["claim_index"] == 1
    assert raw.headers["x-trust-ev"] == "0.2500" and record["components"]["fc"]["upstream_calls"] == 3  # one a claim


def test_a_sync_streams_last_chunk_carries_the_claims(gateway: ServerThread) -> None:
    chunks = list(sdk_client(gateway, **SYNC).chat.completions.create(model="fake", messages=MESSAGES, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    trust = next(extra["trust"] for c in chunks if "trust" in (extra := c.model_extra or {}))
    record = record_of(gateway, trust["id"])
    assert trust["claims"] == compact(record)
    assert [c["components"] for c in trust["claims"]][1] == {"fc": 0.0, "ev": 0.25}
    assert "details" not in json.dumps(trust)  # compact: the details are in the record


def test_a_responses_trust_event_and_terminal_response_carry_the_same_claims(gateway: ServerThread) -> None:
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/responses",
        headers={**AUTH, **SYNC, "x-trustgate-trust-event": "true"},
        json={"model": "fake", "input": QUESTION, "stream": True},
        timeout=30,
    ) as raw:
        lines = list(raw.iter_lines())
    events = {
        line.removeprefix("event: "): json.loads(data.removeprefix("data: "))
        for line, data in itertools.pairwise(lines)
        if line.startswith("event: ") and data.startswith("data: ")
    }
    event_trust = events["trustgate.trust"]["trust"]
    completed_trust = events["response.completed"]["response"]["trust"]
    record = record_of(gateway, event_trust["id"])
    assert event_trust["claims"] == completed_trust["claims"] == compact(record)
    assert [c["label"] for c in event_trust["claims"]][1] == "untrusted"
