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

Candidates, besides the scorer's own rules (``stopping.py``) at small budgets:

* ``logprob``: a fixed number of checks, each graded by the probability the
  model gave the original's letter (from ``top_logprobs``; the choice itself,
  1 or 0, where the upstream gave none);
* ``predictive``: aims straight at the full run's label. Under a uniform
  prior the checks not asked follow a Beta-binomial law, which gives each
  label of the 10-check fraction a probability; stop once one has
  ``credibility`` or at the budget, and report that label and the expected
  10-check fraction. With ``soft``, each check counts as its letter probability.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from scipy.special import betaln
from scipy.stats import spearmanr

from scoring.consistency.stopping import StopRule, decide_stop, graded_label, settled_label
from scoring.settings import ConsistencySettings

__all__ = [
    "Agreement",
    "ConstantPolicy",
    "LogprobPolicy",
    "Observation",
    "Outcome",
    "Policy",
    "PredictivePolicy",
    "RulePolicy",
    "agreement",
    "candidates",
    "nearest_to_target",
    "reference",
]

_DEFAULTS = ConsistencySettings()
LOW, HIGH = _DEFAULTS.adaptive_low, _DEFAULTS.adaptive_high  # the labels' thresholds, as the scorer's
FULL = 10  # the paper's maximum check limit (TrustScore, A.5)
TARGET_CALLS, TARGET_LABELS, TARGET_RHO = 3.0, 0.95, 0.9  # what a cheap policy must reach to replace n=10


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
    """A ``stopping.py`` rule, fed the recorded checks one at a time, valued and labelled as the scorer does."""

    name: str
    rule: StopRule

    def replay(self, checks: Sequence[Observation]) -> Outcome:
        consistent = done = 0
        while decide_stop(self.rule, consistent, done) is None:
            consistent += checks[done].consistent
            done += 1
        if self.rule.mode == "binary":
            agreed = consistent == done
            return Outcome(done, float(agreed), "consistent" if agreed else "inconsistent")
        return Outcome(done, consistent / done, settled_label(self.rule, consistent, done))


@dataclass(frozen=True)
class ConstantPolicy:
    """No check at all: one label for every answer. The floor any policy's label agreement must clear."""

    name: str
    label: str
    value: float

    def replay(self, checks: Sequence[Observation]) -> Outcome:
        return Outcome(0, self.value, self.label)


@dataclass(frozen=True)
class LogprobPolicy:
    """A fixed number of checks, each graded by the probability the model gave the original's letter."""

    name: str
    checks: int

    def replay(self, checks: Sequence[Observation]) -> Outcome:
        value = sum(c.soft for c in checks[: self.checks]) / self.checks
        return Outcome(self.checks, value, graded_label(value, LOW, HIGH))


def _beta_binomial(n: int, a: float, b: float) -> list[float]:
    """P(k successes of n) when the success rate is Beta(a, b)-distributed, k = 0..n."""
    return [math.comb(n, k) * math.exp(betaln(k + a, n - k + b) - betaln(a, b)) for k in range(n + 1)]


def predicted_labels(consistent: float, done: int) -> dict[str, float]:
    """Each label's probability for the fraction of the full 10-check run, from ``done`` checks (uniform prior)."""
    labels = dict.fromkeys(("inconsistent", "uncertain", "consistent"), 0.0)
    for future, mass in enumerate(_beta_binomial(FULL - done, 1.0 + consistent, 1.0 + done - consistent)):
        labels[graded_label((consistent + future) / FULL, LOW, HIGH)] += mass
    return labels


