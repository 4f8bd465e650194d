"""What a learned Trust_OV may read from a scored answer: one typed place for every feature. Pure functions.

A feature is a number the gateway holds for an answer at no extra cost: the
components that ran (Trust_BC, Trust_FC, ``lp``, sampled agreement ``sc``) and
the free signals beside them (the answer's mean and least token
log-probability, its length). Each is read from the record's components, its
answer text and its claims' own checks, so the same function serves the
pipeline (a job being scored) and the learner (labelled records read back from
the store). A feature a record does not have is None, never a zero: the
answer's log-probabilities may be missing, a scorer may have failed.

Evidence agreement (``ev``) abstains on most answers that are not short facts,
and its abstention is a reading of its own, not a missing feature: ``ev`` reads
an abstention as 0.5 (the evidence says nothing either way) and ``ev_spoke``
says whether it agreed or contradicted (1) or abstained (0). Both are absent
only where ``ev`` did not run or failed. So a fit on a model whose judge is
weak can lean on the evidence where it speaks and on the rest where it does
not, and a fit on a model whose judge is strong finds ``ev`` constant where it
never speaks and leaves it out.

An answer checked claim by claim has Trust_BC, Trust_FC and ``ev`` of its
lowest claim as its components; ``bc_mean``, ``fc_mean`` and ``ev_mean``
average every checked claim's, and ``claims`` counts them, so a fit for a
model whose judge is strong can lean on the judge across all the claims, not
only the worst. An answer checked whole is its one claim: its means are its
components' values and its count is 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..types import ComponentResult, LPDetails, TrustRecord

__all__ = ["COMPONENT_FEATURES", "FEATURES", "FeatureVector", "ScoredAnswer", "features_of", "record_features"]

Components = Mapping[str, ComponentResult]
FeatureVector = dict[str, float]  # name -> value, only the features the answer has


@dataclass(frozen=True)
class ScoredAnswer:
    """What the features are read from: the answer's components, its text, and each checked claim's own
    components (none: the answer was checked whole)."""

    components: Components
    answer: str
    claims: Sequence[Components] = ()


def _usable(result: ComponentResult | None) -> float | None:
    if result is None or result.error is not None or result.value is None:
        return None
    return float(result.value)


def _evidence(result: ComponentResult | None) -> float | None:
    """``ev``'s value, an abstention read as 0.5; None where it did not run or failed."""
    if result is None or result.error is not None:
        return None
    return 0.5 if result.value is None else float(result.value)


def _ev(scored: ScoredAnswer) -> float | None:
    return _evidence(scored.components.get("ev"))


def _ev_spoke(scored: ScoredAnswer) -> float | None:
    """1 where ``ev`` agreed or contradicted, 0 where it abstained (on every claim, for one checked by claim)."""
    result = scored.components.get("ev")
    if result is None or result.error is not None:
        return None
    return 0.0 if result.value is None else 1.0


def _ev_mean(scored: ScoredAnswer) -> float | None:
    if not scored.claims:
        return _ev(scored)
    values = [value for claim in scored.claims if (value := _evidence(claim.get("ev"))) is not None]
    return sum(values) / len(values) if values else None


def _value(name: str) -> Callable[[ScoredAnswer], float | None]:
    def read(scored: ScoredAnswer) -> float | None:
        return _usable(scored.components.get(name))

    return read


def _claims_mean(name: str) -> Callable[[ScoredAnswer], float | None]:
    def read(scored: ScoredAnswer) -> float | None:
        if not scored.claims:
            return _usable(scored.components.get(name))
        values = [value for claim in scored.claims if (value := _usable(claim.get(name))) is not None]
        return sum(values) / len(values) if values else None

    return read


def _claims(scored: ScoredAnswer) -> float | None:
    """How many claims were checked (1: the answer whole)."""
    return float(len(scored.claims) or 1) if scored.answer.strip() else None


def _lp_detail(field: str) -> Callable[[ScoredAnswer], float | None]:
    def read(scored: ScoredAnswer) -> float | None:
        result = scored.components.get("lp")
        details = result.details if result is not None else None
        value = getattr(details, field, None) if isinstance(details, LPDetails) else None
        return None if value is None or not math.isfinite(value) else float(value)

    return read


def _length(scored: ScoredAnswer) -> float | None:
    """log(1 + words): long answers ramble more, and a log keeps one essay from dominating a linear fit."""
    words = len(scored.answer.split())
    return math.log1p(words) if words else None


# The order is the report's: components first, then free signals.
FEATURES: dict[str, Callable[[ScoredAnswer], float | None]] = {
    "bc": _value("bc"),
    "fc": _value("fc"),
    "sc": _value("sc"),
    "lp": _value("lp"),  # exp(mean token log-probability)
    "ev": _ev,  # an abstention read as 0.5
    "lp_mean": _lp_detail("mean_logprob"),
    "lp_min": _lp_detail("min_logprob"),
    "length": _length,
    "bc_mean": _claims_mean("bc"),
    "fc_mean": _claims_mean("fc"),
    "ev_mean": _ev_mean,
    "ev_spoke": _ev_spoke,
    "claims": _claims,
}
COMPONENT_FEATURES = ("bc", "fc", "sc", "lp", "ev")  # those the gateway ships as scores in [0, 1]


def features_of(components: Components, answer: str | None, claims: Sequence[Components] = ()) -> FeatureVector:
    """Every feature the answer has, by name (``claims``: each checked claim's own components)."""
    scored = ScoredAnswer(components, answer or "", claims)
    values = {name: read(scored) for name, read in FEATURES.items()}
    return {name: value for name, value in values.items() if value is not None}


def record_features(record: TrustRecord) -> FeatureVector:
    claims = [claim.components for claim in record.claims if claim.checked and claim.components]
    return features_of(record.components, record.answer, claims)
