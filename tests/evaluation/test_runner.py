"""A small end-to-end evaluation against the fake upstream, with metrics worked out by hand, and resuming."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from evaluation import runner
from evaluation.asking import Complete
from evaluation.cache import EvalCache
from evaluation.datasets import EvalItem
from evaluation.gateway import open_upstream
from evaluation.outcome import AnswerDetails, ItemOutcome
from evaluation.runner import Evaluator, ItemFailure, RunSpec, evaluate_items
from evaluation.summary import summarise
from proxy import GatewaySettings
from scoring.settings import ScoringSettings
from scoring.types import OVDetails, Scorer
from tests.fake_upstream import FakeUpstream

from .scripted import ALBUMS, ScriptedModel

pytestmark = pytest.mark.integration

ITEMS = [
    EvalItem(dataset="albums", id=str(n), question_id=str(n), question=s.question, gold=(s.gold,))
    for n, s in enumerate(ALBUMS)
]
SPEC = RunSpec(mode="answer", model="fake")
CALLS_PER_ITEM = {"answer": 1, "verbal": 1, "bc": 2, "fc": 1}


class Interrupted(BaseException):
    """Stands in for a killed process: not an ``Exception``, so nothing on the way catches it."""


Evaluate = Callable[..., tuple[list[ItemOutcome], list[ItemFailure], Evaluator]]


@pytest.fixture
def evaluate(
    gateway: GatewaySettings,
    evidence_settings: ScoringSettings,
    scorers: dict[str, Scorer],
    fake_upstream: FakeUpstream,
) -> Evaluate:
    """Evaluates items against the fake upstream answering as the scripted albums model: the tests here differ only
    in the items, the run's spec, the cache, and how many upstream calls it may make before it is cut off."""
    fake_upstream.responder = ScriptedModel(ALBUMS)

    def run(
        cache: Path, items: list[EvalItem], spec: RunSpec = SPEC, calls_allowed: int | None = None
    ) -> tuple[list[ItemOutcome], list[ItemFailure], Evaluator]:
        async def scenario() -> tuple[list[ItemOutcome], list[ItemFailure], Evaluator]:
            async with open_upstream(gateway) as complete:
                with EvalCache(cache) as store:
                    limit = limited(complete, calls_allowed)
                    evaluator = Evaluator(spec, limit, store, scorers, evidence_settings)
                    outcomes, failures = await evaluate_items(evaluator, items)
                    return outcomes, failures, evaluator

        return asyncio.run(scenario())

    return run


def limited(complete: Complete, calls_allowed: int | None) -> Complete:
    made = 0

    async def call(group: str, body: dict[str, Any]) -> dict[str, Any]:
        nonlocal made
        if calls_allowed is not None and made >= calls_allowed:
            raise Interrupted
        made += 1
        return await complete(group, body)

    return call


def timeless(outcome: ItemOutcome) -> dict[str, Any]:
    """The outcome without its timings, which differ between any two runs."""
    dumped = outcome.model_dump(exclude={"components": {name: {"duration_s"} for name in outcome.components}})
    for component in dumped["components"].values():
        component["details"].pop("generation_s", None)
    return dumped


