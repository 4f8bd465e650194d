"""The record's JSON at ``GET /v1/trust/{id}`` keeps its shape while the details behind it are typed.

Each component's details below are what its scorer writes (keys, nesting and
the variants: an unscored Trust_BC, a Trust_FC without evidence, a skipped RAG
answer). They go through the gateway as a scorer's result (pipeline,
Trust_OV, SQLite store, the API) and must come back key for key.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar

import httpx
import pytest

from scoring.types import Ask, ComponentResult, Scorer, ScoringJob, TrustRecord
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}

BC_DETAILS: dict[str, Any] = {
    "mode": "adaptive",
    "binary": 0.0,
    "graded": 0.5,
    "logprob": None,
    "checks_run": 2,
    "stop_reason": "max_checks",
    "distractor_sources_shown": {"knowledge_graph": 4, "embedding": 2},
    "checks": [
        {
            "options": ["Paris", "Lyon", "Nice", "Lille"],
            "original": "A",
            "chosen": "A",
            "consistent": True,
            "original_probability": 0.91,
            "letter_probabilities": {"A": 0.91, "B": 0.09},
            "reply": "A",
        },
        {
            "options": ["Lyon", "Paris", "Nice", "Lille"],
            "original": "B",
            "chosen": None,
            "consistent": False,
            "original_probability": None,
            "reply": "I am not sure",
        },
    ],
    "distractor_sources": {"knowledge_graph": 5, "embedding": 3},
    "distractors_available": 8,
    "fewer_than_3_distractors": False,
    "distractors_reused": False,
    "substitution_level": 1,
    "generation_s": 0.0123,
    "source_errors": ["knowledge_graph: URLError: timed out"],
    "reason": None,
}
BC_UNSCORED: dict[str, Any] = {
    "distractor_sources": {},
    "distractors_available": 0,
    "fewer_than_3_distractors": True,
    "distractors_reused": False,
    "substitution_level": 0,
    "generation_s": 0.001,
    "source_errors": [],
    "reason": "no_distractors",
}
FC_DETAILS: dict[str, Any] = {
    "query": "capital france paris",
    "evidence": [{"id": "wiki:Paris#0", "title": "Paris", "score": 7.1234}],
    "judge": "llm",
    "judge_reply": "support",
    "label": "support",
    "label_probs": {"support": 0.8, "contradict": 0.05, "neutral": 0.15},
    "probs_from": "logprobs",
}
FC_NO_EVIDENCE: dict[str, Any] = {
    "query": "zzz",
    "evidence": [],
    "judge": None,
    "label": "neutral",
    "label_probs": {"support": 0.0, "contradict": 0.0, "neutral": 1.0},
    "probs_from": "label",
}
RAG_DETAILS: dict[str, Any] = {
    "documents": 2,
    "judge": "llm",
    "kind": "answer",
    "refusal": False,
    "partial_refusal": False,
    "statements": [
        {
            "text": "Paris is the capital [1].",
            "citations": [1],
            "out_of_range": [],
            "refusal": False,
            "judged": True,
            "checked": [1],
            "joint": "support",
            "grounding": "support",
            "recall": 1.0,
            "precision": [1, 1],
        }
    ],
    "statements_judged": 1,
    "citations_judged": 1,
    "citation_recall": 1.0,
    "citation_precision": 1.0,
    "citation_f1": 1.0,
    "groundedness": 1.0,
    "answerable": None,
    "answerable_from": None,
    "refusal_grounded": None,
    "reference_claims": 0,
    "claims": [],
    "claim_correctness": None,
    "words": 5,
    "judge_errors": [],
    "trust_parts": {"citation_f1": 1.0, "groundedness": 1.0, "refusal_grounded": None, "claim_correctness": None},
}
RAG_SKIPPED: dict[str, Any] = {"skipped": "empty answer"}
# What Trust_OV writes from the BC and FC details above (graded: 0.8·0.8 + 0.4·0.15 + 0.2·0.5).
OV_DETAILS: dict[str, Any] = {
    "source": "bc+fc",
    "table3": 0.8,
    "graded": pytest.approx(0.8),
    "consistent": False,
    "bc_graded": 0.5,
    "fc_label": "support",
    "fc_label_probs": {"support": 0.8, "contradict": 0.05, "neutral": 0.15},
    "method": "paper",
}


class GivenScorer(Scorer):
    """Returns the given details as its component's result, as the real scorer would build them."""

    def __init__(self, name: str, value: float | None, details: dict[str, Any]) -> None:
        self.name, self._value, self._details = name, value, details

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return ComponentResult(component=self.name, value=self._value, details=copy.deepcopy(self._details))


