"""Per-model learning as pure functions: features, the fit and its gate, applying a fit, the fit stores."""

from __future__ import annotations

import numpy as np
import pytest

from exporters.headers import trust_headers, trust_summary
from scoring.learning.apply import learned_overall
from scoring.learning.features import features_of
from scoring.learning.fit import assess
from scoring.learning.report import CalibrationReport, LearnedFit
from scoring.learning.rule import LabelledAnswer, LearningRule
from scoring.types import ComponentResult, LPDetails, OVDetails, TrustRecord

pytestmark = pytest.mark.unit


def _answers(
    n: int,
    *,
    seed: int = 0,
    signal: str = "lp_mean",
    default_tracks: bool = False,
    noise: tuple[str, ...] = ("length", "bc"),
) -> list[LabelledAnswer]:
    """Answers whose ``signal`` tracks correctness; the ``noise`` features do not."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        correct = i % 2 == 0
        features = {name: float(rng.random()) for name in noise}
        features[signal] = (0.8 if correct else 0.2) + float(rng.normal(0, 0.25))
        default = (0.9 if correct else 0.1) if default_tracks else float(rng.choice([0.4, 0.6]))
        out.append(LabelledAnswer(features=features, correct=correct, default=default))
    return out


def test_a_fit_on_enough_labels_that_beats_the_default_is_used_and_reads_the_signal() -> None:
    report = assess("m", _answers(80), LearningRule(), now=1.0)
    assert report.combination == "fitted" and report.fit is not None
    assert report.fit.features[0] == "lp_mean"
    assert report.scores["fitted"].cross_validated and report.scores["fitted"].auroc is not None
    assert report.scores["fitted"].auroc > report.scores["ov"].auroc  # type: ignore[operator]
    assert report.informative and "beats" in report.reason


def test_under_min_labels_the_default_stays_and_the_report_says_why() -> None:
    report = assess("m", _answers(30), LearningRule(min_labels=50), now=1.0)
    assert report.combination == "default" and report.fit is None
    assert "30 labels" in report.reason and "min_labels" in report.reason
    assert report.scores["fitted"].auroc is not None  # measured all the same


def test_a_fit_that_does_not_beat_the_default_is_not_used() -> None:
    report = assess("m", _answers(80, default_tracks=True), LearningRule(), now=1.0)
    assert report.combination == "default" and report.fit is None and "does not beat" in report.reason


def test_noise_alone_is_reported_as_not_informative() -> None:
    rng = np.random.default_rng(3)
    answers = [
        LabelledAnswer(
            features={"lp_mean": float(rng.normal()), "length": float(rng.normal())}, correct=bool(i % 2), default=0.5
        )
        for i in range(60)
    ]
    report = assess("m", answers, LearningRule(), now=1.0)
    assert report.informative is False
    assert report.combination == "default" and "noise" in report.reason


def test_a_few_dozen_labels_pick_the_informative_feature_out_of_many() -> None:
    answers = _answers(40, seed=5, noise=("length", "bc", "fc", "sc", "lp_min"))
    report = assess("m", answers, LearningRule(min_labels=30), now=1.0)
    assert report.fit is not None and report.fit.features[0] == "lp_mean"
    best_single = report.scores["lp_mean"].auroc
    assert best_single is not None and report.scores["fitted"].auroc is not None
    assert report.scores["fitted"].auroc >= best_single - 0.05


def test_one_label_only_gives_no_fit_and_no_error() -> None:
    answers = [LabelledAnswer(features={"lp_mean": float(i)}, correct=True, default=0.5) for i in range(60)]
    report = assess("m", answers, LearningRule(), now=1.0)
    assert report.combination == "default" and "fitted" not in report.scores and not report.informative


def _lp(mean: float) -> ComponentResult:
    return ComponentResult(
        component="lp", value=min(1.0, float(np.exp(mean))), details=LPDetails(mean_logprob=mean, min_logprob=mean * 2)
    )


def test_features_come_from_the_components_and_the_answer() -> None:
    components = {
        "lp": _lp(-0.5),
        "bc": ComponentResult(component="bc", value=0.75),
        "fc": ComponentResult(component="fc", error="timeout"),
    }
    features = features_of(components, "Paris is the capital")
    assert features["lp_mean"] == -0.5 and features["lp_min"] == -1.0 and features["bc"] == 0.75
    assert "fc" not in features and "sc" not in features  # a failed or absent component is no feature
    assert features["length"] == pytest.approx(np.log1p(4))


def _report(combination: str, *, informative: bool = True) -> CalibrationReport:
    fit = (
        LearnedFit(id="fit_abc", features=("lp_mean",), weights=(2.0,), intercept=1.0)
        if combination == "fitted"
        else None
    )
    return CalibrationReport(
        model="m",
        labels=60,
        positives=30,
        combination=combination,  # type: ignore[arg-type]
        reason="r",
        informative=informative,
        fit=fit,
        fitted_at=1.0,
    )


def _default() -> ComponentResult:
    return ComponentResult(component="ov", value=0.6, details=OVDetails(source="bc", method="paper"))


def test_a_fitted_report_scores_the_record_and_names_its_fit() -> None:
    overall = learned_overall(_report("fitted"), _default(), {"lp": _lp(-0.5)}, "Paris")
    assert isinstance(overall.details, OVDetails)
    assert overall.details.method == "learned" and overall.details.fit_id == "fit_abc"
    assert overall.value == pytest.approx(1 / (1 + np.exp(-(1.0 + 2.0 * -0.5))))
    assert overall.details.default == 0.6
    assert overall.model_dump()["details"]["fit_id"] == "fit_abc"


def test_a_record_missing_a_feature_of_the_fit_keeps_the_default_and_says_which() -> None:
    overall = learned_overall(_report("fitted"), _default(), {}, "Paris")
    assert isinstance(overall.details, OVDetails)
    assert overall.value == 0.6 and overall.details.method == "paper"
    assert overall.details.fitted_missing == ["lp_mean"]


def test_an_uninformative_model_flags_its_records() -> None:
    overall = learned_overall(_report("default", informative=False), _default(), {}, "Paris")
    assert overall.model_dump()["details"]["informative"] is False
    record = TrustRecord(
        id="t", status="done", components={"ov": overall}, score=overall.value, basis="default", informative=False
    )
    assert trust_headers(record)["x-trust-informative"] == "false"
    assert trust_summary(record)["informative"] is False  # the in-band trust object of a stream says so too
    informative = learned_overall(_report("default"), _default(), {}, "Paris")
    assert informative.model_dump()["details"]["informative"] is True
