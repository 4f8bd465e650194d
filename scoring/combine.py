"""Trust_OV: Trust_BC and Trust_FC in one score (paper §2.2, Appendix A.5.3, Table 3). Pure functions.

Table 3 ranks the six cells by the paper's principles: evidence outranks
behaviour (every "support" beats every "neutral", which beats every
"contradict"), and within a fact-check label a consistent answer beats an
inconsistent one::

    Trust_BC      Trust_FC     Trust_OV
    consistent    support      1.0
    inconsistent  support      0.8
    consistent    neutral      0.6
    inconsistent  neutral      0.4
    consistent    contradict   0.2
    inconsistent  contradict   0.0

That is ``0.8·[support] + 0.4·[neutral] + 0.2·[consistent]``. The graded
variant puts Trust_BC's graded score ``g`` in place of ``[consistent]`` and the
judge's label probabilities ``p`` in place of the indicators:
``0.8·p_support + 0.4·p_neutral + 0.2·g``, the expected Table 3 value when the
two verdicts are independent. On hard inputs (g in {0, 1}, one label with
probability 1) it is exactly Table 3.
"""

from __future__ import annotations

from .types import BCDetails, ComponentResult, FactLabel, FCDetails, OVDetails

__all__ = ["TABLE3", "combine", "graded_trust", "table3_trust"]

TABLE3: dict[tuple[bool, FactLabel], float] = {
    (True, "support"): 1.0,
    (False, "support"): 0.8,
    (True, "neutral"): 0.6,
    (False, "neutral"): 0.4,
    (True, "contradict"): 0.2,
    (False, "contradict"): 0.0,
}
_LABEL_WEIGHT: dict[FactLabel, float] = {"support": 0.8, "neutral": 0.4, "contradict": 0.0}
_CONSISTENCY_WEIGHT = 0.2


def table3_trust(consistent: bool, label: FactLabel) -> float:
    """The paper's Trust_OV for a binary Trust_BC verdict and the judge's label."""
    return TABLE3[(consistent, label)]


def graded_trust(graded_bc: float, label_probs: dict[str, float]) -> float:
    """Table 3's expectation under a graded Trust_BC and the judge's label probabilities."""
    total = sum(label_probs.get(label, 0.0) for label in _LABEL_WEIGHT) or 1.0
    facts = sum(weight * label_probs.get(label, 0.0) for label, weight in _LABEL_WEIGHT.items()) / total
    return min(1.0, max(0.0, facts + _CONSISTENCY_WEIGHT * graded_bc))


def _usable(result: ComponentResult | None) -> ComponentResult | None:
    """The result if it counts: present, with a value and no error."""
    return result if result is not None and result.value is not None and result.error is None else None


def _bc_verdict(bc: ComponentResult, value: float) -> tuple[bool, float]:
    """(consistent, graded) from Trust_BC's details; its value stands in for one not given."""
    details = bc.details if isinstance(bc.details, BCDetails) else BCDetails()
    binary = details.binary if details.binary is not None else float(value >= 0.5)
    return bool(binary), details.graded if details.graded is not None else value


def _fc_verdict(fc: ComponentResult) -> tuple[FactLabel, dict[str, float]]:
    details = fc.details if isinstance(fc.details, FCDetails) else FCDetails()
    named = details.label or fc.label
    label: FactLabel = named if named in _LABEL_WEIGHT else "neutral"
    return label, details.label_probs or {label: 1.0}


def combine(bc: ComponentResult | None, fc: ComponentResult | None, *, graded: bool = True) -> ComponentResult:
    """Trust_OV as the "ov" component.

    Contract: ``bc`` is the "bc" component; its ``BCDetails`` carry ``binary``
    (0/1: consistent over all checks) and ``graded`` (float in [0, 1]); when
    one is not given its ``value`` stands in. ``fc`` is the "fc" component; its
    ``FCDetails`` carry ``label`` ("support" / "neutral" / "contradict") and
    ``label_probs`` ({label: probability}; one-hot when the judge gave no
    log-probabilities). A component that is None, has no value or has an error
    does not count.

    With both: ``value`` is the graded Trust_OV (``graded=False``: the Table 3
    cell) and ``details`` carry both, ``table3`` and ``graded``. With Trust_BC
    only (no evidence source, or the fact check failed) Trust_OV is Trust_BC's
    value; with Trust_FC only, Trust_FC's value; with neither, None.
    """
    bc, fc = _usable(bc), _usable(fc)
    if bc is not None and bc.value is not None and fc is not None:
        return _both(bc, bc.value, fc, graded)
    only = bc or fc
    if only is None:
        return ComponentResult(component="ov", details=OVDetails(source=None))
    return ComponentResult(component="ov", value=only.value, label=only.label,
                           details=OVDetails(source=only.component))


def _both(bc: ComponentResult, bc_value: float, fc: ComponentResult, graded: bool) -> ComponentResult:
    consistent, graded_bc = _bc_verdict(bc, bc_value)
    label, probs = _fc_verdict(fc)
    table3 = table3_trust(consistent, label)
    graded_value = graded_trust(graded_bc, probs)
    details = OVDetails(source="bc+fc", table3=table3, graded=graded_value, consistent=consistent,
                        bc_graded=graded_bc, fc_label=label, fc_label_probs=probs)
    cell = f"{'consistent' if consistent else 'inconsistent'}/{label}"
    return ComponentResult(component="ov", value=graded_value if graded else table3, label=cell, details=details)
