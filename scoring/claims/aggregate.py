"""A claim-checked answer's verdict from its claims' verdicts. Pure functions.

Each claim is scored as an answer of its own would be: the configured Trust_OV over its own Trust_BC and
Trust_FC and the answer's own signals (``lp``, ``sc``), which no claim has apart from the answer. The
answer's Trust_OV folds the claims' scores with a soft minimum, a mean weighted by ``exp(-score / t)``:
one false claim pulls the answer down to about its score, however many true ones stand beside it, while a
small ``t`` still lets the other claims count a little against a check's noise (``t = 0``: the minimum).

Each claim's own checks are Trust_BC, Trust_FC and evidence agreement (``ev``): a claim the evidence
contradicts scores low whatever the judge said, and one on which ``ev`` abstains is combined without it.

The answer-level Trust_BC, Trust_FC and ``ev`` of such an answer are its lowest claim's (for ``ev``, the
lowest that did not abstain), so that every reader of a record's components (headers, metrics, the
learner) sees the verdict that decided the answer; they name that claim and carry only a summary (the
claims' own details are in the record's claims), their calls summed over every claim.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from ..types import BCDetails, ComponentResult, EVDetails, FCDetails, OVDetails

__all__ = ["answer_component", "claim_inputs", "lowest", "overall_of_claims", "softmin"]

Components = Mapping[str, ComponentResult]


def _usable(result: ComponentResult) -> bool:
    return result.value is not None and result.error is None


def lowest(results: Sequence[ComponentResult]) -> int | None:
    """The index of the lowest-valued result that scored (the earliest on a tie); None when none did."""
    scored = [index for index, result in enumerate(results) if _usable(result)]
    return min(scored, key=lambda index: (results[index].value, index)) if scored else None


def softmin(values: Sequence[float], temperature: float) -> float:
    """The mean of ``values`` weighted by ``exp(-value / temperature)``; the minimum at temperature 0."""
    low = min(values)
    if temperature <= 0:
        return low
    weights = [math.exp(-(value - low) / temperature) for value in values]
    return sum(w * v for w, v in zip(weights, values, strict=True)) / sum(weights)


def _bc_summary(results: Sequence[ComponentResult], index: int) -> BCDetails:
    worst = results[index].details
    details = worst if isinstance(worst, BCDetails) else BCDetails()
    scored = [r.details for r in results if _usable(r) and isinstance(r.details, BCDetails)]
    return BCDetails(
        mode=details.mode,
        procedure=details.procedure,
        binary=float(all(d.binary == 1.0 for d in scored)) if scored else None,
        graded=details.graded,
        debiased=details.debiased,
        checks_run=sum(d.checks_run for d in scored),
        claims=len(results),
        claim=index,
    )


def _fc_summary(results: Sequence[ComponentResult], index: int) -> FCDetails:
    worst = results[index].details
    details = worst if isinstance(worst, FCDetails) else FCDetails()
    return FCDetails(
        judge=details.judge,
        label=details.label,
        label_probs=dict(details.label_probs),
        probs_from=details.probs_from,
        claims=len(results),
        claim=index,
    )


def _ev_summary(results: Sequence[ComponentResult], index: int) -> EVDetails:
    worst = results[index].details
    details = worst if isinstance(worst, EVDetails) else EVDetails()
    return EVDetails(
        verdict=details.verdict,
        reason=details.reason,
        claim=details.claim,
        subject=details.subject,
        relation=list(details.relation),
        entity=details.entity,
        entity_forms=list(details.entity_forms),
        agreeing=details.agreeing,
        contradicting=details.contradicting,
        claims=len(results),
    )


def _ev_abstained(results: Sequence[ComponentResult]) -> EVDetails:
    """Every claim abstained: why the first did (the one claim that may answer without stating the relation)."""
    first = results[0].details if results else None
    return EVDetails(
        verdict="abstain", reason=first.reason if isinstance(first, EVDetails) else None, claims=len(results)
    )


# How an answer-level component says that no claim scored, where it has more to say than its error.
_NONE_SCORED: dict[str, Callable[[Sequence[ComponentResult]], EVDetails]] = {"ev": _ev_abstained}

_SUMMARIES: dict[str, Callable[[Sequence[ComponentResult], int], BCDetails | FCDetails | EVDetails]] = {
    "bc": _bc_summary,
    "fc": _fc_summary,
    "ev": _ev_summary,
}


def answer_component(name: str, results: Sequence[ComponentResult], claims: Sequence[int]) -> ComponentResult:
    """The answer-level component of claim-checked ``results`` (one per checked claim; ``claims``: their
    indexes in the record's claims): the lowest claim's value and label, every claim's calls and failures."""
    calls = sum(r.upstream_calls for r in results)
    duration = max((r.duration_s for r in results), default=0.0)
    failures = [failure for r in results for failure in r.failures]
    index = lowest(results)
    if index is None:
        errors = [r.error for r in results if r.error]
        explain = _NONE_SCORED.get(name)
        return ComponentResult(
            component=name,
            label=next((r.label for r in results if r.label), None),
            details=explain(results) if explain is not None and not errors else {},
            error=errors[0] if errors else None,
            upstream_calls=calls,
            duration_s=duration,
            failures=failures,
        )
    worst = results[index]
    summary = _SUMMARIES.get(name)
    details = summary(results, index) if summary is not None else {"claims": len(results), "claim": claims[index]}
    if isinstance(details, BCDetails | FCDetails):
        details.claim = claims[index]
    elif isinstance(details, EVDetails):
        details.claim_index = claims[index]
    return ComponentResult(
        component=name,
        value=worst.value,
        label=worst.label,
        details=details,
        upstream_calls=calls,
        duration_s=duration,
        failures=failures,
    )


def claim_inputs(answer: Components, claim: Components) -> dict[str, ComponentResult]:
    """What one claim's Trust_OV reads: the answer's own signals, with the claim's checks in place of the
    answer's (its Trust_BC, Trust_FC and ``ev``; an ``ev`` that abstained on the claim stays absent from it)."""
    return {**{name: result for name, result in answer.items() if name not in claim}, **claim}


def overall_of_claims(scores: Sequence[ComponentResult], claims: Sequence[int], temperature: float) -> ComponentResult:
    """The answer's Trust_OV from its claims' (``scores``, one per checked claim; ``claims``: their indexes in
    the record's claims): their soft minimum, explained by the lowest claim's combination."""
    index = lowest(scores)
    if index is None:
        return ComponentResult(component="ov", details=OVDetails(source=None, claims=len(scores)))
    values = [float(s.value) for s in scores if s.value is not None and s.error is None]
    worst = scores[index]
    details = worst.details.model_copy() if isinstance(worst.details, OVDetails) else OVDetails()
    details.claims, details.claim, details.softmin_temperature = len(scores), claims[index], temperature
    return ComponentResult(component="ov", value=softmin(values, temperature), label=worst.label, details=details)
