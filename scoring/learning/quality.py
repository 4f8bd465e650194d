"""How well a score predicts correctness, as the calibration report shows it. Pure functions of two arrays.

AUROC ranks (correct above wrong, ties counting half); ECE is the mean gap
between a probability and the observed accuracy over ten equal-width bins.
Both are NaN where undefined (one label only, no items) rather than raising, so
a model with few labels still gets a report that says why it has no figures.

The "informative" rule: a score separates right from wrong answers when the
lower end of its AUROC's 95% interval lies above 0.5; with fewer than
``MIN_PER_LABEL`` answers of either label nothing is said either way. The interval is Hanley
and McNeil's (1982) normal approximation of the AUROC's standard error, in
closed form: a bootstrap per score per refit would cost more than the fit.
With 25 right and 25 wrong answers that needs an AUROC of about 0.66; with 500
of each, about 0.54.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.metrics import roc_auc_score, roc_curve

__all__ = [
    "MAX_ROC_POINTS",
    "MIN_PER_LABEL",
    "auroc",
    "auroc_lower_bound",
    "expected_calibration_error",
    "reliability",
    "roc_points",
]

NAN = float("nan")
MAX_ROC_POINTS = 50  # enough for a chart; a report per model must stay small (it lives in Redis)
BINS = 10
MIN_PER_LABEL = 5  # right and wrong answers each, before a model is called informative or not


def _arrays(scores: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)


def _both(y: NDArray[np.float64]) -> bool:
    return 0 < y.sum() < len(y)


def auroc(scores: ArrayLike, labels: ArrayLike) -> float:
    s, y = _arrays(scores, labels)
    return float(roc_auc_score(y, s)) if _both(y) else NAN


def auroc_lower_bound(area: float, positives: int, negatives: int) -> float:
    """The lower end of the AUROC's 95% interval (Hanley & McNeil's standard error)."""
    if math.isnan(area) or positives < 1 or negatives < 1:
        return NAN
    edge = 0.5 / (positives * negatives)  # a perfect split of a handful of answers is not certainty
    area = min(max(area, edge), 1 - edge)
    q1, q2 = area / (2 - area), 2 * area * area / (1 + area)
    variance = (area * (1 - area) + (positives - 1) * (q1 - area * area) + (negatives - 1) * (q2 - area * area)) / (
        positives * negatives
    )
    return area - 1.96 * math.sqrt(max(variance, 0.0))


def _bin_index(s: NDArray[np.float64]) -> NDArray[np.int64]:
    edges = np.linspace(0.0, 1.0, BINS + 1)
    return np.clip(np.digitize(s, edges[1:-1]), 0, BINS - 1).astype(np.int64)


def reliability(scores: ArrayLike, labels: ArrayLike) -> list[tuple[float, float, int]]:
    """(mean score, accuracy, count) per non-empty bin of [0, 1]: the reliability chart's points."""
    s, y = _arrays(scores, labels)
    index = _bin_index(s)
    return [
        (float(s[inside].mean()), float(y[inside].mean()), int(inside.sum()))
        for b in range(BINS)
        if (inside := index == b).any()
    ]


def expected_calibration_error(scores: ArrayLike, labels: ArrayLike) -> float:
    """Σ (n_b / n)·|accuracy_b − mean score_b|; NaN with no items or a score outside [0, 1]."""
    s, y = _arrays(scores, labels)
    if len(s) == 0 or s.min() < 0.0 or s.max() > 1.0:
        return NAN
    return sum(count * abs(accuracy - mean) for mean, accuracy, count in reliability(s, y)) / len(s)


def roc_points(scores: ArrayLike, labels: ArrayLike) -> list[tuple[float, float]]:
    """(false positive rate, true positive rate) from (0, 0) to (1, 1), thinned to ``MAX_ROC_POINTS``."""
    s, y = _arrays(scores, labels)
    if not _both(y):
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fpr, tpr, _ = roc_curve(y, s)
    keep = np.unique(np.linspace(0, len(fpr) - 1, min(len(fpr), MAX_ROC_POINTS)).round().astype(int))
    return [(round(float(fpr[i]), 4), round(float(tpr[i]), 4)) for i in keep]
