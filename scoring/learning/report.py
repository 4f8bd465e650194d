"""A model's learned combination and what its labels say about every score: the seam between fit, store and API.

One ``CalibrationReport`` per fit (a model group's shared one, or a key's own):
written by a refit (the gateway's, or ``trustgate calibrate``), kept by a fit
store beside the labels it was learned from (the SQLite record store's
database, or Redis for replicas), read by the scoring pipeline (which
combination a new record gets) and by ``GET /v1/trust/calibration``,
Prometheus and the console.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CalibrationReport", "Combination", "HeldFit", "LearnedFit", "ScoreQuality", "Standing"]

Combination = Literal["default", "fitted"]


class LearnedFit(BaseModel):
    """A fitted Trust_OV: a logistic regression over named features, weights on the features as they are read."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str  # names the fit on every record it scored
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float

    def probability(self, values: Mapping[str, float]) -> float:
        """P(correct) from the feature values; every feature the fit uses must be there."""
        z = self.intercept + sum(w * values[name] for name, w in zip(self.features, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


class ScoreQuality(BaseModel):
    """How one score did on the model's labels: AUROC, ECE and the points of its two charts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int  # the labelled answers that had this score
    auroc: float | None  # None: undefined (one label only)
    ece: float | None  # None: not a probability (a free signal read raw) or no items
    auroc_low: float | None = None  # lower end of the AUROC's 95% interval (scoring.learning.quality)
    cross_validated: bool  # False: a score the gateway ships as it is, so there was nothing to fit
    roc: list[tuple[float, float]] = Field(default_factory=list)
    reliability: list[tuple[float, float, int]] = Field(default_factory=list)  # (mean score, accuracy, count)


class HeldFit(BaseModel):
    """A refit's report the refit guard held back (``scoring.learning.guard``): not served until the operator
    accepts it (``POST /v1/trust/calibration/accept``, ``trustgate calibrate --accept``)."""

    model_config = ConfigDict(extra="forbid")

    reason: str  # why it was held, in words
    report: CalibrationReport


class CalibrationReport(BaseModel):
    """What a model's labels say, and which combination its new records get."""

    model_config = ConfigDict(extra="forbid")

    model: str
    # None: the model's shared fit, from the labellers' labels; a key's name: that key's own (feedback.scope: key)
    key: str | None = None
    labels: int
    positives: int  # labelled correct
    combination: Combination
    reason: str  # why that combination, in words
    informative: bool | None  # some score separates right from wrong answers (quality.py's rule); None: too few
    fit: LearnedFit | None = None  # set when combination is "fitted"
    scores: dict[str, ScoreQuality] = Field(default_factory=dict)  # "ov" (the default), "fitted", "bc", "lp", ...
    fitted_at: float
    held: HeldFit | None = None  # a newer fit, held for the operator; this report stays in use meanwhile

    def auroc(self) -> dict[str, float | None]:
        return {name: quality.auroc for name, quality in self.scores.items()}

    def ece(self) -> dict[str, float | None]:
        return {name: quality.ece for name, quality in self.scores.items()}


HeldFit.model_rebuild()  # it holds a CalibrationReport, defined after it


def _labels(count: int) -> str:
    return f"{count} label{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Standing:
    """A model's calibration as it stands: the labels its records carry now, and its last refit's report (None:
    no refit yet). Listed from the first label, so that a user sees its scores rest on the default combination
    and why, long before a refit has anything to say."""

    model: str
    labels: int  # labelled records in the record store now that teach this fit
    positives: int  # of them, labelled correct
    report: CalibrationReport | None
    min_labels: int  # trustgate.scoring.feedback.min_labels
    refit_every: int  # trustgate.scoring.feedback.refit_every
    learns: bool = True  # trustgate.scoring.feedback.learn
    key: str | None = None  # None: the model's shared fit; a key's name: that key's own (feedback.scope: key)

    @property
    def combination(self) -> Combination:
        return self.report.combination if self.report is not None else "default"

    @property
    def informative(self) -> bool | None:
        return self.report.informative if self.report is not None else None

    @property
    def reason(self) -> str:
        """Why new records get the combination they get: the last refit's reason, unless labels came since."""
        labels = _labels(self.labels)
        if not self.learns:
            return f"{labels}; learning from labels is off (trustgate.scoring.feedback.learn: false)"
        report = self.report
        if report is not None and (report.combination == "fitted" or self.labels <= report.labels):
            return report.reason
        if self.labels < self.min_labels:
            return f"{labels}; a fit needs {self.min_labels}"
        return (
            f"{labels}: enough for a fit, which the next refit tries (every {self.refit_every} new labels, "
            "or trustgate calibrate)"
        )
