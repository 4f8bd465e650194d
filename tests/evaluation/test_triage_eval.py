"""``trustgate eval triage``: the committed sets stay handled right, and the report's figures are what they say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.datasets import DatasetError
from evaluation.triage_eval import (
    TriageCase,
    TriageOutcome,
    load_triage_cases,
    packaged_set,
    render_triage_markdown,
    run_triage,
    triage_report,
)
from scoring.triage import AnswerKind, Verdict
from tests.trustgate_command import main


@pytest.mark.unit
def test_the_committed_set_is_handled_right_at_least_95_percent_of_the_time() -> None:
    cases = load_triage_cases(packaged_set("triage"))
    report = triage_report(run_triage(cases, repeat=1))
    assert report.cases >= 300
    assert report.checkable_accuracy >= 0.95, [(o.case.id, o.verdict.reason) for o in report.wrong]
    assert {kind for kind in report.kinds if kind != "tool_call"} >= {
        "factual", "creative", "code", "conversation", "opinion", "rewrite", "summary", "math", "refusal"
    }  # fmt: skip


@pytest.mark.unit
@pytest.mark.parametrize("name", ["triage-holdout", "triage-holdout-2"])
def test_the_held_out_sets_are_handled_right_at_least_90_percent_of_the_time(name: str) -> None:
    cases = load_triage_cases(packaged_set(name))
    report = triage_report(run_triage(cases, repeat=1))
    assert report.cases >= 60
    assert report.checkable_accuracy >= 0.90, [(o.case.id, o.verdict.reason) for o in report.wrong]


def _outcome(gold: AnswerKind, found: AnswerKind, seconds: float = 0.001) -> TriageOutcome:
    case = TriageCase(id="c", messages=[], answer="a", kind=gold, checkable=gold == "factual")
    return TriageOutcome(case, Verdict(kind=found, reason="r"), seconds)


@pytest.mark.unit
def test_precision_recall_and_accuracy_are_counted_from_the_verdicts() -> None:
    outcomes = [
        _outcome("factual", "factual"),
        _outcome("factual", "creative"),  # a checkable answer missed
        _outcome("creative", "creative"),
        _outcome("code", "factual", seconds=0.004),  # checked without need
        _outcome("opinion", "conversation"),  # wrong kind, right "not checkable"
    ]
    report = triage_report(outcomes)
    assert report.checkable_accuracy == pytest.approx(3 / 5)
    assert report.kind_accuracy == pytest.approx(2 / 5)
    assert report.checkable.precision == report.checkable.recall == pytest.approx(1 / 2)
    assert report.kinds["creative"].precision == pytest.approx(1 / 2) and report.kinds["creative"].recall == 1.0
    assert report.kinds["opinion"].precision is None and report.kinds["opinion"].recall == 0.0
    assert report.confusion[("code", "factual")] == 1
    assert report.latency_ms["max"] == pytest.approx(4.0)
    assert [o.case.kind for o in report.wrong] == ["factual", "code"]
    text = render_triage_markdown(report, title="t", command="trustgate eval triage")
    assert "**60.0%** (3 of 5)" in text and "| code | 1 |" in text  # gold code, triage factual


@pytest.mark.unit
def test_a_malformed_set_names_its_file_and_line(tmp_path: Path) -> None:
    good = {"id": "a", "messages": [{"role": "user", "content": "Hi"}], "answer": "Hello", "kind": "conversation"}
    bad_lines = {
        "unknown kind": {**good, "kind": "poetry", "checkable": False},
        "checkable must be true exactly for factual answers": {**good, "checkable": True},
        "not a triage case": {key: value for key, value in good.items() if key != "answer"},
    }
    for message, row in bad_lines.items():
        path = tmp_path / "set.jsonl"
        path.write_text(json.dumps({**good, "checkable": False}) + "\n" + json.dumps(row) + "\n")
        with pytest.raises(DatasetError, match=f"set.jsonl:2: {message}"):
            load_triage_cases(path)
    with pytest.raises(DatasetError, match="cannot read"):
        load_triage_cases(tmp_path / "missing.jsonl")


@pytest.mark.integration  # runs the command in a subprocess
def test_the_command_prints_the_report_and_writes_its_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mini.jsonl"
    rows = [
        ("f", "Who wrote Hamlet?", "Shakespeare.", "factual"),
        ("p", "Write a haiku about rain.", "Rain\non\nthe\nroof", "creative"),
    ]
    lines = [
        {"id": i, "messages": [{"role": "user", "content": q}], "answer": a, "kind": k, "checkable": k == "factual"}
        for i, q, a, k in rows
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "triage.json"
    assert main(["eval", "triage", "--file", str(path), "--repeat", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "checkable vs not checkable decided right: **100.0%** (2 of 2)" in printed
    assert f"--file {path}" in printed  # the exact command is in the report
    figures = json.loads(out.read_text())["mini.jsonl"]
    assert figures["cases"] == 2 and figures["checkable"]["recall"] == 1.0 and figures["wrong"] == []
