"""The offline report: a small labelled fixture judged through the gateway's upstream path, by hand.

fixtures/cases.jsonl, with the marker judge (see ``judging.py``):

    case           answerable   answer                       recall  precision  claims  grounded  judge calls
    cited          yes          "ALPHA [1]"                  1       1/1        1/1     1         2
    wrong-refusal  yes          refuses (Trust-Eval's flag)  -       -          -       -         0
    right-refusal  no           refuses ("do not contain")   -       -          -       -         0
    parametric     no           "THETA [1]", doc lacks it    0       0/1        1/1     0         2
    over-cited     yes          "ALPHA [1][2]", [2] noise    1       1/2        1/2     1         5
    uncited        from claims  "BETA", no citation          0       0 (none)   1/1     1         2

A judge question asked twice is asked once: over-cited's "[1] without [2]" is its "[1] alone"; when the
only document is the cited one (parametric), grounding is the recall question; uncited's grounding is
the answerability question for its claim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from scoring.rag import RagScorer, rag_report
from scoring.rag.report import CaseError, load_cases, main, score_cases
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream

from .judging import marker_judge, with_gateway_ask

CASES = Path(__file__).parent / "fixtures" / "cases.jsonl"

EXPECTED = {
    "num_samples": 6, "skipped_num": 0, "answered_num": 4, "answered_ratio": 4 / 6, "answerable_num": 4,
    "labelled_num": 6, "overlapped_num": 3, "regular_length": 44 / 6, "answered_length": 19 / 4,
    # refused: right-refusal (unanswerable), wrong-refusal (answerable); answered: 3 answerable, 1 not
    "reject_rec": 1 / 2, "reject_prec": 1 / 2, "reject_f1": 1 / 2,
    "answerable_rec": 3 / 4, "answerable_prec": 3 / 4, "answerable_f1": 3 / 4,
    "macro_avg": 5 / 8, "macro_f1": 5 / 8,
    "regular_citation_rec": 2 / 6, "regular_citation_prec": 1.5 / 6, "regular_citation_f1": 2 / 7,
    "answered_citation_rec": 2 / 4, "answered_citation_prec": 1.5 / 4, "answered_citation_f1": 3 / 7,
    "answered_claims_nli": 3.5 / 4,
    "calib_answered_claims_nli": 2.5 / 4,  # parametric counts 0: its documents hold no answer
    "calib_answerable_claims_nli": 2.5 / 4,  # wrong-refusal counts 0
    "calib_claims_nli_f1": 5 / 8,
    "answered_groundedness": 3 / 4,
    "trust_score": (5 / 8 + 5 / 8 + 3 / 7) / 3,
    "judge_failures": 0, "judge_calls": 11,
}


def test_the_report_on_the_labelled_fixture(fake_upstream: FakeUpstream) -> None:
    fake_upstream.responder = marker_judge
    jobs = load_cases(CASES, "fake")
    cases = with_gateway_ask(fake_upstream, lambda ask: score_cases(jobs, RagScorer(), ask, concurrency=2))

    assert [c["id"] for c in cases] == ["cited", "wrong-refusal", "right-refusal", "parametric", "over-cited",
                                        "uncited"]
    assert [c["answerable_from"] for c in cases] == ["label"] * 5 + ["claims"]
    assert rag_report(cases) == pytest.approx(EXPECTED)
    assert len(fake_upstream.requests) == EXPECTED["judge_calls"]


def details(**fields: Any) -> dict[str, Any]:
    base = {"refusal": False, "answerable": None, "citation_recall": 1.0, "citation_precision": 1.0,
            "citations_judged": 1, "reference_claims": 0, "claim_correctness": None, "groundedness": 1.0,
            "words": 4, "judge_errors": []}
    return {**base, **fields}


def test_without_labels_or_claims_those_metrics_are_none_not_zero() -> None:
    report = rag_report([details(), details(citation_recall=0.0, citation_precision=None, citations_judged=0),
                         {"skipped": "empty answer", "upstream_calls": 0}])
    assert (report["num_samples"], report["skipped_num"], report["answered_num"]) == (3, 1, 2)
    assert (report["macro_f1"], report["reject_rec"], report["calib_claims_nli_f1"]) == (None, None, None)
    assert (report["answered_citation_rec"], report["answered_citation_prec"]) == (0.5, 0.5)
    assert report["trust_score"] == report["answered_citation_f1"] == 0.5


def test_a_case_whose_judge_failed_is_left_out_of_that_metric_and_counted() -> None:
    report = rag_report([details(), details(citation_recall=None, judge_errors=["UpstreamUnavailable: down"])])
    assert (report["answered_citation_rec"], report["answered_citation_prec"], report["judge_failures"]) == (
        1.0, 1.0, 1)


def test_the_command_line(fake_upstream: FakeUpstream, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake_upstream.responder = marker_judge
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(gateway_config(fake_upstream.url)))  # type: ignore[attr-defined]
    output = tmp_path / "report.json"

    assert main([str(CASES), "--config", str(config), "--model", "fake", "--output", str(output)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == pytest.approx(EXPECTED)
    written = json.loads(output.read_text())
    assert written["report"] == printed and len(written["cases"]) == 6

    assert main([str(CASES), "--config", str(config), "--model", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


@pytest.mark.parametrize(("line", "message"), [
    ("not json", "cases.jsonl:2"),
    ('["a list"]', "JSON object"),
    ('{"question": "q", "answer": 3, "documents": ["d"]}', "'answer'"),
    ('{"question": "q", "answer": "a", "documents": []}', "documents"),
    ('{"question": "q", "answer": "a", "documents": ["d"], "answerable": "no"}', "answerable"),
])
def test_a_bad_case_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text('{"question": "q", "answer": "a", "documents": ["d"]}\n' + line + "\n\n")
    with pytest.raises(CaseError, match=message):
        load_cases(path, "fake")
