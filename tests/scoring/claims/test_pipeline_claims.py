"""The pipeline with claims: a long answer checked claim by claim, a short one exactly as without claims."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from scoring.claims.aggregate import softmin
from scoring.claims.selection import select_claims
from scoring.combine import default_trust
from scoring.learning.features import features_of, record_features
from scoring.pipeline import ScoringPipeline
from scoring.settings import ScoringSettings
from scoring.types import (
    Ask,
    BCDetails,
    Claim,
    ComponentResult,
    OVDetails,
    Reply,
    Scorer,
    ScoringJob,
    SplitsClaims,
    TrustRecord,
)

pytestmark = pytest.mark.unit

ANSWER = "Paris is the capital of France. It lies on the Thames. It is the seat of the French government."
SENTENCES = ["Paris is the capital of France.", "It lies on the Thames.", "It is the seat of the French government."]
FALSE = "Paris lies on the Thames."


def long_claims(answer: str) -> list[Claim]:
    claims = []
    for text in SENTENCES:
        start = answer.index(text)
        statement = text.replace("It ", "Paris ")
        claims.append(Claim(start, start + len(text), text, statement, weight=2.0))
    return claims


class Splitter(SplitsClaims):
    def __init__(self, fail: bool = False, max_claims: int = 3) -> None:
        self.fail = fail
        self.max_claims = max_claims

    async def split(self, job: ScoringJob) -> list[Claim]:
        if self.fail:
            raise RuntimeError("parser broke")
        found = long_claims(job.answer) if job.answer == ANSWER else []
        return select_claims(job.answer, found, self.max_claims)


class Checker(Scorer):
    """A claim checker whose verdict on a statement is whether it is true (FALSE is the only false one)."""

    def __init__(self, name: str, splitter: SplitsClaims | None, calls_per_check: int) -> None:
        self.name = name
        self.claim_splitter = splitter
        self.calls = calls_per_check
        self.seen: list[str] = []
        self.claims_seen: list[list[str]] = []

    def _verdict(self, statement: str) -> ComponentResult:
        value = 0.0 if statement == FALSE else 1.0
        details: dict[str, Any] = {"binary": value, "graded": value} if self.name == "bc" else {"label": "support"}
        return ComponentResult(component=self.name, value=value, details=details, upstream_calls=self.calls)

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        self.seen.append(job.answer)
        return self._verdict(job.answer)

    async def score_claims(self, job: ScoringJob, claims: Sequence[Claim], ask: Ask) -> list[ComponentResult]:
        self.claims_seen.append([c.statement for c in claims])
        return [self._verdict(c.statement) for c in claims]


async def no_upstream(messages: list[dict[str, Any]], **params: Any) -> Reply:
    raise AssertionError("the checkers here make no upstream call")


def run(answer: str, splitter: SplitsClaims | None, **settings: Any) -> tuple[TrustRecord, Checker, Checker]:
    bc, fc = Checker("bc", splitter, 1), Checker("fc", splitter, 1)
    pipeline = ScoringPipeline(
        [bc, fc], lambda model, purpose, lane: no_upstream, ScoringSettings(**settings), combine=default_trust
    )
    job = ScoringJob(id="j", model="m", question="Tell me about Paris.", answer=answer)
    return asyncio.run(pipeline.run(job)), bc, fc


def test_a_long_answer_is_checked_claim_by_claim_and_its_false_claim_makes_it_untrusted() -> None:
    record, bc, fc = run(ANSWER, Splitter())
    assert bc.seen == fc.seen == []  # never the paragraph whole
    assert bc.claims_seen == [["Paris is the capital of France.", FALSE, "Paris is the seat of the French government."]]
    assert [(c.start, c.end) for c in record.claims] == [(ANSWER.index(s), ANSWER.index(s) + len(s)) for s in SENTENCES]
    assert all(ANSWER[c.start : c.end] == c.text for c in record.claims)
    assert record.claims[1].statement == FALSE and record.claims[0].statement is None
    scores = [c.score for c in record.claims]
    assert scores[1] is not None and all(s is not None and s > scores[1] for s in (scores[0], scores[2]))
    assert record.claims[1].label == "untrusted" and record.label == "untrusted"
    assert record.score == pytest.approx(softmin([s for s in scores if s is not None], 0.1))
    assert record.components["bc"].value == 0.0 and record.components["fc"].value == 0.0
    details = record.components["bc"].details
    assert isinstance(details, BCDetails) and (details.claims, details.claim) == (3, 1)
    overall = record.components["ov"].details
    assert isinstance(overall, OVDetails) and overall.claim == 1 and overall.claims == 3
    assert record.upstream_calls == 6 and record.components["bc"].upstream_calls == 3
    assert record.claims[1].components["fc"].value == 0.0


def test_a_short_answer_costs_and_scores_as_without_claims() -> None:
    short = "Paris is the capital of France."
    with_claims, bc, fc = run(short, Splitter())
    without, _, _ = run(short, None)
    assert bc.seen == fc.seen == [short] and bc.claims_seen == []
    assert with_claims.score == without.score and with_claims.upstream_calls == without.upstream_calls == 2
    assert {n: c.value for n, c in with_claims.components.items()} == {
        n: c.value for n, c in without.components.items()
    }
    assert [(c.text, c.start, c.end, c.score, c.components) for c in with_claims.claims] == [
        (short, 0, len(short), with_claims.score, {})
    ]
    assert without.claims == []


def test_a_failed_split_scores_the_answer_whole_and_counts_the_failure() -> None:
    record, bc, _ = run(ANSWER, Splitter(fail=True))
    assert bc.seen == [ANSWER] and record.claims == []
    assert [f.reason for f in record.components["bc"].failures] == ["internal"]


def test_one_claim_checked_at_most_means_the_answer_whole() -> None:
    record, bc, _ = run(ANSWER, Splitter(max_claims=1))
    assert bc.seen == [ANSWER]
    assert [(c.start, c.end, c.components) for c in record.claims] == [(0, len(ANSWER), {})]


def test_a_record_with_claims_reads_back_as_written_and_its_features_see_every_claim() -> None:
    record, _, _ = run(ANSWER, Splitter())
    again = TrustRecord.model_validate_json(record.model_dump_json())
    assert again.model_dump() == record.model_dump()
    features = record_features(again)
    assert features["claims"] == 3.0
    assert features["fc_mean"] == pytest.approx(2 / 3) and features["fc"] == 0.0
    old = TrustRecord.model_validate({"id": "old", "status": "done"})
    assert old.claims == [] and features_of({}, "Paris.")["claims"] == 1.0


def test_softmin_lies_between_the_lowest_and_the_mean() -> None:
    assert softmin([0.9, 0.1, 0.9], 0.0) == 0.1
    assert 0.1 < softmin([0.9, 0.1, 0.9], 0.1) < 0.11
    assert softmin([0.5, 0.5], 0.1) == pytest.approx(0.5)
