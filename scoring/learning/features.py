"""What a learned Trust_OV may read from a scored answer: one typed place for every feature. Pure functions.

A feature is a number the gateway holds for an answer at no extra cost: the
components that ran (Trust_BC, Trust_FC, ``lp``, sampled agreement ``sc``) and
the free signals beside them (the answer's mean and least token
log-probability, its length). Each is read from the record's components and
its answer text, so the same function serves the pipeline (a job being scored)
and the learner (labelled records read back from the store). A feature a
record does not have is None, never a zero: the answer's log-probabilities may
be missing, a scorer may have failed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from ..types import ComponentResult, LPDetails, TrustRecord

__all__ = ["COMPONENT_FEATURES", "FEATURES", "FeatureVector", "features_of", "record_features"]

Components = Mapping[str, ComponentResult]
FeatureVector = dict[str, float]  # name -> value, only the features the answer has


def _value(name: str) -> Callable[[Components, str], float | None]:
    def read(components: Components, answer: str) -> float | None:
        result = components.get(name)
        if result is None or result.error is not None or result.value is None:
            return None
        return float(result.value)

    return read


def _lp_detail(field: str) -> Callable[[Components, str], float | None]:
    def read(components: Components, answer: str) -> float | None:
        result = components.get("lp")
        details = result.details if result is not None else None
        value = getattr(details, field, None) if isinstance(details, LPDetails) else None
        return None if value is None or not math.isfinite(value) else float(value)

    return read


def _length(components: Components, answer: str) -> float | None:
    """log(1 + words): long answers ramble more, and a log keeps one essay from dominating a linear fit."""
    words = len(answer.split())
    return math.log1p(words) if words else None


# The order is the report's: components first, then free signals.
FEATURES: dict[str, Callable[[Components, str], float | None]] = {
    "bc": _value("bc"),
    "fc": _value("fc"),
    "sc": _value("sc"),
    "lp": _value("lp"),  # exp(mean token log-probability)
    "lp_mean": _lp_detail("mean_logprob"),
    "lp_min": _lp_detail("min_logprob"),
    "length": _length,
}
COMPONENT_FEATURES = ("bc", "fc", "sc", "lp")  # those the gateway ships as scores in [0, 1]


def features_of(components: Components, answer: str | None) -> FeatureVector:
    """Every feature the answer has, by name."""
    values = {name: read(components, answer or "") for name, read in FEATURES.items()}
    return {name: value for name, value in values.items() if value is not None}


def record_features(record: TrustRecord) -> FeatureVector:
    return features_of(record.components, record.answer)
