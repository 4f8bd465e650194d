"""The refit guard: a new fit that turns a score around is held for the operator, not served. Pure functions.

A refit learns from labels, and labels can be wrong, by mistake or on
purpose. Two signs that a new fit learned something other than what the one in
use knew, checked before it may score anyone's records:

- **A component's weight changes sign.** The components (Trust_BC, Trust_FC,
  ``sc``, ``lp`` and their per-claim means and log-probability figures) are
  built so that a higher value means a likelier right answer, and the default
  combination weighs each of them positively. A fit that gives one a weight of
  the other sign than the combination in use (the default's: positive) reads
  it backwards.
- **It ranks the same answers the other way.** On the labelled answers both
  have seen (every one, against the default combination, which learned
  nothing; those labelled before the fit in use was made, against a learned
  one), the two combinations' values have a Spearman rank correlation below
  ``LearningRule.min_agreement`` (-0.25): what one calls likelier right, the
  other calls likelier wrong.

A held fit is kept beside the report in use (``CalibrationReport.held``) with
the reason, shown by ``GET /v1/trust/calibration``, counted and logged; the
operator accepts it (``accept_held``) after reading why, or a later refit
replaces it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

from .report import CalibrationReport, HeldFit, LearnedFit
from .rule import LabelledAnswer

__all__ = ["MIN_SHARED", "SIGNED_FEATURES", "HeldFitMismatch", "accept_held", "guard", "held_back"]

# Features a higher value of which means a likelier right answer, as the default combination reads them.
SIGNED_FEATURES = ("bc", "fc", "sc", "lp", "bc_mean", "fc_mean", "lp_mean", "lp_min")
MIN_SHARED = 10  # labelled answers both combinations must have seen for their ranks to be compared


class HeldFitMismatch(ValueError):
    """An operator accepted a fit that is not the one held (none is, or a later refit replaced it)."""


def _in_use_fit(in_use: CalibrationReport | None) -> LearnedFit | None:
    return in_use.fit if in_use is not None and in_use.combination == "fitted" else None


def _flipped(new: LearnedFit, old: LearnedFit | None) -> str | None:
    """The first component whose weight in ``new`` has the other sign than in the combination in use."""
    used = dict(zip(old.features, old.weights, strict=True)) if old is not None else {}
    for name, weight in zip(new.features, new.weights, strict=True):
        if name not in SIGNED_FEATURES or weight == 0:
            continue
        reference = used.get(name, 1.0)  # the default combination's weights are all positive
        if weight * reference < 0:
            was = "learned" if name in used else "default"
            return (
                f"it gives {name} a {'negative' if weight < 0 else 'positive'} weight ({weight:+.3g}), the other sign "
                f"than the combination in use ({was}: {reference:+.3g})"
            )
    return None


def _value(fit: LearnedFit, answer: LabelledAnswer) -> float | None:
    if not all(name in answer.features for name in fit.features):
        return None
    return fit.probability(answer.features)


def _agreement(new: LearnedFit, old: LearnedFit | None, seen_until: float, answers: Sequence[LabelledAnswer]) -> float:
    """Spearman's rank correlation of the two combinations on the answers both have seen; NaN where it cannot be
    told (too few such answers, or either combination gives them all one value)."""
    from scipy.stats import spearmanr  # scikit-learn's own dependency: loaded where fits are made

    pairs = []
    for answer in answers:
        if old is not None and (answer.labelled_at is None or answer.labelled_at > seen_until):
            continue
        before = _value(old, answer) if old is not None else answer.default
        after = _value(new, answer)
        if before is not None and after is not None:
            pairs.append((before, after))
    if len(pairs) < MIN_SHARED or len({b for b, _ in pairs}) < 2 or len({a for _, a in pairs}) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        correlation = spearmanr([b for b, _ in pairs], [a for _, a in pairs]).statistic
    return float(correlation)


def guard(
    new: CalibrationReport, in_use: CalibrationReport | None, answers: Sequence[LabelledAnswer], min_agreement: float
) -> str | None:
    """Why ``new`` must be held for the operator rather than served, or None when it may be served.

    Only a new fit is judged: a report that falls back to the default combination is served as it is.
    """
    if new.combination != "fitted" or new.fit is None:
        return None
    old = _in_use_fit(in_use)
    flipped = _flipped(new.fit, old)
    if flipped is not None:
        return flipped
    seen_until = in_use.fitted_at if old is not None and in_use is not None else math.inf
    agreement = _agreement(new.fit, old, seen_until, answers)
    if not math.isnan(agreement) and agreement < min_agreement:
        return (
            f"it ranks the labelled answers both have seen against the combination in use (rank correlation "
            f"{agreement:+.2f}, below {min_agreement:+.2f})"
        )
    return None


def held_back(new: CalibrationReport, in_use: CalibrationReport | None, reason: str) -> CalibrationReport:
    """What the fit store keeps for a held fit: the report in use (the default combination's, with the new
    report's figures, where none was), carrying the new one and why it was held."""
    base = in_use or new.model_copy(
        update={"combination": "default", "fit": None, "reason": "the default combination: a new fit is held"}
    )
    return base.model_copy(update={"held": HeldFit(reason=reason, report=new)})


def accept_held(stored: CalibrationReport | None, fit_id: str) -> CalibrationReport:
    """The held report, in use from now on: the operator names the fit they read (its ``fit.id``), so that a fit
    held after they looked is not accepted in its place."""
    held = stored.held if stored is not None else None
    if held is None or held.report.fit is None or held.report.fit.id != fit_id:
        raise HeldFitMismatch(f"no fit `{fit_id}` is held" + (f" for {stored.model}" if stored is not None else ""))
    return held.report.model_copy(update={"held": None})