@dataclass(frozen=True)
class PredictivePolicy:
    """Stop once the full run's label is predicted with ``credibility``, or after ``most`` checks."""

    name: str
    most: int
    credibility: float
    soft: bool = False

    def replay(self, checks: Sequence[Observation]) -> Outcome:
        consistent, done = 0.0, 0
        while True:
            consistent += checks[done].soft if self.soft else checks[done].consistent
            done += 1
            labels = predicted_labels(consistent, done)
            label = max(labels, key=lambda name: labels[name])
            if labels[label] >= self.credibility or done >= self.most:
                value = (consistent + (FULL - done) * (1.0 + consistent) / (2.0 + done)) / FULL
                return Outcome(done, value, label)


def reference() -> RulePolicy:
    """The paper's n=10: every check asked, the consistent fraction, its graded label."""
    return RulePolicy("paper n=10 (graded, all 10)", StopRule("graded", FULL, LOW, HIGH))


def candidates() -> list[Policy]:
    """A floor, today's rules for their cost, then the cheap ones under test."""
    policies: list[Policy] = [
        ConstantPolicy("no check: always inconsistent", "inconsistent", 0.0),
        RulePolicy("paper binary (stop at first miss, max 10)", StopRule("binary", FULL)),
        RulePolicy("adaptive max 10 (the paper's budget)", StopRule("adaptive", FULL, LOW, HIGH, 0.9)),
    ]
    policies += [RulePolicy(f"graded, fixed {n}", StopRule("graded", n, LOW, HIGH)) for n in (1, 2, 3)]
    policies += [
        RulePolicy(f"adaptive max {n}, credibility {c}", StopRule("adaptive", n, LOW, HIGH, c))
        for n in (3, 4, 5)
        for c in (0.7, 0.8, 0.9)
    ]
    policies += [LogprobPolicy(f"logprob, fixed {n}", n) for n in (1, 2, 3)]
    for soft in (False, True):
        kind = "predictive on letter probabilities" if soft else "predictive"
        policies += [
            PredictivePolicy(f"{kind} max {n}, credibility {c}", n, c, soft) for n in (3, 4, 5, 6) for c in (0.8, 0.9)
        ]
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

    def meets(self) -> bool:
        return self.mean_calls <= TARGET_CALLS and self.label_agreement >= TARGET_LABELS and self.spearman >= TARGET_RHO

    @property
    def nearness(self) -> float:
        """How near the target on its weaker side: min(label agreement / 0.95, Spearman / 0.9); 1 meets both."""
        rho = -math.inf if math.isnan(self.spearman) else self.spearman
        return min(self.label_agreement / TARGET_LABELS, rho / TARGET_RHO)


def nearest_to_target(rows: Sequence[Agreement]) -> Agreement | None:
    """The cheap policy: among those at ≤ 3 calls per answer on average, the nearest to the target."""
    return max((r for r in rows if r.mean_calls <= TARGET_CALLS), key=lambda r: r.nearness, default=None)


def _spearman(a: Sequence[float], b: Sequence[float]) -> float:
    if len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    return float(spearmanr(a, b).statistic)


def _compare(ours: Sequence[Outcome], theirs: Sequence[Outcome]) -> tuple[float, float]:
    labels = sum(o.label == t.label for o, t in zip(ours, theirs, strict=True)) / len(ours)
    return labels, _spearman([o.value for o in ours], [t.value for t in theirs])


def agreement(
    policy: Policy,
    runs: Sequence[Sequence[Observation]],
    independent: Sequence[Sequence[Observation]] | None = None,
    against: Policy | None = None,
) -> Agreement:
    """``policy`` on each recorded run against ``against`` (the paper's n=10) on the same run, and on the
    independent run of the same answer when given (``policy`` being the reference itself: the noise ceiling)."""
    against = against or reference()
    ours = [policy.replay(run) for run in runs]
    labels, rho = _compare(ours, [against.replay(run) for run in runs])
    result = Agreement(policy.name, len(runs), sum(o.calls for o in ours) / len(ours), labels, rho)
    if independent is None:
        return result
    other_labels, other_rho = _compare(ours, [against.replay(run) for run in independent])
    return replace(result, label_agreement_independent=other_labels, spearman_independent=other_rho)
