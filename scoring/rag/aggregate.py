"""Trust-Eval's report over many scored RAG answers. Pure: the ``rag`` details of each case in, numbers out.

Names follow Trust-Eval's output, values are fractions in [0, 1] where
Trust-Eval prints percentages. Where Trust-Eval divides by zero and prints 0,
a metric no case could inform is None here instead (no case labelled
answerable or not, no reference claims), and ``trust_score`` is the mean of
those of its three parts that are known: refusal groundedness (``macro_f1``),
correctness (``calib_claims_nli_f1``) and attribution
(``answered_citation_f1``). A case whose judge failed on a metric is left
out of that metric's mean and counted in ``judge_failures``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .metrics import f1

__all__ = ["rag_report"]

Case = Mapping[str, Any]


def _mean_known(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _ratio(hits: int, total: int) -> float:
    return hits / total if total else 0.0


def _refusal_groundedness(cases: Sequence[Case]) -> dict[str, float | None]:
    """Trust-Eval's ``compute_macro_metrics`` over the cases whose answerability is known."""
    labelled = [c for c in cases if c["answerable"] is not None]
    if not labelled:
        return dict.fromkeys(
            (
                "reject_rec",
                "reject_prec",
                "reject_f1",
                "answerable_rec",
                "answerable_prec",
                "answerable_f1",
                "macro_avg",
                "macro_f1",
            )
        )
    refused = [c for c in labelled if c["refusal"]]
    answered = [c for c in labelled if not c["refusal"]]
    unanswerable = sum(not c["answerable"] for c in labelled)
    answerable = len(labelled) - unanswerable
    reject_rec = _ratio(sum(not c["answerable"] for c in refused), unanswerable)
    reject_prec = _ratio(sum(not c["answerable"] for c in refused), len(refused))
    answerable_rec = _ratio(sum(bool(c["answerable"]) for c in answered), answerable)
    answerable_prec = _ratio(sum(bool(c["answerable"]) for c in answered), len(answered))
    reject_f1, answerable_f1 = f1(reject_prec, reject_rec) or 0.0, f1(answerable_prec, answerable_rec) or 0.0
    return {
        "reject_rec": reject_rec,
        "reject_prec": reject_prec,
        "reject_f1": reject_f1,
        "answerable_rec": answerable_rec,
        "answerable_prec": answerable_prec,
        "answerable_f1": answerable_f1,
        "macro_avg": (reject_rec + answerable_rec) / 2,
        "macro_f1": (reject_f1 + answerable_f1) / 2,
    }


def _citation_scores(case: Case) -> tuple[float | None, float | None]:
    """(recall, precision) of one case as Trust-Eval averages them: 0 for a refusal, and 0 precision
    for an answer without citations."""
    if case["refusal"]:
        return 0.0, 0.0
    precision = case["citation_precision"] if case["citations_judged"] else 0.0
    return case["citation_recall"], precision


def _citations(cases: Sequence[Case], prefix: str) -> dict[str, float | None]:
    scores = [_citation_scores(c) for c in cases]
    recall, precision = _mean_known([r for r, _ in scores]), _mean_known([p for _, p in scores])
    return {
        f"{prefix}_citation_rec": recall,
        f"{prefix}_citation_prec": precision,
        f"{prefix}_citation_f1": f1(precision, recall),
    }


def _claims(cases: Sequence[Case]) -> dict[str, float | None]:
    """Trust-Eval's claim match (``compute_claim_match`` with calibration) over cases with reference claims.

    calib_answered: answered cases, 0 where the documents held no answer;
    calib_answerable: answerable cases, 0 where the model refused.
    """
    with_claims = [c for c in cases if c["reference_claims"]]
    answered = [c for c in with_claims if not c["refusal"]]
    labelled_answered = [c for c in answered if c["answerable"] is not None]
    answerable = [c for c in with_claims if c["answerable"]]
    calib_answered = _mean_known([c["claim_correctness"] if c["answerable"] else 0.0 for c in labelled_answered])
    calib_answerable = _mean_known([0.0 if c["refusal"] else c["claim_correctness"] for c in answerable])
    return {
        "answered_claims_nli": _mean_known([c["claim_correctness"] for c in answered]),
        "calib_answered_claims_nli": calib_answered,
        "calib_answerable_claims_nli": calib_answerable,
        "calib_claims_nli_f1": f1(calib_answered, calib_answerable),
    }


def rag_report(cases: Sequence[Case]) -> dict[str, Any]:
    """The report over the ``rag`` component details of each case (each may add ``upstream_calls``)."""
    scored = [c for c in cases if "skipped" not in c]
    answered = [c for c in scored if not c["refusal"]]
    report: dict[str, Any] = {
        "num_samples": len(cases),
        "skipped_num": len(cases) - len(scored),
        "answered_num": len(answered),
        "answered_ratio": _ratio(len(answered), len(scored)),
        "answerable_num": sum(bool(c["answerable"]) for c in scored),
        "labelled_num": sum(c["answerable"] is not None for c in scored),
        "overlapped_num": sum(bool(c["answerable"]) for c in answered),
        "regular_length": _mean_known([c["words"] for c in scored]),
        "answered_length": _mean_known([c["words"] for c in answered]),
    }
    report.update(_refusal_groundedness(scored))
    report.update(_citations(scored, "regular"))
    report.update(_citations(answered, "answered"))
    report.update(_claims(scored))
    report["answered_groundedness"] = _mean_known([c["groundedness"] for c in answered])
    report["trust_score"] = _mean_known(
        [report["macro_f1"], report["calib_claims_nli_f1"], report["answered_citation_f1"]]
    )
    report["judge_failures"] = sum(bool(c.get("judge_errors")) for c in scored)
    report["judge_calls"] = sum(int(c.get("upstream_calls", 0)) for c in cases)
    return report
