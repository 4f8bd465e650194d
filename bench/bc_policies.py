"""Cheap Trust_BC policies replayed on recorded checks, and how well they agree with the full run.

A recording is the ten checks of the paper's procedure (``procedure: paper``,
``mode: graded``, ``max_checks: 10``) for one answer, in the order the scorer
asked them. A policy reads a prefix of them, as the scorer would have asked
them one after the other, and returns how many it asked, its graded value and
its label. Because every policy reads the same replies, a disagreement with
the full run is the policy's doing, never a different draw of distractors.

Labels are the scorer's Trust_BC labels: ``inconsistent`` below
``adaptive_low`` (0.4), ``consistent`` from ``adaptive_high`` (0.7),
``uncertain`` between, from the policy's value (the binary rule's labels are
its own: consistent only when every check agreed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from scipy.stats import spearmanr

from scoring.consistency.stopping import PAPER_CHECKS, StopRule, decide_stop, graded_label, predicted_fraction, \
    settled_label

__all__ = ["Agreement", "LogprobPolicy", "Observation", "Outcome", "Policy", "RulePolicy", "agreement", "candidates",
           "reference"]

LOW, HIGH = 0.4, 0.7  # ConsistencySettings' adaptive_low / adaptive_high defaults


@dataclass(frozen=True)
class Observation:
    """One recorded check: did the model choose its own answer, and the probability it gave that letter."""

    consistent: bool
    probability: float | None  # None when the upstream returned no log-probabilities

    @property
    def soft(self) -> float:
        """The check as graded evidence: the letter's probability, else 1 or 0 from the choice."""
        return float(self.consistent) if self.probability is None else self.probability


@dataclass(frozen=True)
class Outcome:
    calls: int
    value: float
    label: str


class Policy(Protocol):
    @property
    def name(self) -> str: ...

    def replay(self, checks: Sequence[Observation]) -> Outcome:
        """Ask the checks one after the other, as the scorer would, until the policy stops."""


@dataclass(frozen=True)
class RulePolicy:
    """A ``stopping.py`` rule, fed the recorded checks one at a time, valued and labelled as the scorer does.

    ``soft``: each check counts as its letter probability instead of 1 or 0 (graded evidence).
    """

    name: str
    rule: StopRule
    soft: bool = False

    def replay(self, checks: Sequence[Observation]) -> Outcome:
        consistent: float = 0
        done = 0
        while decide_stop(self.rule, consistent, done) is None:  # type: ignore[arg-type]
            consistent += checks[done].soft if self.soft else checks[done].consistent
            done += 1
        if self.rule.mode == "binary":
            agreed = consistent == done
            return Outcome(done, float(agreed), "consistent" if agreed else "inconsistent")
        value = predicted_fraction(self.rule, consistent, done) if self.rule.mode == "predictive" \
            else consistent / done
        return Outcome(done, value, settled_label(self.rule, consistent, done))


@dataclass(frozen=True)
class LogprobPolicy:
    """A fixed number of checks, each graded by the probability the model gave the original's letter."""

    name: str
    checks: int

    def replay(self, checks: Sequence[Observation]) -> Outcome:
        value = sum(c.soft for c in checks[: self.checks]) / self.checks
        return Outcome(self.checks, value, graded_label(value, LOW, HIGH))


def reference() -> RulePolicy:
    """The paper's n=10: every check asked, the consistent fraction, its graded label."""
    return RulePolicy("paper n=10 (graded, all 10)", StopRule("graded", PAPER_CHECKS, LOW, HIGH))


def candidates() -> list[Policy]:
    """Today's rules for their cost, then the cheap ones under test."""
    policies: list[Policy] = [
        RulePolicy("paper binary (stop at first miss, max 10)", StopRule("binary", PAPER_CHECKS)),
        RulePolicy("adaptive max 10 (today's default)", StopRule("adaptive", PAPER_CHECKS, LOW, HIGH, 0.9)),
    ]
    policies += [RulePolicy(f"fixed {n} (graded)", StopRule("graded", n, LOW, HIGH)) for n in (1, 2, 3)]
    policies += [RulePolicy(f"adaptive max {n}", StopRule("adaptive", n, LOW, HIGH, 0.9)) for n in (3, 4, 5)]
    policies += [RulePolicy(f"predictive max {n}, credibility {c}", StopRule("predictive", n, LOW, HIGH, c))
                 for n in (3, 4, 5, 6) for c in (0.8, 0.9)]
    policies += [LogprobPolicy(f"logprob fixed {n}", n) for n in (1, 2, 3)]
    policies += [RulePolicy(f"predictive on letter probabilities, max {n}, credibility {c}",
                            StopRule("predictive", n, LOW, HIGH, c), soft=True)
                 for n in (3, 4, 5, 6) for c in (0.8, 0.9)]
    return policies


@dataclass(frozen=True)
class Agreement:
    """A policy against a reference over the same answers."""

    policy: str
    answers: int
    mean_calls: float
    label_agreement: float
    spearman: float  # nan when either side is constant
    # against an independent full run (other distractors and positions), where one was recorded
    label_agreement_independent: float | None = None
    spearman_independent: float | None = None

    def meets(self, calls: float = 3.0, labels: float = 0.95, rho: float = 0.9) -> bool:
        return self.mean_calls <= calls and self.label_agreement >= labels and self.spearman >= rho


def _spearman(a: Sequence[float], b: Sequence[float]) -> float:
    if len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    return float(spearmanr(a, b).statistic)


def _compare(ours: Sequence[Outcome], theirs: Sequence[Outcome]) -> tuple[float, float]:
    labels = sum(o.label == t.label for o, t in zip(ours, theirs, strict=True)) / len(ours)
    return labels, _spearman([o.value for o in ours], [t.value for t in theirs])


def agreement(policy: Policy, runs: Sequence[Sequence[Observation]],
              independent: Sequence[Sequence[Observation]] | None = None,
              against: Policy | None = None) -> Agreement:
    """``policy`` on each recorded run against ``against`` (the paper's n=10) on the same run, and on the
    independent run of the same answer when given (``policy`` being the reference itself: the noise ceiling)."""
    against = against or reference()
    ours = [policy.replay(run) for run in runs]
    labels, rho = _compare(ours, [against.replay(run) for run in runs])
    result = Agreement(policy.name, len(runs), sum(o.calls for o in ours) / len(ours), labels, rho)
    if independent is None:
        return result
    other_labels, other_rho = _compare(ours, [against.replay(run) for run in independent])
    return Agreement(result.policy, result.answers, result.mean_calls, labels, rho, other_labels, other_rho)

