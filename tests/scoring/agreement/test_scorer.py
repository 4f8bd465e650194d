"""The "ev" component: the check behind the CPU pool, its typed details, and no upstream call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from exporters.headers import trust_headers
from scoring.agreement.cpu_part import AgreementReader
from scoring.agreement.scorer import EvidenceAgreementScorer
from scoring.agreement.words import Lexicon
from scoring.cpu_pool import CpuParts, InThreads
from scoring.factcheck.assets import add_corpus, load_evidence_index
from scoring.settings import AgreementSettings, FactCheckSettings, ScoringSettings
from scoring.types import Claim, ComponentResult, EVDetails, Reply, ScoringJob, TrustRecord
from tests.scoring.agreement.conftest import PASSAGES

pytestmark = pytest.mark.unit


async def never_asked(messages: list[dict[str, Any]], **params: Any) -> Reply:
    raise AssertionError("the evidence agreement check made an upstream call")


@pytest.fixture
def scorer(tmp_path: Path, lexicon: Lexicon) -> EvidenceAgreementScorer:
    """The scorer over a real index of the test passages, its work run in threads."""
    settings = ScoringSettings(data_dir=tmp_path / "data", factcheck=FactCheckSettings(default_corpora=[]))
    corpus = tmp_path / "facts.jsonl"
    corpus.write_bytes(
        b"".join(orjson.dumps({"id": k, "title": t, "text": x}) + b"\n" for k, (t, x) in PASSAGES.items())
    )
    add_corpus(settings, corpus)
    index = load_evidence_index(settings)
    assert index is not None
    return EvidenceAgreementScorer(InThreads(CpuParts(agreement=AgreementReader(index, lexicon))), AgreementSettings())


def score(scorer: EvidenceAgreementScorer, question: str, answer: str) -> ComponentResult:
    job = ScoringJob(id="job-1", model="m", question=question, answer=answer)
    return asyncio.run(scorer.score(job, never_asked))


def test_an_agreeing_answer_scores_above_the_middle_with_its_evidence(scorer: EvidenceAgreementScorer) -> None:
    result = score(scorer, "What is the capital of Australia?", "The capital of Australia is Canberra.")
    assert (result.component, result.label, result.upstream_calls) == ("ev", "agree", 0)
    assert result.value is not None and result.value > 0.5
    details = result.details
    assert isinstance(details, EVDetails)
    assert (details.verdict, details.subject, details.relation, details.entity) == (
        "agree",
        "Australia",
        ["capital"],
        "Canberra",
    )
    assert details.queries == ["What is the capital of Australia?", "What is the capital of Australia? Canberra"]
    assert "facts:canberra" in {e.id for e in details.evidence}
    assert [(s.evidence_id, s.filler, s.agrees) for s in details.statements] == [("facts:canberra", "Canberra", True)]
    assert details.claim is None  # the whole answer was checked: the record has it


def test_a_wrong_capital_scores_below_the_middle(scorer: EvidenceAgreementScorer) -> None:
    result = score(scorer, "What is the capital of Australia?", "The capital of Australia is Sydney.")
    assert (result.label, result.details.contradicting) == ("contradict", 1)  # type: ignore[union-attr]
    assert result.value is not None and result.value < 0.5


def test_silent_evidence_gives_no_value_and_says_why(scorer: EvidenceAgreementScorer) -> None:
    result = score(scorer, "What is the capital of Zorblaxia?", "The capital of Zorblaxia is Flimtown.")
    assert (result.value, result.label, result.details.reason) == (None, "abstain", "silent")  # type: ignore[union-attr]


def test_one_claim_is_checked_with_the_entity_its_caller_gives(scorer: EvidenceAgreementScorer) -> None:
    result = asyncio.run(
        scorer.check("Who wrote Hamlet?", "Its author, not Marlowe, was William Shakespeare.", "William Shakespeare")
    )
    details = result.details
    assert isinstance(details, EVDetails)
    assert (result.label, details.entity, details.claim) == (
        "agree",
        "William Shakespeare",
        "Its author, not Marlowe, was William Shakespeare.",
    )


def test_the_details_read_back_typed_from_a_records_json(scorer: EvidenceAgreementScorer) -> None:
    result = score(scorer, "What is the capital of Australia?", "Sydney.")
    again = ComponentResult.model_validate_json(result.model_dump_json())
    assert isinstance(again.details, EVDetails) and again == result


def test_its_value_is_a_header_only_when_it_did_not_abstain(scorer: EvidenceAgreementScorer) -> None:
    agreeing = score(scorer, "What is the capital of Australia?", "Canberra.")
    silent = score(scorer, "What is the capital of Zorblaxia?", "Flimtown.")
    assert trust_headers(TrustRecord(id="t", status="done", components={"ev": agreeing}))["x-trust-ev"] == "0.7500"
    assert "x-trust-ev" not in trust_headers(TrustRecord(id="t", status="done", components={"ev": silent}))


def claims_of(answer: str, statements: list[str]) -> list[Claim]:
    """The answer's sentences as claims, each checked as its statement (a pronoun resolved by the splitter)."""
    found, start = [], 0
    for sentence, statement in zip(answer.split(". "), statements, strict=True):
        text = sentence.rstrip(".") + "."
        start = answer.index(text, start)
        found.append(Claim(start, start + len(text), text, statement))
    return found


def test_each_claim_gets_its_own_check_and_only_the_first_may_answer_without_the_relation(
    scorer: EvidenceAgreementScorer,
) -> None:
    answer = "Canberra. It lies in southeastern Australia. Sydney is the capital of Australia."
    job = ScoringJob(id="job-1", model="m", question="What is the capital of Australia?", answer=answer)
    claims = claims_of(
        answer, ["Canberra.", "Canberra lies in southeastern Australia.", "Sydney is the capital of Australia."]
    )
    first, second, third = asyncio.run(scorer.score_claims(job, claims, never_asked))
    assert [r.label for r in (first, second, third)] == ["agree", "abstain", "contradict"]
    assert all(r.upstream_calls == 0 for r in (first, second, third))
    details = [r.details for r in (first, second, third)]
    assert all(isinstance(d, EVDetails) for d in details)
    assert [d.claim for d in details] == [c.statement for c in claims]  # type: ignore[union-attr]
    # the second names Canberra first, but says nothing of a capital: read as an answer, it would agree by chance
    assert (second.value, details[1].reason, details[1].evidence) == (None, "unstated", [])  # type: ignore[union-attr]
    assert details[2].entity == "Sydney"  # type: ignore[union-attr]


def test_the_whole_answer_may_answer_without_the_relation_as_before(scorer: EvidenceAgreementScorer) -> None:
    assert score(scorer, "What is the capital of Australia?", "Sydney. It is a large city.").label == "contradict"
