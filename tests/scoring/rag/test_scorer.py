"""RagScorer against the fake upstream as judge; every expected number is worked out by hand below."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scoring.factcheck.evidence import Evidence
from scoring.factcheck.judge import Label, judge_prompt
from scoring.pipeline import ScoringPipeline
from scoring.rag import RagLabels, RagScorer
from scoring.settings import ScoringSettings
from scoring.types import ComponentResult, JobPolicy, ScoringJob, TrustRecord
from tests.fake_upstream import FakeUpstream

from .judging import MARKER, marker_judge, with_gateway_ask

pytestmark = pytest.mark.integration

QUESTION = "What do the tower and the bridge have?"
DOCUMENTS = [
    {"id": "d1", "title": "Tower", "text": "The tower has ALPHA on its top floor."},
    {"id": "d2", "title": "Bridge", "text": "The bridge has BETA along its deck."},
    {"id": "d3", "title": "Noise", "text": "Nothing relevant is said here."},
]
# S1: one citation, supported.                     recall 1, precision 1/1, grounded
# S2: two citations, both needed (neither alone).  recall 1, precision 2/2, grounded
# S3: [3] is irrelevant: [1] alone supports it.    recall 1, precision 1/2, grounded
# S4: cites [2], which lacks GAMMA.                recall 0, precision 0/1, not grounded
# S5: [7] names no document: recorded, ignored.    recall 0, no citation,  not grounded
# S6: no citation, but document 2 supports it.     recall 0, no citation,  grounded
ANSWER = (
    "The tower has ALPHA [1]. The bridge has BETA and the tower has ALPHA [1][2]. "
    "The tower has ALPHA.[1][3] GAMMA is true [2]. DELTA holds [7].\n- The bridge has BETA."
)
RECALL, PRECISION, GROUNDEDNESS = 3 / 6, 4 / 6, 4 / 6
CITATION_F1 = 2 * RECALL * PRECISION / (RECALL + PRECISION)  # 4/7
# Judge calls: S1 1 (its grounding is its recall), S2 3 (together, [1] alone, [2] alone; "without [1]" is
# "[2] alone"), S3 2 (together, [3] alone; "[1] alone" and "without [3]" are S1's check of the same
# claim), S4 2, S5 1, S6 1.
CALLS = 10


def score(
    fake: FakeUpstream,
    answer: str = ANSWER,
    labels: RagLabels | None = None,
    documents: Sequence[Any] | None = DOCUMENTS,
    scorer: RagScorer | None = None,
) -> ComponentResult:
    job = ScoringJob(
        id="job-1",
        model="fake",
        question=QUESTION,
        answer=answer,
        documents=None if documents is None else list(documents),
        policy=JobPolicy(rag=labels),
    )
    return with_gateway_ask(fake, lambda ask: (scorer or RagScorer()).score(job, ask))


def test_citation_recall_precision_and_groundedness(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    result = score(fake_upstream)
    details = result.details

    assert (result.component, result.label) == ("rag", "answer")
    assert details.citation_recall == pytest.approx(RECALL)
    assert details.citation_precision == pytest.approx(PRECISION)
    assert details.citation_f1 == pytest.approx(CITATION_F1)
    assert details.groundedness == pytest.approx(GROUNDEDNESS)
    assert (details.refusal, details.partial_refusal, details.judge) == (False, False, "llm")
    assert (details.answerable, details.refusal_grounded, details.claim_correctness) == (None, None, None)
    assert result.value == pytest.approx((CITATION_F1 + GROUNDEDNESS) / 2)  # 13/21
    assert result.upstream_calls == CALLS == len(fake_upstream.requests)

    statements = [s.model_dump() for s in details.statements]
    assert [s["recall"] for s in statements] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert [s["precision"] for s in statements] == [[1, 1], [2, 2], [1, 2], [0, 1], [0, 0], [0, 0]]
    assert [s["grounding"] for s in statements] == ["support"] * 3 + ["neutral", "neutral", "support"]
    assert statements[2]["citation_checks"] == [
        {"id": 1, "alone": "support", "without": None, "relevant": True},
        {"id": 3, "alone": "neutral", "without": "support", "relevant": False},
    ]
    assert (statements[4]["citations"], statements[4]["out_of_range"]) == ([], [7])


def test_the_judge_reads_the_cited_passages_together_without_citation_marks(fake_upstream: FakeUpstream) -> None:
    prompts: list[str] = []

    def judge(messages: list[dict[str, Any]]) -> str:
        prompts.append(messages[-1]["content"])
        return marker_judge(messages)

    fake_upstream.responder = judge
    score(fake_upstream, answer="The bridge has BETA and the tower has ALPHA [1][2].")
    cited = [Evidence("1", "Tower", DOCUMENTS[0]["text"], 0.0), Evidence("2", "Bridge", DOCUMENTS[1]["text"], 0.0)]
    claim = "The bridge has BETA and the tower has ALPHA."
    assert prompts[0] == judge_prompt(cited, QUESTION, claim)
    assert sorted(prompts[1:]) == sorted(judge_prompt([e], QUESTION, claim) for e in cited)
    sent = fake_upstream.requests[0]
    assert (sent["max_tokens"], sent["temperature"], "logprobs" in sent) == (16, 0.0, False)


def test_a_refusal_is_graded_by_the_answerability_label_without_judge_calls(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    refusal = "I apologize, but I couldn't find an answer to your question in the search results."
    right = score(fake_upstream, answer=refusal, labels=RagLabels(answerable=False))
    wrong = score(fake_upstream, answer=refusal, labels=RagLabels(answerable=True))
    unknown = score(fake_upstream, answer=refusal)

    assert (right.label, right.details.refusal, right.details.refusal_grounded, right.value) == (
        "refusal",
        True,
        1.0,
        1.0,
    )
    assert (wrong.details.refusal_grounded, wrong.value) == (0.0, 0.0)
    assert (unknown.value, unknown.details.citation_recall, unknown.details.groundedness) == (None, None, None)
    assert fake_upstream.requests == []


def test_reference_claims_give_correctness_and_answerability(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    claims = ("The tower has ALPHA.", "EPSILON happened.")
    result = score(fake_upstream, answer="The tower has ALPHA [1].", labels=RagLabels(reference_claims=claims))
    details = result.details

    # Answerable: the documents entail the first claim. Correct: the answer entails one claim of two.
    assert (details.answerable, details.answerable_from, details.refusal_grounded) == (True, "claims", 1.0)
    assert [c.model_dump() for c in details.claims] == [
        {"claim": claims[0], "label": "support"},
        {"claim": claims[1], "label": "neutral"},
    ]
    assert details.claim_correctness == 0.5
    assert result.value == pytest.approx((1.0 + 1.0 + 1.0 + 0.5) / 4)  # citation F1, groundedness, refusal, claims
    assert result.upstream_calls == 1 + 2 + 2  # the statement, answerability per claim, correctness per claim


def test_a_partial_refusal_judges_only_its_answering_statements(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    result = score(
        fake_upstream,
        answer="The documents do not mention GAMMA. The tower has ALPHA [1].",
        labels=RagLabels(answerable=True),
    )
    details = result.details
    assert (result.label, details.refusal, details.partial_refusal) == ("partial", False, True)
    assert [(s.refusal, s.judged) for s in details.statements] == [(True, False), (False, True)]
    assert (details.citation_recall, details.citation_precision, details.refusal_grounded) == (1.0, 1.0, 1.0)
    assert result.upstream_calls == 1


def test_a_failing_judge_gives_none_for_its_metrics_and_never_raises(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    answer = "The tower has ALPHA [1]. The bridge has BETA [fail:503] [2]."
    result = score(fake_upstream, answer=answer, labels=RagLabels(answerable=True))
    details = result.details
    assert (details.citation_recall, details.citation_precision, details.groundedness) == (None, None, None)
    assert details.statements[1].joint is None and details.judge_errors
    assert (result.value, result.error) == (1.0, None)  # refusal groundedness alone still stands
    # every failed judge call, for the log and trustgate_scorer_errors_total{component="rag", reason="judge"}
    assert result.failures and {f.reason for f in result.failures} == {"judge"}


@pytest.mark.parametrize(
    ("answer", "documents", "skipped"),
    [
        ("The tower has ALPHA [1].", None, "no documents"),
        ("The tower has ALPHA [1].", [], "no documents"),
        ("  [1] ... ", DOCUMENTS, "empty answer"),
    ],
)
def test_nothing_to_score(fake_upstream: FakeUpstream, answer: str, documents: list[Any] | None, skipped: str) -> None:
    result = score(fake_upstream, answer=answer, documents=documents)
    assert (result.value, result.details.model_dump(), result.upstream_calls) == (None, {"skipped": skipped}, 0)


def test_messy_documents_and_citations_never_raise(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    documents = [{"text": "The tower has ALPHA."}, {"title": None, "text": 42}, {}, {"id": 3}]
    answer = "ALPHA [1, 0, 99][Document 1] [1-1000] [x] []. ]] [[ [4]? 42 [2]"
    result = score(fake_upstream, answer=answer, documents=documents)
    first = result.details.statements[0]
    # "]] [[ [4]?" has no word of its own: its citation joins the sentence before it.
    assert (first.citations, first.out_of_range) == ([1, 4], [0, 99, 1000])
    assert result.details.statements[1].citations == [2]
    assert result.details.documents == 4 and result.value is not None


class MarkerNLI:
    """A local NLI judge with the markers' rule, recording what it was given."""

    def __init__(self) -> None:
        self.premises: list[list[str]] = []

    def judge(self, evidence: Sequence[Evidence], answer: str) -> dict[Label, float]:
        self.premises.append([e.text for e in evidence])
        needed = set(MARKER.findall(answer))
        supported = any(needed and needed <= set(MARKER.findall(e.text)) for e in evidence)
        return (
            {"support": 0.9, "contradict": 0.05, "neutral": 0.05}
            if supported
            else {"support": 0.1, "contradict": 0.1, "neutral": 0.8}
        )