def test_answer_and_score_with_hand_computed_metrics(
    evaluate: Evaluate, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    outcomes, failures, evaluator = evaluate(tmp_path / "cache.sqlite3", ITEMS)
    assert not failures
    assert [o.answer for o in outcomes] == [s.answer for s in ALBUMS]  # the continuation is cut off
    assert [(o.label, o.label_source) for o in outcomes] == [(1, "gold-match"), (0, "gold-match")] * 2
    assert [o.value("bc") for o in outcomes] == [1.0, 0.0, 0.0, 1.0]
    assert [o.value("fc") for o in outcomes] == [1.0, 0.0, 1.0, 0.5]
    assert [o.details("ov", OVDetails).table3 for o in outcomes]  # type: ignore[union-attr] == [1.0, 0.0, 0.8, 0.6]
    assert [o.value("verbal") for o in outcomes] == [0.9, 0.8, 0.6, 0.7]
    # The fake's token log-probabilities are -0.05·(position mod 7), one token per word.
    words = [len(s.answer.split()) for s in ALBUMS]
    assert [(o.answer_details() or AnswerDetails()).mean_logprob for o in outcomes] == pytest.approx(
        [-0.05 * sum(i % 7 for i in range(n)) / n for n in words]
    )
    assert len(fake_upstream.requests) == 4 * sum(CALLS_PER_ITEM.values())
    assert {name: c.made for name, c in evaluator.counters.items()} == {k: 4 * v for k, v in CALLS_PER_ITEM.items()}

    group = summarise(outcomes, resamples=200, seed=0)["fake"]
    assert group["calls_per_item"] == CALLS_PER_ITEM and group["accuracy"] == 0.5
    signals = group["signals"]
    # Trust_BC binary 1 0 0 1 against labels 1 0 1 0: one of each cell, so no association at all.
    assert signals["bc_binary"]["pearson"]["value"] == 0.0 and signals["bc_binary"]["auroc"]["value"] == 0.5
    # Trust_FC 1 0 1 .5: both correct answers above both wrong ones; r = 0.75 / √0.6875 (deviations from .625, .5).
    assert signals["fc"]["auroc"]["value"] == 1.0 and signals["fc"]["auprc"]["value"] == 1.0
    assert signals["fc"]["pearson"]["value"] == pytest.approx(0.75 / 0.6875**0.5, abs=1e-4)
    assert signals["fc"]["ece"]["value"] == pytest.approx(0.125)  # only the 0.5 bin is off, by 0.5, for 1 of 4
    assert signals["ov_table3"]["auroc"]["value"] == 1.0
    # Confidence .9 .8 .6 .7: the correct .9 beats both wrong ones, the correct .6 neither: AUROC 2/4.
    assert signals["verbal_confidence"]["auroc"]["value"] == 0.5
    # Lengths 7 5 5 7 words: one win, two ties, one loss.
    assert signals["answer_words"]["auroc"]["value"] == 0.5 and signals["answer_words"]["ece"] is None


def test_rerun_after_interruption_repeats_no_upstream_call(
    evaluate: Evaluate, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite3"
    first, _, _ = evaluate(cache, ITEMS[:2])  # stopped after two items
    assert len(first) == 2 and len(fake_upstream.requests) == 10
    with pytest.raises(Interrupted):  # killed in the middle of the third item's Trust_BC checks
        evaluate(cache, ITEMS, calls_allowed=3)
    assert len(fake_upstream.requests) == 13
    outcomes, failures, evaluator = evaluate(cache, ITEMS)
    assert not failures and len(outcomes) == 4
    bodies = [orjson.dumps(body, option=orjson.OPT_SORT_KEYS) for body in fake_upstream.requests]
    assert len(bodies) == len(set(bodies)) == 4 * sum(CALLS_PER_ITEM.values())  # every call made exactly once
    assert sum(c.made for c in evaluator.counters.values()) == 7  # the rest of item 3, and item 4
    fresh, _, _ = evaluate(tmp_path / "fresh.sqlite3", ITEMS)
    assert [timeless(o) for o in outcomes] == [timeless(o) for o in fresh]  # resuming changes no result


def test_given_answers_mode_scores_the_datasets_answers_with_its_labels(
    evaluate: Evaluate, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    items = [
        EvalItem(
            dataset="albums",
            id=f"{n}/human",
            question_id=str(n),
            question=s.question,
            gold=(s.gold,),
            answer=s.answer,
            label=1 - n % 2,
            label_source="human",
            answerer="someone",
        )
        for n, s in enumerate(ALBUMS)
    ]
    outcomes, failures, _ = evaluate(
        tmp_path / "c.sqlite3", items, RunSpec(mode="given", model="fake", components=("fc",))
    )
    assert not failures and [o.value("fc") for o in outcomes] == [1.0, 0.0, 1.0, 0.5]
    assert {o.answerer for o in outcomes} == {"someone"} and {o.label_source for o in outcomes} == {"human"}
    assert [o.gold_match for o in outcomes] == [True, False, True, False]
    assert all(o.details("ov", OVDetails).source == "fc" for o in outcomes)  # type: ignore[union-attr]  # Trust_OV is Trust_FC alone here
    assert len(fake_upstream.requests) == 4  # one judge call each: no answering, no checks, no confidence
    group = summarise(outcomes, resamples=50)["someone"]
    assert set(group["signals"]) == {"fc", "ov_default", "answer_words"}  # the default Trust_OV of Trust_FC alone
    assert group["label_agreement"] == {"items": 4, "accuracy": 1.0, "kappa": 1.0, "matched_correct_rate": 0.5}


def test_an_item_whose_answer_call_fails_is_reported_and_retried(evaluate: Evaluate, tmp_path: Path) -> None:
    broken = EvalItem(dataset="albums", id="broken", question_id="9", question="[fail:500] Who?", gold=("x",))
    outcomes, failures, _ = evaluate(tmp_path / "c.sqlite3", [ITEMS[0], broken])
    assert [o.item_id for o in outcomes] == ["0"]
    assert [f.item_id for f in failures] == ["broken"] and "500" in failures[0].error


def test_without_logprobs_the_answer_call_asks_for_none(
    evaluate: Evaluate, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    spec = RunSpec(mode="answer", model="fake", components=(), verbal_confidence=False, answer_logprobs=False)
    (outcome,), _, _ = evaluate(tmp_path / "c.sqlite3", ITEMS[:1], spec)
    assert "logprobs" not in fake_upstream.requests[0] and len(fake_upstream.requests) == 1
    assert (outcome.answer_details() or AnswerDetails()).mean_logprob is None and outcome.value("ov") is None


def test_results_of_changed_scorer_code_are_recomputed_from_cached_replies(
    evaluate: Evaluate, fake_upstream: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache.sqlite3"
    first, _, _ = evaluate(cache, ITEMS)
    calls = len(fake_upstream.requests)
    _, _, unchanged = evaluate(cache, ITEMS)
    assert unchanged.reused == 4 * 4  # answer, verbal, bc and fc of each item
    monkeypatch.setattr(runner, "_source_digest", lambda module: "the scorers' code after an edit")
    again, _, changed = evaluate(cache, ITEMS)
    assert changed.reused == 4 * 2  # only answer and verbal: bc and fc are scored again ...
    assert len(fake_upstream.requests) == calls  # ... from the cached replies
    assert sum(c.cached for c in changed.counters.values()) == 4 * (CALLS_PER_ITEM["bc"] + CALLS_PER_ITEM["fc"])
    assert [timeless(o) for o in again] == [timeless(o) for o in first]
