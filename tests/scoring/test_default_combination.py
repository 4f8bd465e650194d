"""The default Trust_OV: the shipped prior over whichever of lp, bc, fc, sc and ev are present."""

from __future__ import annotations

import asyncio
import math

import pytest

from scoring.calibration import LogisticCombination
from scoring.combine import PriorCombination, combine_components, default_prior, default_trust, paper_trust
from scoring.pipeline import ScoringPipeline
from scoring.settings import ScoringSettings
from scoring.types import Ask, ComponentResult, LPDetails, Scorer, ScoringJob

pytestmark = pytest.mark.unit

PRIOR = PriorCombination(
    intercept=0.2,
    weights={"lp": 4.0, "bc": 2.0, "fc": 1.0, "sc": 3.0},
    centres={"lp": 0.7, "bc": 0.5, "fc": 0.5, "sc": 0.6},
)


def components(**values: float) -> dict[str, ComponentResult]:
    return {name: ComponentResult(component=name, value=value) for name, value in values.items()}


def logistic(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def test_every_present_component_counts_and_an_absent_one_adds_nothing() -> None:
    everything = default_trust(components(lp=0.9, bc=1.0, fc=0.5, sc=1.0), PRIOR)
    assert everything.value == pytest.approx(logistic(0.2 + 4 * 0.2 + 2 * 0.5 + 0 + 3 * 0.4))
    assert everything.details.source == "bc+fc+lp+sc" and everything.details.method == "default"
    assert everything.details.weights == dict(PRIOR.weights)
    only_lp = default_trust(components(lp=0.9), PRIOR)
    assert only_lp.value == pytest.approx(logistic(0.2 + 4 * 0.2))  # the others as if at their centres
    assert only_lp.details.source == "lp" and only_lp.details.features == {"lp": 0.9}


def test_a_failed_or_valueless_component_is_absent() -> None:
    failed = {
        **components(lp=0.9),
        "bc": ComponentResult(component="bc", value=0.0, error="timeout"),
        "fc": ComponentResult(component="fc"),
    }
    assert default_trust(failed, PRIOR).value == default_trust(components(lp=0.9), PRIOR).value


def test_no_component_no_score() -> None:
    result = default_trust({"rag": ComponentResult(component="rag", value=0.9)}, PRIOR)
    assert result.value is None and result.details.source is None


def test_the_shipped_prior_covers_the_five_components_and_gives_probabilities() -> None:
    prior = default_prior()
    assert set(prior.weights) == set(prior.centres) == {"lp", "bc", "fc", "sc", "ev"}
    for value in (0.0, 1.0):
        assert 0.0 < prior.probability(dict.fromkeys(prior.weights, value)) < 1.0
    assert 0.0 < prior.probability({}) < 1.0


def test_the_shipped_prior_reads_evidence_agreement_and_an_abstention_as_nothing() -> None:
    """On a small model's usual readings (its letter habit, a neutral judge), agreeing evidence makes the answer
    trusted and contradicting evidence untrusted; an abstaining ev (no value) leaves the rest as they were."""
    prior = default_prior()
    small = {"lp": 0.65, "bc": 1 / 3, "fc": 0.5, "sc": 0.5}
    agreed = default_trust(components(**small, ev=0.875), prior)
    contradicted = default_trust(components(**small, ev=0.25), prior)
    abstained = {**components(**small), "ev": ComponentResult(component="ev", label="abstain")}
    assert agreed.value is not None and agreed.value >= 0.7
    assert contradicted.value is not None and contradicted.value < 0.4
    assert default_trust(abstained, prior).value == default_trust(components(**small), prior).value
    assert agreed.details.source == "bc+ev+fc+lp+sc"  # type: ignore[union-attr]


def test_a_prior_without_one_centre_per_weight_is_refused() -> None:
    with pytest.raises(ValueError, match="centre per weight"):
        PriorCombination.from_json({"intercept": 0.0, "weights": {"lp": 1.0}, "centres": {}})


def test_the_methods_by_name() -> None:
    found = components(bc=1.0, fc=0.5, lp=0.8)
    assert combine_components(found).value == default_trust(found).value
    assert combine_components(found, "paper").value == paper_trust(found).value
    fitted = LogisticCombination(("lp_mean",), (1.0,), 0.0)
    found["lp"] = ComponentResult(component="lp", value=0.8, details=LPDetails(mean_logprob=math.log(0.8)))
    assert combine_components(found, "fitted", fitted).details.method == "fitted"
    with pytest.raises(ValueError, match="needs a fitted combination"):
        combine_components(found, "fitted")


class Fixed(Scorer):
    def __init__(self, name: str, value: float) -> None:
        self.name, self.value = name, value

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return ComponentResult(component=self.name, value=self.value)


def test_the_pipeline_labels_the_default_score_as_a_probability() -> None:
    """trusted / untrusted read the default Trust_OV as P(correct), whichever components fed it."""
    settings = ScoringSettings()
    assert settings.combine == "default"
    job = ScoringJob(id="j", model="m", question="q", answer="a")
    for scorers in ([Fixed("lp", 0.99)], [Fixed("bc", 0.0), Fixed("fc", 0.0)], [Fixed("sc", 0.6)]):
        pipeline = ScoringPipeline(
            scorers,
            lambda model, purpose, lane: None,
            settings,  # type: ignore[arg-type,return-value]
            combine=default_trust,
        )
        record = asyncio.run(pipeline.run(job))
        values = {s.name: s.value for s in scorers}
        assert record.score == pytest.approx(default_prior().probability(values))
        expected = "trusted" if record.score >= 0.7 else "untrusted" if record.score < 0.4 else "uncertain"
        assert record.label == expected and record.components["ov"].details.method == "default"
