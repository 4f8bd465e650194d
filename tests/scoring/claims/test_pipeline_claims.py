"""The pipeline with claims: a long answer checked claim by claim, a short one exactly as without claims."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

import pytest

from scoring.claims.aggregate import softmin
from scoring.claims.selection import select_claims
from scoring.combine import PriorCombination, default_trust
from scoring.learning.features import features_of, record_features
from scoring.pipeline import ScoringPipeline
from scoring.settings import ScoringSettings
from scoring.types import (
    Ask,
    BCDetails,
    Claim,
    ComponentResult,
    EVDetails,
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

    def __init__(
        self, name: str, splitter: SplitsClaims | None, calls_per_check: int, blind: float | None = None
    ) -> None:
        self.name = name
        self.claim_splitter = splitter
        self.calls = calls_per_check
        self.blind = blind  # a blind checker's value, whatever the statement (None: it tells FALSE apart)
        self.seen: list[str] = []
        self.claims_seen: list[list[str]] = []

    def _verdict(self, statement: str) -> ComponentResult:
        value = self.blind if self.blind is not None else 0.0 if statement == FALSE else 1.0
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


# A prior that reads ev as the shipped one does: an agreeing passage raises the odds, a contradicting one lowers them.
WITH_EV = PriorCombination(
    intercept=-1.2,
    weights={"lp": 4.0, "bc": 3.0, "fc": 2.0, "sc": 1.5, "ev": 6.5},
    centres={"lp": 0.65, "bc": 0.35, "fc": 0.6, "sc": 0.5, "ev": 0.5},
)
BLIND = {"bc": 1 / 3, "fc": 0.5}  # a small model's letter habit and its judge's "neutral", whatever the claim


class EvidenceChecker(Scorer):
    """ev by claim: it contradicts FALSE, agrees with the first claim and abstains on the others (they do not
    state the asked relation); on the whole answer it agrees."""

    name = "ev"

    def __init__(self, splitter: SplitsClaims | None) -> None:
        self.claim_splitter = splitter
        self.seen: list[str] = []

    @staticmethod
    def _verdict(statement: str, first: bool) -> ComponentResult:
        verdict, value = ("contradict", 0.25) if statement == FALSE else ("agree", 0.75) if first else ("abstain", None)
        details = EVDetails(verdict=verdict, reason=verdict if value else "unstated", claim=statement)
        return ComponentResult(component="ev", value=value, label=verdict, details=details)

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        self.seen.append(job.answer)
        return self._verdict(job.answer, True)

    async def score_claims(self, job: ScoringJob, claims: Sequence[Claim], ask: Ask) -> list[ComponentResult]:
        return [self._verdict(c.statement, index == 0) for index, c in enumerate(claims)]


def run_with_evidence(answer: str, splitter: SplitsClaims | None) -> tuple[TrustRecord, EvidenceChecker]:
    """A blind judge and blind Trust_BC (the same value whatever the claim), and ev, which is not blind."""
    ev = EvidenceChecker(splitter)
    scorers = [Checker("bc", splitter, 1, BLIND["bc"]), Checker("fc", splitter, 1, BLIND["fc"]), ev]
    pipeline = ScoringPipeline(
        scorers,
        lambda model, purpose, lane: no_upstream,
        ScoringSettings(),
        combine=functools.partial(default_trust, prior=WITH_EV),
    )
    job = ScoringJob(id="j", model="m", question="What is the capital of France?", answer=answer)
    return asyncio.run(pipeline.run(job)), ev


def test_a_claim_the_evidence_contradicts_makes_the_answer_untrusted_where_the_judge_sees_nothing() -> None:
    record, ev = run_with_evidence(ANSWER, Splitter())
    assert ev.seen == []
    own = [claim.components["ev"] for claim in record.claims]
    assert [c.label for c in own] == ["agree", "contradict", "abstain"]
    scores = [claim.score for claim in record.claims]
    assert scores[1] is not None and all(s is not None and s > scores[1] for s in (scores[0], scores[2]))
    assert record.claims[1].label == "untrusted" and record.label == "untrusted"
    # each claim's Trust_OV reads its own ev, or none where ev abstained on it (not the answer's)
    assert scores[2] == pytest.approx(WITH_EV.probability(BLIND))
    assert scores[0] == pytest.approx(WITH_EV.probability({**BLIND, "ev": 0.75}))
    answer_ev = record.components["ev"]
    assert (answer_ev.value, answer_ev.label, answer_ev.upstream_calls) == (0.25, "contradict", 0)
    details = answer_ev.details
    assert isinstance(details, EVDetails)
    assert (details.claims, details.claim_index, details.claim, details.verdict) == (3, 1, FALSE, "contradict")
    assert details.evidence == [] and details.statements == []  # the claim's own are in its components
    assert record.upstream_calls == 6  # ev costs no call, claim by claim as whole


def test_a_one_claim_answer_gets_ev_on_the_answer_whole_at_no_call() -> None:
    short = "Paris is the capital of France."
    with_ev, ev = run_with_evidence(short, Splitter())
    without, _, _ = run(short, Splitter())
    assert ev.seen == [short] and with_ev.upstream_calls == without.upstream_calls == 2
    assert with_ev.components["ev"].value == 0.75
    assert [(c.start, c.end, c.components) for c in with_ev.claims] == [(0, len(short), {})]
    assert with_ev.score == pytest.approx(WITH_EV.probability({**BLIND, "ev": 0.75}))
