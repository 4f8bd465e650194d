"""A model's calibration as it stands: listed from its first label, its combination and why, before any refit."""

from __future__ import annotations

import pytest

from scoring.learning.report import CalibrationReport, Standing

pytestmark = pytest.mark.unit


def report(labels: int, *, fitted: bool = False, reason: str = "the refit's reason") -> CalibrationReport:
    return CalibrationReport(
        model="m",
        labels=labels,
        positives=labels // 2,
        combination="fitted" if fitted else "default",
        reason=reason,
        informative=True if fitted else None,
        fitted_at=1.0,
    )


def standing(labels: int, last: CalibrationReport | None = None, *, learns: bool = True) -> Standing:
    return Standing("m", labels, labels // 2, last, min_labels=50, refit_every=25, learns=learns)


def test_before_any_refit_the_default_and_how_many_labels_a_fit_needs() -> None:
    first = standing(1)
    assert (first.combination, first.reason, first.informative) == ("default", "1 label; a fit needs 50", None)
    assert standing(12).reason == "12 labels; a fit needs 50"
    assert standing(60).reason.startswith("60 labels: enough for a fit, which the next refit tries (every 25")


def test_the_last_refits_reason_until_labels_come_after_it() -> None:
    early = report(25, reason="25 labels: a fit is used from 50")
    assert standing(25, early).reason == "25 labels: a fit is used from 50"
    assert standing(30, early).reason == "30 labels; a fit needs 50"
    fitted = report(60, fitted=True, reason="it beats the default")
    assert standing(70, fitted).reason == "it beats the default" and standing(70, fitted).combination == "fitted"
    assert standing(10, report(60)).reason == "the refit's reason"  # labels expired since: the refit still stands


def test_with_learning_off_it_says_so() -> None:
    assert (
        standing(3, learns=False).reason
        == "3 labels; learning from labels is off (trustgate.scoring.feedback.learn: false)"
    )
