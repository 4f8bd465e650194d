"""RAG traffic through the gateway: documents are detected, stripped, shown to the model, and scored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from scoring.rag import build_rag_scorer
from scoring.settings import ScoringSettings
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text
from tests.proxy.metric_samples import samples
from tests.proxy.scored_gateway import AskingScorer, wait_for_record
from tests.scoring.rag.judging import marker_judge
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

DOCUMENTS = [
    {"id": "d1", "title": "Alpha", "text": "The ALPHA fact holds."},
    {"id": "d2", "title": "Beta", "text": "The BETA fact holds."},
]


def answering(answer: str) -> Callable[[list[dict[str, Any]]], str]:
    """The model answers ``answer``; asked as judge, it rules by marker words (see tests.scoring.rag.judging)."""

    def respond(messages: list[dict[str, Any]]) -> str:
        if last_user_text(messages).startswith("INSTRUCTION: Assess whether"):
            return marker_judge(messages)
        return answer

    return respond


@pytest.fixture
def rag_gateway(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"scoring": {"mode": "sync"}}
    return start_gateway(config, scorers=[AskingScorer("bc", 0.9), build_rag_scorer(ScoringSettings())])


def client(server: ServerThread) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=MASTER_KEY, max_retries=0)


def test_documents_field_is_stripped_shown_to_the_model_and_scored(
    rag_gateway: ServerThread, fake_upstream: FakeUpstream
) -> None:
    fake_upstream.responder = answering("ALPHA holds [1]. BETA holds [1].")
    raw = client(rag_gateway).chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "user", "content": "What holds?"}], extra_body={"documents": DOCUMENTS}
    )
    forwarded = fake_upstream.requests[0]
    assert "documents" not in forwarded
    assert "Document [1](Title: Alpha)" in last_user_text(forwarded["messages"])
    headers = raw.headers
    # statement 1 is supported by its citation, statement 2 cites the wrong document
    assert (headers["x-trust-citation-recall"], headers["x-trust-refusal"]) == ("0.5000", "false")
    assert headers["x-trust-citation-precision"] == "0.5000"
    assert "x-trust-bc" not in headers  # closed-book scorers do not run on RAG answers
    record = wait_for_record(rag_gateway, headers["x-trust-id"])
    assert set(record["components"]) == {"rag"}
    assert record["components"]["rag"]["details"]["groundedness"] == 1.0
    found = samples(rag_gateway)
    recall = ("trustgate_rag_metric_sum", frozenset({"model": "fake", "metric": "citation_recall"}.items()))
    assert found[recall] == 0.5
    assert found[("trustgate_upstream_calls_total", frozenset({"model": "fake", "purpose": "rag"}.items()))] >= 2


def test_numbered_passages_in_the_prompt_are_detected(rag_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = answering("The documents do not contain the answer.")
    system = (
        "Answer from the documents, citing them.\n[1] The ALPHA fact holds in every known case.\n"
        "[2] The BETA fact holds in every known case."
    )
    raw = client(rag_gateway).chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "system", "content": system}, {"role": "user", "content": "What holds?"}]
    )
    assert raw.headers["x-trust-refusal"] == "true"
    assert fake_upstream.requests[0]["messages"][0]["content"] == system  # nothing appended


def test_closed_book_requests_keep_trustscore(rag_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    raw = client(rag_gateway).chat.completions.with_raw_response.create(
        model="fake", messages=[{"role": "user", "content": "Who built the temple?"}]
    )
    assert raw.headers["x-trust-bc"] == "0.9000" and "x-trust-citation-recall" not in raw.headers


@pytest.mark.parametrize("documents, param", [("not a list", "documents"), ([{"title": "no text"}], "documents[0]")])
def test_malformed_documents_are_400(
    rag_gateway: ServerThread, fake_upstream: FakeUpstream, documents: Any, param: str
) -> None:
    response = httpx.post(
        f"{rag_gateway.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={"model": "fake", "messages": [{"role": "user", "content": "q"}], "documents": documents},
    )
    assert response.status_code == 400 and response.json()["error"]["param"].startswith(param)
    assert fake_upstream.requests == []


@pytest.mark.parametrize(
    "labels, param",
    [
        ({"answerable": "no"}, "answerable"),
        ({"reference_claims": ["ALPHA holds.", " "]}, "reference_claims"),
        ({"reference_claims": "ALPHA holds."}, "reference_claims"),
    ],
)
def test_malformed_labels_are_400_in_openais_shape(
    rag_gateway: ServerThread, fake_upstream: FakeUpstream, labels: dict[str, Any], param: str
) -> None:
    response = httpx.post(
        f"{rag_gateway.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={"model": "fake", "messages": [{"role": "user", "content": "q"}], "documents": DOCUMENTS, **labels},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, "invalid_documents")
    assert param in error["message"] and fake_upstream.requests == []


def test_the_clients_labels_reach_the_scorer(rag_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    """``answerable`` rides with the job (its policy) to the RAG scorer: a refusal the label says was right."""
    fake_upstream.responder = answering("The documents do not contain the answer.")
    raw = client(rag_gateway).chat.completions.with_raw_response.create(
        model="fake",
        messages=[{"role": "user", "content": "Who built it?"}],
        extra_body={"documents": DOCUMENTS, "answerable": False},
    )
    details = wait_for_record(rag_gateway, raw.headers["x-trust-id"])["components"]["rag"]["details"]
    assert (details["answerable"], details["answerable_from"], details["refusal_grounded"]) == (False, "label", 1.0)
