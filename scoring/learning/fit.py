"""Learn a model's Trust_OV from its labelled answers, and judge it against the default honestly. Pure functions.

The fit is a logistic regression on standardised features (Trust_BC, Trust_FC,
``lp``, ``sc``, evidence agreement and whether it spoke, the claims' means,
mean and least token log-probability, answer length: whatever the model's
answers have; ``features.py``), L2-regularised, with the features chosen by
forward selection on cross-validated AUROC: the best single feature first, then
one more only while it raises the cross-validated AUROC by ``min_gain``. A few
dozen labels therefore give the best single feature, calibrated, rather than a
noisy blend of all of them.

Its AUROC is measured by nested cross-validation: each outer fold's answers are
scored by a selection *and* fit made on the other folds, so the choice of
features is paid for in the figure it is judged by. The default combination
has no parameters, so its AUROC on the same answers needs no folds. The fit is
used only with at least ``min_labels`` labels, a cross-validated AUROC above
the default's, and some score that is informative at all (``quality.py``): a
fit of noise is not used however it ranks. The report says which, and why.
"""

from __future__ import annotations

import math
import uuid
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from .features import COMPONENT_FEATURES, FEATURES
from .quality import MIN_PER_LABEL, auroc, auroc_lower_bound, expected_calibration_error, reliability, roc_points
from .report import CalibrationReport, LearnedFit, ScoreQuality
from .rule import LabelledAnswer, LearningRule

__all__ = ["assess"]

Matrix = NDArray[np.float64]


def _logistic(rule: LearningRule) -> Pipeline:
    return make_pipeline(StandardScaler(), LogisticRegression(C=rule.c, max_iter=1000))


def _folds(y: NDArray[np.int64], wanted: int) -> int:
    """As many folds as asked, but no more than the rarer label has answers (each fold must see both)."""
    return min(wanted, int(y.sum()), int(len(y) - y.sum()))


def _oof(x: Matrix, y: NDArray[np.int64], columns: list[int], k: int, rule: LearningRule) -> Matrix:
    """Each answer's probability from a fit on the other folds."""
    out = np.zeros(len(y))
    for train, held in StratifiedKFold(n_splits=k, shuffle=True, random_state=rule.seed).split(x, y):
        model = _logistic(rule).fit(x[np.ix_(train, columns)], y[train])
        out[held] = model.predict_proba(x[np.ix_(held, columns)])[:, 1]
    return out


def _forward(x: Matrix, y: NDArray[np.int64], rule: LearningRule) -> list[int]:
    """Features by forward selection on cross-validated AUROC; [] when the answers cannot be split in folds."""
    k = _folds(y, rule.folds)
    if k < 2:
        return []
    chosen: list[int] = []
    best = -math.inf
    while len(chosen) < min(rule.max_features, x.shape[1]):
        trials = {c: auroc(_oof(x, y, [*chosen, c], k, rule), y) for c in range(x.shape[1]) if c not in chosen}
        column, score = max(trials.items(), key=lambda item: -math.inf if math.isnan(item[1]) else item[1])
        if math.isnan(score) or (chosen and score < best + rule.min_gain):
            break
        chosen, best = [*chosen, column], score
    return chosen


def _nested(x: Matrix, y: NDArray[np.int64], rule: LearningRule) -> Matrix | None:
    """Out-of-fold probabilities of the whole procedure (selection and fit); None without enough of each label."""
    k = _folds(y, rule.folds)
    if k < 2:
        return None
    out = np.zeros(len(y))
    for train, held in StratifiedKFold(n_splits=k, shuffle=True, random_state=rule.seed).split(x, y):
        columns = _forward(x[train], y[train], rule) or [0]
        model = _logistic(rule).fit(x[np.ix_(train, columns)], y[train])
        out[held] = model.predict_proba(x[np.ix_(held, columns)])[:, 1]
    return out


def _final(x: Matrix, y: NDArray[np.int64], names: list[str], rule: LearningRule) -> LearnedFit:
    """Selection and fit on every answer; weights moved back onto the raw features (``w / sd``)."""
    columns = _forward(x, y, rule)
    pipeline = _logistic(rule).fit(x[:, columns], y)
    scaler, model = pipeline[0], pipeline[-1]
    weights = model.coef_[0] / scaler.scale_
    intercept = float(model.intercept_[0] - np.dot(weights, scaler.mean_))
    return LearnedFit(
        id=f"fit_{uuid.uuid4().hex[:12]}",
        features=tuple(names[c] for c in columns),
        weights=tuple(float(w) for w in weights),
        intercept=intercept,
    )


