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

That is the ``paper`` preset. The ``default`` one (``default_trust``) is a
prior shipped with the project (``default_combination.json``, fitted and
measured by ``evaluation/studies/default_combination.py``, figures in
docs/eval/default-combination.md): a logistic model of correctness over the
values of whichever of lp, Trust_BC, Trust_FC, sc and evidence agreement (ev)
are present. Each term is
``w·(value − centre)``; a component that is absent adds nothing, which is to
read it at the centre (the mean of the labeled sets), so the score needs no
particular component and uses every one there is. Its value is an estimated
probability that the answer is correct, the same scale whatever fed it; the
``trusted`` / ``untrusted`` thresholds read it as such. The ``fitted`` one (``combine: fitted``) is a
logistic regression over whichever component features a labeled set showed to
matter (``FEATURES``: Trust_BC, Trust_FC, the answer's mean and minimum token
log-probability), fitted by ``trustgate eval run --calibration-method
logistic`` and read from the calibration file. A record whose components lack a
feature the fit used falls back to the paper preset and says so; either way
``details.source`` names the components that fed Trust_OV.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .calibration import LogisticCombination
from .types import (
    SC_CLEARLY_CONSISTENT,
    BCDetails,
    ComponentResult,
    FactLabel,
    FCDetails,
    LPDetails,
    OVDetails,
    SCDetails,
)

__all__ = [
    "DEFAULT_PRIOR_PATH",
    "FEATURES",
    "TABLE3",
    "CombineMethod",
    "PriorCombination",
    "combine",
    "combine_components",
    "default_prior",
    "default_trust",
    "feature_values",
    "fitted_trust",
    "graded_trust",
    "paper_trust",
    "table3_trust",
]

CombineMethod = Literal["default", "paper", "fitted"]
DEFAULT_PRIOR_PATH = Path(__file__).with_name("default_combination.json")

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
    """(consistent, graded) from Trust_BC's details; its value stands in for one not given.

    A debiased Trust_BC's value is its graded score (agreement beyond the letter prior), and its
    label says whether it is consistent: the raw fraction of checks that agreed would bring the
    letter habit back in.
    """
    details = bc.details if isinstance(bc.details, BCDetails) else BCDetails()
    if details.procedure == "debiased":
        return bc.label == "consistent", value
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
    return ComponentResult(component="ov", value=only.value, label=only.label, details=OVDetails(source=only.component))


def _both(bc: ComponentResult, bc_value: float, fc: ComponentResult, graded: bool) -> ComponentResult:
    consistent, graded_bc = _bc_verdict(bc, bc_value)
    label, probs = _fc_verdict(fc)
    table3 = table3_trust(consistent, label)
    graded_value = graded_trust(graded_bc, probs)
    details = OVDetails(
        source="bc+fc",
        table3=table3,
        graded=graded_value,
        consistent=consistent,
        bc_graded=graded_bc,
        fc_label=label,
        fc_label_probs=probs,
    )
    cell = f"{'consistent' if consistent else 'inconsistent'}/{label}"
    return ComponentResult(component="ov", value=graded_value if graded else table3, label=cell, details=details)


Components = Mapping[str, ComponentResult]


def _value(name: str) -> Callable[[Components], float | None]:
    def read(components: Components) -> float | None:
        result = _usable(components.get(name))
        return None if result is None else result.value

    return read


def _lp(components: Components) -> LPDetails:
    result = _usable(components.get("lp"))
    return result.details if result is not None and isinstance(result.details, LPDetails) else LPDetails()


# What a fitted Trust_OV may read, each named after the component it comes from ("lp_mean" from lp).
FEATURES: dict[str, Callable[[Components], float | None]] = {
    "bc": _value("bc"),
    "fc": _value("fc"),
    "lp_mean": lambda components: _lp(components).mean_logprob,
    "lp_min": lambda components: _lp(components).min_logprob,
}


def feature_values(components: Components, names: tuple[str, ...]) -> dict[str, float | None]:
    return {name: FEATURES[name](components) if name in FEATURES else None for name in names}


def paper_trust(components: Components) -> ComponentResult:
    """The ``paper`` preset over a record's components (Table 3, graded)."""
    result = combine(components.get("bc"), components.get("fc"))
    if isinstance(result.details, OVDetails):  # always: combine writes OVDetails
        result.details.method = "paper"
    return result


