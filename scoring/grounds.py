"""What a score rests on: its basis, whether its model's scores are known to be informative, what is missing.

A score is only as good as what went into it, and a user who reads
``trusted`` cannot see that a component timed out, that the combination is
the shipped prior rather than one learned from this model's labels, or that
those labels show the model's scores separate nothing. These pure functions
read that from a record's components, so that every scored record says it
(``x-trust-basis``, ``x-trust-informative``, ``x-trust-missing``), and a score
known to carry no information is labelled ``unknown``, never trusted or untrusted.
"""

from __future__ import annotations

from collections.abc import Iterable

from .settings import ScoringSettings
from .types import UNKNOWN_LABEL, Basis, ComponentResult, FailureReason, MissingReason, OVDetails

__all__ = ["basis_of", "informative_of", "missing_of", "trust_label"]

# The failures that mean a component ran out of time (its CPU time is a time bound as well).
_TIMED_OUT: frozenset[FailureReason] = frozenset({"timeout", "cpu_time"})


def _missing_reason(result: ComponentResult) -> MissingReason:
    reasons = {failure.reason for failure in result.failures}
    if result.error == "timeout" or reasons & _TIMED_OUT:
        return "timeout"
    if "budget" in reasons:
        return "budget"
    return "error"


def missing_of(results: Iterable[ComponentResult]) -> dict[str, MissingReason]:
    """Each component that ran and has no value because it failed (timed out, erred, or found the budget spent).

    A component that had nothing to score (no distractors, spared samples, no
    log-probabilities) is not missing: nothing went wrong, there was nothing to measure.
    """
    return {
        result.component: _missing_reason(result)
        for result in results
        if result.value is None and (result.error is not None or result.failures)
    }


def basis_of(overall: ComponentResult | None) -> Basis:
    """``learned`` when the model's own fit made Trust_OV, else ``default``: the combination the gateway was given."""
    learned = overall is not None and isinstance(overall.details, OVDetails) and overall.details.method == "learned"
    return "learned" if learned else "default"


def informative_of(overall: ComponentResult | None) -> bool | None:
    """What the model's labels say of its scores (``scoring.learning``); None: nothing yet (too few labels)."""
    if overall is None or not isinstance(overall.details, OVDetails):
        return None
    return overall.details.informative


def trust_label(score: float | None, settings: ScoringSettings, *, informative: bool | None = None) -> str | None:
    """trusted / uncertain / untrusted by the thresholds; ``unknown`` where the model's scores are known to carry no
    information, since then a threshold on them says nothing either way."""
    if score is None:
        return None
    if informative is False:
        return UNKNOWN_LABEL
    if score >= settings.trusted_threshold:
        return "trusted"
    if score < settings.untrusted_threshold:
        return "untrusted"
    return "uncertain"
