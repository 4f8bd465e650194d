"""A record's cost: the answer's, and every scoring call's summed per component as the calls answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scoring import CallCost, ComponentResult, RecordCost, Reply, ScoringPipeline, ScoringSettings, TrustRecord
from scoring.types import Ask, Scorer, ScoringJob

pytestmark = pytest.mark.unit


class CallingScorer(Scorer):
    """Asks ``calls`` times, as a real scorer re-asks its model."""

    def __init__(self, name: str, calls: int) -> None:
        self.name, self.calls = name, calls

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        for _ in range(self.calls):
            await ask([{"role": "user", "content": job.answer}])
        return ComponentResult(component=self.name, value=0.9, upstream_calls=self.calls)


def _priced_ask(cost: CallCost | None) -> Ask:
    async def ask(messages: list[dict[str, Any]], **options: Any) -> Reply:
        return Reply(text="A", cost=cost)

    return ask


def _record(scorers: list[Scorer], costs: dict[str, CallCost | None], answer: CallCost | None) -> TrustRecord:
    settings = ScoringSettings(combine="paper")
    pipeline = ScoringPipeline(scorers, lambda model, purpose, lane: _priced_ask(costs[purpose]), settings)
    job = ScoringJob(id="j", model="m", question="Capital of France?", answer="Paris", answer_cost=answer)
    return asyncio.run(pipeline.run(job))


def test_each_components_calls_are_summed_and_the_answer_kept_beside_them() -> None:
    call = CallCost(prompt_tokens=100, completion_tokens=2, usd=0.001)
    record = _record([CallingScorer("bc", 3), CallingScorer("fc", 1)], {"bc": call, "fc": call}, answer=call)
    assert record.cost is not None
    assert (record.cost.answer_usd, record.cost.answer_tokens) == (0.001, 102)
    assert record.cost.scoring_calls == 4
    assert record.cost.scoring_usd == pytest.approx(0.004)
    bc = record.cost.by_component["bc"]
    assert (bc.calls, bc.prompt_tokens, bc.completion_tokens) == (3, 300, 6)
    assert bc.usd == pytest.approx(0.003)


def test_a_call_of_unknown_price_makes_its_component_and_the_total_unknown_never_zero() -> None:
    known = CallCost(prompt_tokens=10, completion_tokens=1, usd=0.5)
    record = _record(
        [CallingScorer("bc", 2), CallingScorer("fc", 1)],
        {"bc": known, "fc": CallCost(prompt_tokens=10, completion_tokens=1)},
        answer=None,
    )
    assert record.cost is not None
    assert record.cost.by_component["bc"].usd == 1.0
    assert record.cost.by_component["fc"].usd is None and record.cost.by_component["fc"].prompt_tokens == 10
    assert (record.cost.scoring_usd, record.cost.answer_usd, record.cost.answer_tokens) == (None, None, None)


def test_a_reply_that_tells_no_cost_counts_as_a_call_of_unknown_price() -> None:
    record = _record([CallingScorer("sc", 2)], {"sc": None}, answer=CallCost(usd=0.0))
    assert record.cost is not None
    assert (record.cost.scoring_calls, record.cost.scoring_usd, record.cost.answer_usd) == (2, None, 0.0)


def test_a_job_that_made_no_call_cost_nothing_for_scoring() -> None:
    record = _record([CallingScorer("lp", 0)], {"lp": None}, answer=CallCost(prompt_tokens=5, usd=0.2))
    assert record.cost == RecordCost(answer_usd=0.2, answer_tokens=5, scoring_usd=0.0, scoring_calls=0)


def test_records_written_before_costs_were_kept_still_load_and_read_back_as_written() -> None:
    old = '{"id": "trust-old", "status": "done", "model": "m", "score": 0.8}'
    record = TrustRecord.model_validate_json(old)
    assert record.cost is None
    assert "cost" not in record.model_dump(exclude_none=True)
    newer = TrustRecord.model_validate(
        {"id": "t", "status": "done", "cost": {"answer_usd": 0.1, "scoring_usd": 0.2, "a_later_field": 1}}
    )
    assert newer.cost is not None and newer.cost.model_dump()["a_later_field"] == 1
