"""Calibrated probabilities from trust scores: the file the gateway loads, and the object it gets.

A calibration file maps a raw Trust_OV score to the probability that the answer
is correct, as measured on a labeled set by ``trustgate eval``. The gateway
calls ``load_calibration(path)`` once at start-up and ``.probability(score)``
per record (for ``x-trust-probability``). This module only reads, writes and
applies the file, with the standard library: loading it costs the gateway no
scientific imports. Fitting lives in ``fitting.py``.

File format (JSON)::

    {"format": "trustgate-calibration", "version": 1, "method": "isotonic",
     "score": "ov", "x": [0.0, 0.4, 0.8], "y": [0.02, 0.1, 0.6], "fitted_on": {...}}

    {"format": "trustgate-calibration", "version": 1, "method": "platt",
     "score": "ov", "a": 4.2, "b": -2.1, "fitted_on": {...}}

    {"format": "trustgate-calibration", "version": 1, "method": "logistic",
     "score": "ov", "features": ["bc", "fc", "lp_mean"], "weights": [1.2, 0.8, 3.1],
     "intercept": -0.4, "fitted_on": {...}}

Isotonic: piecewise-linear through the (x, y) thresholds, flat beyond the ends
(scikit-learn's ``IsotonicRegression(out_of_bounds="clip").predict``). Platt:
``1 / (1 + exp(-(a·score + b)))``. Logistic: not a map of one score but the
fitted Trust_OV itself, ``1 / (1 + exp(-(w·features + intercept)))`` over the
named component features (``scoring.combine.FEATURES``); it is already a
probability, so its ``probability`` is the identity on the Trust_OV it produced.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "FORMAT",
    "CalibrationError",
    "Calibrator",
    "IsotonicCalibrator",
    "LogisticCombination",
    "PlattCalibrator",
    "component_names",
    "fitted_components",
    "load_calibration",
    "save_calibration",
]

FORMAT = "trustgate-calibration"
VERSION = 1


class CalibrationError(ValueError):
    """A calibration file is missing, malformed or of an unknown method."""


class Calibrator(Protocol):
    """Raw score (which component: ``score``) -> probability that the answer is correct."""

    @property
    def score(self) -> str: ...

    @property
    def fitted_on(self) -> dict[str, Any]:
        """What the evaluation measured: dataset, mode, model, components ("bc+fc"), ..."""

    def probability(self, score: float) -> float: ...

    def to_json(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class IsotonicCalibrator:
    x: tuple[float, ...]  # increasing score thresholds
    y: tuple[float, ...]  # non-decreasing probabilities at those thresholds
    score: str = "ov"
    fitted_on: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.x or len(self.x) != len(self.y):
            raise CalibrationError("isotonic calibration needs as many y as x thresholds, at least one")
        if any(b < a for a, b in itertools.pairwise(self.x)) or any(b < a for a, b in itertools.pairwise(self.y)):
            raise CalibrationError("isotonic thresholds must be non-decreasing")
        if not all(0.0 <= p <= 1.0 for p in self.y):
            raise CalibrationError("isotonic probabilities must lie in [0, 1]")

    def probability(self, score: float) -> float:
        x, y = self.x, self.y
        if score <= x[0]:
            return y[0]
        if score >= x[-1]:
            return y[-1]
        right = bisect.bisect_right(x, score)
        x0, x1, y0, y1 = x[right - 1], x[right], y[right - 1], y[right]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (score - x0) / (x1 - x0)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "method": "isotonic",
            "score": self.score,
            "x": list(self.x),
            "y": list(self.y),
            "fitted_on": self.fitted_on,
        }


@dataclass(frozen=True)
class PlattCalibrator:
    a: float
    b: float
    score: str = "ov"
    fitted_on: dict[str, Any] = field(default_factory=dict, compare=False)

    def probability(self, score: float) -> float:
        return _sigmoid(self.a * score + self.b)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "method": "platt",
            "score": self.score,
            "a": self.a,
            "b": self.b,
            "fitted_on": self.fitted_on,
        }


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass(frozen=True)
class LogisticCombination:
    """A fitted Trust_OV: logistic regression over named component features (``combine: fitted``)."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    score: str = "ov"
    fitted_on: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.features or len(self.features) != len(self.weights):
            raise CalibrationError("a logistic combination needs one weight per feature, at least one")

    def combined(self, values: dict[str, float]) -> float:
        """P(correct) from the feature values (every named feature must be there)."""
        return _sigmoid(
            self.intercept + sum(w * values[name] for name, w in zip(self.features, self.weights, strict=True))
        )

    def probability(self, score: float) -> float:
        return score  # the fitted Trust_OV is already the probability

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "method": "logistic",
            "score": self.score,
            "features": list(self.features),
            "weights": list(self.weights),
            "intercept": self.intercept,
            "fitted_on": self.fitted_on,
        }


def component_names(named: Any) -> frozenset[str] | None:
    """{"bc", "fc"} from "bc+fc" (how ``trustgate eval`` and Trust_OV's ``source`` write them) or from a list.

    None for anything else, or nothing named.
    """
    if isinstance(named, str):
        names = named.split("+")
    elif isinstance(named, (list, tuple)):
        names = [str(name) for name in named]
    else:
        return None
    return frozenset(name.strip() for name in names if name.strip()) or None


def fitted_components(calibrator: Calibrator) -> frozenset[str] | None:
    """The scorers whose Trust_OV the calibration was fitted on, None when the file does not say."""
    return component_names(calibrator.fitted_on.get("components"))


def _finite(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number


def _from_json(data: Any) -> Calibrator:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CalibrationError(f"not a {FORMAT} file")
    if data.get("version") != VERSION:
        raise CalibrationError(f"unsupported calibration version {data.get('version')!r}")
    fitted_on = data.get("fitted_on") or {}
    if not isinstance(fitted_on, dict):
        raise CalibrationError("malformed calibration: fitted_on must be an object")
    score, fitted = str(data.get("score", "ov")), dict(fitted_on)
    try:
        if data.get("method") == "isotonic":
            return IsotonicCalibrator(tuple(map(_finite, data["x"])), tuple(map(_finite, data["y"])), score, fitted)
        if data.get("method") == "platt":
            return PlattCalibrator(_finite(data["a"]), _finite(data["b"]), score, fitted)
        if data.get("method") == "logistic":
            return LogisticCombination(
                tuple(str(f) for f in data["features"]),
                tuple(map(_finite, data["weights"])),
                _finite(data["intercept"]),
                score,
                fitted,
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise CalibrationError(f"malformed calibration: {exc}") from exc
    raise CalibrationError(f"unknown calibration method {data.get('method')!r}")


def load_calibration(path: str | Path) -> Calibrator:
    """Read a calibration file written by ``trustgate eval --calibration-out``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"cannot read calibration {path}: {exc}") from exc
    return _from_json(data)


def save_calibration(calibrator: Calibrator, path: str | Path) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(calibrator.to_json(), indent=2) + "\n", encoding="utf-8")
    partial.replace(target)
