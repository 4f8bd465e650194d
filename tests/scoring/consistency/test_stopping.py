"""The stop rules: the paper's binary rule, the full graded run, and the adaptive rule."""

from __future__ import annotations

import itertools

import pytest

from scoring.consistency.stopping import StopRule, checks_before_possible_stop, decide_stop, graded_label, settled_label
from scoring.settings import ConsistencySettings

pytestmark = pytest.mark.unit


def run(rule: StopRule, outcomes: list[bool]) -> tuple[int, str]:
    """Feed outcomes one at a time; returns how many checks ran and why it stopped."""
    consistent = done = 0
    while (reason := decide_stop(rule, consistent, done)) is None:
        consistent += outcomes[done]
        done += 1
    return done, reason


def test_binary_stops_at_the_first_inconsistent_choice() -> None:
    rule = StopRule("binary", 10)
    assert run(rule, [True, True, False] + [True] * 7) == (3, "inconsistent")
    assert run(rule, [False] * 10) == (1, "inconsistent")
    assert run(rule, [True] * 10) == (10, "max_checks")
    assert checks_before_possible_stop(rule, 2, 2) == 1


def test_graded_always_runs_every_check() -> None:
    rule = StopRule("graded", 10)
    assert run(rule, [False] * 10) == (10, "max_checks")
    assert checks_before_possible_stop(rule, 3, 4) == 6


def test_adaptive_stops_early_on_clear_cases() -> None:
    rule = StopRule("adaptive", 10, 0.4, 0.7, 0.9)
    assert run(rule, [True] * 10) == (6, "posterior")
    assert run(rule, [False] * 10) == (4, "posterior")
    assert checks_before_possible_stop(rule, 0, 0) == 4


def test_adaptive_exact_rule_never_changes_the_full_runs_label() -> None:
    rule = StopRule("adaptive", 10, 0.4, 0.7, 0.9)
    for outcomes in itertools.product([True, False], repeat=10):
        done, reason = run(rule, list(outcomes))
        full = graded_label(sum(outcomes) / 10, 0.4, 0.7)
        if reason in ("settled", "max_checks"):
            assert settled_label(rule, sum(outcomes[:done]), done) == full


@pytest.mark.parametrize(("rate", "most"), [(0.95, 7.0), (0.05, 5.0), (0.5, 9.0)])
def test_adaptive_spends_fewer_checks_than_graded(rate: float, most: float) -> None:
    """Expected checks for a model choosing its answer with probability ``rate`` (exact, all 1024 runs)."""
    rule = StopRule("adaptive", 10, 0.4, 0.7, 0.9)
    expected = 0.0
    for outcomes in itertools.product([True, False], repeat=10):
        weight = rate ** sum(outcomes) * (1 - rate) ** (10 - sum(outcomes))
        expected += weight * run(rule, list(outcomes))[0]
    assert expected < most


@pytest.mark.parametrize("mode", ["binary", "graded", "adaptive"])
def test_checks_asked_together_never_overshoot_a_stop(mode: str) -> None:
    """Whatever the outcomes, no check inside a wave would have been skipped by the rule."""
    rule = StopRule(mode, 10)  # type: ignore[arg-type]
    for outcomes in itertools.product([True, False], repeat=10):
        consistent = done = 0
        while decide_stop(rule, consistent, done) is None:
            wave = checks_before_possible_stop(rule, consistent, done)
            for step in range(wave):
                assert step == 0 or decide_stop(rule, consistent, done) is None
                consistent += outcomes[done]
                done += 1


def test_graded_labels() -> None:
    assert [graded_label(x, 0.4, 0.7) for x in (0.0, 0.39, 0.4, 0.69, 0.7, 1.0)] == [
        "inconsistent",
        "inconsistent",
        "uncertain",
        "uncertain",
        "consistent",
        "consistent",
    ]


def test_the_default_rule_stops_after_three_checks_that_agree() -> None:
    """On the default settings three agreeing checks settle Trust_BC; a split asks the fourth."""
    bc = ConsistencySettings()
    rule = StopRule(bc.mode, bc.max_checks, bc.adaptive_low, bc.adaptive_high, bc.adaptive_credibility)
    assert run(rule, [True] * 4) == (3, "settled")
    assert run(rule, [False] * 4) == (3, "settled")
    assert run(rule, [True, False, True, True])[0] == 4
    assert checks_before_possible_stop(rule, 0, 0) == 3  # the first three are asked at once
