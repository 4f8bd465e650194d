"""A record's claims read for the console: the answer cut at their spans, each claim with its own checks."""

from __future__ import annotations

import pytest

from console.explain import explain
from scoring import ClaimResult, ComponentResult, EVDetails, FCDetails, FCEvidence, TrustRecord

pytestmark = pytest.mark.unit

ANSWER = "Paris is the capital of France. It lies on the Thames."
PASSAGE = FCEvidence(id="wikipedia:Paris", title="Paris", score=9.5, snippet="It lies on the river Seine.")


def judged(value: float, label: str) -> ComponentResult:
    return ComponentResult(component="fc", value=value, label=label, details=FCDetails(label=label, evidence=[PASSAGE]))


def test_the_answer_is_cut_at_its_claims_and_each_claim_keeps_its_own_checks() -> None:
    ev = ComponentResult(component="ev", value=0.25, label="contradict", details=EVDetails(verdict="contradict"))
    record = TrustRecord(
        id="t",
        status="done",
        answer=ANSWER,
        claims=[
            ClaimResult(text="Paris is the capital of France.", start=0, end=31, score=0.9, label="trusted"),
            ClaimResult(
                text="It lies on the Thames.",
                start=32,
                end=54,
                statement="Paris lies on the Thames.",
                score=0.1,
                label="untrusted",
                components={"fc": judged(0.0, "contradict"), "ev": ev},
            ),
        ],
    )
    view = explain(record)
    assert [(p.text, p.claim.number if p.claim else None) for p in view.answer_pieces] == [
        ("Paris is the capital of France.", 1),
        (" ", None),
        ("It lies on the Thames.", 2),
    ]
    second = view.claims[1]
    assert (second.judge_verdict, second.agreement_verdict, second.statement) == (
        "contradict",
        "contradict",
        "Paris lies on the Thames.",
    )
    assert [e.id for e in second.evidence] == ["wikipedia:Paris"] and [c.name for c in second.checks] == ["fc", "ev"]


def test_an_answer_checked_whole_shows_the_records_checks_under_its_one_claim() -> None:
    record = TrustRecord(
        id="t",
        status="done",
        answer="Paris.",
        components={"fc": judged(1.0, "support"), "ov": ComponentResult(component="ov", value=0.8)},
        claims=[ClaimResult(text="Paris.", start=0, end=6, score=0.8, label="trusted")],
    )
    (claim,) = explain(record).claims
    assert claim.judge_verdict == "support" and [c.name for c in claim.checks] == ["fc"]


def test_a_span_that_does_not_fit_the_answer_is_listed_but_not_marked() -> None:
    record = TrustRecord(
        id="t",
        status="done",
        answer=ANSWER,
        claims=[
            ClaimResult(text="Paris is the capital of France.", start=0, end=31),
            ClaimResult(text="capital of France", start=13, end=30),  # inside the first: another version's record
            ClaimResult(text="It lies on the Seine.", start=32, end=53),  # not the answer's text there
        ],
    )
    view = explain(record)
    assert len(view.claims) == 3
    assert [p.claim.number for p in view.answer_pieces if p.claim] == [1]
    assert "".join(p.text for p in view.answer_pieces) == ANSWER