def fitted_trust(components: Components, model: LogisticCombination) -> ComponentResult:
    """The fitted Trust_OV; the paper preset (saying which features were missing) when a feature is absent."""
    values = feature_values(components, model.features)
    missing = [name for name, value in values.items() if value is None]
    if missing:
        fallback = paper_trust(components)
        if isinstance(fallback.details, OVDetails):
            fallback.details.fitted_missing = missing
        return fallback
    present = {name: float(value) for name, value in values.items() if value is not None}
    value = model.combined(present)
    source = "+".join(sorted({name.split("_")[0] for name in model.features}))
    return ComponentResult(
        component="ov",
        value=value,
        label=None,
        details=OVDetails(
            source=source,
            method="fitted",
            features=present,
            weights=dict(zip(model.features, model.weights, strict=True)),
        ),
    )


@dataclass(frozen=True)
class PriorCombination:
    """A logistic model over component values whose absent components add nothing (``default_trust``)."""

    intercept: float
    weights: Mapping[str, float]  # by component ("lp", "bc", "fc", "sc", "ev")
    centres: Mapping[str, float]  # each component's mean on the sets the prior was fitted on

    def probability(self, values: Mapping[str, float]) -> float:
        """P(correct) from the values present (components the prior does not know are ignored)."""
        z = self.intercept + sum(
            self.weights[name] * (value - self.centres[name]) for name, value in values.items() if name in self.weights
        )
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def to_json(self) -> dict[str, object]:
        return {"intercept": self.intercept, "weights": dict(self.weights), "centres": dict(self.centres)}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> PriorCombination:
        weights, centres = data["weights"], data["centres"]
        if not isinstance(weights, dict) or not isinstance(centres, dict) or set(weights) != set(centres):
            raise ValueError("a prior combination needs one centre per weight")
        return cls(
            float(data["intercept"]),  # type: ignore[arg-type]
            {str(k): float(v) for k, v in weights.items()},
            {str(k): float(v) for k, v in centres.items()},
        )


@functools.cache
def default_prior() -> PriorCombination:
    """The prior shipped beside this module (read once per process)."""
    return PriorCombination.from_json(json.loads(DEFAULT_PRIOR_PATH.read_text(encoding="utf-8"))["prior"])


def _prior_value(name: str, components: Components) -> float | None:
    """A component's value as the prior reads it: an sc spared by a clearly consistent answer
    (``SC_CLEARLY_CONSISTENT``) as full agreement, 1.0, which ranked answers better than leaving it out
    (evaluation/studies/sc_skip.py, docs/eval/default-combination.md)."""
    result = components.get(name)
    if (
        name == "sc"
        and result is not None
        and result.value is None
        and result.error is None
        and isinstance(result.details, SCDetails)
        and result.details.reason == SC_CLEARLY_CONSISTENT
    ):
        return 1.0
    return _value(name)(components)


def default_trust(components: Components, prior: PriorCombination | None = None) -> ComponentResult:
    """The ``default`` Trust_OV: the shipped prior over every one of lp, bc, fc, sc and ev that has a value
    (an sc spared as clearly consistent reads 1.0; an ev that abstained has none, and adds nothing).

    None (no value) only when none of them has one.
    """
    prior = prior or default_prior()
    values = {name: float(value) for name in prior.weights if (value := _prior_value(name, components)) is not None}
    if not values:
        return ComponentResult(component="ov", details=OVDetails(source=None, method="default"))
    return ComponentResult(
        component="ov",
        value=prior.probability(values),
        label=None,
        details=OVDetails(
            source="+".join(sorted(values)),
            method="default",
            features=values,
            weights={name: prior.weights[name] for name in values},
        ),
    )


def combine_components(
    components: Components, method: CombineMethod = "default", fitted: LogisticCombination | None = None
) -> ComponentResult:
    """Trust_OV of a record's components by ``method`` (``scoring.combine``'s setting); fitted needs ``fitted``."""
    if method == "paper":
        return paper_trust(components)
    if method == "fitted":
        if fitted is None:
            raise ValueError("combine method 'fitted' needs a fitted combination")
        return fitted_trust(components, fitted)
    return default_trust(components)
