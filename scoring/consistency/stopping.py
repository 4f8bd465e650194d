"""When to stop asking: the paper's rule, a fixed budget, and an adaptive rule.

* ``binary`` (the paper, §2.1): stop at the first inconsistent choice or after
  ``max_checks``; Trust_BC is 1 only if every check chose the original.
* ``graded``: always run ``max_checks``; the score is the consistent fraction.
* ``adaptive``: stop as soon as the graded label (inconsistent below ``low``,
  consistent from ``high``, uncertain between) is settled, by either of two
  rules: (a) exact: the remaining checks cannot move the final fraction across
  a threshold; (b) Bayesian: under a uniform prior the Beta posterior of the
  consistency rate puts at least ``credibility`` of its mass in one label's
  interval. With the defaults (4 checks, 0.4/0.7, 0.9) three checks that all
  agree (or all disagree) settle the label, and a split asks the fourth; with
  10 checks a model that always agrees is settled after 6 and one that never
  does after 4.

``checks_before_possible_stop`` lets the scorer ask several checks at once
without ever asking one that the rule would not have needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from scipy.special import betainc

__all__ = ["StopRule", "checks_before_possible_stop", "decide_stop", "graded_label", "settled_label"]

Mode = Literal["binary", "graded", "adaptive"]


@dataclass(frozen=True)
class StopRule:
    mode: Mode
    max_checks: int
    low: float = 0.4
    high: float = 0.7
    credibility: float = 0.9


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
    for label, mass in (
        ("inconsistent", below_low),
        ("uncertain", below_high - below_low),
        ("consistent", 1.0 - below_high),
    ):
        if mass >= rule.credibility:
            return label
    return None


def _exact_label(consistent: int, done: int, rule: StopRule) -> str | None:
    remaining = rule.max_checks - done
    worst = graded_label(consistent / rule.max_checks, rule.low, rule.high)
    best = graded_label((consistent + remaining) / rule.max_checks, rule.low, rule.high)
    return worst if worst == best else None


def decide_stop(rule: StopRule, consistent: int, done: int) -> str | None:
    """Why to stop after ``done`` checks with ``consistent`` agreements, or ``None`` to go on."""
    if done >= rule.max_checks:
        return "max_checks"
    if rule.mode == "binary":
        return "inconsistent" if consistent < done else None
    if rule.mode == "graded" or done == 0:
        return None
    if _exact_label(consistent, done, rule) is not None:
        return "settled"
    return "posterior" if _posterior_label(consistent, done, rule) is not None else None


def settled_label(rule: StopRule, consistent: int, done: int) -> str:
    """The graded label an adaptive run stopped on (the observed fraction's when neither rule fired)."""
    if done == 0:
        return "uncertain"
    return (
        _exact_label(consistent, done, rule)
        or _posterior_label(consistent, done, rule)
        or graded_label(consistent / done, rule.low, rule.high)
    )


def checks_before_possible_stop(rule: StopRule, consistent: int, done: int) -> int:
    """The fewest further checks after which some outcome would stop: safe to ask them all at once."""
    remaining = rule.max_checks - done
    for more in range(1, remaining):
        if any(decide_stop(rule, consistent + agreed, done + more) for agreed in range(more + 1)):
            return more
    return max(remaining, 0)