def _quality(
    scores: Sequence[float] | Matrix, labels: Sequence[int] | NDArray[np.int64], *, cross_validated: bool
) -> ScoreQuality:
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=int)
    area, ece = auroc(s, y), expected_calibration_error(s, y)
    low = auroc_lower_bound(area, int(y.sum()), int(len(y) - y.sum()))
    return ScoreQuality(
        n=len(y),
        auroc=None if math.isnan(area) else round(area, 4),
        ece=None if math.isnan(ece) else round(ece, 4),
        auroc_low=None if math.isnan(low) else round(low, 4),
        cross_validated=cross_validated,
        roc=roc_points(s, y),
        reliability=[(round(m, 4), round(a, 4), c) for m, a, c in reliability(s, y)] if not math.isnan(ece) else [],
    )


def _shipped(answers: Sequence[LabelledAnswer]) -> dict[str, ScoreQuality]:
    """The scores the gateway ships as they are (the default Trust_OV, each component): nothing fitted."""
    out: dict[str, ScoreQuality] = {}
    with_default = [a for a in answers if a.default is not None]
    if with_default:
        out["ov"] = _quality(
            [float(a.default or 0.0) for a in with_default],
            [int(a.correct) for a in with_default],
            cross_validated=False,
        )
    for name in COMPONENT_FEATURES:
        having = [a for a in answers if name in a.features]
        if having:
            out[name] = _quality(
                [a.features[name] for a in having], [int(a.correct) for a in having], cross_validated=False
            )
    return out


def _free_signals(answers: Sequence[LabelledAnswer], rule: LearningRule) -> dict[str, ScoreQuality]:
    """Signals that are no probability (log-probabilities, length): each calibrated alone, out of fold."""
    out: dict[str, ScoreQuality] = {}
    for name in (f for f in FEATURES if f not in COMPONENT_FEATURES):
        having = [a for a in answers if name in a.features]
        x = np.array([[a.features[name]] for a in having], dtype=float).reshape(len(having), 1)
        y = np.array([int(a.correct) for a in having], dtype=int)
        if having and _folds(y, rule.folds) >= 2 and np.ptp(x) > 0:
            out[name] = _quality(_oof(x, y, [0], _folds(y, rule.folds), rule), y, cross_validated=True)
    return out


def _design(answers: Sequence[LabelledAnswer], rule: LearningRule) -> tuple[list[str], list[int]]:
    """The candidate features (present often enough, not constant) and the answers that have all of them."""
    n = len(answers)
    names = [f for f in FEATURES if sum(f in a.features for a in answers) >= rule.presence * n]
    rows = [i for i, a in enumerate(answers) if all(f in a.features for f in names)]
    varying = [f for f in names if len({answers[i].features[f] for i in rows}) > 1]
    return varying, rows


def _decide(
    n: int, fitted: ScoreQuality | None, default_auroc: float, informative: bool | None, rule: LearningRule
) -> tuple[bool, str]:
    if n < rule.min_labels:
        return False, f"{n} labels: a fit is used from {rule.min_labels} (trustgate.scoring.feedback.min_labels)"
    if fitted is None or fitted.auroc is None:
        return False, "no fit: too few answers of each label, or no feature that varies"
    if informative is False:
        return False, "no score separates right from wrong answers on these labels: a fit would fit noise"
    if fitted.auroc <= default_auroc:
        return False, (
            f"the fit's cross-validated AUROC {fitted.auroc:.3f} does not beat the default "
            f"combination's {default_auroc:.3f} on the same labels"
        )
    return True, (
        f"the fit's cross-validated AUROC {fitted.auroc:.3f} beats the default combination's "
        f"{default_auroc:.3f} on the same labels"
    )


def assess(model: str, answers: Sequence[LabelledAnswer], rule: LearningRule, *, now: float) -> CalibrationReport:
    """The model's report: every score's quality, the fit, and whether new records use it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = {**_shipped(answers), **_free_signals(answers, rule)}
        names, rows = _design(answers, rule)
        x = np.array([[answers[i].features[f] for f in names] for i in rows], dtype=float).reshape(
            len(rows), len(names)
        )
        y = np.array([int(answers[i].correct) for i in rows], dtype=int)
        nested = _nested(x, y, rule) if names else None
        if nested is not None:
            scores["fitted"] = _quality(nested, y, cross_validated=True)
        defaults = [(default, int(answers[i].correct)) for i in rows if (default := answers[i].default) is not None]
        default_auroc = auroc([d for d, _ in defaults], [c for _, c in defaults]) if defaults else math.nan
        positives = sum(a.correct for a in answers)
        informative = (
            any(q.auroc_low is not None and q.auroc_low > 0.5 for q in scores.values())
            if min(positives, len(answers) - positives) >= MIN_PER_LABEL
            else None
        )
        use, reason = _decide(
            len(answers), scores.get("fitted"), 0.5 if math.isnan(default_auroc) else default_auroc, informative, rule
        )
        fit = _final(x, y, names, rule) if use else None
    return CalibrationReport(
        model=model,
        labels=len(answers),
        positives=positives,
        combination="fitted" if fit is not None else "default",
        reason=reason,
        informative=informative,
        fit=fit,
        scores=scores,
        fitted_at=now,
    )
