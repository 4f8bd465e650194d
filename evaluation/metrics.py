"""How well a score predicts a 0/1 correctness label. Pure functions of two arrays.

Pearson's r against binary labels (the point-biserial correlation) is what the
TrustScore paper reports (Table 1). It mixes ranking and scale, so the report
adds rank measures (Spearman, AUROC, AUPRC) and, for scores that claim to be
probabilities, the expected calibration error. Every function returns NaN where
the measure is undefined (a constant score, a single class), never raises, so a
bootstrap resample that happens to be degenerate is skipped rather than fatal.

The measures are scipy's and scikit-learn's; what is ours is the guard that
turns their warnings and errors on degenerate input into NaN, the calibration
error over the reliability bins the report draws, and the bootstrap, which
keeps the resamples where a metric is defined (scipy's ``bootstrap`` gives a
NaN interval when any one is not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import average_precision_score, brier_score_loss, cohen_kappa_score, roc_auc_score, roc_curve

__all__ = [
    "ConfidenceInterval",
    "Metric",
    "ReliabilityBin",
    "auprc",
    "auroc",
    "bootstrap_ci",
    "brier_score",
    "cohen_kappa",
    "expected_calibration_error",
    "pearson",
    "reliability_bins",
    "roc_points",
    "spearman",
]

Metric = Callable[[NDArray[np.float64], NDArray[np.float64]], float]
NAN = float("nan")


def _arrays(scores: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"scores and labels must be 1-d and the same length, got {s.shape} and {y.shape}")
    return s, y


def _both_classes(y: NDArray[np.float64]) -> bool:
    return 0 < y.sum() < len(y)


def _varies(values: NDArray[np.float64]) -> bool:
    return len(values) >= 2 and bool(np.ptp(values) > 0)


def pearson(scores: ArrayLike, labels: ArrayLike) -> float:
    s, y = _arrays(scores, labels)
    return float(pearsonr(s, y).statistic) if _varies(s) and _varies(y) else NAN


def spearman(scores: ArrayLike, labels: ArrayLike) -> float:
    """Pearson's r of the average ranks (ties share their mean rank)."""
    s, y = _arrays(scores, labels)
    return float(spearmanr(s, y).statistic) if _varies(s) and _varies(y) else NAN


def auroc(scores: ArrayLike, labels: ArrayLike) -> float:
    """P(score of a correct answer > score of a wrong one), ties counting half (Mann-Whitney U)."""
    s, y = _arrays(scores, labels)
    return float(roc_auc_score(y, s)) if _both_classes(y) else NAN


def auprc(scores: ArrayLike, labels: ArrayLike) -> float:
    """Average precision: precision at each threshold weighted by the recall it adds (no interpolation)."""
    s, y = _arrays(scores, labels)
    return float(average_precision_score(y, s)) if y.sum() > 0 else NAN


def roc_points(scores: ArrayLike, labels: ArrayLike) -> tuple[list[float], list[float]]:
    """(false positive rates, true positive rates) from (0, 0) through every distinct threshold."""
    s, y = _arrays(scores, labels)
    if not _both_classes(y):
        return [], []
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    return [float(v) for v in fpr], [float(v) for v in tpr]


@dataclass(frozen=True)
class ReliabilityBin:
    low: float
    high: float
    count: int
    mean_score: float
    accuracy: float


def reliability_bins(scores: ArrayLike, labels: ArrayLike, bins: int = 10) -> list[ReliabilityBin]:
    """Equal-width bins over [0, 1] (the last one closed); empty bins are left out."""
    s, y = _arrays(scores, labels)
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.digitize(s, edges[1:-1], right=False), 0, bins - 1)
    return [
        ReliabilityBin(
            float(edges[b]), float(edges[b + 1]), int(inside.sum()), float(s[inside].mean()), float(y[inside].mean())
        )
        for b in range(bins)
        if (inside := index == b).any()
    ]


def expected_calibration_error(scores: ArrayLike, labels: ArrayLike, bins: int = 10) -> float:
    """Σ_bins (n_b / n)·|accuracy_b − mean score_b| over equal-width bins; scores must lie in [0, 1]."""
    s, y = _arrays(scores, labels)
    if len(s) == 0:
        return NAN
    if s.min() < 0.0 or s.max() > 1.0:
        raise ValueError("calibration error needs scores in [0, 1]")
    return float(sum(b.count * abs(b.accuracy - b.mean_score) for b in reliability_bins(s, y, bins)) / len(s))


def brier_score(scores: ArrayLike, labels: ArrayLike) -> float:
    """Mean squared distance between the probability and the 0/1 outcome."""
    s, y = _arrays(scores, labels)
    return float(brier_score_loss(y, s, pos_label=1)) if len(s) else NAN


def cohen_kappa(a: ArrayLike, b: ArrayLike) -> float:
    """Agreement of two 0/1 labelings beyond chance; NaN when chance agreement is total."""
    x, y = _arrays(a, b)
    if len(x) == 0 or (len(np.unique(x)) == 1 and np.array_equal(np.unique(x), np.unique(y))):
        return NAN  # both labelings one and the same class: agreement by chance is total
    return float(cohen_kappa_score(x, y))


@dataclass(frozen=True)
class ConfidenceInterval:
    low: float
    high: float
    resamples: int  # resamples where the metric was defined


def bootstrap_ci(
    metric: Metric, scores: ArrayLike, labels: ArrayLike, *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> ConfidenceInterval:
    """Percentile interval of ``metric`` over item resamples drawn with a seeded generator."""
    s, y = _arrays(scores, labels)
    if len(s) < 2:
        return ConfidenceInterval(NAN, NAN, 0)
    rng = np.random.default_rng(seed)
    values = np.array([metric(s[rows], y[rows]) for rows in rng.integers(0, len(s), (resamples, len(s)))])
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return ConfidenceInterval(NAN, NAN, 0)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return ConfidenceInterval(float(low), float(high), len(values))
