"""Kinds on the embedded default, end to end: ``trustgate serve`` with the real llama.cpp server and SmolLM2 scores
a factual question, and answers a request for a poem ``not_applicable``, with no scoring call to the local model."""

from __future__ import annotations

import httpx
import pytest

from tests.assets import DATA_DIR
from tests.e2e.gateway_process import AUTH, GatewayProcess, scoring_calls
from tests.e2e.sync_after_async import wait_all_final

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (DATA_DIR / "factcheck" / "index").exists() or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
        reason="scoring assets not built: `make install` builds them",
    ),
]

SYNC = {**AUTH, "x-trustgate-mode": "sync"}


def ask(gateway: GatewayProcess, question: str) -> httpx.Response:
    body = {"model": "local", "messages": [{"role": "user", "content": question}], "max_tokens": 48, "temperature": 0}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", headers=SYNC, json=body, timeout=300)
    assert response.status_code == 200, response.text
    return response


def test_a_factual_question_is_scored_and_a_poem_is_not_applicable_with_no_scoring_call(
    default_gateway: GatewayProcess,
) -> None:
    factual = ask(default_gateway, "What is the capital of France?")
    assert factual.headers["x-trust-kind"] == "factual"
    # done, or past sync_timeout_s on a busy machine: its scoring ends before the poem is asked
    (scored,) = wait_all_final(default_gateway.url, [factual.headers["x-trust-id"]])
    assert scored["status"] == "done" and scored["basis"] == "default" and scored["score"] is not None
    before = scoring_calls(default_gateway.url)
    assert before > 0  # the factual answer's re-asks went to the local model

    poem = ask(default_gateway, "Write a haiku about autumn leaves.")
    assert poem.json()["choices"][0]["message"]["content"].strip()
    assert (poem.headers["x-trust-status"], poem.headers["x-trust-kind"]) == ("not_applicable", "creative")
    assert "x-trust-score" not in poem.headers and "x-trust-label" not in poem.headers
    assert scoring_calls(default_gateway.url) == before  # not one call to the local model for it
    trust_id = poem.headers["x-trust-id"]
    record = httpx.get(f"{default_gateway.url}/v1/trust/{trust_id}", headers=AUTH, timeout=10).json()
    assert record["status"] == "not_applicable" and record["applicability"]["kind"] == "creative"
    assert sum(component["upstream_calls"] for component in record["components"].values()) == 0
    metrics = httpx.get(f"{default_gateway.url}/metrics", timeout=10).text
    assert 'trustgate_scoring_applicability_total{kind="creative",model="local"} 1.0' in metrics
