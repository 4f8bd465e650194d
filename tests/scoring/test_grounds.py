"""What a score rests on, as the pipeline records it: missing components and why, basis, informative, unknown."""

from __future__ import annotations

import asyncio

import pytest

from scoring.combine import default_trust
from scoring.grounds import basis_of, informative_of, missing_of, trust_label
from scoring.learning.report import CalibrationReport, LearnedFit
from scoring.pipeline import ScoringPipeline
from scoring.policy import LowTrust, is_low_trust, low_trust
from scoring.settings import ScoringSettings
from scoring.types import (
    Ask,
    BudgetSpent,
    Claim,
    ComponentResult,
    Failure,
    OVDetails,
    Scorer,
    ScoringJob,
    TrustRecord,
    UpstreamFailure,
)
from tests.scoring.learning.reports import calibration_report

pytestmark = pytest.mark.unit


class Fixed(Scorer):
    def __init__(self, name: str, value: float) -> None:
        self.name, self.value = name, value

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return ComponentResult(component=self.name, value=self.value)


class OneClaim:
    """Splits every answer into one claim: the answer whole."""

    async def split(self, job: ScoringJob) -> list[Claim]:
        return [Claim(start=0, end=len(job.answer), text=job.answer, statement=job.answer)]


class ClaimChecker(Fixed):
    """Trust_BC as a claim checker (``ChecksClaims``): the record then lists the answer's claims."""

    claim_splitter = OneClaim()

    async def score_claims(self, job: ScoringJob, claims: object, ask: Ask) -> list[ComponentResult]:
        raise AssertionError("one claim is checked whole")


class Failing(Scorer):
    """Raises ``error``, or sleeps past the scorer timeout when given none."""

    def __init__(self, name: str, error: Exception | None) -> None:
        self.name, self.error = name, error

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        if self.error is None:
            await asyncio.sleep(5)
        raise self.error or AssertionError("unreachable")


class Reports:
    """A fit store holding one report per model."""

    def __init__(self, *reports: CalibrationReport) -> None:
        self.reports = {report.model: report for report in reports}

    async def get(self, model: str) -> CalibrationReport | None:
        return self.reports.get(model)

    async def put(self, report: CalibrationReport) -> None:
        self.reports[report.model] = report

    async def all(self) -> list[CalibrationReport]:
        return list(self.reports.values())


def report(*, informative: bool | None, fitted: bool = False) -> CalibrationReport:
    fit = LearnedFit(id="fit_1", features=("bc",), weights=(4.0,), intercept=-2.0) if fitted else None
    return calibration_report("m", informative=informative, fit=fit)


def scored(scorers: list[Scorer], learned: Reports | None = None, **settings: object) -> TrustRecord:
    pipeline = ScoringPipeline(
        scorers,
        lambda model, purpose, lane: None,  # type: ignore[arg-type,return-value]
        ScoringSettings.model_validate({"queue": {"scorer_timeout_s": 0.2}, **settings}),
        combine=default_trust,
        learned=learned,  # type: ignore[arg-type]
    )
    return asyncio.run(pipeline.run(ScoringJob(id="j", model="m", question="Who?", answer="Ada Lovelace.")))


def test_each_component_that_failed_is_missing_with_its_reason_and_the_score_is_still_given() -> None:
    record = scored(
        [
            Fixed("bc", 0.9),
            Failing("fc", None),
            Failing("sc", BudgetSpent("the model's scoring budget is spent")),
            Failing("lp", UpstreamFailure("refused")),
        ]
    )
    assert record.missing == {"fc": "timeout", "sc": "budget", "lp": "error"}
    assert record.status == "done" and record.score is not None and record.basis == "default"
    assert record.components["ov"].details.source == "bc"  # type: ignore[union-attr]


def test_a_component_with_nothing_to_measure_is_not_missing() -> None:
    nothing = ComponentResult(component="bc", label="unscored", details={"reason": "no_distractors"})
    absorbed = ComponentResult(component="fc", value=0.5, failures=[Failure("judge", RuntimeError("judge"))])
    assert missing_of([nothing, absorbed]) == {}
    cpu = ComponentResult(component="bc", error="killed", failures=[Failure("cpu_time", RuntimeError("cpu"))])
    assert missing_of([cpu]) == {"bc": "timeout"}


def test_basis_is_default_until_the_models_fit_makes_the_score() -> None:
    assert scored([Fixed("bc", 0.9)]).basis == "default"
    assert scored([Fixed("bc", 0.9)], Reports(report(informative=True))).basis == "default"
    learned = scored([Fixed("bc", 0.9)], Reports(report(informative=True, fitted=True)))
    assert learned.basis == "learned" and learned.informative is True and learned.label == "trusted"
    assert basis_of(None) == "default" and informative_of(None) is None
    nothing = scored([Failing("bc", UpstreamFailure("down"))])
    assert nothing.status == "failed" and nothing.basis is None and nothing.missing == {"bc": "error"}


def test_an_uninformative_models_scores_are_labelled_unknown_claims_too() -> None:
    before = scored([ClaimChecker("bc", 0.05)])
    assert before.informative is None and before.label == "untrusted"
    assert [claim.label for claim in before.claims] == ["untrusted"]
    record = scored([ClaimChecker("bc", 0.05)], Reports(report(informative=False)))
    assert record.informative is False and record.label == "unknown" and record.score == before.score
    assert [claim.label for claim in record.claims] == ["unknown"]
    assert trust_label(0.99, ScoringSettings(), informative=False) == "unknown"
    assert trust_label(0.99, ScoringSettings(), informative=True) == "trusted"


def test_an_acting_policy_leaves_an_unknown_label_alone_unless_it_says_act() -> None:
    unknown = TrustRecord(id="t", status="done", score=0.1, label="unknown")
    untrusted = unknown.model_copy(update={"label": "untrusted"})
    policy = LowTrust(below=0.5, action="block")
    assert is_low_trust(policy, untrusted) and not is_low_trust(policy, unknown)
    settings = ScoringSettings.model_validate(
        {"on_low_trust": {"action": "block"}, "per_key": {"strict": {"on_low_trust": {"unknown": "act"}}}}
    )
    assert low_trust(settings, model="m", key_name="other").unknown == "pass"
    acting = low_trust(settings, model="m", key_name="strict")
    assert acting.unknown == "act" and acting.action == "block" and is_low_trust(acting, unknown)
    not_applicable = TrustRecord(id="t", status="not_applicable")
    assert not is_low_trust(acting, not_applicable)


def test_a_learned_overall_reads_as_learned() -> None:
    learned = ComponentResult(component="ov", value=0.8, details=OVDetails(method="learned", informative=True))
    assert basis_of(learned) == "learned" and informative_of(learned) is True
