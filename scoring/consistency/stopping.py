"""When to stop asking: the paper's rule, a fixed budget, and an adaptive rule.

* ``binary`` (the paper, §2.1): stop at the first inconsistent choice or after
  ``max_checks``; Trust_BC is 1 only if every check chose the original.
* ``graded``: always run ``max_checks``; the score is the consistent fraction.
* ``adaptive``: stop as soon as the graded label (inconsistent below ``low``,
  consistent from ``high``, uncertain between) is settled, by either of two
  rules: (a) exact: the remaining checks cannot move the final fraction across
  a threshold; (b) Bayesian: under a uniform prior the Beta posterior of the
  consistency rate puts at least ``credibility`` of its mass in one label's
  interval. With the defaults (10 checks, 0.4/0.7, 0.9) a model that always
  agrees is settled after 6 checks and one that never does after 4.
* ``predictive``: aims at the label the paper's full run of ``horizon`` (10)
  checks would give, from fewer checks: under a uniform prior the checks not
  asked follow a Beta-binomial law, which gives each label of the full run's
  fraction a probability; stop once one label has ``credibility`` or after
  ``max_checks``, and report that most probable label and the full run's
  expected fraction (``predicted_fraction``). Measured against recorded full
  runs in ``bench/bc_agreement.py``.

``checks_before_possible_stop`` lets the scorer ask several checks at once
without ever asking one that the rule would not have needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from scipy.special import betainc, betaln

__all__ = ["PAPER_CHECKS", "StopRule", "checks_before_possible_stop", "decide_stop", "graded_label",
           "predicted_fraction", "predicted_labels", "settled_label"]

Mode = Literal["binary", "graded", "adaptive", "predictive"]
PAPER_CHECKS = 10  # the paper's maximum check limit (TrustScore, A.5): the run ``predictive`` aims at


@dataclass(frozen=True)
class StopRule:
    mode: Mode
    max_checks: int
    low: float = 0.4
    high: float = 0.7
    credibility: float = 0.9
    horizon: int = PAPER_CHECKS  # predictive: the full run whose label is predicted


def graded_label(fraction: float, low: float, high: float) -> str:
    if fraction >= high:
        return "consistent"
    if fraction < low:
        return "inconsistent"
    return "uncertain"


def _posterior_label(consistent: int, done: int, rule: StopRule) -> str | None:
    a, b = 1.0 + consistent, 1.0 + done - consistent
    below_low = float(betainc(a, b, rule.low))
    below_high = float(betainc(a, b, rule.high))
    for label, mass in (("inconsistent", below_low), ("uncertain", below_high - below_low),
                        ("consistent", 1.0 - below_high)):
        if mass >= rule.credibility:
            return label
    return None


def _exact_label(consistent: int, done: int, rule: StopRule) -> str | None:
    remaining = rule.max_checks - done
    worst = graded_label(consistent / rule.max_checks, rule.low, rule.high)
    best = graded_label((consistent + remaining) / rule.max_checks, rule.low, rule.high)
    return worst if worst == best else None


def _beta_binomial(n: int, a: float, b: float) -> list[float]:
    """P(k successes of n) when the success rate is Beta(a, b)-distributed, k = 0..n."""
    return [math.comb(n, k) * math.exp(betaln(k + a, n - k + b) - betaln(a, b)) for k in range(n + 1)]


def predicted_labels(rule: StopRule, consistent: int, done: int) -> dict[str, float]:
    """Each label's probability for the fraction of the full run of ``rule.horizon`` checks (uniform prior).

    After ``horizon`` or more checks nothing is left to predict: the observed fraction's label is certain.
    """
    total = max(rule.horizon, done)
    labels = dict.fromkeys(("inconsistent", "uncertain", "consistent"), 0.0)
    for future, mass in enumerate(_beta_binomial(total - done, 1.0 + consistent, 1.0 + done - consistent)):
        labels[graded_label((consistent + future) / total, rule.low, rule.high)] += mass
    return labels


def predicted_fraction(rule: StopRule, consistent: int, done: int) -> float:
    """The full run's expected consistent fraction: the checks done, plus the posterior mean for the rest."""
    total = max(rule.horizon, done)
    return (consistent + (total - done) * (1.0 + consistent) / (2.0 + done)) / total


def _predicted_label(consistent: int, done: int, rule: StopRule) -> str | None:
    label, mass = max(predicted_labels(rule, consistent, done).items(), key=lambda item: item[1])
    return label if mass >= rule.credibility else None


def decide_stop(rule: StopRule, consistent: int, done: int) -> str | None:
    """Why to stop after ``done`` checks with ``consistent`` agreements, or ``None`` to go on."""
    if done >= rule.max_checks:
        return "max_checks"
    if rule.mode == "binary":
        return "inconsistent" if consistent < done else None
    if rule.mode == "graded" or done == 0:
        return None
    if rule.mode == "predictive":
        return "predicted" if _predicted_label(consistent, done, rule) is not None else None
    if _exact_label(consistent, done, rule) is not None:
        return "settled"
    return "posterior" if _posterior_label(consistent, done, rule) is not None else None


def settled_label(rule: StopRule, consistent: int, done: int) -> str:
    """The graded label an adaptive run stopped on (the observed fraction's when neither rule fired).

    A predictive run's label is the full run's most probable one, whether or not it reached ``credibility``.
    """
    if done == 0:
        return "uncertain"
    if rule.mode == "predictive":
        labels = predicted_labels(rule, consistent, done)
        return max(labels, key=lambda label: labels[label])
    return (_exact_label(consistent, done, rule) or _posterior_label(consistent, done, rule)
            or graded_label(consistent / done, rule.low, rule.high))


def checks_before_possible_stop(rule: StopRule, consistent: int, done: int) -> int:
    """The fewest further checks after which some outcome would stop: safe to ask them all at once."""
    remaining = rule.max_checks - done
    for more in range(1, remaining):
        if any(decide_stop(rule, consistent + agreed, done + more) for agreed in range(more + 1)):
            return more
    return max(remaining, 0)
