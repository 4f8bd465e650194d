"""``trustgate eval replay`` end to end on the scripted capable model: a real gateway with its real scorers,
feedback for the first half, the gateway's own refit, the held-out half scored by what it chose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.datasets import EvalItem
from evaluation.scripted_upstream import CapableModel
from tests.assets import DATA_DIR
from tests.trustgate_command import main


def _items() -> list[EvalItem]:
    return [
        EvalItem(
            dataset="capitals",
            id=str(i),
            question_id=str(i),
            question=f"What is the capital of P{i}?",
            gold=(f"City{i}",),
            group="t",
        )
        for i in range(40)
    ]


@pytest.mark.unit
def test_the_scripted_model_is_consistent_and_judged_right_mostly_when_it_is_right() -> None:
    model = CapableModel(_items(), consistency_right=1.0, consistency_wrong=0.0, judge_accuracy=1.0)
    for i in range(40):
        answer = model.answer(f"What is the capital of P{i}?")
        right = answer == f"The capital of P{i} is City{i}."
        other = f"The capital of P{i} is Elsewhere."
        options = [other, answer, other + " ", "None of the above."]
        check = (
            "multi-choice questions\nQuestion: q\n"
            + "\n".join(f"{letter}) {text}" for letter, text in zip("ABCD", options, strict=True))
            + "\nAnswer:"
        )
        assert (model.check(check) == "B") == right
        judged = model.judge(f"INSTRUCTION: Assess whether the provided evidence ...\nQuestion: q\nAnswer: {answer}\n")
        assert judged is right
    assert model.judge("INSTRUCTION: Assess whether the provided evidence\nQuestion: N/A\nAnswer: N/A\n") is None


@pytest.mark.integration
@pytest.mark.skipif(
    not (DATA_DIR / "factcheck" / "index").exists() or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
    reason="scoring assets not built: `make install` builds them",
)
def test_a_replay_feeds_half_waits_for_the_refit_and_measures_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "replay"
    assert (
        main(
            [
                "eval",
                "replay",
                "--upstream",
                "capable",
                "--limit",
                "40",
                "--refit-every",
                "10",
                "--min-labels",
                "20",
                "--bootstrap",
                "50",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads((out / "results.json").read_text())
    assert result["fed"] == 20 and result["held_out_items"] == 20 and not result["failures"]
    calibration = result["calibration"]
    assert calibration["labels"] == 20
    held = [a for a in result["answers"] if not a["fed"]]
    if calibration["combination"] == "fitted":
        # Forward selection takes the best single feature first: Trust_BC or Trust_FC, the ones the script makes
        # track correctness. A second one may be noise that 20 labels cannot rule out (length, say).
        assert calibration["fit"]["features"][0] in {"bc", "fc"}
        assert {a["fit_id"] for a in held} == {calibration["fit"]["id"]}
        assert {a["method"] for a in held} == {"learned"}
    else:
        assert {a["method"] for a in held} != {"learned"}
    assert all(a["method"] != "learned" for a in result["answers"] if a["fed"])  # scored before the fit
    report = (out / "report.md").read_text()
    assert "trustgate eval replay" in report and "Held-out half" in report
