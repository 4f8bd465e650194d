"""Evidence agreement and claims feed the per-model fit: labelled records replayed through a refit's own
path (their features, the default of their components, the fit), one model whose judge is strong and whose
evidence never speaks, one whose judge says "neutral" to everything and whose evidence does."""

from __future__ import annotations

import time

import numpy as np
import pytest

from scoring.combine import paper_trust
from scoring.learning.apply import learned_overall
from scoring.learning.features import features_of, record_features
from scoring.learning.fit import assess
from scoring.learning.refit import labelled_answers
from scoring.learning.report import CalibrationReport
from scoring.learning.rule import LearningRule
from scoring.types import (
    ClaimResult,
    ComponentResult,
    EVDetails,
    FCDetails,
    Feedback,
    LPDetails,
    TrustRecord,
)

pytestmark = pytest.mark.unit

ANSWER = "The capital of Australia is Canberra."


def agreement(value: float | None) -> ComponentResult:
    verdict = "abstain" if value is None else "agree" if value > 0.5 else "contradict"
    return ComponentResult(component="ev", value=value, label=verdict, details=EVDetails(verdict=verdict))


def judge(value: float) -> ComponentResult:
    label = "support" if value > 0.6 else "contradict" if value < 0.4 else "neutral"
    return ComponentResult(component="fc", value=value, label=label, details=FCDetails(label=label))


def labelled(n: int, correct: bool, fc: float, ev: float | None, rng: np.random.Generator) -> TrustRecord:
    mean = -abs(float(rng.normal(-0.6, 0.2)))  # the answer's own token probabilities: no signal on these models
    components = {
        "fc": judge(fc),
        "ev": agreement(ev),
        "bc": ComponentResult(component="bc", value=float(rng.choice([0.0, 1 / 3, 2 / 3, 1.0]))),
        "lp": ComponentResult(component="lp", value=float(np.exp(mean)), details=LPDetails(mean_logprob=mean)),
    }
    return TrustRecord(
        id=f"r{n}",
        status="done",
        model="m",
        components=components,
        answer=ANSWER,
        feedback=Feedback(correct=correct, labelled_at=time.time()),
    )


def strong_judge(n: int, seed: int = 0) -> list[TrustRecord]:
    """The judge supports right answers and contradicts wrong ones (with noise); the evidence never speaks."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        correct = i % 2 == 0
        fc = float(np.clip((0.8 if correct else 0.25) + rng.normal(0, 0.15), 0, 1))
        out.append(labelled(i, correct, fc, None, rng))
    return out


def weak_judge(n: int, seed: int = 0) -> list[TrustRecord]:
    """The judge says "neutral" whatever the answer; the evidence agrees with right answers and contradicts wrong
    ones on two answers in three, and abstains on the rest."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        correct = i % 2 == 0
        passages = int(rng.integers(1, 3))
        spoke = rng.random() < 2 / 3
        ev = (1 - 0.5 ** (passages + 1) if correct else 0.5 ** (passages + 1)) if spoke else None
        out.append(labelled(i, correct, float(0.5 + rng.normal(0, 0.03)), ev, rng))
    return out


def fitted(records: list[TrustRecord]) -> CalibrationReport:
    return assess("m", labelled_answers(records, paper_trust), LearningRule(), now=0.0)


def test_a_model_whose_judge_is_strong_leans_on_its_judge() -> None:
    report = fitted(strong_judge(120))
    assert report.combination == "fitted" and report.fit is not None
    assert report.fit.features[0] == "fc"
    assert not any(name.startswith("ev") for name in report.fit.features)  # it never spoke: nothing to learn


def test_a_model_whose_judge_is_weak_leans_on_the_evidence() -> None:
    records = weak_judge(120)
    report = fitted(records)
    assert report.combination == "fitted" and report.fit is not None
    assert report.fit.features[0] in {"ev", "ev_mean"}
    assert report.scores["ev"].auroc is not None and report.scores["ev"].auroc > 0.8
    # applied to new answers: agreeing evidence above an abstention, an abstention above contradicting evidence
    scored = []
    for ev in (0.875, None, 0.125):
        record = labelled(0, True, 0.5, ev, np.random.default_rng(1))
        record.components["lp"] = records[0].components["lp"]
        overall = learned_overall(report, paper_trust(record.components), record.components, record.answer)
        assert overall.details.method == "learned"  # type: ignore[union-attr]
        scored.append(overall.value)
    assert scored[0] is not None and scored[1] is not None and scored[2] is not None
    assert scored[0] > scored[1] > scored[2]


def test_an_abstaining_check_is_a_reading_and_a_failed_one_no_feature() -> None:
    abstained = features_of({"ev": agreement(None)}, ANSWER)
    assert (abstained["ev"], abstained["ev_spoke"], abstained["ev_mean"]) == (0.5, 0.0, 0.5)
    spoke = features_of({"ev": agreement(0.25)}, ANSWER)
    assert (spoke["ev"], spoke["ev_spoke"]) == (0.25, 1.0)
    failed = features_of({"ev": ComponentResult(component="ev", error="timeout")}, ANSWER)
    assert not {"ev", "ev_spoke", "ev_mean"} & failed.keys()
    assert not {"ev", "ev_spoke", "ev_mean"} & features_of({}, ANSWER).keys()  # it did not run


def test_an_answer_checked_claim_by_claim_averages_its_claims_evidence() -> None:
    """The answer's ev is its lowest claim's that spoke; ev_mean reads every checked claim, abstentions as 0.5."""
    record = TrustRecord(
        id="r",
        status="done",
        components={"ev": agreement(0.75)},
        answer="Canberra. It has a lake. Its capital is Canberra.",
        claims=[
            ClaimResult(text="Canberra.", start=0, end=9, components={"ev": agreement(0.75)}),
            ClaimResult(text="It has a lake.", start=10, end=24, components={"ev": agreement(None)}),
            ClaimResult(text="Its capital is Canberra.", start=25, end=49, components={"ev": agreement(0.875)}),
        ],
    )
    features = record_features(record)
    assert (features["ev"], features["ev_spoke"], features["claims"]) == (0.75, 1.0, 3.0)
    assert features["ev_mean"] == pytest.approx((0.75 + 0.5 + 0.875) / 3)