class RagGivenScorer(GivenScorer):
    handles_documents: ClassVar[bool] = True


def _record(server: ServerThread, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, "x-trustgate-mode": "sync"},
        json={"model": "fake", **body},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    record = httpx.get(f"{server.url}/v1/trust/{response.headers['x-trust-id']}", headers=AUTH, timeout=10)
    assert record.status_code == 200
    return dict(record.json())


@pytest.mark.integration
@pytest.mark.parametrize(
    ("bc", "fc"), [(BC_DETAILS, FC_DETAILS), (BC_UNSCORED, FC_NO_EVIDENCE)], ids=["scored", "unscored-and-no-evidence"]
)
def test_closed_book_details_come_back_key_for_key(
    fake_upstream: FakeUpstream, bc: dict[str, Any], fc: dict[str, Any], start_gateway: Callable[..., ServerThread]
) -> None:
    scored = bc is BC_DETAILS
    paper = gateway_config(fake_upstream.url, trustgate={"scoring": {"combine": "paper"}})  # OV_DETAILS: Table 3's
    server = start_gateway(
        paper, scorers=[GivenScorer("bc", 0.5 if scored else None, bc), GivenScorer("fc", 1.0 if scored else 0.5, fc)]
    )
    record = _record(server, {"messages": [{"role": "user", "content": "What is the capital of France?"}]})
    components = record["components"]
    assert components["bc"]["details"] == bc and list(components["bc"]["details"]) == list(bc)
    assert components["fc"]["details"] == fc and list(components["fc"]["details"]) == list(fc)
    expected_ov = OV_DETAILS if scored else {"source": "fc", "method": "paper"}
    assert components["ov"]["details"] == expected_ov and list(components["ov"]["details"]) == list(expected_ov)
    assert set(components["bc"]) == {"component", "value", "label", "details", "upstream_calls", "duration_s", "error"}


@pytest.mark.integration
@pytest.mark.parametrize("details", [RAG_DETAILS, RAG_SKIPPED], ids=["judged", "skipped"])
def test_rag_details_come_back_key_for_key(
    fake_upstream: FakeUpstream, details: dict[str, Any], start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        gateway_config(fake_upstream.url),
        scorers=[
            GivenScorer("bc", 0.5, BC_DETAILS),
            RagGivenScorer("rag", 1.0 if details is RAG_DETAILS else None, details),
        ],
    )
    record = _record(
        server,
        {
            "messages": [{"role": "user", "content": "Capital of France?"}],
            "documents": [{"title": "Paris", "text": "Paris is the capital of France."}],
        },
    )
    assert record["components"]["rag"]["details"] == details
    assert list(record["components"]["rag"]["details"]) == list(details)


@pytest.mark.unit
def test_the_typed_details_are_what_the_exporters_read() -> None:
    """A record read back from JSON gives each known component its model, and others a dict."""
    record = TrustRecord.model_validate(
        {
            "id": "r",
            "status": "done",
            "components": {
                "bc": {"component": "bc", "details": BC_DETAILS},
                "fc": {"component": "fc", "details": FC_DETAILS},
                "rag": {"component": "rag", "details": RAG_DETAILS},
                "answer": {"component": "answer", "details": {"x": 1}},
            },
        }
    )
    assert type(record.components["bc"].details).__name__ == "BCDetails"
    assert record.components["bc"].details.checks[0].chosen == "A"  # type: ignore[union-attr]
    assert record.components["fc"].details.label == "support"  # type: ignore[union-attr]
    assert record.components["rag"].details.citation_recall == 1.0  # type: ignore[union-attr]
    assert record.components["answer"].details == {"x": 1}
