import math

import pytest

from scoring.combine import TABLE3, combine, graded_trust, table3_trust
from scoring.types import ComponentResult

pytestmark = pytest.mark.unit


def bc(binary: int, graded: float | None = None) -> ComponentResult:
    graded = float(binary) if graded is None else graded
    return ComponentResult(
        component="bc",
        value=graded,
        label="consistent" if binary else "inconsistent",
        details={"binary": binary, "graded": graded},
    )


def fc(label: str, probs: dict[str, float] | None = None) -> ComponentResult:
    probs = probs or {label: 1.0}
    return ComponentResult(component="fc", value=0.5, label=label, details={"label": label, "label_probs": probs})


@pytest.mark.parametrize(
    ("binary", "label", "expected"),
    [
        (1, "support", 1.0),
        (0, "support", 0.8),
        (1, "neutral", 0.6),
        (0, "neutral", 0.4),
        (1, "contradict", 0.2),
        (0, "contradict", 0.0),
    ],
)
def test_table3_cells(binary: int, label: str, expected: float) -> None:
    assert table3_trust(bool(binary), label) == expected  # type: ignore[arg-type]
    result = combine(bc(binary), fc(label), graded=False)
    assert (result.component, result.value) == ("ov", expected)
    assert result.label == f"{'consistent' if binary else 'inconsistent'}/{label}"
    assert result.details.table3 == expected


def test_the_graded_variant_equals_table3_on_hard_inputs() -> None:
    for (consistent, label), expected in TABLE3.items():
        assert graded_trust(float(consistent), {label: 1.0}) == pytest.approx(expected)
        assert combine(bc(int(consistent)), fc(label)).value == pytest.approx(expected)


def test_the_graded_variant_is_table3s_expectation() -> None:
    probs = {"support": 0.6, "neutral": 0.3, "contradict": 0.1}
    expected = 0.7 * (0.6 * 1.0 + 0.3 * 0.6 + 0.1 * 0.2) + 0.3 * (0.6 * 0.8 + 0.3 * 0.4 + 0.1 * 0.0)
    result = combine(bc(1, graded=0.7), fc("support", probs))
    assert result.value == pytest.approx(expected)
    assert result.details.graded == pytest.approx(expected)
    assert result.details.table3 == 1.0


def test_graded_trust_normalises_partial_probabilities() -> None:
    assert graded_trust(0.0, {"support": 0.5}) == pytest.approx(0.8)
    assert graded_trust(1.0, {}) == pytest.approx(0.2)


def test_trust_bc_alone_when_there_is_no_fact_check() -> None:
    assert combine(bc(1, graded=0.9), None).value == 0.9
    failed = ComponentResult(component="fc", error="timeout")
    result = combine(bc(0, graded=0.3), failed)
    assert (result.value, result.details.source) == (0.3, "bc")


def test_trust_fc_alone_and_neither() -> None:
    assert combine(None, fc("contradict")).details.source == "fc"
    assert combine(None, None).value is None


def test_missing_detail_keys_fall_back_to_the_values() -> None:
    bare_bc = ComponentResult(component="bc", value=1.0)
    bare_fc = ComponentResult(component="fc", value=0.0, label="contradict")
    assert combine(bare_bc, bare_fc).value == pytest.approx(0.2)


def test_the_fitted_combination_reads_its_features_and_says_what_fed_it() -> None:
    from scoring.calibration import LogisticCombination
    from scoring.combine import fitted_trust, paper_trust

    model = LogisticCombination(("bc", "lp_mean"), (2.0, 1.0), -0.5)
    lp = ComponentResult(component="lp", value=0.8, details={"mean_logprob": -0.2, "min_logprob": -1.0})
    components = {"bc": bc(1, graded=0.75), "fc": fc("support"), "lp": lp}
    result = fitted_trust(components, model)
    assert result.value == pytest.approx(1 / (1 + math.exp(-(-0.5 + 2.0 * 0.75 - 0.2))))
    assert (result.details.source, result.details.method) == ("bc+lp", "fitted")
    assert result.details.features == {"bc": 0.75, "lp_mean": -0.2}
    without_lp = fitted_trust({"bc": components["bc"], "fc": components["fc"]}, model)  # no logprobs upstream
    assert without_lp.value == paper_trust({"bc": components["bc"], "fc": components["fc"]}).value
    assert (without_lp.details.method, without_lp.details.fitted_missing, without_lp.details.source) == (
        "paper",
        ["lp_mean"],
        "bc+fc",
    )


def test_a_debiased_trust_bc_enters_table3_by_its_value_and_label() -> None:
    debiased = ComponentResult(
        component="bc",
        value=0.5,
        label="uncertain",
        details={"procedure": "debiased", "binary": 0.0, "graded": 0.25, "debiased": 0.5},
    )
    result = combine(debiased, fc("support"))
    assert (result.details.consistent, result.details.bc_graded) == (False, 0.5)
