"""Trust-Eval's per-answer metrics from verdicts, and the value that combines them."""

from __future__ import annotations

import pytest

from scoring.rag.metrics import (
    StatementCheck,
    citation_precision,
    citation_recall,
    f1,
    groundedness,
    mean,
    share_supported,
    statement_precision,
    statement_recall,
)
from scoring.rag.scorer import trust_value

pytestmark = pytest.mark.unit


def test_one_citation() -> None:
    supported = StatementCheck((1,), joint="support", grounding="support")
    unsupported = StatementCheck((1,), joint="contradict", grounding="neutral")
    assert (statement_recall(supported), statement_precision(supported)) == (1.0, (1, 1))
    assert (statement_recall(unsupported), statement_precision(unsupported)) == (0.0, (0, 1))


def test_alce_precision_rule_for_several_citations() -> None:
    # [1] supports alone; [2] does not, and [1] without it still does: [2] is irrelevant.
    # [3] does not alone, and [1, 2] without it do not: together they need it.
    check = StatementCheck(
        (1, 2, 3),
        joint="support",
        alone={1: "support", 2: "neutral", 3: "neutral"},
        without={2: "support", 3: "neutral"},
    )
    assert [check.relevant(c) for c in (1, 2, 3)] == [True, False, True]
    assert statement_precision(check) == (2, 3)
    unsupported = StatementCheck((1, 2), joint="neutral")
    assert statement_precision(unsupported) == (0, 2)  # every citation of an unsupported statement is imprecise


def test_no_citation_is_zero_recall_and_nothing_to_be_precise_about() -> None:
    check = StatementCheck(())
    assert (statement_recall(check), statement_precision(check)) == (0.0, (0, 0))
    assert citation_precision([check]) is None


def test_a_failed_verdict_makes_the_metrics_that_need_it_none() -> None:
    failed = StatementCheck((1, 2), joint=None)
    half = StatementCheck((1, 2), joint="support", alone={1: "neutral", 2: "support"}, without={1: None})
    good = StatementCheck((1,), joint="support", grounding="support")
    assert (statement_recall(failed), statement_precision(failed)) == (None, None)
    assert (statement_recall(half), statement_precision(half)) == (1.0, None)
    assert (citation_recall([good, failed]), citation_precision([good, half]), groundedness([good, failed])) == (
        None,
        None,
        None,
    )


def test_answer_level_metrics() -> None:
    checks = [
        StatementCheck((1,), joint="support", grounding="support"),
        StatementCheck(
            (1, 2), joint="support", alone={1: "support", 2: "neutral"}, without={2: "support"}, grounding="support"
        ),
        StatementCheck((), grounding="support"),
        StatementCheck((2,), joint="neutral", grounding="contradict"),
    ]
    assert citation_recall(checks) == 2 / 4
    assert citation_precision(checks) == 2 / 4  # 1/1 + 1/2 + 0/0 + 0/1
    assert groundedness(checks) == 3 / 4
    assert f1(0.5, 0.5) == 0.5 and f1(0.0, 0.0) == 0.0 and f1(None, 1.0) is None


def test_means_and_shares() -> None:
    assert mean([]) is None and mean([1.0, None]) is None and mean([1.0, 0.0]) == 0.5
    assert share_supported(["support", "neutral", "contradict", "support"]) == 0.5
    assert share_supported(["support", None]) is None


def test_the_value_is_the_mean_of_the_parts_that_apply() -> None:
    assert trust_value(
        {"citation_f1": 0.5, "groundedness": 1.0, "refusal_grounded": None, "claim_correctness": None}
    ) == pytest.approx(0.75)
    assert (
        trust_value({"citation_f1": None, "groundedness": None, "refusal_grounded": None, "claim_correctness": None})
        is None
    )
