"""Fit a calibrator of a trust score on labeled items (scikit-learn), and split items to do it honestly.

The calibrator is fitted on one part of the labeled items and judged on the
other, so the report's "after calibration" figures are out-of-sample. Isotonic
regression is the default: monotone, no shape assumed, and with few distinct
scores (Trust_OV's Table 3 has six cells) it amounts to the observed accuracy
per cell, pooled where the order would be violated. Platt scaling (a logistic
fit) is the alternative for small sets, where isotonic steps overfit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from scoring import Calibrator, IsotonicCalibrator, LogisticCombination, PlattCalibrator

from .metrics import brier_score, expected_calibration_error

__all__ = [
    "CalibrationStudy",
    "Method",
    "calibration_study",
    "cross_validated_combination",
    "fit_calibrator",
    "fit_combination",
    "split_indices",
]

Method = Literal["isotonic", "platt", "logistic"]
COMBINATION_C = 1.0  # L2 strength of the fitted Trust_OV: a handful of features, a hundred-odd items


def fit_calibrator(
    scores: Sequence[float],
    labels: Sequence[int],
    *,
    method: Method = "isotonic",
    score: str = "ov",
    fitted_on: dict[str, Any] | None = None,
) -> Calibrator:
    x, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    if len(x) < 2 or len(set(y.tolist())) < 2:
        raise ValueError("calibration needs at least two items and both labels")
    about = {**(fitted_on or {}), "items": len(x), "positives": int(y.sum())}
    if method == "platt":
        model = LogisticRegression(C=1e6).fit(x.reshape(-1, 1), y)
        return PlattCalibrator(float(model.coef_[0][0]), float(model.intercept_[0]), score=score, fitted_on=about)
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(x, y)
    return IsotonicCalibrator(
        tuple(iso.X_thresholds_.tolist()), tuple(iso.y_thresholds_.tolist()), score=score, fitted_on=about
    )


def split_indices(labels: Sequence[int], fit_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """A seeded (fit, held-out) partition of the item positions, stratified by label.

    Stratified because correct answers can be rare (a small model gets few
    right): an unstratified split could leave one side with none.
    """
    rng = np.random.default_rng(seed)
    fit: list[int] = []
    for label in sorted(set(labels)):
        members = rng.permutation([i for i, value in enumerate(labels) if value == label]).tolist()
        fit += members[: round(len(members) * fit_fraction)]
    chosen = set(fit)
    return sorted(fit), [i for i in range(len(labels)) if i not in chosen]


@dataclass(frozen=True)
class CalibrationStudy:
    """A calibrator fitted on one part of the items, and how it does on the other part."""

    calibrator: Calibrator | None  # None when the fit part lacked one of the labels
    fit_items: int
    held_out_items: int
    held_out_scores: list[float]  # raw, for the reliability diagram
    held_out_probabilities: list[float]
    held_out_labels: list[int]
    reason: str | None = None

    def figures(self) -> dict[str, Any]:
        """Held-out ECE and Brier score, raw and calibrated."""
        if self.calibrator is None or not self.held_out_labels:
            return {}
        raw, calibrated, y = self.held_out_scores, self.held_out_probabilities, self.held_out_labels
        return {
            "ece_raw": expected_calibration_error(raw, y),
            "ece_calibrated": expected_calibration_error(calibrated, y),
            "brier_raw": brier_score(raw, y),
            "brier_calibrated": brier_score(calibrated, y),
        }


def calibration_study(
    scores: Sequence[float],
    labels: Sequence[int],
    *,
    method: Method,
    fit_fraction: float,
    seed: int,
    score: str = "ov",
    fitted_on: dict[str, Any] | None = None,
) -> CalibrationStudy:
    fit, held = split_indices(labels, fit_fraction, seed)
    fit_labels = [labels[i] for i in fit]
    if len(set(fit_labels)) < 2:
        return CalibrationStudy(None, len(fit), len(held), [], [], [], reason="the fit split has only one label")
    calibrator = fit_calibrator([scores[i] for i in fit], fit_labels, method=method, score=score, fitted_on=fitted_on)
    raw = [float(scores[i]) for i in held]
    return CalibrationStudy(
        calibrator, len(fit), len(held), raw, [calibrator.probability(s) for s in raw], [int(labels[i]) for i in held]
    )


def _standardised_logistic() -> Pipeline:
    """Logistic regression on standardised features.

    The features live on different scales (Trust_BC and Trust_FC in [0, 1],
    mean log-probabilities around -1, minimum ones down to -10 and below), and
    one L2 penalty over raw weights shrinks a small-scale feature's weight far
    more than a large-scale one's: on the capitals run that cost the fit most of
    lp's ranking. Standardised, each feature is penalised alike.
    """
    return make_pipeline(StandardScaler(), LogisticRegression(C=COMBINATION_C, max_iter=1000))


def fit_combination(
    rows: Sequence[Sequence[float]],
    labels: Sequence[int],
    features: Sequence[str],
    *,
    fitted_on: dict[str, Any] | None = None,
) -> LogisticCombination:
    """The fitted Trust_OV: a logistic regression of correctness on the component features, all items.

    Fitted on standardised features, stored as weights on the raw ones
    (``w / sd``, the intercept taking ``-sum(w * mean / sd)``), so the
    gateway applies it to a record's features as they are.
    """
    x, y = np.asarray(rows, dtype=float), np.asarray(labels, dtype=int)
    if len(x) < 4 or len(set(y.tolist())) < 2:
        raise ValueError("a fitted combination needs at least four items and both labels")
    pipeline = _standardised_logistic().fit(x, y)
    scaler, model = pipeline[0], pipeline[-1]
    weights = model.coef_[0] / scaler.scale_
    intercept = float(model.intercept_[0] - np.dot(weights, scaler.mean_))
    about = {**(fitted_on or {}), "items": len(x), "positives": int(y.sum()), "standardised": True}
    return LogisticCombination(tuple(features), tuple(float(w) for w in weights), intercept, fitted_on=about)


def cross_validated_combination(
    rows: Sequence[Sequence[float]], labels: Sequence[int], *, folds: int = 5, seed: int = 0
) -> list[float] | None:
    """Each item's fitted Trust_OV from a fit on the other folds (stratified): honest figures for the report.

    None when a fold could not see both labels.
    """
    x, y = np.asarray(rows, dtype=float), np.asarray(labels, dtype=int)
    if min(int(y.sum()), int(len(y) - y.sum())) < folds:
        return None
    predictions = np.zeros(len(y))
    for fit, held in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(x, y):
        predictions[held] = _standardised_logistic().fit(x[fit], y[fit]).predict_proba(x[held])[:, 1]
    return predictions.tolist()
