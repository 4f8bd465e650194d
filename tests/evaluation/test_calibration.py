"""Calibration: fit, save, load, and the loaded calibrator gives what scikit-learn's fitted model gives."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from evaluation.fitting import calibration_study, fit_calibrator, split_indices
from scoring.calibration import (
    CalibrationError,
    IsotonicCalibrator,
    fitted_components,
    load_calibration,
    save_calibration,
)

pytestmark = pytest.mark.unit

# Trust_OV-like scores: the six Table 3 cells, correct more often in the higher cells.
RNG = np.random.default_rng(11)
SCORES = RNG.choice([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], 400)
LABELS = (RNG.random(400) < 0.1 + 0.8 * SCORES).astype(int)
GRID = np.linspace(-0.2, 1.2, 57)


def test_isotonic_round_trip_matches_sklearn(tmp_path: Path) -> None:
    calibrator = fit_calibrator(SCORES, LABELS, fitted_on={"dataset": "test"})
    save_calibration(calibrator, tmp_path / "calibration.json")
    loaded = load_calibration(tmp_path / "calibration.json")
    assert loaded == calibrator and loaded.fitted_on == {"dataset": "test", "items": 400, "positives": LABELS.sum()}
    oracle = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(SCORES, LABELS)
    assert [loaded.probability(s) for s in GRID] == pytest.approx(oracle.predict(GRID).tolist())
    ours = [loaded.probability(s) for s in sorted(GRID)]
    assert ours == sorted(ours)  # monotone


def test_platt_round_trip_matches_sklearn(tmp_path: Path) -> None:
    calibrator = fit_calibrator(SCORES, LABELS, method="platt")
    save_calibration(calibrator, tmp_path / "platt.json")
    loaded = load_calibration(tmp_path / "platt.json")
    oracle = LogisticRegression(C=1e6).fit(SCORES.reshape(-1, 1), LABELS)
    assert [loaded.probability(s) for s in GRID] == pytest.approx(oracle.predict_proba(GRID.reshape(-1, 1))[:, 1])
    assert loaded.probability(-1e6) == pytest.approx(0.0) and loaded.probability(1e6) == pytest.approx(1.0)


def test_the_file_format_is_plain_json(tmp_path: Path) -> None:
    save_calibration(IsotonicCalibrator((0.0, 0.5, 1.0), (0.1, 0.3, 0.9)), tmp_path / "c.json")
    data = json.loads((tmp_path / "c.json").read_text())
    assert data == {
        "format": "trustgate-calibration",
        "version": 1,
        "method": "isotonic",
        "score": "ov",
        "x": [0.0, 0.5, 1.0],
        "y": [0.1, 0.3, 0.9],
        "fitted_on": {},
    }
    assert load_calibration(tmp_path / "c.json").probability(0.75) == pytest.approx(0.6)


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        '{"format": "other"}',
        '{"format": "trustgate-calibration", "version": 2}',
        '{"format": "trustgate-calibration", "version": 1, "method": "spline"}',
        '{"format": "trustgate-calibration", "version": 1, "method": "isotonic", "x": [0, 1], "y": [0.9, 0.1]}',
        '{"format": "trustgate-calibration", "version": 1, "method": "platt", "a": 1}',
        '{"format": "trustgate-calibration", "version": 1, "method": "platt", "a": NaN, "b": 0}',
        '{"format": "trustgate-calibration", "version": 1, "method": "isotonic", "x": [0, Infinity], "y": [0, 1]}',
        '{"format": "trustgate-calibration", "version": 1, "method": "platt", "a": 1, "b": 0, "fitted_on": "bc+fc"}',
    ],
)
def test_bad_files_are_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / "bad.json").write_text(content)
    with pytest.raises(CalibrationError):
        load_calibration(tmp_path / "bad.json")
    with pytest.raises(CalibrationError, match="cannot read"):
        load_calibration(tmp_path / "missing.json")


def test_stratified_split_and_out_of_sample_study() -> None:
    labels = [1] * 6 + [0] * 94
    fit, held = split_indices(labels, 0.5, seed=3)
    assert sorted(fit + held) == list(range(100)) and not set(fit) & set(held)
    assert sum(labels[i] for i in fit) == 3 == sum(labels[i] for i in held)  # rare positives on both sides
    study = calibration_study(SCORES.tolist(), LABELS.tolist(), method="isotonic", fit_fraction=0.5, seed=0)
    assert (study.fit_items, study.held_out_items) == (200, 200)
    figures = study.figures()
    assert figures["brier_calibrated"] <= figures["brier_raw"] and figures["ece_calibrated"] < 0.1


def test_a_single_label_split_fits_nothing() -> None:
    study = calibration_study([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], method="isotonic", fit_fraction=0.5, seed=0)
    assert study.calibrator is None and study.reason and study.figures() == {}


def test_the_committed_report_calibration_loads() -> None:
    """docs/eval ships a calibration file as the format's example: it must stay loadable."""
    path = Path(__file__).resolve().parents[2] / "docs" / "eval" / "mixedqa-given-fc" / "calibration.json"
    calibrator = load_calibration(path)
    assert calibrator.score == "ov" and calibrator.fitted_on["components"] == "fc"
    assert all(0.0 <= calibrator.probability(score) <= 1.0 for score in (0.0, 0.5, 1.0))


@pytest.mark.parametrize(
    ("fitted_on", "components"),
    [
        ({"components": "bc+fc"}, {"bc", "fc"}),
        ({"components": ["fc"]}, {"fc"}),
        ({}, None),
        ({"components": 3}, None),
    ],
)
def test_the_fitted_components_are_read_from_either_spelling(
    fitted_on: dict[str, object], components: set[str] | None
) -> None:
    calibrator = IsotonicCalibrator((0.0, 1.0), (0.0, 1.0), fitted_on=fitted_on)
    assert fitted_components(calibrator) == (frozenset(components) if components is not None else None)


def test_the_fitted_combination_round_trips_and_predicts_as_sklearn(tmp_path: Path) -> None:
    from evaluation.fitting import COMBINATION_C, cross_validated_combination, fit_combination

    rows = np.column_stack([SCORES, RNG.random(400), -3 * RNG.random(400)])
    model = fit_combination(rows.tolist(), LABELS.tolist(), ("bc", "fc", "lp_mean"), fitted_on={"dataset": "test"})
    save_calibration(model, tmp_path / "fitted.json")
    loaded = load_calibration(tmp_path / "fitted.json")
    assert loaded == model and json.loads((tmp_path / "fitted.json").read_text())["method"] == "logistic"
    scaled = (rows - rows.mean(axis=0)) / rows.std(axis=0)  # fitted standardised, stored on the raw scale
    oracle = LogisticRegression(C=COMBINATION_C, max_iter=1000).fit(scaled, LABELS)
    expected = oracle.predict_proba(scaled[:20])[:, 1]
    got = [model.combined(dict(zip(("bc", "fc", "lp_mean"), row, strict=True))) for row in rows[:20].tolist()]
    assert got == pytest.approx(expected.tolist(), abs=1e-6)
    assert loaded.probability(0.37) == 0.37  # the fitted Trust_OV is already a probability
    held_out = cross_validated_combination(rows.tolist(), LABELS.tolist())
    in_sample = [model.combined(dict(zip(("bc", "fc", "lp_mean"), r, strict=True))) for r in rows.tolist()]
    assert held_out is not None and len(held_out) == 400 and held_out != pytest.approx(in_sample)  # other folds' fits
    assert cross_validated_combination([[0.0]] * 6, [1, 1, 1, 1, 1, 0]) is None  # a fold would lack a label
