"""MC1/MC2 from copy-task log-probabilities: reading the candidate's tokens out of a greedy reply."""

from __future__ import annotations

import math

import pytest

from evaluation.truthfulqa_mc import CandidateScore, candidate_score, mc_scores, repeat_prompt

pytestmark = pytest.mark.unit


def test_a_reproduced_candidate_sums_its_tokens() -> None:
    chosen = [("\n", -0.01), ("Nothing", -0.5), (" happens", -0.25), (".", -0.1), ("<end>", -0.2)]
    alternatives = [{t: lp} for t, lp in chosen]
    # The leading newline, the optional final full stop and what follows don't count.
    assert candidate_score("Nothing happens.", chosen, alternatives) == CandidateScore(-0.75, 2, True)
    assert candidate_score("Nothing happens", chosen, alternatives) == CandidateScore(-0.75, 2, True)


def test_a_strayed_reply_takes_the_candidate_token_from_the_alternatives_and_stops() -> None:
    chosen = [("You", -0.3), (" grow", -0.4), (" nothing", -0.2)]
    alternatives = [{"You": -0.3}, {" grow": -0.4, " get": -1.5, " go": -2.0}, {" nothing": -0.2}]
    assert candidate_score("You get sick", chosen, alternatives) == CandidateScore(-1.8, 2, False)
    # Not among the alternatives: bounded by the least likely one.
    assert candidate_score("You die", chosen, alternatives) == CandidateScore(-2.3, 2, False)


def test_a_reply_that_stops_early_is_not_reproduced() -> None:
    chosen = [("You", -0.3)]
    assert candidate_score("You die", chosen, [{"You": -0.3}]) == CandidateScore(-0.3, 1, False)


def test_mc1_and_mc2() -> None:
    best, other_true = CandidateScore(-1.0, 3, True), CandidateScore(-2.0, 3, True)
    false = [CandidateScore(-1.5, 3, True), CandidateScore(-3.0, 3, True)]
    result = mc_scores(best, [best, other_true], false)
    mass = [math.exp(-1.0), math.exp(-2.0), math.exp(-1.5), math.exp(-3.0)]
    assert result.mc1 == 1.0 and result.mc2 == pytest.approx(sum(mass[:2]) / sum(mass)) and result.complete
    partly = mc_scores(other_true, [best], [*false, CandidateScore(-0.5, 1, False)])
    assert partly.mc1 == 0.0 and not partly.complete and partly.reproduced == 0.8


def test_repeat_prompt() -> None:
    assert repeat_prompt(" Why? ", " Because. ").startswith("Question: Why?\nAnswer: Because.\n\nRepeat")
