"""A model's learned combination and what its labels say about every score: the seam between fit, store and API.

One ``CalibrationReport`` per model group: written by a refit (the gateway's,
or ``trustgate calibrate``), kept by a fit store (a file under data_dir, or
Redis for replicas), read by the scoring pipeline (which combination a new
record gets) and by ``GET /v1/trust/calibration``, Prometheus and the console.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CalibrationReport", "Combination", "HeldFit", "LearnedFit", "ScoreQuality"]

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
