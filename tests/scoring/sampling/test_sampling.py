"""``sc``: its similarity (pure), its handling of samples that fail, its skip of a clearly consistent answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from scoring.combine import combine_components
from scoring.pipeline import ScoringPipeline
from scoring.sampling import SamplingScorer, agreement
from scoring.sampling.similarity import MAX_TOKENS
from scoring.settings import SamplingSettings, ScoringSettings
from scoring.types import (
    SC_CLEARLY_CONSISTENT,
    Ask,
    BCCheck,
    BCDetails,
    ComponentResult,
    OVDetails,
    Reply,
    SamplingParams,
    SCDetails,
    Scorer,
    ScoringJob,
    TellsEarly,
    TrustRecord,
    UpstreamFailure,
)

pytestmark = pytest.mark.unit

QUESTION = "What is the capital of France?"


@pytest.mark.parametrize(
    ("original", "sample", "expected", "kind"),
    [
        ("Paris", "The capital of France is Paris.", 1.0, "short"),  # restated in a sentence: contained
        ("Paris is the capital of France.", "Lyon is the capital of France.", 0.0, "short"),  # the question's words
        ("Paris", "paris!", 1.0, "short"),  # case and punctuation folded
        ("Paris", "Lyon", 0.0, "short"),
        ("Yes.", "yes", 1.0, "short"),
        ("No.", "no", 1.0, "empty"),  # no content word: compared as text
        ("No.", "", 0.0, "empty"),
    ],
)
def test_agreement_of_short_answers(original: str, sample: str, expected: float, kind: str) -> None:
    found = agreement(original, sample, question=QUESTION)
    assert (found.value, found.kind) == (pytest.approx(expected), kind)


def test_long_answers_are_compared_by_token_f1_not_containment() -> None:
    original = "Paris has been the seat of government since the tenth century, on the river Seine, with a mayor."
    found = agreement(original, "The seat of government is on the Seine.", question=QUESTION)
    assert found.kind == "long" and 0.0 < found.value < 1.0  # a shorter sample is not full agreement
    assert agreement(original, original, question=QUESTION).value == pytest.approx(1.0)
    elaborated = agreement("Paris", "Paris, on the river Seine, has been the seat of government for centuries.")
    assert elaborated.kind == "short" and elaborated.value == 1.0  # a short original restated at length


def test_huge_answers_are_compared_on_a_bounded_prefix() -> None:
    words = [f"word{n}" for n in range(5 * MAX_TOKENS)]
    found = agreement(" ".join(words), " ".join(words[:MAX_TOKENS]))
    assert found.value == pytest.approx(1.0)  # only the first MAX_TOKENS content words of each side count


def job(**sampling: Any) -> ScoringJob:
    return ScoringJob(id="j", model="m", question=QUESTION, answer="Paris", sampling=SamplingParams(**sampling))


def test_samples_are_cut_at_the_requests_stop_sequences() -> None:
    async def ask(messages: list[dict[str, Any]], **params: Any) -> Reply:
        return Reply(text="Paris\n\nQuestion: what is the capital of Peru? Lima")

    result = asyncio.run(SamplingScorer(SamplingSettings(samples=2)).score(job(stop=["\n\n"]), ask))
    assert result.value == 1.0 and [s.text for s in result.details.samples] == ["Paris", "Paris"]


def test_some_failed_samples_leave_a_score_of_the_rest_and_are_reported() -> None:
    calls = iter(range(3))

    async def ask(messages: list[dict[str, Any]], **params: Any) -> Reply:
        if next(calls) == 0:
            raise UpstreamFailure("upstream answered 503")
        return Reply(text="Lyon")

    result = asyncio.run(SamplingScorer(SamplingSettings(samples=3)).score(job(), ask))
    assert result.value == 0.0 and result.details.samples_answered == 2 and result.upstream_calls == 3
    assert [f.reason for f in result.failures] == ["upstream"]


def test_when_no_sample_is_answered_the_component_fails_and_the_record_says_why() -> None:
    async def ask(messages: list[dict[str, Any]], **params: Any) -> Reply:
        raise UpstreamFailure("upstream unreachable")

    pipeline = ScoringPipeline(
        [SamplingScorer(SamplingSettings())], lambda model, purpose, lane: ask, ScoringSettings()
    )
    record = asyncio.run(pipeline.run(job()))
    assert record.status == "failed" and record.components["sc"].value is None
    assert "upstream unreachable" in (record.components["sc"].error or "")


def test_a_fixed_temperature_overrides_the_requests() -> None:
    seen: list[dict[str, Any]] = []

    async def ask(messages: list[dict[str, Any]], **params: Any) -> Reply:
        seen.append(params)
        return Reply(text="Paris")

    asyncio.run(
        SamplingScorer(SamplingSettings(samples=1, temperature=1.2, seeded=False)).score(
            job(temperature=0.3, max_tokens=1000), ask
        )
    )
    assert seen == [{"max_tokens": 256, "temperature": 1.2, "seed": None}]


def bc_result(consistent: list[bool], error: str | None = None) -> ComponentResult:
    checks = [
        BCCheck(
            options=["Paris", "Lyon", "Nice"],
            original="A",
            chosen="A" if agreed else "B",
            consistent=agreed,
            original_probability=None,
            reply="A" if agreed else "B",
        )
        for agreed in consistent
    ]
    graded = sum(consistent) / len(consistent)
    return ComponentResult(
        component="bc",
        value=None if error else graded,
        error=error,
        details=BCDetails(mode="adaptive", graded=graded, checks_run=len(checks), checks=checks),
    )


class RecordedBC(Scorer):
    """Trust_BC as a fixed result, noting when it finished."""

    name = "bc"

    def __init__(self, result: ComponentResult, events: list[str]) -> None:
        self.result, self.events = result, events

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        await asyncio.sleep(0.01)
        self.events.append("bc done")
        return self.result


def scored_after(bc: ComponentResult, settings: SamplingSettings) -> tuple[TrustRecord, list[str]]:
    events: list[str] = []

    async def ask(messages: list[dict[str, Any]], **params: Any) -> Reply:
        events.append("sample")
        return Reply(text="Paris")

    pipeline = ScoringPipeline(
        [SamplingScorer(settings), RecordedBC(bc, events)],
        lambda model, purpose, lane: ask,
        ScoringSettings(),
        combine=combine_components,
    )
    return asyncio.run(pipeline.run(job())), events


def test_a_clearly_consistent_answer_is_not_sampled_and_its_sc_says_why() -> None:
    record, events = scored_after(bc_result([True, True, True]), SamplingSettings())
    sc = record.components["sc"]
    assert events == ["bc done"] and sc.upstream_calls == 0 and sc.value is None and sc.error is None
    assert sc.details == SCDetails(reason=SC_CLEARLY_CONSISTENT) and sc.label == "unscored"
    overall = record.components["ov"].details
    assert isinstance(overall, OVDetails) and overall.features == {"bc": 1.0, "sc": 1.0}  # read as full agreement
    assert record.status == "done"


@pytest.mark.parametrize(
    "bc",
    [
        bc_result([True, True, False]),  # a check chose another option
        bc_result([True, True, True, True]),  # ended on 4 checks (another stopping rule), not on the first 3
        bc_result([True, True], error="timeout"),  # Trust_BC failed
    ],
    ids=["split", "four-checks", "bc-failed"],
)
def test_any_other_answer_is_sampled_once_trust_bc_is_in(bc: ComponentResult) -> None:
    record, events = scored_after(bc, SamplingSettings(samples=2))
    assert events == ["bc done", "sample", "sample"] and record.components["sc"].value == 1.0


def test_with_the_switch_off_sc_samples_beside_trust_bc() -> None:
    record, events = scored_after(
        bc_result([True, True, True]), SamplingSettings(samples=2, skip_when_consistent=False)
    )
    assert events == ["sample", "sample", "bc done"] and record.components["sc"].value == 1.0


class TellingBC(RecordedBC, TellsEarly):
    """Trust_BC that tells it will not end clearly consistent, then goes on only once sc has sampled."""

    def __init__(self, result: ComponentResult, events: list[str], sampled: asyncio.Event) -> None:
        super().__init__(result, events)
        self.sampled = sampled

    async def score_telling(
        self, job: ScoringJob, ask: Ask, not_clearly_consistent: Callable[[], None]
    ) -> ComponentResult:
        not_clearly_consistent()
        self.events.append("bc told")
        await asyncio.wait_for(self.sampled.wait(), 30)  # sc waiting for the result instead would never come
        return await self.score(job, ask)


def test_sc_starts_once_trust_bc_tells_it_will_not_be_clearly_consistent() -> None:
    events: list[str] = []

    async def run() -> TrustRecord:
        sampled = asyncio.Event()

        async def ask(messages: list[dict[str, Any]], **params: Any) -> Reply:
            events.append("sample")
            sampled.set()
            return Reply(text="Paris")

        bc = TellingBC(bc_result([True, True, True, False]), events, sampled)
        pipeline = ScoringPipeline(
            [SamplingScorer(SamplingSettings(samples=1)), bc], lambda model, purpose, lane: ask, ScoringSettings()
        )
        return await pipeline.run(job())

    record = asyncio.run(run())
    assert events == ["bc told", "sample", "bc done"] and record.components["sc"].value == 1.0
    assert record.components["bc"].error is None
