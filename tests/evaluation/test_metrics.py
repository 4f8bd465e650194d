"""The metric functions against scipy and scikit-learn as oracles, and against values worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import average_precision_score, brier_score_loss, cohen_kappa_score, roc_auc_score, roc_curve

from evaluation.metrics import (
    auprc,
    auroc,
    bootstrap_ci,
    brier_score,
    cohen_kappa,
    expected_calibration_error,
    pearson,
    reliability_bins,
    roc_points,
    spearman,
)

pytestmark = pytest.mark.unit


def cases() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(3)
    found = []
    for size in (5, 40, 300):
        labels = rng.integers(0, 2, size)
        labels[:2] = [0, 1]
        continuous = rng.random(size) + 0.3 * labels
        tied = np.round(continuous * 4) / 4  # few distinct values, like Table 3 cells
        found += [(continuous, labels), (np.clip(tied, 0, 1), labels)]
    return found


@pytest.mark.parametrize(("scores", "labels"), cases())
def test_against_the_oracles(scores: np.ndarray, labels: np.ndarray) -> None:
    assert pearson(scores, labels) == pytest.approx(pearsonr(scores, labels).statistic)
    assert spearman(scores, labels) == pytest.approx(spearmanr(scores, labels).statistic)
    assert auroc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    assert auprc(scores, labels) == pytest.approx(average_precision_score(labels, scores))
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    ours = roc_points(scores, labels)
    assert ours[0] == pytest.approx(fpr.tolist()) and ours[1] == pytest.approx(tpr.tolist())
    probabilities = np.clip(scores, 0, 1)
    assert brier_score(probabilities, labels) == pytest.approx(brier_score_loss(labels, probabilities))


def test_hand_worked_values() -> None:
    scores, labels = [0.9, 0.8, 0.3, 0.2], [1, 0, 1, 0]
    # Pairs (correct, wrong): (0.9, 0.8) ✓ (0.9, 0.2) ✓ (0.3, 0.8) ✗ (0.3, 0.2) ✓ -> 3/4.
    assert auroc(scores, labels) == pytest.approx(0.75)
    # Ranked 0.9 (hit, P=1), 0.8, 0.3 (hit, P=2/3): AP = 0.5·1 + 0.5·2/3.
    assert auprc(scores, labels) == pytest.approx(5 / 6)
    # Point-biserial r = (mean correct − mean wrong)·√(p·q) / sd = (0.6 − 0.5)·0.5 / √0.0925.
    assert pearson(scores, labels) == pytest.approx(0.1 * 0.5 / math.sqrt(0.0925))
    # Two bins: [0.2, 0.3] -> accuracy 0.5, mean 0.25; [0.8, 0.9] -> accuracy 0.5, mean 0.85.
    assert expected_calibration_error(scores, labels, bins=2) == pytest.approx(0.5 * 0.25 + 0.5 * 0.35)
    assert [(b.count, b.accuracy) for b in reliability_bins(scores, labels, bins=2)] == [(2, 0.5), (2, 0.5)]


def test_ece_of_a_calibrated_score_is_zero_and_a_score_of_one_goes_in_the_last_bin() -> None:
    assert expected_calibration_error([0.25] * 4 + [1.0, 1.0], [1, 0, 0, 0, 1, 1], bins=4) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        expected_calibration_error([1.5], [1])


def test_undefined_measures_are_nan_not_errors() -> None:
    assert math.isnan(pearson([0.5, 0.5, 0.5], [0, 1, 1]))
    assert math.isnan(auroc([0.1, 0.2], [1, 1]))
    assert math.isnan(auprc([0.1, 0.2], [0, 0]))
    assert roc_points([0.1, 0.2], [1, 1]) == ([], [])


def test_cohen_kappa_against_sklearn() -> None:
    a, b = [1, 1, 0, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 1, 1, 1]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    scores, labels = cases()[2]
    first = bootstrap_ci(auroc, scores, labels, resamples=300, seed=7)
    assert first == bootstrap_ci(auroc, scores, labels, resamples=300, seed=7)
    assert first.low < auroc(scores, labels) < first.high and first.resamples == 300
    assert bootstrap_ci(auroc, scores, labels, resamples=300, seed=8) != first


def test_bootstrap_skips_degenerate_resamples() -> None:
    interval = bootstrap_ci(auroc, [0.9, 0.1, 0.2, 0.3], [1, 0, 0, 0], resamples=200, seed=0)
    assert 0 < interval.resamples < 200  # resamples without the one correct item have no AUROC