def test_the_local_nli_judge_reads_cited_passages_as_one_premise(fake_upstream: FakeUpstream) -> None:
    nli = MarkerNLI()
    result = score(fake_upstream, scorer=RagScorer(nli=nli))
    details = result.details
    assert (details.judge, result.upstream_calls, fake_upstream.requests) == ("nli", 0, [])
    assert (details.citation_recall, details.citation_precision) == (pytest.approx(RECALL), pytest.approx(PRECISION))
    assert details.groundedness == pytest.approx(GROUNDEDNESS)
    joint = [p for p in nli.premises if len(p) == 1 and p[0].startswith("Title: Tower\n")]
    assert joint and "Title: Bridge\n" in joint[0][0]  # [1][2] together: one premise in Trust-Eval's format


def test_the_scoring_pipeline_runs_it_and_records_a_json_safe_result(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    job = ScoringJob(id="job-1", model="fake", question=QUESTION, answer=ANSWER, documents=DOCUMENTS)
    record = with_gateway_ask(
        fake_upstream,
        lambda ask: ScoringPipeline([RagScorer()], lambda model, purpose, lane: ask, ScoringSettings()).run(job),
    )
    assert (record.status, record.score, record.upstream_calls) == ("done", pytest.approx(13 / 21), CALLS)
    assert TrustRecord.model_validate_json(record.model_dump_json()) == record
