"""Calibration reports as a refit writes them, for tests that need a model's labels to have said something."""

from __future__ import annotations

from scoring.learning.report import CalibrationReport, LearnedFit


def calibration_report(model: str, *, informative: bool | None, fit: LearnedFit | None = None) -> CalibrationReport:
    """A report on 60 labels, half right: the default combination, or ``fit`` in use."""
    return CalibrationReport(
        model=model,
        labels=60,
        positives=30,
        combination="default" if fit is None else "fitted",
        reason="a refit's reason",
        informative=informative,
        fit=fit,
        fitted_at=1.0,
    )
